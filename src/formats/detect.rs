//! Format detection for message lists whose format the caller did not name.

use serde_json::Value;

use crate::model::Format;

/// Guess the format of `values`, or `None` when nothing in them tells the formats apart (plain
/// `{role, content: "<str>"}` messages read the same in every format).
pub fn detect(values: &[Value]) -> Option<Format> {
    let mut d = Detector::default();
    for v in values {
        d.see(v);
        if d.format() == Some(Format::Responses) {
            break;
        }
    }
    d.format()
}

/// [`detect`] one value at a time: what the values seen so far tell. Seeing a value again changes
/// nothing, so a reader that starts over may show the same values twice.
#[derive(Clone, Copy, Debug, Default)]
pub struct Detector {
    /// The strongest sign seen: any sign of Responses decides, then of JSON Lines, of OpenAI
    /// Chat, of Anthropic (a tool call written the native way outweighs an image part, say).
    strongest: Option<Format>,
}

impl Detector {
    /// Take in what `v` tells.
    pub fn see(&mut self, v: &Value) {
        let Some(m) = v.as_object() else { return };
        // Items other than messages (function calls, their outputs, reasoning) exist only in
        // Responses. A `type: "message"` alone says nothing: Anthropic API responses carry it too.
        if m.contains_key("call_id") || (m.get("type").is_some_and(Value::is_string) && !m.contains_key("role")) {
            self.raise(Format::Responses);
            return;
        }
        if let Some(Value::String(role)) = m.get("role") {
            if role == "developer" {
                self.raise(Format::OpenAiChat);
            }
        }
        if let Some(Value::Array(calls)) = m.get("tool_calls") {
            for c in calls {
                if c.get("function").is_some() {
                    self.raise(Format::OpenAiChat);
                } else if c.get("arguments").is_some() {
                    self.raise(Format::Native);
                }
            }
        }
        if let Some(Value::Array(parts)) = m.get("content") {
            for p in parts {
                match p.get("type").and_then(Value::as_str) {
                    Some("input_text" | "output_text" | "input_image" | "input_file") => {
                        self.raise(Format::Responses);
                        return;
                    }
                    Some("image_url") => self.raise(Format::OpenAiChat),
                    Some("tool_use" | "tool_result" | "thinking" | "redacted_thinking" | "image") => {
                        self.raise(Format::Anthropic);
                    }
                    _ => {}
                }
            }
        }
    }

    /// The format the values seen so far are in; `None` while nothing tells the formats apart.
    pub fn format(&self) -> Option<Format> {
        self.strongest
    }

    fn raise(&mut self, sign: Format) {
        let weight = |f: Option<Format>| match f {
            None => 0,
            Some(Format::Anthropic) => 1,
            Some(Format::OpenAiChat) => 2,
            Some(Format::Native) => 3,
            Some(Format::Responses) => 4,
        };
        if weight(Some(sign)) > weight(self.strongest) {
            self.strongest = Some(sign);
        }
    }
}

/// What [`chat_or_native`] reads of one item of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Glance {
    /// Not a map, or a map with a `type` key (a Responses item, an Anthropic response).
    Other,
    /// A message; when it has a non-empty list of tool calls, whether its first call nests the
    /// name and arguments in `function` (Chat) or not (native).
    Message { first_call_nested: Option<bool> },
}

impl Glance {
    /// The glance at a JSON value.
    pub fn of(v: &Value) -> Glance {
        let Some(m) = v.as_object() else { return Glance::Other };
        if m.contains_key("type") {
            return Glance::Other;
        }
        let first_call_nested = match m.get("tool_calls") {
            Some(Value::Array(calls)) => calls.first().map(|c| c.get("function").is_some()),
            _ => None,
        };
        Glance::Message { first_call_nested }
    }
}

/// The quick guess of `trim_messages`'s fast path, which reads as little as it can of a list it
/// hopes is plain Chat or native: the format of the first message with tool calls (`function`
/// nested: Chat, else native), Chat when no message has any; `None` as soon as an item is not a
/// message map or has a `type` key (the general path then parses the list and [`detect`]s it).
/// Unlike [`detect`] it never answers Anthropic or Responses and takes plain messages for
/// Chat: the fast path checks what it reads and falls back on anything else. The glances are
/// taken lazily: reading stops at the first one that decides.
pub fn chat_or_native(glances: impl IntoIterator<Item = Glance>) -> Option<Format> {
    for g in glances {
        match g {
            Glance::Other => return None,
            Glance::Message {
                first_call_nested: Some(nested),
            } => return Some(if nested { Format::OpenAiChat } else { Format::Native }),
            Glance::Message {
                first_call_nested: None,
            } => {}
        }
    }
    Some(Format::OpenAiChat)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn quick(values: &[Value]) -> Option<Format> {
        chat_or_native(values.iter().map(Glance::of))
    }

    #[test]
    fn the_quick_guess_reads_the_first_message_with_calls() {
        let call = |nested: bool| {
            if nested {
                json!({"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}})
            } else {
                json!({"id": "a", "name": "f", "arguments": "{}"})
            }
        };
        let user = json!({"role": "user", "content": "hi"});
        assert_eq!(quick(&[]), Some(Format::OpenAiChat));
        assert_eq!(quick(std::slice::from_ref(&user)), Some(Format::OpenAiChat));
        let chat = json!({"role": "assistant", "content": null, "tool_calls": [call(true)]});
        let native = json!({"role": "assistant", "content": "", "tool_calls": [call(false), call(true)]});
        assert_eq!(
            quick(&[user.clone(), chat.clone(), native.clone()]),
            Some(Format::OpenAiChat)
        );
        assert_eq!(
            quick(&[user.clone(), native.clone(), chat.clone()]),
            Some(Format::Native)
        );
        // An empty or absent list of calls decides nothing; neither does a non-list.
        let empty = json!({"role": "assistant", "content": "x", "tool_calls": []});
        let null = json!({"role": "assistant", "content": "x", "tool_calls": null});
        assert_eq!(quick(&[empty, null, native.clone()]), Some(Format::Native));
        // A first call that is not a map is not nested.
        let odd = json!({"role": "assistant", "tool_calls": ["f"]});
        assert_eq!(quick(&[odd]), Some(Format::Native));
        // Any non-message item before the decision: not this guess's to make.
        let item = json!({"type": "function_call_output", "call_id": "a", "output": "x"});
        assert_eq!(quick(&[user.clone(), item.clone(), chat.clone()]), None);
        assert_eq!(quick(&[json!("text"), chat.clone()]), None);
        // ... and after it: never read.
        assert_eq!(quick(&[chat, item]), Some(Format::OpenAiChat));
    }

    #[test]
    fn the_quick_guess_agrees_with_detection_where_detection_decides_chat_or_native() {
        // Generated lists of plain, Chat and native messages and other items: wherever the full
        // detection says Chat or native and the quick guess answers, they agree.
        let pool = [
            json!({"role": "user", "content": "hi"}),
            json!({"role": "system", "content": "rules"}),
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}),
            json!({"role": "assistant", "content": "", "tool_calls": [{"id": "b", "name": "g", "arguments": "{}"}]}),
            json!({"role": "tool", "tool_call_id": "a", "content": "x"}),
            json!({"role": "assistant", "content": "", "tool_calls": []}),
            json!({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}),
        ];
        let mut rng = crate::compact::testing::xorshift(0x2601_d7ec_7000_0001);
        for _ in 0..2000 {
            let n = rng() as usize % 6;
            let values: Vec<Value> = (0..n).map(|_| pool[rng() as usize % pool.len()].clone()).collect();
            let full = detect(&values);
            let guess = quick(&values);
            let first_calls = values.iter().find_map(|v| match Glance::of(v) {
                Glance::Message { first_call_nested } => first_call_nested,
                Glance::Other => None,
            });
            match (full, first_calls) {
                // The lists that mix Chat and native calls are the ones the two read apart.
                (Some(Format::OpenAiChat), Some(true)) | (None, None) => {
                    assert_eq!(guess, Some(Format::OpenAiChat), "{values:?}");
                }
                (Some(Format::Native), Some(false)) => assert_eq!(guess, Some(Format::Native), "{values:?}"),
                _ => assert!(guess.is_some(), "{values:?}"),
            }
        }
    }

    #[test]
    fn tells_formats_apart() {
        let chat = vec![
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}),
        ];
        assert_eq!(detect(&chat), Some(Format::OpenAiChat));
        let native = vec![
            json!({"role": "assistant", "content": "", "tool_calls": [{"id": "a", "name": "f", "arguments": "{}"}]}),
        ];
        assert_eq!(detect(&native), Some(Format::Native));
        let anthropic =
            vec![json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]})];
        assert_eq!(detect(&anthropic), Some(Format::Anthropic));
        let responses = vec![json!({"type": "function_call_output", "call_id": "a", "output": "x"})];
        assert_eq!(detect(&responses), Some(Format::Responses));
        assert_eq!(detect(&[json!({"role": "user", "content": "hi"})]), None);
        let anthropic_response = vec![
            json!({"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}),
        ];
        assert_eq!(detect(&anthropic_response), Some(Format::Anthropic));
    }
}
