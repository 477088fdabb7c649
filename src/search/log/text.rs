//! The searchable text of a log record or a message: every string and number in it, taken while
//! the JSON is parsed, without building a tree.

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// Keys whose values are structure, not content.
const SKIP_KEYS: [&str; 11] = [
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

/// Collects the searchable text of a JSON value (every string and number, tool names and
/// arguments included; the values of [`SKIP_KEYS`] left out) while it is parsed, without
/// building a tree.
struct TextOf<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for TextOf<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl TextOf<'_> {
    fn push(&mut self, s: &str) {
        if !self.0.is_empty() {
            self.0.push('\n');
        }
        self.0.push_str(s);
    }
}

impl<'de> Visitor<'de> for TextOf<'_> {
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
struct RecordText<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for RecordText<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RecordText<'_> {
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
    let mut de = serde_json::Deserializer::from_str(raw);
    RecordText(&mut out).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(out)
}

/// The searchable text of a message (a JSON value in any format: a Chat or native message, a
/// Responses item, an Anthropic message, or a list of them).
pub(super) fn message_text(message: &Value) -> String {
    let mut out = String::new();
    // A Value always deserializes: TextOf accepts every JSON value.
    let _ = TextOf(&mut out).deserialize(message);
    out
}
