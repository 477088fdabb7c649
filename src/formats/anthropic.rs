//! Anthropic Messages API: `{role, content: str | [blocks]}` with the system prompt given
//! separately. Tool results travel as `tool_result` blocks inside user messages.

use serde_json::{Map, Value};

use super::{
    call_item_fields, carries_across, carry_extra, content_blocks, into_object, item_fields, leftover, obj,
    single_text, take_opt_bool, take_opt_str, take_role, take_str, type_name,
};
use crate::error::{Error, Result};
use crate::model::{Block, Body, ContentForm, Extra, Format, ImageSource, Message, ResultContent, Role, ToolInput};

/// Read Anthropic messages. `system` is the request's separate `system` parameter (a string or a
/// list of text blocks); when given it becomes the first message.
pub fn read(values: Vec<Value>, system: Option<Value>) -> Result<Vec<Message>> {
    super::Reader::read_all(Format::Anthropic, system, values)
}

/// The `system` parameter: a string is one system message; a list of blocks is one system
/// message per block, so several system messages written as one list read back as they were.
pub(crate) fn read_system(system: Value) -> Result<Vec<Message>> {
    let (blocks, form) = read_content(Some(system), 0, Format::Anthropic)?;
    let message = |blocks: Vec<Block>, form| Message {
        role: Role::System,
        blocks: blocks.into(),
        form,
        origin: Format::Anthropic,
        extra: Extra::new(),
    };
    Ok(match form {
        ContentForm::Parts => blocks
            .into_iter()
            .map(|b| message(vec![b], ContentForm::Parts))
            .collect(),
        _ => vec![message(blocks, form)],
    })
}

pub fn read_message(v: Value, index: usize) -> Result<Message> {
    let mut map = into_object(v, index, "an Anthropic message")?;
    let role = take_role(&mut map, index)?;
    let role = match role.as_str() {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        // Not valid in the API's `messages`, but common in files that inline the system prompt.
        "system" => Role::System,
        other => {
            return Err(Error::invalid(
                index,
                format!("unknown role {other:?} for an Anthropic message (expected \"user\" or \"assistant\")"),
            ));
        }
    };
    let (blocks, form) = read_content(map.shift_remove("content"), index, Format::Anthropic)?;
    Ok(Message {
        role,
        blocks: blocks.into(),
        form,
        origin: Format::Anthropic,
        extra: leftover(map),
    })
}

/// Read a `content` value: a string, a list of blocks, or absent.
pub(crate) fn read_content(content: Option<Value>, index: usize, origin: Format) -> Result<(Vec<Block>, ContentForm)> {
    match content {
        None => Ok((Vec::new(), ContentForm::Absent)),
        Some(Value::Null) => Ok((Vec::new(), ContentForm::Null)),
        Some(Value::String(text)) => Ok((vec![Block::new(Body::Text { text })], ContentForm::String)),
        Some(Value::Array(items)) => {
            let blocks = items
                .into_iter()
                .map(|b| read_block(b, index, origin))
                .collect::<Result<Vec<_>>>()?;
            Ok((blocks, ContentForm::Parts))
        }
        Some(other) => Err(Error::invalid(
            index,
            format!(
                "`content` must be a string or a list of blocks, got {}",
                type_name(&other)
            ),
        )),
    }
}

/// Read one block of the Anthropic vocabulary (also used by the native format).
pub(crate) fn read_block(v: Value, index: usize, origin: Format) -> Result<Block> {
    let mut map = into_object(v, index, "a content block")?;
    let Some(Value::String(kind)) = map.get("type") else {
        return Err(Error::invalid(index, "a content block needs a string `type`"));
    };
    let body = match kind.as_str() {
        "text" => {
            map.shift_remove("type");
            Body::Text {
                text: take_str(&mut map, "text", index, "text block: ")?,
            }
        }
        "tool_use" => {
            map.shift_remove("type");
            let id = take_str(&mut map, "id", index, "tool_use block: ")?;
            let name = take_str(&mut map, "name", index, "tool_use block: ")?;
            let input = match (map.shift_remove("input"), origin) {
                (Some(v @ Value::Object(_)), _) => ToolInput::Json(Box::new(v)),
                // The native format may carry OpenAI-style `arguments` text instead of `input`.
                (None, Format::Native) => ToolInput::Raw(take_str(&mut map, "arguments", index, "tool_use block: ")?),
                (Some(other), _) => {
                    return Err(Error::invalid(
                        index,
                        format!("tool_use block: `input` must be an object, got {}", type_name(&other)),
                    ));
                }
                (None, _) => return Err(Error::invalid(index, "tool_use block: missing `input`")),
            };
            Body::ToolUse { id, name, input }
        }
        "tool_result" => {
            map.shift_remove("type");
            let tool_use_id = take_str(&mut map, "tool_use_id", index, "tool_result block: ")?;
            let content = read_result_content(map.shift_remove("content"), index, origin)?;
            let is_error = take_opt_bool(&mut map, "is_error", index, "tool_result block: ")?;
            Body::ToolResult {
                tool_use_id,
                content,
                is_error,
            }
        }
        "thinking" if matches!(map.get("thinking"), Some(Value::String(_))) => {
            map.shift_remove("type");
            let thinking = take_str(&mut map, "thinking", index, "thinking block: ")?;
            let signature = take_opt_str(&mut map, "signature", index, "thinking block: ")?;
            Body::Thinking { thinking, signature }
        }
        "redacted_thinking" if matches!(map.get("data"), Some(Value::String(_))) => {
            map.shift_remove("type");
            Body::RedactedThinking {
                data: take_str(&mut map, "data", index, "redacted_thinking block: ")?,
            }
        }
        "image" => match read_image_source(map.get("source")) {
            Some(source) => {
                map.shift_remove("type");
                map.shift_remove("source");
                Body::Image { source }
            }
            None => {
                return Ok(Block::new(Body::Opaque {
                    value: Box::new(Value::Object(map)),
                }));
            }
        },
        _ => {
            return Ok(Block::new(Body::Opaque {
                value: Box::new(Value::Object(map)),
            }));
        }
    };
    Ok(Block {
        body,
        extra: leftover(map),
        item: None,
    })
}

fn read_image_source(source: Option<&Value>) -> Option<ImageSource> {
    let src = source?.as_object()?;
    if src.len() == 3 && src.get("type")?.as_str()? == "base64" {
        return Some(ImageSource::Base64 {
            media_type: src.get("media_type")?.as_str()?.to_owned(),
            data: src.get("data")?.as_str()?.to_owned(),
        });
    }
    if src.len() == 2 && src.get("type")?.as_str()? == "url" {
        return Some(ImageSource::Url(src.get("url")?.as_str()?.to_owned()));
    }
    None
}

pub(crate) fn read_result_content(v: Option<Value>, index: usize, origin: Format) -> Result<ResultContent> {
    match v {
        None => Ok(ResultContent::Absent),
        Some(Value::String(s)) => Ok(ResultContent::Text(s)),
        Some(Value::Array(items)) => Ok(ResultContent::Parts(
            items
                .into_iter()
                .map(|b| read_block(b, index, origin))
                .collect::<Result<Vec<_>>>()?,
        )),
        Some(other) => Err(Error::invalid(
            index,
            format!(
                "tool_result block: `content` must be a string or a list of blocks, got {}",
                type_name(&other)
            ),
        )),
    }
}

// ---------------------------------------------------------------------------------------------

/// Write messages as an Anthropic request: the separate `system` parameter (from the leading
/// system and developer messages) and the `messages` list.
///
/// Tool messages from other formats become `tool_result` blocks; consecutive ones share one user
/// message, as the API requires. Thinking blocks without a signature and opaque blocks from other
/// formats have no Anthropic form and are left out.
pub fn write(messages: &[Message]) -> Result<(Option<Value>, Vec<Value>)> {
    let mut system_parts: Vec<&Message> = Vec::new();
    let mut out: Vec<Value> = Vec::with_capacity(messages.len());
    // Tool results from tool messages collected for one user message.
    let mut pending_results: Vec<Value> = Vec::new();
    let mut seen_conversation = false;
    for (index, m) in messages.iter().enumerate() {
        if m.role.is_instruction() {
            if seen_conversation {
                return Err(Error::Conversion {
                    index,
                    format: "anthropic",
                    reason: format!(
                        "a {} message after the conversation started has no place in the Anthropic Messages API \
                         (system instructions go in the separate `system` parameter)",
                        m.role.as_str()
                    ),
                });
            }
            system_parts.push(m);
            continue;
        }
        seen_conversation = true;
        let same = m.origin == Format::Anthropic || m.origin == Format::Native;
        if m.role == Role::Tool {
            // A tool message (Chat, JSONL, Responses) has its unknown keys at message level; here
            // its result is a block, which takes them.
            for b in m.blocks.iter() {
                if let Some(mut v) = write_block(b, same) {
                    if let Value::Object(block) = &mut v {
                        carry_extra(block, &m.extra, m.origin == Format::Anthropic);
                    }
                    pending_results.push(v);
                }
            }
            continue;
        }
        if !pending_results.is_empty() {
            out.push(user_with_blocks(std::mem::take(&mut pending_results)));
        }
        out.push(write_message(m));
    }
    if !pending_results.is_empty() {
        out.push(user_with_blocks(pending_results));
    }
    let system = write_system(&system_parts);
    Ok((system, out))
}

fn user_with_blocks(blocks: Vec<Value>) -> Value {
    Value::Object(obj(vec![
        ("role", Value::String("user".into())),
        ("content", Value::Array(blocks)),
    ]))
}

/// The `system` parameter: a string for one plain system message, else text blocks. The system
/// prompt has no message around it, so a system message's own unknown keys (`cache_control`, ...)
/// go on its last block.
fn write_system(parts: &[&Message]) -> Option<Value> {
    match parts {
        [] => None,
        [only] if !(only.origin != Format::Anthropic && carries_across(&only.extra)) => {
            let blocks: Vec<&Block> = only.blocks.iter().collect();
            if let Some(text) = single_text(&blocks, only.form, only.origin == Format::Anthropic) {
                return Some(Value::String(text.to_owned()));
            }
            Some(Value::Array(system_blocks(only)))
        }
        many => Some(Value::Array(many.iter().flat_map(|m| system_blocks(m)).collect())),
    }
}

fn system_blocks(m: &Message) -> Vec<Value> {
    let same = m.origin == Format::Anthropic;
    let mut blocks: Vec<Value> = m.blocks.iter().filter_map(|b| write_block(b, same)).collect();
    if let Some(Value::Object(last)) = blocks.last_mut() {
        carry_extra(last, &m.extra, same);
    }
    blocks
}

fn write_message(m: &Message) -> Value {
    let same = m.origin == Format::Anthropic;
    let role = if m.role == Role::Assistant { "assistant" } else { "user" };
    let mut out = Map::with_capacity(2 + m.extra.len());
    out.insert("role".into(), Value::String(role.into()));
    let has_tools = m
        .blocks
        .iter()
        .any(|b| matches!(b.body, Body::ToolUse { .. } | Body::ToolResult { .. }));
    let content_only: Vec<&Block> = content_blocks(m).collect();
    let as_string = if has_tools {
        None
    } else {
        single_text(&content_only, m.form, same)
    };
    match (as_string, m.form) {
        (Some(text), _) => {
            out.insert("content".into(), Value::String(text.to_owned()));
        }
        (None, ContentForm::Absent) if same && m.blocks.is_empty() => {}
        (None, ContentForm::Null) if same && m.blocks.is_empty() => {
            out.insert("content".into(), Value::Null);
        }
        (None, _) => {
            let blocks = m
                .blocks
                .iter()
                .filter(|b| same || !matches!(&b.body, Body::Text { text } if text.is_empty()))
                .filter_map(|b| write_block(b, same || m.origin == Format::Native))
                .collect();
            out.insert("content".into(), Value::Array(blocks));
        }
    }
    carry_extra(&mut out, &m.extra, same);
    for fields in item_fields(m) {
        carry_extra(&mut out, fields, same);
    }
    Value::Object(out)
}

/// Write one block in the Anthropic vocabulary. `same` says whether the block came from a format
/// whose extra fields and provider-bound blocks (thinking, opaque) are valid here.
pub(crate) fn write_block(b: &Block, same: bool) -> Option<Value> {
    write_block_opts(b, same, same)
}

/// [`write_block`] with the two meanings of "same format" apart: `extras` writes every unknown
/// field of the block (without it, all but the [`super::BOUND_KEYS`]), `bound` writes blocks that
/// only their own provider accepts (redacted thinking, opaque blocks).
pub(crate) fn write_block_opts(b: &Block, extras: bool, bound: bool) -> Option<Value> {
    let same = bound;
    let mut out = Map::new();
    match &b.body {
        Body::Text { text } => {
            out.insert("type".into(), "text".into());
            out.insert("text".into(), Value::String(text.clone()));
        }
        Body::ToolUse { id, name, input } => {
            out.insert("type".into(), "tool_use".into());
            out.insert("id".into(), Value::String(id.clone()));
            out.insert("name".into(), Value::String(name.clone()));
            out.insert("input".into(), input.to_object());
        }
        Body::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => {
            out.insert("type".into(), "tool_result".into());
            out.insert("tool_use_id".into(), Value::String(tool_use_id.clone()));
            match content {
                ResultContent::Text(s) => {
                    out.insert("content".into(), Value::String(s.clone()));
                }
                ResultContent::Parts(parts) => {
                    out.insert(
                        "content".into(),
                        Value::Array(
                            parts
                                .iter()
                                .filter_map(|p| write_block_opts(p, extras, bound))
                                .collect(),
                        ),
                    );
                }
                ResultContent::Absent => {}
            }
            if let Some(e) = is_error {
                out.insert("is_error".into(), Value::Bool(*e));
            }
        }
        Body::Thinking { thinking, signature } => {
            let signature = signature.as_ref()?;
            out.insert("type".into(), "thinking".into());
            out.insert("thinking".into(), Value::String(thinking.clone()));
            out.insert("signature".into(), Value::String(signature.clone()));
        }
        Body::RedactedThinking { data } => {
            if !same {
                return None;
            }
            out.insert("type".into(), "redacted_thinking".into());
            out.insert("data".into(), Value::String(data.clone()));
        }
        Body::Image { source } => {
            out.insert("type".into(), "image".into());
            let src = match source {
                ImageSource::Base64 { media_type, data } => obj(vec![
                    ("type", "base64".into()),
                    ("media_type", Value::String(media_type.clone())),
                    ("data", Value::String(data.clone())),
                ]),
                ImageSource::Url(url) => obj(vec![("type", "url".into()), ("url", Value::String(url.clone()))]),
            };
            out.insert("source".into(), Value::Object(src));
        }
        Body::Opaque { value } => {
            return same.then(|| Value::clone(value));
        }
    }
    carry_extra(&mut out, &b.extra, extras);
    if let Some(fields) = call_item_fields(b) {
        carry_extra(&mut out, fields, false);
    }
    Some(Value::Object(out))
}
