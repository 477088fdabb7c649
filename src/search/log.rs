//! `conversation_search`: search the originals of a session log (every message ever logged,
//! including the ones later cleared, cut or summarized out of the working set).
//!
//! The log is JSON Lines written by `agentcontext.session_log.SessionLog`; message N is the N-th
//! `{"type": "message", ...}` record. Lines are examined in parallel; for a words query a line
//! whose raw JSON cannot hold any of the words is not parsed at all.

use std::io::Read as _;
use std::path::Path;

use rayon::prelude::*;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{Counted, Query, Scored, best, bm25, snippets};
use crate::error::{Error, Result};

/// One message that matched.
#[derive(Clone, Debug)]
pub struct LogHit {
    /// The message's index in the log (its position among the message records).
    pub message: usize,
    /// 1-based line of its record in the log file.
    pub line: usize,
    /// The message's role (or item type, for Responses items without a role).
    pub role: String,
    /// For a tool result, the call id it answers: the recall id its cleared placeholder names.
    pub recall_id: Option<String>,
    pub score: f64,
    pub matches: usize,
    pub snippets: Vec<String>,
}

/// The answer to a search.
#[derive(Clone, Debug)]
pub struct LogSearch {
    pub hits: Vec<LogHit>,
    /// Message records in the log.
    pub messages: usize,
    /// Messages that matched (before `limit`).
    pub matched: usize,
}

/// Options of a search.
#[derive(Clone, Copy, Debug)]
pub struct SearchOptions {
    pub limit: usize,
    pub snippet_chars: usize,
    pub snippets: usize,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            limit: 10,
            snippet_chars: 240,
            snippets: 2,
        }
    }
}

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

/// The role of a message and, for a tool result, the call id it answers.
fn role_and_recall(data: &Value) -> (String, Option<String>) {
    let items: Vec<&Value> = match data {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    let mut role = None;
    let mut recall = None;
    for item in items {
        let Some(map) = item.as_object() else { continue };
        let kind = map.get("type").and_then(Value::as_str);
        if role.is_none() {
            role = map.get("role").and_then(Value::as_str).or(kind).map(str::to_owned);
        }
        if recall.is_none() {
            recall = map.get("tool_call_id").and_then(Value::as_str).map(str::to_owned);
        }
        if recall.is_none() && kind.is_some_and(|k| k.ends_with("_output")) {
            recall = map.get("call_id").and_then(Value::as_str).map(str::to_owned);
        }
        if recall.is_none()
            && let Some(Value::Array(blocks)) = map.get("content")
        {
            recall = blocks
                .iter()
                .find(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                .and_then(|b| b.get("tool_use_id"))
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
    }
    (role.unwrap_or_default(), recall)
}

enum Line {
    Other,
    /// A message that cannot match.
    Skipped,
    Message {
        counted: Counted,
        text: String,
    },
}

fn classify(query: &Query, raw: &str) -> Line {
    let raw = raw.strip_suffix('\r').unwrap_or(raw);
    let is_message = if raw.starts_with(r#"{"type":"message""#) {
        true
    } else if raw.starts_with(r#"{"type":"compaction""#)
        || raw.starts_with(r#"{"type":"session""#)
        || raw.trim().is_empty()
    {
        false
    } else {
        match serde_json::from_str::<Value>(raw) {
            Ok(v) => v.get("type").and_then(Value::as_str) == Some("message"),
            Err(_) => false,
        }
    };
    if !is_message {
        return Line::Other;
    }
    if query.may_match_raw(raw) == Some(false) {
        return Line::Skipped;
    }
    let Some(text) = record_text(raw) else {
        return Line::Other;
    };
    let counts = query.count(&text);
    let matches = counts.iter().sum();
    Line::Message {
        counted: Counted {
            tf: counts.into_iter().map(|c| c as f64).collect(),
            len: text.len(),
            matches,
        },
        text,
    }
}

/// Search the message records of the session log at `path`.
pub fn search_log(path: &Path, query: &Query, options: SearchOptions) -> Result<LogSearch> {
    let shown = path.display().to_string();
    let io = |e: std::io::Error| Error::FileRead {
        path: shown.clone(),
        kind: "io",
        message: format!("cannot read the session log {shown}: {}", crate::error::io_reason(&e)),
    };
    let file = crate::memory::index::open_no_follow(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(Error::FileRead {
            path: shown.clone(),
            kind: if meta.is_dir() { "directory" } else { "io" },
            message: format!("{shown} is not a regular file"),
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(meta.len()).read_to_end(&mut bytes).map_err(io)?;
    let text = String::from_utf8_lossy(&bytes);
    // A last line without a line break is a torn append: not a record (as the log itself reads it).
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    let lines: Vec<&str> = complete.lines().collect();
    let classified: Vec<Line> = lines.par_iter().map(|raw| classify(query, raw)).collect();
    let mut messages = 0usize;
    let mut docs: Vec<(usize, usize, Counted)> = Vec::new();
    for (line_no, line) in classified.iter().enumerate() {
        match line {
            Line::Other => {}
            Line::Skipped => messages += 1,
            Line::Message { counted, .. } => {
                docs.push((messages, line_no, counted.clone()));
                messages += 1;
            }
        }
    }
    let counted: Vec<Counted> = docs.iter().map(|d| d.2.clone()).collect();
    let ranked = bm25(&counted, messages);
    let matched = ranked.len();
    let hits = best(ranked, options.limit)
        .into_iter()
        .map(|(i, Scored { score, matches })| {
            let (message, line_no, _) = docs[i];
            let Line::Message { text, .. } = &classified[line_no] else {
                unreachable!("docs hold message lines only")
            };
            // Only the hits are parsed into a tree, for their role and recall id.
            let data = serde_json::from_str::<Value>(lines[line_no].strip_suffix('\r').unwrap_or(lines[line_no]))
                .ok()
                .and_then(|mut v| v.get_mut("data").map(Value::take))
                .unwrap_or(Value::Null);
            let (role, recall_id) = role_and_recall(&data);
            LogHit {
                message,
                line: line_no + 1,
                role,
                recall_id,
                score,
                matches,
                snippets: snippets(query, text, options.snippet_chars, options.snippets),
            }
        })
        .collect();
    Ok(LogSearch {
        hits,
        messages,
        matched,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_tool_result_with_its_recall_id_and_message_index() {
        let path = std::env::temp_dir().join(format!("agentcontext-logsearch-{}.jsonl", std::process::id()));
        let lines = [
            r#"{"type":"session","version":1,"format":"openai"}"#,
            r#"{"type":"message","index":0,"data":[{"role":"user","content":"find the port"}]}"#,
            r#"{"type":"message","index":1,"data":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"cmd\":\"cat conf\"}"}}]}]}"#,
            r#"{"type":"message","index":2,"data":[{"role":"tool","tool_call_id":"c1","content":"listen_port = 8431\nhost = db7"}]}"#,
            r#"{"type":"compaction","seq":1,"upto":3,"working_set":[{"ref":0},{"data":[{"role":"tool","tool_call_id":"c1","content":"[cleared]"}]}]}"#,
            "not json at all",
            r#"{"type":"message","index":3,"data":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu9","content":"PORT 8431 again"}]}]}"#,
            r#"{"type":"message","index":4,"data":[{"role":"user","content":"torn"#,
        ];
        std::fs::write(&path, lines.join("\n")).unwrap();
        let q = Query::words("listen_port").unwrap();
        let r = search_log(&path, &q, SearchOptions::default()).unwrap();
        assert_eq!(r.messages, 4);
        assert_eq!(r.hits.len(), 1);
        let h = &r.hits[0];
        assert_eq!((h.message, h.line, h.role.as_str()), (2, 4, "tool"));
        assert_eq!(h.recall_id.as_deref(), Some("c1"));
        assert_eq!(h.snippets, vec!["listen_port = 8431 host = db7".to_owned()]);
        let q = Query::regex(r"(?i)port\W+8431").unwrap();
        let r = search_log(&path, &q, SearchOptions::default()).unwrap();
        let mut found: Vec<(usize, Option<&str>)> =
            r.hits.iter().map(|h| (h.message, h.recall_id.as_deref())).collect();
        found.sort_unstable();
        assert_eq!(found, vec![(2, Some("c1")), (3, Some("tu9"))]);
        let q = Query::words("torn").unwrap();
        assert_eq!(search_log(&path, &q, SearchOptions::default()).unwrap().hits.len(), 0);
        std::fs::remove_file(&path).unwrap();
        assert!(search_log(&path, &q, SearchOptions::default()).is_err());
    }
}
