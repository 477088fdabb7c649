//! The searchable text of a log record or a message: every string and number in it, taken while
//! the JSON is parsed, without building a tree.

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// Keys whose values are structure, not content.
pub(super) const SKIP_KEYS: [&str; 11] = [
    "type",
    "role",
    "id",
    "tool_call_id",
    "tool_use_id",
    "call_id",
    "signature",
    "status",
    "model",
    "index",
    "encrypted_content",
];

/// Where the pieces of a searchable text go: a text, or only its length.
trait Sink {
    /// Whether nothing has been taken yet (a piece after others is preceded by a line break).
    fn is_empty(&self) -> bool;
    fn take(&mut self, piece: &str);
}

impl Sink for String {
    fn is_empty(&self) -> bool {
        self.as_str().is_empty()
    }
    fn take(&mut self, piece: &str) {
        self.push_str(piece);
    }
}

/// A text's length in bytes, counted as the pieces come, the text itself never built.
struct Length(usize);

impl Sink for Length {
    fn is_empty(&self) -> bool {
        self.0 == 0
    }
    fn take(&mut self, piece: &str) {
        self.0 += piece.len();
    }
}

/// Collects the searchable text of a JSON value (every string and number, tool names and
/// arguments included; the values of [`SKIP_KEYS`] left out) while it is parsed, without
/// building a tree.
struct TextOf<'a, S: Sink>(&'a mut S);

impl<'de, S: Sink> DeserializeSeed<'de> for TextOf<'_, S> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<S: Sink> TextOf<'_, S> {
    fn push(&mut self, s: &str) {
        if !self.0.is_empty() {
            self.0.take("\n");
        }
        self.0.take(s);
    }
}

impl<'de, S: Sink> Visitor<'de> for TextOf<'_, S> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_str<E>(mut self, v: &str) -> std::result::Result<(), E> {
        self.push(v);
        Ok(())
    }
    fn visit_i64<E>(mut self, v: i64) -> std::result::Result<(), E> {
        self.push(&v.to_string());
        Ok(())
    }
    fn visit_u64<E>(mut self, v: u64) -> std::result::Result<(), E> {
        self.push(&v.to_string());
        Ok(())
    }
    fn visit_f64<E>(mut self, v: f64) -> std::result::Result<(), E> {
        self.push(&v.to_string());
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> std::result::Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> std::result::Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        while seq.next_element_seed(TextOf(&mut *self.0))?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        while let Some(skip) = map.next_key_seed(KeyIn(&SKIP_KEYS))? {
            if skip {
                map.next_value::<IgnoredAny>()?;
            } else {
                map.next_value_seed(TextOf(&mut *self.0))?;
            }
        }
        Ok(())
    }
}

/// A map key, as whether it is one of the given names.
struct KeyIn<'a>(&'a [&'a str]);

impl<'de> DeserializeSeed<'de> for KeyIn<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyIn<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<bool, E> {
        Ok(self.0.contains(&v))
    }
}

/// The text of a log record's `data` (the message), other fields skipped.
struct RecordText<'a, S: Sink>(&'a mut S);

impl<'de, S: Sink> DeserializeSeed<'de> for RecordText<'_, S> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, S: Sink> Visitor<'de> for RecordText<'_, S> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a log record")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        while let Some(is_data) = map.next_key_seed(KeyIn(&["data"]))? {
            if is_data {
                map.next_value_seed(TextOf(&mut *self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// The searchable text of the message in a raw log record, or None if it is not valid JSON.
pub fn record_text(raw: &str) -> Option<String> {
    let mut out = String::new();
    record_text_into(raw, &mut out).then_some(out)
}

/// [`record_text`] into `out` (cleared first: a buffer reused from line to line); whether the
/// record is valid JSON (if not, `out` holds a part of the text). Read by `length`'s scanner
/// where it is certain of the text (twice as fast as the parser), else parsed.
pub(super) fn record_text_into(raw: &str, out: &mut String) -> bool {
    if super::length::quick_text(raw, out) {
        return true;
    }
    out.clear();
    record_pieces(raw, out)
}

/// [`record_text`] as the parser reads it (what `length`'s scanner must agree with).
#[cfg(test)]
pub(super) fn parsed_text(raw: &str) -> Option<String> {
    let mut out = String::new();
    record_pieces(raw, &mut out).then_some(out)
}

/// The length of [`record_text`] (counted from the raw bytes where `length` is certain of it, else
/// the same parse; the text is not built).
pub(super) fn record_text_len(raw: &str) -> Option<usize> {
    if let Some(len) = super::length::quick_len(raw) {
        return Some(len);
    }
    let mut out = Length(0);
    record_pieces(raw, &mut out).then_some(out.0)
}

/// Give the pieces of a raw log record's text to `out`; whether the record is valid JSON.
fn record_pieces(raw: &str, out: &mut impl Sink) -> bool {
    let mut de = serde_json::Deserializer::from_str(raw);
    RecordText(out).deserialize(&mut de).is_ok() && de.end().is_ok()
}

/// The searchable text of a message (a JSON value in any format: a Chat or native message, a
/// Responses item, an Anthropic message, or a list of them).
pub(super) fn message_text(message: &Value) -> String {
    let mut out = String::new();
    // A Value always deserializes: TextOf accepts every JSON value.
    let _ = TextOf(&mut out).deserialize(message);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_length_is_the_texts_without_building_it() {
        for raw in [
            r#"{"type":"message","data":[{"role":"user","content":"a\nb \u00e9 \ud83d\ude00"}]}"#,
            r#"{"data":["", "x", "", 12, -3, 1.5e3, -0.0, 0.10, true, null, {"id":"skip","n":{"a":"b"}}]}"#,
            r#"{"data":"one","data":"two","other":"not text"}"#,
            r#"{"data":[]}"#,
            r#"{"type":"message"}"#,
            r#"{"data":"torn"#,
            r#"{"data":1e999}"#,
            r#"{"data":"ok"} trailing"#,
            r#"["data"]"#,
            "{\"data\":\"tab\tinside\"}",
        ] {
            assert_eq!(record_text_len(raw), parsed_text(raw).map(|t| t.len()), "{raw}");
            let mut reused = "left from the line before".to_owned();
            let valid = record_text_into(raw, &mut reused);
            assert_eq!(valid.then_some(reused), parsed_text(raw), "{raw}");
        }
        assert_eq!(
            record_text(r#"{"data":["", "x", 12, 1.5e3]}"#).as_deref(),
            Some("x\n12\n1500")
        );
    }
}
