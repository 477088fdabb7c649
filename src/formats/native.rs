//! The library's own JSON Lines format: one message per line.
//!
//! It is the normalized format of the shared transcript corpus, extended so that every message of
//! every other format fits without loss:
//!
//! ```text
//! {"role": "system"|"developer"|"user"|"assistant"|"tool",
//!  "content": "<str>" | null | [<block>, ...],
//!  "tool_calls": [{"id": "<str>", "name": "<str>", "arguments": "<JSON text>"}],   # assistant
//!  "tool_call_id": "<str>", "is_error": true|false,                               # tool
//!  ...any other key, kept as is}
//! ```
//!
//! Blocks use the Anthropic vocabulary (`text`, `image`, `thinking` with its `signature`,
//! `redacted_thinking`, `tool_use`, `tool_result`); any other block is kept verbatim. Tool calls
//! are written in `tool_calls` when they follow all other content (the usual case) and inline as
//! `tool_use` blocks otherwise, so their order is never lost.

use serde_json::{Map, Value};
use std::sync::Arc;

use super::anthropic::{read_content, read_result_content, write_block_opts};
use super::{
    call_item_fields, carry_extra, empty_content, into_object, item_fields, leftover, single_text, take_chat_role,
    take_opt_bool, take_str, take_tool_call_id, tool_result_content, type_name,
};
use crate::error::{Error, Result};
use crate::model::{Block, Body, ContentForm, Format, Message, ResultContent, Role, ToolInput};

pub fn read(values: Vec<Value>) -> Result<Vec<Message>> {
    super::read_each(values, read_message)
}

pub fn read_message(v: Value, index: usize) -> Result<Message> {
    let mut map = into_object(v, index, "a message")?;
    let role = take_chat_role(&mut map, index)?;
    if role == Role::Tool {
        let tool_use_id = take_tool_call_id(&mut map, index)?;
        let raw = map.shift_remove("content");
        let form = match &raw {
            Some(Value::String(_)) => ContentForm::String,
            Some(Value::Null) => ContentForm::Null,
            None => ContentForm::Absent,
            _ => ContentForm::Parts,
        };
        let content = match raw {
            Some(Value::Null) => ResultContent::Text(String::new()),
            other => read_result_content(other, index, Format::Native)?,
        };
        let is_error = take_opt_bool(&mut map, "is_error", index, "tool message: ")?;
        return Ok(Message {
            role,
            blocks: Arc::new([Block::new(Body::ToolResult {
                tool_use_id,
                content,
                is_error,
            })]),
            form,
            origin: Format::Native,
            extra: leftover(map),
        });
    }
    let (mut blocks, form) = read_content(map.shift_remove("content"), index, Format::Native)?;
    match map.shift_remove("tool_calls") {
        None => {}
        Some(Value::Array(calls)) if !calls.is_empty() => {
            for call in calls {
                blocks.push(read_flat_call(call, index)?);
            }
        }
        Some(other @ (Value::Array(_) | Value::Null)) => {
            map.insert("tool_calls".into(), other);
        }
        Some(other) => {
            return Err(Error::invalid(
                index,
                format!("`tool_calls` must be a list, got {}", type_name(&other)),
            ));
        }
    }
    Ok(Message {
        role,
        blocks: blocks.into(),
        form,
        origin: Format::Native,
        extra: leftover(map),
    })
}

fn read_flat_call(call: Value, index: usize) -> Result<Block> {
    let mut map = into_object(call, index, "a tool call")?;
    // Accept OpenAI's nested `function` too, so a Chat message pasted into a JSONL file loads.
    if let Some(Value::Object(function)) = map.shift_remove("function") {
        for (k, v) in function {
            map.entry(k).or_insert(v);
        }
        map.shift_remove("type");
    }
    let id = take_str(&mut map, "id", index, "tool call: ")?;
    let name = take_str(&mut map, "name", index, "tool call: ")?;
    let input = match map.shift_remove("arguments") {
        Some(Value::String(s)) => ToolInput::Raw(s),
        Some(v @ Value::Object(_)) => ToolInput::Json(Box::new(v)),
        Some(other) => {
            return Err(Error::invalid(
                index,
                format!(
                    "tool call {id:?}: `arguments` must be a JSON string or an object, got {}",
                    type_name(&other)
                ),
            ));
        }
        None => return Err(Error::invalid(index, format!("tool call {id:?}: missing `arguments`"))),
    };
    Ok(Block {
        body: Body::ToolUse { id, name, input },
        extra: leftover(map),
        item: None,
    })
}

// ---------------------------------------------------------------------------------------------

pub fn write(messages: &[Message]) -> Vec<Value> {
    super::write_each(messages, write_into)
}

/// One message in the native form. A message that holds tool results next to other content (an
/// Anthropic user message) becomes several native messages; this returns the first of them.
pub fn write_message(m: &Message) -> Value {
    let mut out = Vec::with_capacity(1);
    write_into(m, &mut out);
    out.into_iter().next().unwrap_or(Value::Null)
}

/// Write `m` as native messages: one `tool` message per tool result, then the rest of the
/// message (if anything is left), like OpenAI Chat.
fn write_into(m: &Message, out: &mut Vec<Value>) {
    let same = m.origin == Format::Native;
    let mut results = 0;
    for b in m.blocks.iter() {
        let Body::ToolResult {
            tool_use_id,
            content,
            is_error,
        } = &b.body
        else {
            continue;
        };
        results += 1;
        out.push(tool_message(m, b, tool_use_id, content, *is_error, same));
    }
    let rest: Vec<&Block> = m
        .blocks
        .iter()
        .filter(|b| !matches!(b.body, Body::ToolResult { .. }))
        .collect();
    if results > 0 && rest.is_empty() {
        return;
    }
    let mut msg = Map::with_capacity(3 + m.extra.len());
    let role = if m.role == Role::Tool { Role::User } else { m.role };
    msg.insert("role".into(), Value::String(role.as_str().into()));
    // Tool calls go into `tool_calls` when they all come after the other blocks.
    let first_call = rest.iter().position(|b| matches!(b.body, Body::ToolUse { .. }));
    let calls_trail = first_call.is_none_or(|i| rest[i..].iter().all(|b| matches!(b.body, Body::ToolUse { .. })));
    let content: Vec<&Block> = if calls_trail {
        rest.iter()
            .copied()
            .filter(|b| !matches!(b.body, Body::ToolUse { .. }))
            .collect()
    } else {
        rest.clone()
    };
    if let Some(text) = single_text(&content, m.form, same) {
        msg.insert("content".into(), Value::String(text.to_owned()));
    } else if content.is_empty() {
        if let Some(empty) = empty_content(m.form, same, false) {
            msg.insert("content".into(), empty);
        }
    } else {
        let blocks = content.iter().filter_map(|b| write_native_block(b, same)).collect();
        msg.insert("content".into(), Value::Array(blocks));
    }
    if calls_trail && first_call.is_some() {
        let calls = rest.iter().filter_map(|b| write_call(b, same)).collect();
        msg.insert("tool_calls".into(), Value::Array(calls));
    }
    carry_extra(&mut msg, &m.extra, same);
    for fields in item_fields(m) {
        carry_extra(&mut msg, fields, same);
    }
    out.push(Value::Object(msg));
}

/// A tool result as a native `tool` message (`b`, held in `m`).
fn tool_message(
    m: &Message,
    b: &Block,
    tool_use_id: &str,
    content: &ResultContent,
    is_error: Option<bool>,
    same: bool,
) -> Value {
    let mut msg = Map::new();
    msg.insert("role".into(), "tool".into());
    if let Some(c) = tool_result_content(m, content, same, write_native_block) {
        msg.insert("content".into(), c);
    }
    msg.insert("tool_call_id".into(), Value::String(tool_use_id.to_owned()));
    if let Some(e) = is_error {
        msg.insert("is_error".into(), Value::Bool(e));
    }
    carry_extra(&mut msg, &m.extra, same);
    carry_extra(&mut msg, &b.extra, same);
    Value::Object(msg)
}

/// A tool call as an entry of `tool_calls`; `None` for any other block.
fn write_call(b: &Block, same: bool) -> Option<Value> {
    match &b.body {
        Body::ToolUse { id, name, input } => {
            let mut call = Map::new();
            call.insert("id".into(), Value::String(id.clone()));
            call.insert("name".into(), Value::String(name.clone()));
            call.insert("arguments".into(), Value::String(input.to_arguments()));
            carry_extra(&mut call, &b.extra, same);
            if let Some(fields) = call_item_fields(b) {
                carry_extra(&mut call, fields, same);
            }
            Some(Value::Object(call))
        }
        _ => None,
    }
}

/// A block in the native vocabulary: Anthropic's blocks, with extras only from native blocks.
fn write_native_block(b: &Block, same: bool) -> Option<Value> {
    // Thinking without a signature (OpenAI reasoning summaries) still has a native form.
    if let Body::Thinking {
        thinking,
        signature: None,
    } = &b.body
    {
        let mut out = Map::new();
        out.insert("type".into(), "thinking".into());
        out.insert("thinking".into(), Value::String(thinking.clone()));
        carry_extra(&mut out, &b.extra, same);
        return Some(Value::Object(out));
    }
    write_block_opts(b, same, true)
}
