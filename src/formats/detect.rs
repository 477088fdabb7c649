//! Format detection for message lists whose format the caller did not name.

use serde_json::Value;

use crate::model::Format;

/// Guess the format of `values`, or `None` when nothing in them tells the formats apart (plain
/// `{role, content: "<str>"}` messages read the same in every format).
pub fn detect(values: &[Value]) -> Option<Format> {
    let (mut chat, mut native, mut anthropic) = (0usize, 0usize, 0usize);
    for v in values {
        let Some(m) = v.as_object() else { continue };
        // Items other than messages (function calls, their outputs, reasoning) exist only in
        // Responses. A `type: "message"` alone says nothing: Anthropic API responses carry it too.
        if m.contains_key("call_id") || (m.get("type").is_some_and(Value::is_string) && !m.contains_key("role")) {
            return Some(Format::Responses);
        }
        if let Some(Value::String(role)) = m.get("role") {
            if role == "developer" {
                chat += 1;
            }
        }
        if let Some(Value::Array(calls)) = m.get("tool_calls") {
            for c in calls {
                if c.get("function").is_some() {
                    chat += 1;
                } else if c.get("arguments").is_some() {
                    native += 1;
                }
            }
        }
        if let Some(Value::Array(parts)) = m.get("content") {
            for p in parts {
                match p.get("type").and_then(Value::as_str) {
                    Some("input_text" | "output_text" | "input_image" | "input_file") => {
                        return Some(Format::Responses);
                    }
                    Some("image_url") => chat += 1,
                    Some("tool_use" | "tool_result" | "thinking" | "redacted_thinking" | "image") => anthropic += 1,
                    _ => {}
                }
            }
        }
    }
    if native > 0 {
        Some(Format::Native)
    } else if chat > 0 {
        Some(Format::OpenAiChat)
    } else if anthropic > 0 {
        Some(Format::Anthropic)
    } else {
        None
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
