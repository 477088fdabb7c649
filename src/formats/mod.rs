//! Readers and writers for every supported wire format.
//!
//! Readers take owned `serde_json::Value`s (so strings move into the model without copies) and
//! report the index of the offending message. Writers never fail except where a target format has
//! no way to express a message (an Anthropic system message in the middle of a conversation).

pub mod anthropic;
pub mod detect;
pub mod file;
pub mod native;
pub mod openai_chat;
pub mod responses;

use std::borrow::Cow;
use std::ops::ControlFlow;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::model::{Block, Body, ContentForm, Extra, Format, Message, ResultContent};

/// Read `values` in `format` into messages.
pub fn read(format: Format, values: Vec<Value>) -> Result<Vec<Message>> {
    Reader::read_all(format, None, values)
}

/// Read `values` in `format`, or in the format detected from them when `format` is `None` (an
/// Anthropic `system` parameter implies Anthropic; plain messages default to OpenAI Chat).
/// Returns the format used.
pub fn read_any(values: Vec<Value>, format: Option<Format>, system: Option<Value>) -> Result<(Format, Vec<Message>)> {
    let format = format
        .or_else(|| system.as_ref().map(|_| Format::Anthropic))
        .or_else(|| detect::detect(&values))
        .unwrap_or(Format::OpenAiChat);
    Ok((format, Reader::read_all(format, system, values)?))
}

/// Reads messages one value at a time in a known format, so that whoever produces the values (a
/// file being parsed, a Python list being converted) can hand each over as soon as it exists and
/// never holds them all: a value is consumed as it is read (its strings move into the message).
pub struct Reader {
    format: Format,
    out: Vec<Message>,
    /// The index of the next value, as errors name it.
    next: usize,
    /// Messages read from an Anthropic `system` parameter, ahead of the values (errors name a
    /// value by its position among all the messages).
    shift: usize,
    /// Responses: the last message is an assistant turn that the next item may join.
    group_open: bool,
}

impl Reader {
    /// A reader of `format`. `system` is an Anthropic request's separate `system` parameter (a
    /// string or a list of text blocks), read at once into the first messages; only Anthropic
    /// has one, and it is ignored for the other formats.
    pub fn new(format: Format, system: Option<Value>) -> Result<Reader> {
        let out = match system {
            Some(system) if format == Format::Anthropic => anthropic::read_system(system)?,
            _ => Vec::new(),
        };
        Ok(Reader {
            format,
            shift: out.len(),
            out,
            next: 0,
            group_open: false,
        })
    }

    /// Read all of `values` in `format` (`system` as in [`Reader::new`]).
    pub fn read_all(format: Format, system: Option<Value>, values: Vec<Value>) -> Result<Vec<Message>> {
        let mut reader = Reader::new(format, system)?;
        reader.out.reserve(values.len());
        for v in values {
            reader.push(v)?;
        }
        Ok(reader.finish())
    }

    /// Read the next value.
    pub fn push(&mut self, v: Value) -> Result<()> {
        let index = self.next;
        self.next += 1;
        match self.format {
            Format::Native => self.out.push(native::read_message(v, index)?),
            Format::OpenAiChat => self.out.push(openai_chat::read_message(v, index)?),
            Format::Anthropic => self
                .out
                .push(anthropic::read_message(v, index).map_err(|e| e.offset_index(self.shift))?),
            Format::Responses => responses::push(&mut self.out, &mut self.group_open, v, index)?,
        }
        Ok(())
    }

    /// The messages read.
    pub fn finish(self) -> Vec<Message> {
        self.out
    }
}

/// Read messages from values produced one at a time, in `format`, or when it is `None` in the
/// format detected from them (an Anthropic `system` parameter implies Anthropic; `fallback` when
/// nothing tells) — what [`read_any`] gives for the same values, without ever holding them all.
///
/// `pass` goes over the values from the first, giving each to the function it is handed, and
/// stops early when that function says [`ControlFlow::Break`]. With no format named, values are
/// read in the format the ones seen so far point to; when a later value points elsewhere the pass
/// is stopped and `pass` is called again to read every value over in the new guess. The guess
/// only moves up the order detection resolves in (Responses, JSON Lines, OpenAI Chat, Anthropic
/// over nothing), so this happens at most four times, and in practice only when the first
/// messages are plain text (a file in one format tells on its first tool call). An error from
/// `pass` (a value that cannot be produced) is returned as it is; a value that cannot be read is
/// reported once every value has been seen, and only if the format is still the one it was read
/// in (as with [`read_any`], which detects over all values before reading).
pub fn read_stream<E: From<Error>>(
    format: Option<Format>,
    fallback: Format,
    mut system: Option<Value>,
    mut pass: impl FnMut(&mut dyn FnMut(Value) -> ControlFlow<()>) -> std::result::Result<(), E>,
) -> std::result::Result<(Format, Vec<Message>), E> {
    // A named format (or the one a `system` parameter implies) is read in one pass.
    let named = format.or_else(|| system.as_ref().map(|_| Format::Anthropic));
    let mut detector = detect::Detector::default();
    let mut guess = named.unwrap_or(fallback);
    loop {
        let mut reader = Reader::new(guess, system.take())?;
        let mut failed = None;
        let mut moved = false;
        pass(&mut |v| {
            if named.is_none() {
                detector.see(&v);
                let now = detector.format().unwrap_or(fallback);
                if now != guess {
                    guess = now;
                    moved = true;
                    return ControlFlow::Break(());
                }
            }
            if failed.is_none() {
                if let Err(e) = reader.push(v) {
                    failed = Some(e);
                }
            }
            ControlFlow::Continue(())
        })?;
        if !moved {
            return match failed {
                Some(e) => Err(e.into()),
                None => Ok((guess, reader.finish())),
            };
        }
    }
}

/// `messages` as a provider request in `target` may carry them: a message read from another
/// format keeps no unknown field, on the message, its blocks or its Responses items (a provider
/// rejects fields its API does not define, and another format's fields are not its own), while
/// one read from `target` keeps them all. Borrowed when nothing is foreign.
pub fn for_request(messages: &[Message], target: Format) -> Cow<'_, [Message]> {
    let foreign = |m: &Message| {
        m.origin != target
            && (!m.extra.is_empty()
                || m.blocks
                    .iter()
                    .any(|b| !b.extra.is_empty() || b.item.as_ref().is_some_and(|i| !i.fields.is_empty())))
    };
    if !messages.iter().any(foreign) {
        return Cow::Borrowed(messages);
    }
    Cow::Owned(
        messages
            .iter()
            .map(|m| {
                if !foreign(m) {
                    return m.clone();
                }
                let mut m = m.clone();
                m.extra.clear();
                let blocks: Vec<Block> = m
                    .blocks
                    .iter()
                    .map(|b| {
                        let mut b = b.clone();
                        b.extra.clear();
                        if let Some(item) = b.item.as_mut() {
                            item.fields.clear();
                        }
                        b
                    })
                    .collect();
                m.blocks = blocks.into();
                m
            })
            .collect(),
    )
}

/// Write `messages` in `format`. For Anthropic the system messages at the start are written as
/// the first element of the result only when `anthropic_system_inline` is set; use
/// [`anthropic::write`] to get the separate `system` parameter.
pub fn write(format: Format, messages: &[Message]) -> Result<Vec<Value>> {
    Ok(match format {
        Format::Native => native::write(messages),
        Format::OpenAiChat => openai_chat::write(messages),
        Format::Responses => responses::write(messages),
        Format::Anthropic => {
            let (system, mut msgs) = anthropic::write(messages)?;
            if let Some(system) = system {
                let mut m = Map::new();
                m.insert("role".into(), Value::String("system".into()));
                m.insert("content".into(), system);
                msgs.insert(0, Value::Object(m));
            }
            msgs
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Shared helpers for readers.

pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

pub(crate) fn into_object(v: Value, index: usize, what: &str) -> Result<Map<String, Value>> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(Error::invalid(
            index,
            format!("{what} must be an object, got {}", type_name(&other)),
        )),
    }
}

/// Remove `key` and require a string when present.
pub(crate) fn take_opt_str(
    map: &mut Map<String, Value>,
    key: &str,
    index: usize,
    what: &str,
) -> Result<Option<String>> {
    match map.shift_remove(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(Error::invalid(
            index,
            format!("{what}`{key}` must be a string, got {}", type_name(&other)),
        )),
    }
}

/// Remove `key` and require a string.
pub(crate) fn take_str(map: &mut Map<String, Value>, key: &str, index: usize, what: &str) -> Result<String> {
    take_opt_str(map, key, index, what)?.ok_or_else(|| Error::invalid(index, format!("{what}missing `{key}`")))
}

pub(crate) fn take_opt_bool(map: &mut Map<String, Value>, key: &str, index: usize, what: &str) -> Result<Option<bool>> {
    match map.shift_remove(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(other) => Err(Error::invalid(
            index,
            format!("{what}`{key}` must be a boolean, got {}", type_name(&other)),
        )),
    }
}

pub(crate) fn take_role(map: &mut Map<String, Value>, index: usize) -> Result<String> {
    match map.shift_remove("role") {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(Error::invalid(
            index,
            format!("`role` must be a string, got {}", type_name(&other)),
        )),
        None => Err(Error::invalid(index, "missing `role`")),
    }
}

/// The role of a Chat or native message: one of `system`, `developer`, `user`, `assistant`, `tool`.
pub(crate) fn take_chat_role(map: &mut Map<String, Value>, index: usize) -> Result<crate::model::Role> {
    let role_name = take_role(map, index)?;
    crate::model::Role::parse(&role_name).ok_or_else(|| {
        Error::invalid(
            index,
            format!(
                "unknown role {role_name:?} (expected \"system\", \"developer\", \"user\", \"assistant\" or \"tool\")"
            ),
        )
    })
}

/// The `tool_call_id` of a Chat or native tool message.
pub(crate) fn take_tool_call_id(map: &mut Map<String, Value>, index: usize) -> Result<String> {
    match map.shift_remove("tool_call_id") {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(Error::invalid(
            index,
            format!(
                "tool message: `tool_call_id` must be a string, got {}",
                type_name(&other)
            ),
        )),
        None => Err(Error::invalid(index, "tool message without `tool_call_id`")),
    }
}

/// Messages read one by one, each by `read` with its index (for errors).
pub(crate) fn read_each(values: Vec<Value>, read: impl Fn(Value, usize) -> Result<Message>) -> Result<Vec<Message>> {
    values.into_iter().enumerate().map(|(i, v)| read(v, i)).collect()
}

/// The `content` of a message with no content block to write, as it was read (`form`) when it
/// is written in its own format (`same`): none, `null` or `[]`; otherwise `""`, or `null` where
/// `null_otherwise` (a Chat message that carries calls). `None`: no `content` key.
pub(crate) fn empty_content(form: ContentForm, same: bool, null_otherwise: bool) -> Option<Value> {
    match (form, same) {
        (ContentForm::Absent, true) => None,
        (ContentForm::Null, _) => Some(Value::Null),
        (ContentForm::Parts, true) => Some(Value::Array(Vec::new())),
        _ if null_otherwise => Some(Value::Null),
        _ => Some(Value::String(String::new())),
    }
}

/// Messages written one by one into one list (a message may become several values).
pub(crate) fn write_each(
    messages: &[crate::model::Message],
    write: impl Fn(&crate::model::Message, &mut Vec<Value>),
) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        write(m, &mut out);
    }
    out
}

pub(crate) fn obj(pairs: Vec<(&str, Value)>) -> Map<String, Value> {
    let mut m = Map::with_capacity(pairs.len() + 2);
    for (k, v) in pairs {
        m.insert(k.to_owned(), v);
    }
    m
}

/// What is left of an object read from the input once the fields the model knows were taken out,
/// kept as a message's, block's or item's unknown fields. An empty map owns no allocation; a
/// non-empty one is rebuilt at its size. Without this every message and block kept the table the
/// whole object was read into (room for `role`, `content`, `tool_calls`, ...: ~0.5 KB each, half
/// the memory of a conversation of short messages).
pub(crate) fn leftover(map: Map<String, Value>) -> Extra {
    if map.is_empty() {
        Extra::new()
    } else {
        map.into_iter().collect()
    }
}

/// Append `extra` to `out` without overwriting the keys the writer set.
pub(crate) fn merge_extra<'a>(out: &mut Map<String, Value>, extra: impl IntoIterator<Item = (&'a String, &'a Value)>) {
    for (k, v) in extra {
        if !out.contains_key(k) {
            out.insert(k.clone(), v.clone());
        }
    }
}

/// Keys of an `extra` map that spell the structure of the format it was read from rather than
/// data: `type` (a Responses item or part type, an Anthropic response's `"message"`, Chat's
/// `"function"` on a call), `function` and `image_url` (Chat's nested call and image objects, whose
/// own unknown keys stay inside them) and `role`, `content`, `output` (the Responses fields kept
/// on the items the model produced). They are written back to their own format only; every other
/// unknown key is written to every format.
pub(crate) const BOUND_KEYS: [&str; 6] = ["type", "function", "image_url", "role", "content", "output"];

/// Append the unknown keys `extra` to `out` without overwriting the keys the writer set: all of
/// them when the message came from the format being written (`same`), else all but the
/// [`BOUND_KEYS`].
pub(crate) fn carry_extra(out: &mut Map<String, Value>, extra: &Extra, same: bool) {
    for (k, v) in extra {
        if (same || !BOUND_KEYS.contains(&k.as_str())) && !out.contains_key(k) {
            out.insert(k.clone(), v.clone());
        }
    }
}

/// Whether [`carry_extra`] writes any key of `extra` from another format.
pub(crate) fn carries_across(extra: &Extra) -> bool {
    extra.keys().any(|k| !BOUND_KEYS.contains(&k.as_str()))
}

/// The unknown keys a message holds outside its `extra` map: the fields of the Responses
/// `message` items an assistant turn read from Responses was built from (its `id`, `status`, ...).
/// Written at message level when the turn goes to another format.
pub(crate) fn item_fields(m: &Message) -> impl Iterator<Item = &Extra> {
    m.blocks.iter().filter_map(|b| match (&b.body, b.item.as_deref()) {
        (Body::Text { .. } | Body::Image { .. }, Some(meta)) => Some(&meta.fields),
        _ => None,
    })
}

/// The fields of the Responses item a tool call was read from (`id`, `status`, ...), written on
/// the call when it goes to another format (its `id` there is the call id, so the item's is not).
pub(crate) fn call_item_fields(b: &Block) -> Option<&Extra> {
    match (&b.body, b.item.as_deref()) {
        (Body::ToolUse { .. }, Some(meta)) => Some(&meta.fields),
        _ => None,
    }
}

/// The blocks of a message that go into `content` (everything but tool calls and results).
pub(crate) fn content_blocks(m: &Message) -> impl Iterator<Item = &Block> {
    m.blocks
        .iter()
        .filter(|b| !matches!(b.body, Body::ToolUse { .. } | Body::ToolResult { .. }))
}

/// The `content` of a tool result written as a `tool` message (native and Chat alike): the
/// text, or the parts each written by `write_part` (the format's own block writer; a part it
/// cannot write is left out); `null` for an empty text read as `null` from the same format;
/// nothing (`None`) for a result without content from the same format, an empty string from
/// another.
pub(crate) fn tool_result_content(
    m: &Message,
    content: &ResultContent,
    same: bool,
    write_part: impl Fn(&Block, bool) -> Option<Value>,
) -> Option<Value> {
    match content {
        ResultContent::Text(s) if same && m.form == ContentForm::Null && s.is_empty() => Some(Value::Null),
        ResultContent::Text(s) => Some(Value::String(s.clone())),
        // A built-in tool's structured output has no form in another format.
        ResultContent::Parts(_) if !same && m.form == ContentForm::Value => Some(Value::String(String::new())),
        ResultContent::Parts(parts) => Some(Value::Array(parts.iter().filter_map(|p| write_part(p, same)).collect())),
        ResultContent::Absent => (!same).then(|| Value::String(String::new())),
    }
}

/// The text to write as a plain-string `content`, if the content blocks allow it: exactly one text
/// block, and either the source wrote a string (same format) or the message came from another
/// format (where its form carries no meaning and a string is the most natural rendering) and the
/// block has no unknown keys to carry (a string has no place for them).
pub(crate) fn single_text<'a>(blocks: &[&'a Block], form: ContentForm, same_origin: bool) -> Option<&'a str> {
    let [only] = blocks else { return None };
    let Body::Text { text } = &only.body else { return None };
    let fits = if same_origin {
        form == ContentForm::String
    } else {
        !carries_across(&only.extra)
    };
    fits.then_some(text.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_keys_go_to_every_format_and_structure_keys_stay_behind() {
        let chat = vec![
            json!({"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}], "id": "m1"}),
            json!({"role": "assistant", "content": null, "type": "message", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}, "custom": 1}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "ok", "metadata": {"k": 2}}),
        ];
        let messages = read(Format::OpenAiChat, chat).unwrap();
        let anthropic = write(Format::Anthropic, &messages).unwrap();
        assert_eq!(anthropic[0]["id"], "m1");
        assert_eq!(anthropic[0]["content"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(anthropic[1]["content"][0]["custom"], 1);
        assert!(
            anthropic[1].get("type").is_none(),
            "Chat's `type` is not an Anthropic key"
        );
        assert_eq!(anthropic[2]["content"][0]["metadata"]["k"], 2);
        let items = write(Format::Responses, &messages).unwrap();
        assert_eq!(items[0]["id"], "m1");
        assert_eq!(items[1]["type"], "function_call");
        assert_eq!(items[1]["custom"], 1);
        assert_eq!(items[2]["metadata"]["k"], 2);
        let native = write(Format::Native, &messages).unwrap();
        assert_eq!(native[1]["tool_calls"][0]["custom"], 1);
        assert!(native[1]["tool_calls"][0].get("type").is_none());
        // Read back from each, and the keys come back in Chat where they were.
        for (format, values) in [
            (Format::Anthropic, anthropic),
            (Format::Responses, items),
            (Format::Native, native),
        ] {
            let back = write(Format::OpenAiChat, &read(format, values).unwrap()).unwrap();
            assert_eq!(back[0]["id"], "m1");
            assert_eq!(back[1]["tool_calls"][0]["custom"], 1);
            assert_eq!(back[2]["metadata"]["k"], 2);
        }
    }

    #[test]
    fn tool_messages_write_one_result_content_shape_in_chat_and_native() {
        let cases = [
            (
                json!({"role": "tool", "tool_call_id": "c1", "content": null}),
                Some(Value::Null),
                Some(json!("")),
            ),
            (
                json!({"role": "tool", "tool_call_id": "c1", "content": "ok"}),
                Some(json!("ok")),
                Some(json!("ok")),
            ),
            (
                json!({"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "a"}]}),
                Some(json!([{"type": "text", "text": "a"}])),
                Some(json!([{"type": "text", "text": "a"}])),
            ),
        ];
        for (value, same, across) in cases {
            let messages = read(Format::OpenAiChat, vec![json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}), value.clone()]).unwrap();
            let chat = write(Format::OpenAiChat, &messages).unwrap();
            assert_eq!(chat[1].get("content").cloned(), same, "{value}");
            let native = write(Format::Native, &messages).unwrap();
            assert_eq!(native[1].get("content").cloned(), across, "{value}");
            assert_eq!(native[1]["tool_call_id"], "c1");
            // And back: native read back writes native's own content unchanged.
            let again = write(Format::Native, &read(Format::Native, native.clone()).unwrap()).unwrap();
            assert_eq!(again[1].get("content"), native[1].get("content"));
        }
        // A result without content: nothing in its own format, an empty string in another.
        let anthropic = vec![
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "f", "input": {}}]}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1"}]}),
        ];
        let messages = read(Format::Anthropic, anthropic).unwrap();
        for format in [Format::OpenAiChat, Format::Native] {
            let out = write(format, &messages).unwrap();
            assert_eq!(out[1]["content"], json!(""), "{format:?}");
        }
    }
}
