//! OpenAI Chat Completions messages: `{role, content, tool_calls}` and `{role: "tool",
//! tool_call_id, content}`.

use serde_json::{Map, Value};

use super::{
    call_item_fields, carry_extra, content_blocks, empty_content, into_object, item_fields, leftover, merge_extra, obj,
    single_text, take_chat_role, take_str, take_tool_call_id, tool_result_content, type_name,
};
use crate::error::{Error, Result};
use crate::model::{Block, Body, ContentForm, Format, ImageSource, Message, ResultContent, Role, ToolInput};

pub fn read(values: Vec<Value>) -> Result<Vec<Message>> {
    super::read_each(values, read_message)
}

pub fn read_message(v: Value, index: usize) -> Result<Message> {
    let mut map = into_object(v, index, "an OpenAI chat message")?;
    let role = take_chat_role(&mut map, index)?;
    if role == Role::Tool {
        let tool_use_id = take_tool_call_id(&mut map, index)?;
        let (content, form) = match map.shift_remove("content") {
            Some(Value::String(s)) => (ResultContent::Text(s), ContentForm::String),
            Some(Value::Array(parts)) => (ResultContent::Parts(read_parts(parts, index)?), ContentForm::Parts),
            Some(Value::Null) => (ResultContent::Text(String::new()), ContentForm::Null),
            None => (ResultContent::Absent, ContentForm::Absent),
            Some(other) => {
                return Err(Error::invalid(
                    index,
                    format!(
                        "tool message: `content` must be a string or a list of parts, got {}",
                        type_name(&other)
                    ),
                ));
            }
        };
        let block = Block::new(Body::ToolResult {
            tool_use_id,
            content,
            is_error: None,
        });
        return Ok(Message {
            role,
            blocks: std::sync::Arc::new([block]),
            form,
            origin: Format::OpenAiChat,
            extra: leftover(map),
        });
    }
    let content = map.shift_remove("content");
    if role != Role::Assistant || !map.contains_key("tool_calls") {
        // One text block (the common case) goes straight into the shared list, without a list
        // in between.
        if let Some(Value::String(text)) = content {
            return Ok(Message {
                role,
                blocks: std::sync::Arc::new([Block::new(Body::Text { text })]),
                form: ContentForm::String,
                origin: Format::OpenAiChat,
                extra: leftover(map),
            });
        }
    }
    let (mut blocks, form) = read_content(content, index)?;
    if role == Role::Assistant {
        match map.shift_remove("tool_calls") {
            Some(Value::Array(calls)) if !calls.is_empty() => {
                for call in calls {
                    blocks.push(read_tool_call(call, index)?);
                }
            }
            Some(other @ (Value::Array(_) | Value::Null)) => {
                // An empty list or null: nothing to model, but written back as it came.
                map.insert("tool_calls".into(), other);
            }
            Some(other) => {
                return Err(Error::invalid(
                    index,
                    format!("`tool_calls` must be a list, got {}", type_name(&other)),
                ));
            }
            None => {}
        }
    }
    Ok(Message {
        role,
        blocks: blocks.into(),
        form,
        origin: Format::OpenAiChat,
        extra: leftover(map),
    })
}

fn read_tool_call(call: Value, index: usize) -> Result<Block> {
    let mut map = into_object(call, index, "a tool call")?;
    let id = take_str(&mut map, "id", index, "tool call: ")?;
    let Some(function) = map.shift_remove("function") else {
        return Err(Error::invalid(index, format!("tool call {id:?}: missing `function`")));
    };
    let mut function = into_object(function, index, "a tool call's `function`")?;
    let name = take_str(&mut function, "name", index, "tool call function: ")?;
    let arguments = take_str(&mut function, "arguments", index, "tool call function: ")?;
    if !function.is_empty() {
        map.insert("function".into(), Value::Object(function));
    }
    Ok(Block {
        body: Body::ToolUse {
            id,
            name,
            input: ToolInput::Raw(arguments),
        },
        extra: leftover(map),
        item: None,
    })
}

fn read_content(content: Option<Value>, index: usize) -> Result<(Vec<Block>, ContentForm)> {
    match content {
        None => Ok((Vec::new(), ContentForm::Absent)),
        Some(Value::Null) => Ok((Vec::new(), ContentForm::Null)),
        Some(Value::String(text)) => Ok((vec![Block::new(Body::Text { text })], ContentForm::String)),
        Some(Value::Array(parts)) => Ok((read_parts(parts, index)?, ContentForm::Parts)),
        Some(other) => Err(Error::invalid(
            index,
            format!(
                "`content` must be a string, a list of parts or null, got {}",
                type_name(&other)
            ),
        )),
    }
}

fn read_parts(parts: Vec<Value>, index: usize) -> Result<Vec<Block>> {
    parts.into_iter().map(|p| read_part(p, index)).collect()
}

fn read_part(part: Value, index: usize) -> Result<Block> {
    let mut map = into_object(part, index, "a content part")?;
    let kind = match map.get("type") {
        Some(Value::String(s)) => s.as_str(),
        _ => return Err(Error::invalid(index, "a content part needs a string `type`")),
    };
    match kind {
        "text" => {
            map.shift_remove("type");
            let text = take_str(&mut map, "text", index, "text part: ")?;
            Ok(Block {
                body: Body::Text { text },
                extra: leftover(map),
                item: None,
            })
        }
        "image_url" => {
            let url = map
                .get("image_url")
                .and_then(|u| u.get("url"))
                .and_then(Value::as_str)
                .map(ImageSource::from_url);
            match url {
                Some(source) => {
                    map.shift_remove("type");
                    if let Some(Value::Object(mut image_url)) = map.shift_remove("image_url") {
                        image_url.shift_remove("url");
                        if !image_url.is_empty() {
                            map.insert("image_url".into(), Value::Object(image_url));
                        }
                    }
                    Ok(Block {
                        body: Body::Image { source },
                        extra: leftover(map),
                        item: None,
                    })
                }
                None => Ok(Block::new(Body::Opaque {
                    value: Box::new(Value::Object(map)),
                })),
            }
        }
        _ => Ok(Block::new(Body::Opaque {
            value: Box::new(Value::Object(map)),
        })),
    }
}

// ---------------------------------------------------------------------------------------------

/// Write messages as Chat Completions messages. Tool results held in other messages (Anthropic
/// user messages) become `tool` messages; thinking blocks have no Chat form and are left out.
pub fn write(messages: &[Message]) -> Vec<Value> {
    super::write_each(messages, write_message)
}

fn write_message(m: &Message, out: &mut Vec<Value>) {
    let same = m.origin == Format::OpenAiChat;
    // Tool results first: in Anthropic they open the user message that carries them.
    let mut results = 0usize;
    for b in m.blocks.iter() {
        if let Body::ToolResult {
            tool_use_id, content, ..
        } = &b.body
        {
            results += 1;
            out.push(tool_message(m, b, tool_use_id, content, same));
        }
    }
    let content: Vec<&Block> = content_blocks(m).filter(|b| same || writable(b)).collect();
    let calls: Vec<Value> = m.blocks.iter().filter_map(|b| write_call(b, same)).collect();
    if results > 0 && content.is_empty() && calls.is_empty() {
        return;
    }
    let role = match m.role {
        Role::Tool => "user",
        r => r.as_str(),
    };
    let mut msg = Map::with_capacity(3 + m.extra.len());
    msg.insert("role".into(), Value::String(role.into()));
    if let Some(text) = single_text(&content, m.form, same) {
        msg.insert("content".into(), Value::String(text.to_owned()));
    } else if content.is_empty() {
        if let Some(empty) = empty_content(m.form, same, !calls.is_empty()) {
            msg.insert("content".into(), empty);
        }
    } else {
        msg.insert(
            "content".into(),
            Value::Array(content.iter().filter_map(|b| write_part(b, same)).collect()),
        );
    }
    if !calls.is_empty() {
        msg.insert("tool_calls".into(), Value::Array(calls));
    }
    carry_extra(&mut msg, &m.extra, same);
    for fields in item_fields(m) {
        carry_extra(&mut msg, fields, same);
    }
    out.push(Value::Object(msg));
}

/// A tool result as a `tool` message (`b`, held in `m`).
fn tool_message(m: &Message, b: &Block, tool_use_id: &str, content: &ResultContent, same: bool) -> Value {
    let mut msg = obj(vec![
        ("role", "tool".into()),
        ("tool_call_id", Value::String(tool_use_id.to_owned())),
    ]);
    if let Some(c) = tool_result_content(m, content, same, write_part) {
        msg.insert("content".into(), c);
    }
    carry_extra(&mut msg, &m.extra, same);
    carry_extra(&mut msg, &b.extra, same);
    Value::Object(msg)
}

/// A tool call as an entry of `tool_calls`; `None` for any other block.
fn write_call(b: &Block, same: bool) -> Option<Value> {
    match &b.body {
        Body::ToolUse { id, name, input } => {
            let mut call = obj(vec![("id", Value::String(id.clone()))]);
            if !same {
                call.insert("type".into(), "function".into());
            }
            let mut function = obj(vec![
                ("name", Value::String(name.clone())),
                ("arguments", Value::String(input.to_arguments())),
            ]);
            if same {
                if let Some(Value::Object(f_extra)) = b.extra.get("function") {
                    merge_extra(&mut function, f_extra);
                }
            }
            call.insert("function".into(), Value::Object(function));
            // `function` is set: its unknown keys went inside it (same format) or stay behind.
            carry_extra(&mut call, &b.extra, same);
            if let Some(fields) = call_item_fields(b) {
                carry_extra(&mut call, fields, same);
            }
            Some(Value::Object(call))
        }
        _ => None,
    }
}

/// Blocks from other formats that Chat can carry.
fn writable(b: &Block) -> bool {
    matches!(b.body, Body::Text { .. } | Body::Image { .. })
}

fn write_part(b: &Block, same: bool) -> Option<Value> {
    let mut out = Map::new();
    match &b.body {
        Body::Text { text } => {
            out.insert("type".into(), "text".into());
            out.insert("text".into(), Value::String(text.clone()));
        }
        Body::Image { source } => {
            out.insert("type".into(), "image_url".into());
            let mut image_url = obj(vec![("url", Value::String(source.to_url()))]);
            if same {
                if let Some(Value::Object(extra)) = b.extra.get("image_url") {
                    merge_extra(&mut image_url, extra);
                }
            }
            out.insert("image_url".into(), Value::Object(image_url));
        }
        Body::Opaque { value } if same => return Some(Value::clone(value)),
        _ => return None,
    }
    // An image's `image_url` is set: its unknown keys went inside it (same format) or stay behind.
    carry_extra(&mut out, &b.extra, same);
    Some(Value::Object(out))
}
