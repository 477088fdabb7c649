//! A tool call's input read as its members without building a `serde_json::Value` for it: the
//! keys and string values of an `arguments` text are borrowed from the text (copied only when
//! they hold escapes), so describing a call or finding its path costs no allocation per member.
//!
//! The view is the one [`ToolInput::to_object`] gives: `Raw` text that is not a JSON object, and
//! free-form input, read as `{"input": <text>}`; a later duplicate key replaces the earlier value
//! in the earlier key's position.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

use super::structure::FastMap;
use crate::model::ToolInput;

/// The value of one member.
#[derive(Debug)]
pub(crate) enum Arg<'a> {
    Str(Cow<'a, str>),
    /// Any other JSON value.
    Other(Cow<'a, Value>),
}

impl Arg<'_> {
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Arg::Str(s) => Some(s),
            Arg::Other(v) => v.as_str(),
        }
    }
}

/// A tool input as [`ToolInput::to_object`] would give it.
#[derive(Debug)]
pub(crate) enum Args<'a> {
    /// The members of an object, in order, keys unique.
    Object(Vec<(Cow<'a, str>, Arg<'a>)>),
    /// A JSON value that is not an object (a `Json` input can be one).
    Other(&'a Value),
}

impl<'a> Args<'a> {
    pub(crate) fn of(input: &'a ToolInput) -> Args<'a> {
        match input {
            ToolInput::Raw(s) => Args::raw(s),
            ToolInput::Freeform(s) => wrapped(s),
            ToolInput::Json(value) => match &**value {
                Value::Object(map) => Args::Object(
                    map.iter()
                        .map(|(k, v)| {
                            let v = match v {
                                Value::String(s) => Arg::Str(Cow::Borrowed(s)),
                                other => Arg::Other(Cow::Borrowed(other)),
                            };
                            (Cow::Borrowed(k.as_str()), v)
                        })
                        .collect(),
                ),
                other => Args::Other(other),
            },
        }
    }

    /// `Raw` input: an `arguments` text.
    pub(crate) fn raw(s: &'a str) -> Args<'a> {
        if let Some(members) = plain_object(s) {
            return Args::Object(members);
        }
        match serde_json::from_str::<Members<'a>>(s) {
            Ok(Members(members)) => Args::Object(members),
            Err(_) => wrapped(s),
        }
    }

    /// The member `key`, if the input is an object that has it.
    pub(crate) fn get(&self, key: &str) -> Option<&Arg<'a>> {
        match self {
            Args::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            Args::Other(_) => None,
        }
    }
}

/// The members of the commonest `arguments` text, an object whose keys and values are all
/// strings without escapes (`{"path": "src/app.py"}`), read in one pass over the bytes; `None`
/// for anything else (escapes, control characters, other values, repeated keys, bad JSON),
/// which the full parser then reads.
fn plain_object(s: &str) -> Option<Vec<(Cow<'_, str>, Arg<'_>)>> {
    let b = s.as_bytes();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && matches!(b[*i], b' ' | b'\t' | b'\n' | b'\r') {
            *i += 1;
        }
    };
    // A string without escapes or control characters, from the opening quote at `i`.
    let string = |i: &mut usize| -> Option<&str> {
        if b.get(*i) != Some(&b'"') {
            return None;
        }
        let start = *i + 1;
        let mut j = start;
        while j < b.len() && b[j] != b'"' {
            if b[j] == b'\\' || b[j] < 0x20 {
                return None;
            }
            j += 1;
        }
        if j == b.len() {
            return None;
        }
        *i = j + 1;
        // Both ends are ASCII quotes, so this is a character boundary.
        Some(&s[start..j])
    };
    let mut members: Vec<(Cow<'_, str>, Arg<'_>)> = Vec::new();
    skip_ws(&mut i);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    skip_ws(&mut i);
    if b.get(i) == Some(&b'}') {
        i += 1;
    } else {
        loop {
            let key = string(&mut i)?;
            skip_ws(&mut i);
            if b.get(i) != Some(&b':') {
                return None;
            }
            i += 1;
            skip_ws(&mut i);
            let value = string(&mut i)?;
            if members.len() >= SCAN_MEMBERS || members.iter().any(|(k, _)| k == key) {
                return None;
            }
            members.push((Cow::Borrowed(key), Arg::Str(Cow::Borrowed(value))));
            skip_ws(&mut i);
            match b.get(i) {
                Some(b',') => {
                    i += 1;
                    skip_ws(&mut i);
                }
                Some(b'}') => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    skip_ws(&mut i);
    (i == b.len()).then_some(members)
}

fn wrapped(s: &str) -> Args<'_> {
    Args::Object(vec![(Cow::Borrowed("input"), Arg::Str(Cow::Borrowed(s)))])
}

/// The members of a JSON object (anything else fails to deserialize).
struct Members<'a>(Vec<(Cow<'a, str>, Arg<'a>)>);

/// Objects with more members than this find duplicates through a table instead of a scan.
const SCAN_MEMBERS: usize = 16;

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members: Vec<(Cow<'de, str>, Arg<'de>)> = Vec::new();
                let mut index: Option<FastMap<Cow<'de, str>, usize>> = None;
                while let Some(Key(k)) = map.next_key::<Key<'de>>()? {
                    let v: Arg<'de> = map.next_value()?;
                    let found = match &index {
                        Some(index) => index.get(&k).copied(),
                        None => members.iter().position(|(e, _)| *e == k),
                    };
                    if let Some(i) = found {
                        // As a JSON map does: the value is replaced, the key keeps its place.
                        members[i].1 = v;
                        continue;
                    }
                    if let Some(index) = &mut index {
                        index.insert(k.clone(), members.len());
                    } else if members.len() == SCAN_MEMBERS {
                        let mut table = FastMap::default();
                        for (i, (e, _)) in members.iter().enumerate() {
                            table.insert(e.clone(), i);
                        }
                        table.insert(k.clone(), members.len());
                        index = Some(table);
                    }
                    members.push((k, v));
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(V)
    }
}

/// A key, borrowed from the text when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(s)))
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }

            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A member value: strings borrowed when they can be, anything else exactly as
/// `serde_json::Value` reads it.
impl<'de> Deserialize<'de> for Arg<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Arg<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }

            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Self::Value, E> {
                Ok(Arg::Other(Cow::Owned(Value::Bool(b))))
            }

            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
                Ok(Arg::Other(Cow::Owned(Value::Number(n.into()))))
            }

            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
                Ok(Arg::Other(Cow::Owned(Value::Number(n.into()))))
            }

            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Self::Value, E> {
                Ok(Arg::Other(Cow::Owned(
                    Number::from_f64(n).map_or(Value::Null, Value::Number),
                )))
            }

            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Arg::Str(Cow::Borrowed(s)))
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Arg::Str(Cow::Owned(s.to_owned())))
            }

            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(Arg::Str(Cow::Owned(s)))
            }

            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Arg::Other(Cow::Owned(Value::Null)))
            }

            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                Deserialize::deserialize(d)
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Arg::Other(Cow::Owned(Value::Null)))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Value::deserialize(SeqAccessDeserializer::new(seq)).map(|v| Arg::Other(Cow::Owned(v)))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                Value::deserialize(MapAccessDeserializer::new(map)).map(|v| Arg::Other(Cow::Owned(v)))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The view equals `to_object` on every shape of input.
    fn same_as_to_object(input: &ToolInput) {
        let expected = input.to_object();
        match (Args::of(input), &expected) {
            (Args::Object(members), Value::Object(map)) => {
                let got: Vec<(String, Value)> = members
                    .into_iter()
                    .map(|(k, v)| {
                        let v = match v {
                            Arg::Str(s) => Value::String(s.into_owned()),
                            Arg::Other(v) => v.into_owned(),
                        };
                        (k.into_owned(), v)
                    })
                    .collect();
                let want: Vec<(String, Value)> = map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                assert_eq!(got, want, "{input:?}");
            }
            (Args::Other(v), other) => assert_eq!(v, other, "{input:?}"),
            (got, want) => panic!("{input:?}: {got:?} vs {want:?}"),
        }
    }

    #[test]
    fn reads_inputs_like_to_object() {
        let many: String = (0..40)
            .map(|i| format!("\"k{}\": {i}", i % 23))
            .collect::<Vec<_>>()
            .join(", ");
        for raw in [
            r#"{"path": "src/app.py", "limit": 200}"#,
            r#"{"a": "x\n\"y\"", "b": [1, {"c": null}], "c": 1.5e3, "d": -0, "e": true, "f": 18446744073709551616}"#,
            r#"{"a": 1, "b": 2, "a": "again"}"#,
            r#"{"\u0070ath": "esc\u00e9aped"}"#,
            &format!("{{{many}}}"),
            r" { } ",
            r"[1, 2]",
            r#""just a string""#,
            r#"{"a": 1} trailing"#,
            r#"{"a": "1"} trailing"#,
            r#"{"a": "1",}"#,
            r#"{"a": "1" "b": "2"}"#,
            r#"{"a": "x", "a": "y"}"#,
            "{\"a\": \"tab\there\"}",
            " {\t\"path\" :\n\"src/app.py\" ,\r\"limit\": \"200\"}\n",
            r#"{"é": "ü漢", "k": ""}"#,
            r#"{"a": "b""#,
            r#"{"a": "#,
            r"{",
            r#"{"a": "b"}}"#,
            r#"{"a": "#,
            "",
            "not json",
        ] {
            same_as_to_object(&ToolInput::Raw(raw.to_owned()));
        }
        same_as_to_object(&ToolInput::Freeform("*** Begin Patch".into()));
        same_as_to_object(&ToolInput::Json(Box::new(serde_json::json!({"x": [1], "y": "z"}))));
        same_as_to_object(&ToolInput::Json(Box::new(serde_json::json!([1, "a"]))));
        same_as_to_object(&ToolInput::Json(Box::new(serde_json::json!("text"))));
    }
}
