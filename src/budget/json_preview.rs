//! Structural previews of large JSON payloads: keys, types, array lengths and first items, so the
//! model sees the shape of a document it does not see in full.

use std::fmt::Write as _;

use serde_json::Value;

/// A preview of `text` if it is a JSON object or array, at most `max_chars` characters long
/// (`None` for anything else, or when even the shallowest preview is longer).
pub fn json_preview(text: &str, max_chars: usize) -> Option<String> {
    let trimmed = text.trim_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    let value: Value = serde_json::from_str(text).ok()?;
    let header = format!(
        "[JSON {}, {} chars in full; structure preview:]\n",
        describe(&value),
        text.chars().count()
    );
    // From the richest preview to the leanest, the first that fits.
    for (depth, items, string_chars) in [(4, 3, 120), (3, 2, 80), (2, 2, 60), (2, 1, 40), (1, 1, 30), (0, 0, 20)] {
        let mut out = header.clone();
        render(&value, depth, items, string_chars, 0, &mut out);
        if out.chars().count() <= max_chars {
            return Some(out);
        }
    }
    None
}

fn describe(v: &Value) -> String {
    match v {
        Value::Object(m) => format!("object with {} keys", m.len()),
        Value::Array(a) => format!("array of {} items", a.len()),
        Value::String(_) => "string".into(),
        Value::Number(_) => "number".into(),
        Value::Bool(_) => "boolean".into(),
        Value::Null => "null".into(),
    }
}

fn render(v: &Value, depth: usize, items: usize, string_chars: usize, indent: usize, out: &mut String) {
    let pad = "  ".repeat(indent + 1);
    match v {
        Value::Object(m) if depth == 0 && !m.is_empty() => {
            let keys: Vec<String> = m.keys().take(8).map(|k| format!("{k:?}")).collect();
            let more = if m.len() > 8 { ", ..." } else { "" };
            let _ = write!(out, "{{/* {} keys: {}{more} */}}", m.len(), keys.join(", "));
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, child)) in m.iter().enumerate() {
                let _ = write!(out, "\n{pad}{k:?}: ");
                render(child, depth.saturating_sub(1), items, string_chars, indent + 1, out);
                if i + 1 < m.len() {
                    out.push(',');
                }
            }
            if !m.is_empty() {
                let _ = write!(out, "\n{}", "  ".repeat(indent));
            }
            out.push('}');
        }
        Value::Array(a) if depth == 0 && !a.is_empty() => {
            let _ = write!(out, "[/* {} items of {} */]", a.len(), kinds(a));
        }
        Value::Array(a) => {
            out.push('[');
            for child in a.iter().take(items) {
                let _ = write!(out, "\n{pad}");
                render(child, depth.saturating_sub(1), items, string_chars, indent + 1, out);
                out.push(',');
            }
            if a.len() > items {
                let _ = write!(
                    out,
                    "\n{pad}/* ... {} more items of {} */",
                    a.len() - items,
                    kinds(&a[items..])
                );
            } else if !a.is_empty() {
                out.pop();
            }
            if !a.is_empty() {
                let _ = write!(out, "\n{}", "  ".repeat(indent));
            }
            out.push(']');
        }
        Value::String(s) => {
            let n = s.chars().count();
            if n > string_chars {
                let head: String = s.chars().take(string_chars).collect();
                let _ = write!(out, "{head:?} /* ... {n} chars */");
            } else {
                let _ = write!(out, "{s:?}");
            }
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

/// The distinct kinds of the items of an array, e.g. `object` or `number|null`.
fn kinds(items: &[Value]) -> String {
    let mut seen: Vec<&'static str> = Vec::new();
    for v in items {
        let k = match v {
            Value::Object(_) => "object",
            Value::Array(_) => "array",
            Value::String(_) => "string",
            Value::Number(_) => "number",
            Value::Bool(_) => "boolean",
            Value::Null => "null",
        };
        if !seen.contains(&k) {
            seen.push(k);
        }
    }
    seen.join("|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_structure_within_budget() {
        let rows: Vec<String> = (0..5000)
            .map(|i| format!("{{\"id\": {i}, \"name\": \"item {i}\", \"tags\": [\"a\", \"b\"]}}"))
            .collect();
        let text = format!(
            "{{\"status\": \"ok\", \"count\": 5000, \"rows\": [{}]}}",
            rows.join(",")
        );
        let p = json_preview(&text, 2000).unwrap();
        assert!(p.chars().count() <= 2000);
        assert!(p.starts_with("[JSON object with 3 keys"));
        assert!(p.contains("\"rows\""));
        assert!(p.contains("4997 more items of object"));
        assert!(p.contains("\"id\": 0"));
    }

    #[test]
    fn not_json_is_none() {
        assert_eq!(json_preview("hello", 100), None);
        assert_eq!(json_preview("{broken", 100), None);
        assert!(
            json_preview("[1, 2, 3]", 1000)
                .unwrap()
                .contains("[JSON array of 3 items")
        );
    }
}
