//! The searchable text of a log record or a message: every string and number in it, taken while
//! the JSON is parsed, without building a tree.

use std::cell::Cell;
use std::collections::hash_map::Entry;
use std::hash::BuildHasher as _;

use serde::de::{DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::compact::structure::{FastMap, FastSet};

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
    /// Forget what was taken.
    fn clear(&mut self);
}

impl Sink for String {
    fn is_empty(&self) -> bool {
        self.as_str().is_empty()
    }
    fn take(&mut self, piece: &str) {
        self.push_str(piece);
    }
    fn clear(&mut self) {
        String::clear(self);
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
    fn clear(&mut self) {
        self.0 = 0;
    }
}

/// Collects the searchable text of a JSON value (every string and number, tool names and
/// arguments included; the values of [`SKIP_KEYS`] left out) while it is parsed, without
/// building a tree.
///
/// An object that holds a key twice stops the parse, with the flag set: the text is then read
/// again as [`Tree`] reads it (the last value counts, where the first was).
struct TextOf<'a, S: Sink>(&'a mut S, &'a Cell<bool>);

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
        while seq.next_element_seed(TextOf(&mut *self.0, self.1))?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let mut seen = Seen::default();
        while let Some((skip, key)) = map.next_key_seed(KeyIn(&SKIP_KEYS))? {
            if skip {
                map.next_value::<IgnoredAny>()?;
            } else if seen.insert(key) {
                map.next_value_seed(TextOf(&mut *self.0, self.1))?;
            } else {
                self.1.set(true);
                return Err(A::Error::custom("a duplicated key"));
            }
        }
        Ok(())
    }
}

/// A map key, as whether it is one of the given names, and its hash (to tell a key met twice).
struct KeyIn<'a>(&'a [&'a str]);

impl<'de> DeserializeSeed<'de> for KeyIn<'_> {
    type Value = (bool, u64);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(bool, u64), D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyIn<'_> {
    type Value = (bool, u64);
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<(bool, u64), E> {
        Ok((self.0.contains(&v), KEY_HASH.hash_one(v)))
    }
}

const KEY_HASH: foldhash::fast::FixedState = foldhash::fast::FixedState::with_seed(0x5eed_0040_0000_0006);

/// The hashes of an object's keys read so far (a few on the stack, the others in a set: an object
/// of many keys is read in time linear in their number; a collision is taken for a duplicated
/// key, which only sends the record to the slower [`Tree`], which reads it the same).
#[derive(Default)]
struct Seen {
    first: [u64; 8],
    len: usize,
    more: FastSet<u64>,
}

impl Seen {
    /// Whether `key` is new (it is noted).
    fn insert(&mut self, key: u64) -> bool {
        let n = self.len.min(self.first.len());
        #[cfg(test)]
        probes::add(n + 1);
        if self.first[..n].contains(&key) {
            return false;
        }
        if n < self.first.len() {
            self.first[n] = key;
        } else if !self.more.insert(key) {
            return false;
        }
        self.len += 1;
        true
    }
}

/// A value's text as a tree, for a record that holds a duplicated key: an object's members in the
/// order of their keys' first places, each with its key's last value (what `json.loads` and
/// serde_json's ordered map keep), the values of [`SKIP_KEYS`] left out.
enum Tree {
    Nothing,
    Piece(String),
    /// An array's items, or an object's members' values (in the order of their keys' first places).
    List(Vec<Tree>),
}

impl Tree {
    fn give(&self, out: &mut impl Sink) {
        match self {
            Tree::Nothing => {}
            Tree::Piece(piece) => {
                if !out.is_empty() {
                    out.take("\n");
                }
                out.take(piece);
            }
            Tree::List(items) => items.iter().for_each(|t| t.give(out)),
        }
    }
}

struct TreeOf;

impl<'de> DeserializeSeed<'de> for TreeOf {
    type Value = Tree;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Tree, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TreeOf {
    type Value = Tree;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Tree, E> {
        Ok(Tree::Piece(v.to_owned()))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Tree, E> {
        Ok(Tree::Piece(v.to_string()))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Tree, E> {
        Ok(Tree::Piece(v.to_string()))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Tree, E> {
        Ok(Tree::Piece(v.to_string()))
    }
    fn visit_bool<E>(self, _: bool) -> std::result::Result<Tree, E> {
        Ok(Tree::Nothing)
    }
    fn visit_unit<E>(self) -> std::result::Result<Tree, E> {
        Ok(Tree::Nothing)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Tree, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(TreeOf)? {
            items.push(item);
        }
        Ok(Tree::List(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Tree, A::Error> {
        // The members' values in the order of their keys' first places, and each key's place.
        let mut members: Vec<Tree> = Vec::new();
        let mut places: FastMap<String, usize> = FastMap::default();
        while let Some(key) = map.next_key::<String>()? {
            let value = if SKIP_KEYS.contains(&key.as_str()) {
                map.next_value::<IgnoredAny>()?;
                Tree::Nothing
            } else {
                map.next_value_seed(TreeOf)?
            };
            #[cfg(test)]
            probes::add(1);
            match places.entry(key) {
                Entry::Occupied(place) => members[*place.get()] = value,
                Entry::Vacant(place) => {
                    place.insert(members.len());
                    members.push(value);
                }
            }
        }
        Ok(Tree::List(members))
    }
}

/// A log record's `data` as a [`Tree`] (the last one, if the record has two).
struct RecordTree;

impl<'de> DeserializeSeed<'de> for RecordTree {
    type Value = Tree;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Tree, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RecordTree {
    type Value = Tree;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a log record")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Tree, A::Error> {
        let mut data = Tree::Nothing;
        while let Some(key) = map.next_key::<String>()? {
            if key == "data" {
                data = map.next_value_seed(TreeOf)?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(data)
    }
}

/// The text of a log record's `data` (the message), other fields skipped (a record with two
/// `data` stops the parse, as [`TextOf`] does for any key met twice).
struct RecordText<'a, S: Sink>(&'a mut S, &'a Cell<bool>);

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
        let mut data_seen = false;
        while let Some((is_data, _)) = map.next_key_seed(KeyIn(&["data"]))? {
            if is_data && data_seen {
                self.1.set(true);
                return Err(A::Error::custom("a duplicated key"));
            }
            if is_data {
                data_seen = true;
                map.next_value_seed(TextOf(&mut *self.0, self.1))?;
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
///
/// A key met twice in an object counts once, with its last value (where it was first met), as
/// `json.loads` and serde_json's map read it: the parse stops there and the record is read again
/// as a [`Tree`].
fn record_pieces(raw: &str, out: &mut impl Sink) -> bool {
    let duplicated = Cell::new(false);
    let mut de = serde_json::Deserializer::from_str(raw);
    let valid = RecordText(out, &duplicated).deserialize(&mut de).is_ok() && de.end().is_ok();
    if !duplicated.get() {
        return valid;
    }
    out.clear();
    let mut de = serde_json::Deserializer::from_str(raw);
    match RecordTree.deserialize(&mut de) {
        Ok(tree) if de.end().is_ok() => {
            tree.give(out);
            true
        }
        _ => false,
    }
}

/// The searchable text of a message (a JSON value in any format: a Chat or native message, a
/// Responses item, an Anthropic message, or a list of them).
pub(super) fn message_text(message: &Value) -> String {
    let mut out = String::new();
    // A Value always deserializes: TextOf accepts every JSON value.
    let duplicated = Cell::new(false);
    let _ = TextOf(&mut out, &duplicated).deserialize(message);
    out
}

/// The keys a record's read compared a key with, on this thread (to tell that an object's keys
/// are told apart in time linear in their number, whatever their number).
#[cfg(test)]
mod probes {
    use std::cell::Cell;

    thread_local! {
        static PROBES: Cell<usize> = const { Cell::new(0) };
    }

    pub(super) fn add(n: usize) {
        PROBES.with(|p| p.set(p.get() + n));
    }

    /// The probes made since the last call.
    pub(super) fn take() -> usize {
        PROBES.with(|p| p.replace(0))
    }
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

    #[test]
    fn a_duplicated_key_counts_once_with_its_last_value_where_it_was_first() {
        // As `json.loads` (and serde_json's ordered map) read them: both values were counted.
        for (raw, text) in [
            (r#"{"data":"one","data":"two"}"#, "two"),
            (
                r#"{"type":"message","data":[{"role":"tool","content":"needle","tool_call_id":"c","content":"hay"}]}"#,
                "hay",
            ),
            (r#"{"data":[{"a":"one","b":"two","a":"three"}]}"#, "three\ntwo"),
            (r#"{"data":[{"a":{"x":"1","x":"2"},"a":{"y":"3"}},"4"]}"#, "3\n4"),
            (r#"{"data":[{"id":"x","id":"y","a":"z"}]}"#, "z"),
            (
                r#"{"data":[{"a":"one","a":"two"}],"data":"three","data":[1.5,2]}"#,
                "1.5\n2",
            ),
            (r#"{"data":[{"a":1.5,"a":"x\u00e9","b":"\n"}]}"#, "x\u{e9}\n\n"),
        ] {
            assert_eq!(record_text(raw).as_deref(), Some(text), "{raw}");
            assert_eq!(record_text_len(raw), Some(text.len()), "{raw}");
            assert_eq!(parsed_text(raw).as_deref(), Some(text), "{raw}");
        }
        for torn in [r#"{"data":[{"a":"one","a":"two"}"#, r#"{"data":"one","data":"two"} x"#] {
            assert_eq!(record_text(torn), None, "{torn}");
            assert_eq!(record_text_len(torn), None, "{torn}");
        }
    }

    /// An object of many keys (over the scanner's few, so parsed) is read in time linear in their
    /// number, with a key written twice or without: its keys were told apart by a search of
    /// those before each one (a line of 100,000 keys took 2.8 s to search, 27 s with one of them
    /// twice; 0.05 s before D6).
    #[test]
    fn the_keys_of_a_wide_object_are_told_apart_in_linear_time() {
        let keys = 5_000;
        let members: Vec<String> = (0..keys).map(|i| format!(r#""k{i}":"v{i}""#)).collect();
        let plain = format!(r#"{{"type":"message","data":[{{{}}}]}}"#, members.join(","));
        let twice = format!(r#"{{"type":"message","data":[{{{},"k7":"last"}}]}}"#, members.join(","));
        for (raw, first) in [(&plain, "v0"), (&twice, "v0")] {
            probes::take();
            let text = record_text(raw).unwrap();
            let seventh = if raw == &twice { "last" } else { "v7" };
            assert_eq!(text.lines().nth(7), Some(seventh));
            assert_eq!((text.lines().next(), text.lines().count()), (Some(first), keys));
            assert_eq!(record_text_len(raw), Some(text.len()));
            let probes = probes::take();
            assert!(probes <= 40 * keys, "{probes} keys compared for {keys} keys");
        }
    }
}
