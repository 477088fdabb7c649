//! OpenAI Responses API input items.
//!
//! Items are a flat list: `message` items (or `{role, content}` shorthand), `function_call` /
//! `custom_tool_call`, their `*_output` items, `reasoning`, and many others. Consecutive items the
//! model produced (assistant messages, calls, reasoning, unknown output items) are grouped into one
//! assistant [`Message`], each block remembering the item it came from ([`ItemMeta`]), so the
//! conversation has the same shape as in the other formats and still writes back item by item.

use serde_json::{Map, Value};
use std::sync::Arc;

use super::{carry_extra, into_object, leftover, merge_extra, obj, take_opt_str, take_str, type_name};
use crate::error::{Error, Result};
use crate::model::{
    Block, Body, ContentForm, Extra, Format, ImageSource, ItemMeta, Message, ResultContent, Role, ToolInput,
};

pub fn read(values: Vec<Value>) -> Result<Vec<Message>> {
    let mut out: Vec<Message> = Vec::with_capacity(values.len());
    let mut group_open = false;
    for (index, v) in values.into_iter().enumerate() {
        push(&mut out, &mut group_open, v, index)?;
    }
    Ok(out)
}

/// Read the item `v` at `index` onto `out`: a new message, or more of the assistant turn that
/// `group_open` says the last message of `out` is (and still takes items).
pub(crate) fn push(out: &mut Vec<Message>, group_open: &mut bool, v: Value, index: usize) -> Result<()> {
    let map = into_object(v, index, "a Responses item")?;
    match read_item(map, index)? {
        Item::Standalone(m) => {
            out.push(m);
            *group_open = false;
        }
        Item::AssistantSide(blocks) => {
            match out.last_mut() {
                Some(last) if *group_open && joins(last, &blocks[0]) => {
                    last.blocks = last.blocks.iter().cloned().chain(blocks).collect();
                }
                _ => out.push(Message {
                    role: Role::Assistant,
                    blocks: blocks.into(),
                    form: ContentForm::Parts,
                    origin: Format::Responses,
                    extra: Extra::new(),
                }),
            }
            *group_open = true;
        }
    }
    Ok(())
}

/// Whether a message may absorb the next assistant-side item (used when items arrive one at a
/// time): a Responses assistant message.
pub fn is_open_group(m: &Message) -> bool {
    m.origin == Format::Responses && m.role == Role::Assistant && m.extra.is_empty()
}

/// Whether an assistant-side item opening with `first` belongs to the assistant turn `group`.
///
/// Consecutive items the model produced form one turn, except that a new message or reasoning
/// item after a turn that already said something and called nothing starts a new turn: that is
/// how two consecutive assistant messages are written, and it keeps them apart on the way back.
pub fn joins(group: &Message, first: &Block) -> bool {
    let opens_turn = match (&first.body, first.item.as_deref()) {
        (Body::Thinking { .. }, Some(_)) => true,
        (_, Some(meta)) => meta.fields.contains_key("role"),
        _ => false,
    };
    if !opens_turn {
        return true;
    }
    let said = group.blocks.iter().any(|b| matches!(b.body, Body::Text { .. }));
    let called = group.blocks.iter().any(|b| matches!(b.body, Body::ToolUse { .. }));
    !said || called
}

pub enum Item {
    Standalone(Message),
    AssistantSide(Vec<Block>),
}

pub fn read_item(mut map: Map<String, Value>, index: usize) -> Result<Item> {
    let kind = match map.get("type") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(Error::invalid(
                index,
                format!("`type` must be a string, got {}", type_name(other)),
            ));
        }
    };
    match kind.as_deref() {
        None | Some("message") => read_message_item(map, index),
        Some("function_call") => {
            let id = take_str(&mut map, "call_id", index, "function_call: ")?;
            let name = take_str(&mut map, "name", index, "function_call: ")?;
            let arguments = take_str(&mut map, "arguments", index, "function_call: ")?;
            Ok(Item::AssistantSide(vec![opening(
                Body::ToolUse {
                    id,
                    name,
                    input: ToolInput::Raw(arguments),
                },
                map,
                ContentForm::Absent,
            )]))
        }
        Some("custom_tool_call") => {
            let id = take_str(&mut map, "call_id", index, "custom_tool_call: ")?;
            let name = take_str(&mut map, "name", index, "custom_tool_call: ")?;
            let input = take_str(&mut map, "input", index, "custom_tool_call: ")?;
            Ok(Item::AssistantSide(vec![opening(
                Body::ToolUse {
                    id,
                    name,
                    input: ToolInput::Freeform(input),
                },
                map,
                ContentForm::Absent,
            )]))
        }
        Some("reasoning") => {
            let thinking = reasoning_text(&map);
            Ok(Item::AssistantSide(vec![opening(
                Body::Thinking {
                    thinking,
                    signature: None,
                },
                map,
                ContentForm::Absent,
            )]))
        }
        Some(k) if k.ends_with("_output") && map.contains_key("call_id") => read_output_item(map, index, k),
        // Everything else the model produced (web search calls, compaction items, ...) or that
        // only references one: kept verbatim in the assistant turn.
        Some(_) => Ok(Item::AssistantSide(vec![opening(
            Body::Opaque {
                value: Box::new(Value::Object(map)),
            },
            Map::new(),
            ContentForm::Absent,
        )])),
    }
}

/// The output items of calls to the caller's own tools, whose `output` is a string or a list of
/// parts.
const FUNCTION_OUTPUTS: [&str; 2] = ["function_call_output", "custom_tool_call_output"];

/// A `*_output` item with a `call_id`: the result of a call, as a tool message.
fn read_output_item(mut map: Map<String, Value>, index: usize, k: &str) -> Result<Item> {
    let what = format!("{k}: ");
    let tool_use_id = take_str(&mut map, "call_id", index, &what)?;
    let (content, form) = match map.shift_remove("output") {
        Some(Value::String(s)) => (ResultContent::Text(s), ContentForm::String),
        // A list of parts; a built-in tool's list of anything else (a `shell_call_output`'s
        // `{stdout, stderr, outcome}` objects) is one of its structured outputs, below.
        Some(Value::Array(parts)) if FUNCTION_OUTPUTS.contains(&k) || parts.iter().all(is_part) => (
            ResultContent::Parts(
                parts
                    .into_iter()
                    .map(|p| read_part(p, index))
                    .collect::<Result<_>>()
                    .map_err(|e| match e {
                        Error::InvalidMessage { index, reason } => Error::InvalidMessage {
                            index,
                            reason: format!("{k} {tool_use_id:?}: {reason}"),
                        },
                        other => other,
                    })?,
            ),
            ContentForm::Parts,
        ),
        // A function's output is a string or a list of parts (what the API takes), as a Chat
        // tool message's or an Anthropic tool_result's content is.
        Some(other) if FUNCTION_OUTPUTS.contains(&k) => {
            return Err(Error::invalid(
                index,
                format!(
                    "{k} {tool_use_id:?}: `output` must be a string or a list of parts, got {}",
                    type_name(&other)
                ),
            ));
        }
        // Structured outputs of built-in tools (computer screenshots, shell results): kept as they are, as one
        // opaque part, so that they are counted.
        Some(other) => (
            ResultContent::Parts(vec![Block::new(Body::Opaque { value: Box::new(other) })]),
            ContentForm::Value,
        ),
        None => (ResultContent::Absent, ContentForm::Absent),
    };
    Ok(Item::Standalone(Message {
        role: Role::Tool,
        blocks: Arc::new([Block::new(Body::ToolResult {
            tool_use_id,
            content,
            is_error: None,
        })]),
        form,
        origin: Format::Responses,
        extra: leftover(map),
    }))
}

/// Whether `v` reads as a content part: an object with a string `type`.
fn is_part(v: &Value) -> bool {
    matches!(v.get("type"), Some(Value::String(_)))
}

/// The structured output (neither a string nor a list) a built-in tool's output item held, which
/// the reader made the single opaque part of `m`'s result, when `m` is written back to Responses.
fn structured_output<'a>(m: &Message, parts: &'a [Block], same: bool) -> Option<&'a Value> {
    match parts {
        [
            Block {
                body: Body::Opaque { value },
                ..
            },
        ] if same && m.form == ContentForm::Value => Some(value),
        _ => None,
    }
}

fn opening(body: Body, fields: Map<String, Value>, form: ContentForm) -> Block {
    Block {
        body,
        extra: Extra::new(),
        item: Some(Box::new(ItemMeta {
            fields: leftover(fields),
            form,
        })),
    }
}

fn reasoning_text(map: &Map<String, Value>) -> String {
    let mut out = String::new();
    for key in ["summary", "content"] {
        if let Some(Value::Array(parts)) = map.get(key) {
            for p in parts {
                if let Some(t) = p.get("text").and_then(Value::as_str) {
                    if !out.is_empty() {
                        out.push_str("\n\n");
                    }
                    out.push_str(t);
                }
            }
        }
    }
    out
}

fn read_message_item(mut map: Map<String, Value>, index: usize) -> Result<Item> {
    let role_name = match map.shift_remove("role") {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(Error::invalid(
                index,
                format!("`role` must be a string, got {}", type_name(&other)),
            ));
        }
        None => return Err(Error::invalid(index, "a message item needs a `role`")),
    };
    let role = match Role::parse(&role_name) {
        Some(r) if r != Role::Tool => r,
        _ => {
            return Err(Error::invalid(
                index,
                format!(
                    "unknown role {role_name:?} for a Responses message (expected \"system\", \"developer\", \"user\" or \"assistant\")"
                ),
            ));
        }
    };
    let (blocks, form) = match map.shift_remove("content") {
        Some(Value::String(text)) => (vec![Block::new(Body::Text { text })], ContentForm::String),
        Some(Value::Array(parts)) => (
            parts
                .into_iter()
                .map(|p| read_part(p, index))
                .collect::<Result<Vec<_>>>()?,
            ContentForm::Parts,
        ),
        Some(other) => {
            return Err(Error::invalid(
                index,
                format!(
                    "`content` must be a string or a list of parts, got {}",
                    type_name(&other)
                ),
            ));
        }
        None => return Err(Error::invalid(index, "a message item needs `content`")),
    };
    if role == Role::Assistant {
        let mut blocks = blocks;
        map.insert("role".into(), Value::String(role_name));
        if blocks.is_empty() {
            // Nothing to hang the item on: keep the item itself.
            map.insert("content".into(), Value::Array(Vec::new()));
            return Ok(Item::AssistantSide(vec![opening(
                Body::Opaque {
                    value: Box::new(Value::Object(map)),
                },
                Map::new(),
                ContentForm::Absent,
            )]));
        }
        blocks[0].item = Some(Box::new(ItemMeta {
            fields: leftover(map),
            form,
        }));
        return Ok(Item::AssistantSide(blocks));
    }
    Ok(Item::Standalone(Message {
        role,
        blocks: blocks.into(),
        form,
        origin: Format::Responses,
        extra: leftover(map),
    }))
}

fn read_part(part: Value, index: usize) -> Result<Block> {
    let mut map = into_object(part, index, "a content part")?;
    let kind = match map.get("type") {
        Some(Value::String(s)) => s.as_str(),
        _ => return Err(Error::invalid(index, "a content part needs a string `type`")),
    };
    match kind {
        // `type` stays in `extra`: input_text and output_text both appear in inputs.
        "input_text" | "output_text" => {
            let text = take_str(&mut map, "text", index, "text part: ")?;
            Ok(Block {
                body: Body::Text { text },
                extra: leftover(map),
                item: None,
            })
        }
        "input_image" if matches!(map.get("image_url"), Some(Value::String(_))) => {
            let url = take_opt_str(&mut map, "image_url", index, "image part: ")?.unwrap_or_default();
            Ok(Block {
                body: Body::Image {
                    source: ImageSource::from_url(&url),
                },
                extra: leftover(map),
                item: None,
            })
        }
        _ => Ok(Block::new(Body::Opaque {
            value: Box::new(Value::Object(map)),
        })),
    }
}

// ---------------------------------------------------------------------------------------------

pub fn write(messages: &[Message]) -> Vec<Value> {
    super::write_each(messages, write_message)
}

fn write_message(m: &Message, out: &mut Vec<Value>) {
    let same = m.origin == Format::Responses;
    if m.role == Role::Assistant {
        write_assistant(m, same, out);
    } else {
        {
            let mut rest: Vec<&Block> = Vec::new();
            for b in m.blocks.iter() {
                if let Body::ToolResult {
                    tool_use_id, content, ..
                } = &b.body
                {
                    let mut item = Map::new();
                    if !(same && m.extra.contains_key("type")) {
                        item.insert("type".into(), "function_call_output".into());
                    }
                    item.insert("call_id".into(), Value::String(tool_use_id.clone()));
                    match content {
                        ResultContent::Text(s) => {
                            item.insert("output".into(), Value::String(s.clone()));
                        }
                        ResultContent::Parts(parts) => {
                            let output = structured_output(m, parts, same).cloned().unwrap_or_else(|| {
                                Value::Array(parts.iter().filter_map(|p| write_part(p, "input_text", same)).collect())
                            });
                            item.insert("output".into(), output);
                        }
                        ResultContent::Absent => {
                            if !(same && m.extra.contains_key("output")) {
                                item.insert("output".into(), Value::String(String::new()));
                            }
                        }
                    }
                    carry_extra(&mut item, &m.extra, same);
                    carry_extra(&mut item, &b.extra, same);
                    out.push(Value::Object(item));
                } else {
                    rest.push(b);
                }
            }
            if m.role == Role::Tool || (rest.is_empty() && m.is_tool_results_only()) {
                return;
            }
            let mut item = Map::new();
            item.insert("role".into(), Value::String(m.role.as_str().into()));
            let single = super::single_text(&rest, m.form, same);
            if let Some(text) = single {
                item.insert("content".into(), Value::String(text.to_owned()));
            } else {
                if !same {
                    item.insert("type".into(), "message".into());
                }
                item.insert(
                    "content".into(),
                    Value::Array(rest.iter().filter_map(|p| write_part(p, "input_text", same)).collect()),
                );
            }
            carry_extra(&mut item, &m.extra, same);
            out.push(Value::Object(item));
        }
    }
}

fn write_assistant(m: &Message, same: bool, out: &mut Vec<Value>) {
    let first_item = out.len();
    // The message item being filled with parts, and whether it was written as a string.
    let mut open: Option<Map<String, Value>> = None;
    let flush = |open: &mut Option<Map<String, Value>>, out: &mut Vec<Value>| {
        if let Some(item) = open.take() {
            out.push(Value::Object(item));
        }
    };
    for b in m.blocks.iter() {
        let meta = if same { b.item.as_deref() } else { None };
        match (&b.body, meta) {
            (Body::ToolUse { id, name, input }, meta) => {
                flush(&mut open, out);
                let mut item = Map::new();
                let freeform = matches!(input, ToolInput::Freeform(_));
                if meta.is_none_or(|mm| !mm.fields.contains_key("type")) {
                    item.insert(
                        "type".into(),
                        if freeform { "custom_tool_call" } else { "function_call" }.into(),
                    );
                }
                item.insert("call_id".into(), Value::String(id.clone()));
                item.insert("name".into(), Value::String(name.clone()));
                match input {
                    ToolInput::Freeform(s) => item.insert("input".into(), Value::String(s.clone())),
                    other => item.insert("arguments".into(), Value::String(other.to_arguments())),
                };
                if let Some(mm) = meta {
                    merge_extra(&mut item, &mm.fields);
                }
                carry_extra(&mut item, &b.extra, same);
                out.push(Value::Object(item));
            }
            (Body::Thinking { .. }, Some(mm)) => {
                flush(&mut open, out);
                out.push(Value::Object(mm.fields.clone().into_map()));
            }
            (Body::Thinking { .. } | Body::RedactedThinking { .. }, _) => {}
            (Body::Opaque { value }, Some(_)) => {
                flush(&mut open, out);
                out.push(Value::clone(value));
            }
            (_, Some(mm)) => {
                flush(&mut open, out);
                let mut item = Map::new();
                item.insert("role".into(), "assistant".into());
                if mm.form == ContentForm::String {
                    if let Body::Text { text } = &b.body {
                        item.insert("content".into(), Value::String(text.clone()));
                    }
                } else {
                    let part = write_part(b, "output_text", true);
                    item.insert("content".into(), Value::Array(part.into_iter().collect()));
                }
                merge_extra(&mut item, &mm.fields);
                open = Some(item);
            }
            (Body::Opaque { .. }, None) if !same => {}
            (_, None) => {
                // A part continuing the open message item, or (from another format) text that
                // starts a new assistant message item.
                let Some(part) = write_part(b, "output_text", same) else {
                    continue;
                };
                if let Some(Value::Array(parts)) = open.as_mut().and_then(|i| i.get_mut("content")) {
                    parts.push(part);
                } else {
                    flush(&mut open, out);
                    let mut item = obj(vec![("type", "message".into()), ("role", "assistant".into())]);
                    item.insert("content".into(), Value::Array(vec![part]));
                    open = Some(item);
                }
            }
        }
    }
    flush(&mut open, out);
    // From another format the turn's own unknown keys go on its first item (Responses has no
    // turn); from Responses they are on the items already.
    if !same {
        if let Some(Value::Object(item)) = out.get_mut(first_item) {
            carry_extra(item, &m.extra, false);
        }
    }
}

fn write_part(b: &Block, text_type: &str, same: bool) -> Option<Value> {
    let mut out = Map::new();
    match &b.body {
        Body::Text { text } => {
            if !(same && b.extra.contains_key("type")) {
                out.insert("type".into(), Value::String(text_type.into()));
            }
            out.insert("text".into(), Value::String(text.clone()));
        }
        Body::Image { source } => {
            if !(same && b.extra.contains_key("type")) {
                out.insert("type".into(), "input_image".into());
            }
            out.insert("image_url".into(), Value::String(source.to_url()));
        }
        Body::Opaque { value } => return same.then(|| Value::clone(value)),
        _ => return None,
    }
    carry_extra(&mut out, &b.extra, same);
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tokens::{Encoding, count_message};

    fn output(kind: &str, output: &Value) -> Value {
        json!({"type": kind, "call_id": "c1", "output": output})
    }

    #[test]
    fn a_function_output_neither_text_nor_parts_is_refused_naming_the_item() {
        for kind in FUNCTION_OUTPUTS {
            for value in [json!({"rows": [1, 2]}), json!(3), json!(null)] {
                let err =
                    read(vec![json!({"role": "user", "content": "go"}), output(kind, &value)]).expect_err("refused");
                let Error::InvalidMessage { index, reason } = err else {
                    panic!("{err:?}")
                };
                assert_eq!(index, 1);
                assert!(
                    reason.starts_with(&format!("{kind} \"c1\": `output` must be")),
                    "{reason}"
                );
            }
        }
    }

    #[test]
    fn a_built_in_structured_output_is_counted_and_written_back_as_it_came() {
        let shot =
            json!({"type": "computer_screenshot", "image_url": format!("data:image/png;base64,{}", "A".repeat(4000))});
        let item = output("computer_call_output", &shot);
        let messages = read(vec![item.clone()]).unwrap();
        assert_eq!(messages[0].form, ContentForm::Value);
        let counted = count_message(Encoding::Approximate, &messages[0]).total;
        assert!(
            counted > Encoding::approximate(shot.to_string().chars().count()) - 1,
            "{counted}"
        );
        assert_eq!(write(&messages), vec![item]);
        // To another format it has no form: an empty text, as before.
        let chat = crate::formats::openai_chat::write(&messages);
        assert_eq!(chat[0]["content"], json!(""));
    }
}
