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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
