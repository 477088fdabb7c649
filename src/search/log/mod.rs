//! `conversation_search`: search the originals of a session log (every message ever logged,
//! including the ones later cleared, cut or summarized out of the working set).
//!
//! The log is JSON Lines written by `agentcontext.sessions.log.SessionLog`; message N is the N-th
//! `{"type": "message", ...}` record. The file is read as a stream, a batch of lines at a time
//! (never held whole: only the counts of the messages that match are kept, and the hits' lines are
//! read again for their snippets); the lines of a batch are examined in parallel while the next
//! batch is read, and for a words query a message whose raw JSON cannot hold any of the words
//! (one search of a few hundred lines' bytes at once says which) is only checked to be readable,
//! not searched. A line that cannot be read as a log record (not JSON, a number out of range, a torn
//! last line, bytes that never start one) is counted in [`LogSearch::skipped`], not as a message.
//!
//! [`search_messages`] searches the messages of a transcript in any other format the same way,
//! once it has been read (`agentcontext.importers.load`).

mod length;
mod lines;
mod names;
mod object;
mod scan;
mod text;

use std::fs::File;
use std::io::{BufRead as _, BufReader, Read as _, Seek as _, SeekFrom};
use std::path::Path;

use rayon::prelude::*;
use serde_json::Value;

use super::{Counted, Query, Scored, best, bm25, bm25_of, snippets};
use crate::error::{Error, Result};
use crate::files::{human, open_no_follow};
pub use names::name_message_hits;
use scan::{Scanned, count, scan};
use text::message_text;
pub use text::record_text;

/// The largest session log searched unless the caller allows more: 1 GiB, as for a transcript
/// (`formats::file::DEFAULT_MAX_BYTES`).
pub const DEFAULT_MAX_BYTES: u64 = crate::formats::file::DEFAULT_MAX_BYTES;

/// Lines are read and examined a buffer of this many bytes at a time (a longer line that may be a
/// record grows the buffer), the next buffer read while one is examined. 1 MB, not 8: the two
/// buffers stay in the cache between the kernel's copy and the search, and are not fresh pages
/// to fault in on every search (CPU time of a rare word's search -20%, of a common word's -15%,
/// on a 100 MB log).
const BATCH_BYTES: usize = 1 << 20;

/// The longest first line read to tell whether a file is a session log (its header is ~50 bytes).
const HEADER_MAX: u64 = 64 << 10;

/// The formats a session log's header names (`agentcontext.types.Format`).
const LOG_FORMATS: [&str; 4] = ["openai", "responses", "anthropic", "jsonl"];

/// One message that matched.
#[derive(Clone, Debug)]
pub struct LogHit {
    /// The message's index in the log (its position among the message records).
    pub message: usize,
    /// 1-based line of its record in the log file (None for a message of [`search_messages`]).
    pub line: Option<usize>,
    /// The message's role (or item type, for Responses items without a role).
    pub role: String,
    /// For a tool result, the recall id its cleared placeholder names: the id of the call it
    /// answers, or `<id>#k` for the k-th call with an id the log reuses (None when two calls
    /// would have that name: nothing recalls it), as `RecallIds` names calls.
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
    /// Lines of the log that could not be read as a record (not JSON, a number out of range, a
    /// torn last line, bytes that never start a record): not searched, not counted in `messages`
    /// (as `SessionLog` skips them, they take no message index). Always 0 for [`search_messages`].
    pub skipped: usize,
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

/// The role of a message and, for a tool result, the call id it answers: of the results a
/// message holds (Anthropic's user message answers every call of a turn), the first where
/// `query` matches most, not the first one (whose id recalls another result's text).
fn role_and_recall(data: &Value, query: &Query) -> (String, Option<String>) {
    let items: Vec<&Value> = match data {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    let mut role = None;
    let mut results: Vec<(&str, &Value)> = Vec::new();
    for item in items {
        let Some(map) = item.as_object() else { continue };
        let kind = map.get("type").and_then(Value::as_str);
        if role.is_none() {
            role = map.get("role").and_then(Value::as_str).or(kind).map(str::to_owned);
        }
        if let Some(id) = map.get("tool_call_id").and_then(Value::as_str) {
            results.push((id, item));
        } else if let Some(id) = map.get("call_id").and_then(Value::as_str)
            && kind.is_some_and(|k| k.ends_with("_output"))
        {
            results.push((id, item));
        } else if let Some(Value::Array(blocks)) = map.get("content") {
            results.extend(blocks.iter().filter_map(|b| {
                let id = b.get("tool_use_id").and_then(Value::as_str);
                (b.get("type").and_then(Value::as_str) == Some("tool_result")).then_some((id?, b))
            }));
        }
    }
    let recall = match results.as_slice() {
        [] => None,
        [(id, _)] => Some(*id),
        _ => {
            let matches = |v: &Value| query.count(&message_text(v)).iter().sum::<usize>();
            let mut best = (results[0].0, matches(results[0].1));
            for &(id, v) in &results[1..] {
                let m = matches(v);
                if m > best.1 {
                    best = (id, m);
                }
            }
            Some(best.0)
        }
    };
    (role.unwrap_or_default(), recall.map(str::to_owned))
}

/// Why the first line of a file (`None`: the file has no complete first line within
/// [`HEADER_MAX`] bytes) is not the header a session log starts with, or None when it is.
fn not_a_header(first: Option<&[u8]>) -> Option<String> {
    let Some(first) = first else {
        return Some("its first line is not a session log header (no line break in its first 64 KB)".to_owned());
    };
    let Ok(Value::Object(header)) = serde_json::from_slice::<Value>(first) else {
        return Some("its first line is not a JSON object".to_owned());
    };
    let kind = header.get("type").and_then(Value::as_str);
    let format = header.get("format").and_then(Value::as_str);
    if kind == Some("session") && format.is_some_and(|f| LOG_FORMATS.contains(&f)) {
        return None;
    }
    let kind = kind.map_or_else(|| "no \"type\"".to_owned(), |k| format!("type {k:?}"));
    Some(format!(
        "its first line is a JSON object with {kind}, not the header SessionLog writes \
         ({{\"type\": \"session\", \"version\": 1, \"format\": ...}})"
    ))
}

/// Search the message records of the session log at `path`, a regular file (not a symlink) of at
/// most `max_bytes` bytes that starts with a session log's header.
///
/// The file is read up to the size it had when it was opened, as a stream: memory holds one batch
/// of lines and the counts of the messages that match, whatever the size of the file.
///
/// # Errors
/// [`Error::FileRead`] naming the file: it cannot be opened or read (`kind` "io"), is a directory
/// ("directory"), is over `max_bytes` ("too_large"), or is not a session log
/// ("not_a_session_log": the message says what its first line is).
pub fn search_log(path: &Path, query: &Query, options: SearchOptions, max_bytes: u64) -> Result<LogSearch> {
    let shown = path.display().to_string();
    let io = |e: std::io::Error| Error::FileRead {
        path: shown.clone(),
        kind: "io",
        message: format!("cannot read the session log {shown}: {}", crate::error::io_reason(&e)),
    };
    let file = open_no_follow(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(Error::FileRead {
            path: shown.clone(),
            kind: if meta.is_dir() { "directory" } else { "io" },
            message: format!("{shown} is not a regular file"),
        });
    }
    let size = meta.len();
    if size > max_bytes {
        return Err(Error::FileRead {
            path: shown.clone(),
            kind: "too_large",
            message: format!(
                "{shown} is {} ({size} bytes), over the {} ({max_bytes} bytes) limit for a session log; pass a \
                 larger max_bytes (conversation_search) or --max-bytes (agentcontext search) to search it",
                human(size),
                human(max_bytes)
            ),
        });
    }
    let mut reader = BufReader::with_capacity(1 << 16, (&file).take(size));
    let mut first = Vec::new();
    (&mut reader)
        .take(HEADER_MAX)
        .read_until(b'\n', &mut first)
        .map_err(io)?;
    let complete = first.ends_with(b"\n");
    let problem = if first.is_empty() {
        Some("it is empty".to_owned())
    } else {
        not_a_header(complete.then_some(&first[..]))
    };
    if let Some(problem) = problem {
        return Err(Error::FileRead {
            path: shown.clone(),
            kind: "not_a_session_log",
            message: format!("{shown} is not a session log: {problem}"),
        });
    }

    let Scanned {
        stats,
        matched,
        found,
        messages,
        skipped,
    } = scan(&mut reader, query, first.len() as u64).map_err(io)?;
    drop(reader);
    let ranked = bm25_of(&matched, &stats, messages);
    let total = ranked.len();
    let mut file = file;
    let chosen = best(ranked, options.limit);
    let places: Vec<u64> = chosen.iter().map(|(i, _)| found[*i].offset).collect();
    let mut hits = chosen
        .into_iter()
        .map(|(i, scored)| read_hit(&mut file, &found[i], query, options, scored).map_err(io))
        .collect::<Result<Vec<_>>>()?;
    // A result's recall id: its call's name (`<id>#k` for a reused id), from a second pass.
    names::name_hits(&mut file, &first, size, &mut hits, &places).map_err(io)?;
    Ok(LogSearch {
        hits,
        messages,
        matched: total,
        skipped,
    })
}

/// The hit of the message found at `at`: only the hits are read again, and parsed into a tree
/// for their role and recall id.
fn read_hit(
    file: &mut File,
    at: &scan::Found,
    query: &Query,
    options: SearchOptions,
    scored: Scored,
) -> std::io::Result<LogHit> {
    let raw = read_line(file, at.offset, at.len)?;
    let raw = raw.strip_suffix('\r').unwrap_or(&raw);
    let text = record_text(raw).unwrap_or_default();
    let data = serde_json::from_str::<Value>(raw)
        .ok()
        .and_then(|mut v| v.get_mut("data").map(Value::take))
        .unwrap_or(Value::Null);
    Ok(hit(query, options, at.message, Some(at.line), &data, &text, scored))
}

fn read_line(file: &mut File, offset: u64, len: usize) -> std::io::Result<String> {
    file.seek(SeekFrom::Start(offset))?;
    let mut bytes = vec![0; len];
    file.read_exact(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn hit(
    query: &Query,
    options: SearchOptions,
    message: usize,
    line: Option<usize>,
    data: &Value,
    text: &str,
    Scored { score, matches }: Scored,
) -> LogHit {
    let (role, recall_id) = role_and_recall(data, query);
    LogHit {
        message,
        line,
        role,
        recall_id,
        score,
        matches,
        snippets: snippets(query, text, options.snippet_chars, options.snippets),
    }
}

/// Search `messages` (each a JSON value, as [`search_log`] reads a record's `data`) as the
/// messages of a session: hits name their position in `messages`, with no line.
pub fn search_messages(messages: &[Value], query: &Query, options: SearchOptions) -> LogSearch {
    let counted: Vec<Counted> =
        crate::parallel::install(|| messages.par_iter().map(|m| count(query, &message_text(m))).collect());
    let ranked = bm25(&counted, messages.len());
    let matched = ranked.len();
    let hits = best(ranked, options.limit)
        .into_iter()
        .map(|(i, scored)| {
            let text = message_text(&messages[i]);
            hit(query, options, i, None, &messages[i], &text, scored)
        })
        .collect();
    LogSearch {
        hits,
        messages: messages.len(),
        matched,
        skipped: 0,
    }
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
        let r = search_log(&path, &q, SearchOptions::default(), DEFAULT_MAX_BYTES).unwrap();
        assert_eq!(r.messages, 4);
        // "not json at all" and the torn last line.
        assert_eq!(r.skipped, 2);
        assert_eq!(r.hits.len(), 1);
        let h = &r.hits[0];
        assert_eq!((h.message, h.line, h.role.as_str()), (2, Some(4), "tool"));
        assert_eq!(h.recall_id.as_deref(), Some("c1"));
        assert_eq!(h.snippets, vec!["listen_port = 8431 host = db7".to_owned()]);
        let q = Query::regex(r"(?i)port\W+8431").unwrap();
        let r = search_log(&path, &q, SearchOptions::default(), DEFAULT_MAX_BYTES).unwrap();
        let mut found: Vec<(usize, Option<&str>)> =
            r.hits.iter().map(|h| (h.message, h.recall_id.as_deref())).collect();
        found.sort_unstable();
        assert_eq!(found, vec![(2, Some("c1")), (3, Some("tu9"))]);
        let q = Query::words("torn").unwrap();
        assert_eq!(
            search_log(&path, &q, SearchOptions::default(), DEFAULT_MAX_BYTES)
                .unwrap()
                .hits
                .len(),
            0
        );
        std::fs::remove_file(&path).unwrap();
        assert!(search_log(&path, &q, SearchOptions::default(), DEFAULT_MAX_BYTES).is_err());
    }

    fn temp(name: &str, text: &str) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("agentcontext-logsearch-{name}-{}.jsonl", std::process::id()));
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_file_that_is_not_a_session_log_is_refused_naming_its_first_line() {
        let q = Query::words("error").unwrap();
        for (name, text, says) in [
            ("empty", "", "it is empty"),
            ("text", "an error here\nanother error\n", "not a JSON object"),
            (
                "pi",
                "{\"type\":\"session\",\"id\":\"d7\",\"cwd\":\"/x\"}\n{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"error\"}}\n",
                "type \"session\", not the header SessionLog writes",
            ),
            (
                "torn",
                "{\"type\":\"session\",\"version\":1,\"format\":\"openai\"}",
                "no line break",
            ),
        ] {
            let path = temp(name, text);
            match search_log(&path, &q, SearchOptions::default(), DEFAULT_MAX_BYTES) {
                Err(Error::FileRead { kind, message, .. }) => {
                    assert_eq!(kind, "not_a_session_log", "{name}");
                    assert!(message.contains(says), "{name}: {message}");
                }
                other => panic!("{name}: {other:?}"),
            }
            std::fs::remove_file(&path).unwrap();
        }
    }

    #[test]
    fn a_log_over_max_bytes_is_refused_before_it_is_read() {
        let header = "{\"type\":\"session\",\"version\":1,\"format\":\"openai\"}\n";
        let path = temp("big", header);
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(64 << 30).unwrap(); // sparse: no disk, and never allocated
        let q = Query::words("x").unwrap();
        match search_log(&path, &q, SearchOptions::default(), DEFAULT_MAX_BYTES) {
            Err(Error::FileRead { kind, message, .. }) => {
                assert_eq!(kind, "too_large");
                assert!(
                    message.contains("64.0 GB (68719476736 bytes), over the 1.0 GB"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
        file.set_len(header.len() as u64 + 5).unwrap();
        let r = search_log(&path, &q, SearchOptions::default(), 1000).unwrap();
        assert_eq!((r.messages, r.matched), (0, 0));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn lines_that_are_not_records_are_skipped_unread_and_still_numbered() {
        let zeros = "\0".repeat(300_000);
        let text = format!(
            "{{\"type\":\"session\",\"version\":1,\"format\":\"openai\"}}\n{zeros}\n\n  \n\
             {{\"type\":\"message\",\"index\":0,\"data\":[{{\"role\":\"user\",\"content\":\"the needle\"}}]}}\n{zeros}"
        );
        let path = temp("junk", &text);
        let q = Query::words("needle").unwrap();
        let r = search_log(&path, &q, SearchOptions::default(), DEFAULT_MAX_BYTES).unwrap();
        assert_eq!((r.messages, r.matched), (1, 1));
        // The two lines of zeros (the last one torn); blank lines are not records.
        assert_eq!(r.skipped, 2);
        assert_eq!(r.hits[0].line, Some(5));
        assert_eq!(r.hits[0].snippets, vec!["the needle".to_owned()]);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn records_that_cannot_be_read_are_counted_as_skipped_not_as_messages() {
        let huge = "9".repeat(400); // over f64's range: serde_json refuses it
        let text = format!(
            "{{\"type\":\"session\",\"version\":1,\"format\":\"openai\"}}\n\
             {{\"type\":\"message\",\"index\":0,\"data\":[{{\"role\":\"user\",\"content\":\"the needle\"}}]}}\n\
             {{\"type\":\"message\",\"index\":1,\"data\":[{{\"role\":\"user\",\"content\":\"needle\",\"n\":{huge}}}]}}\n\
             {{\"type\":\"message\",\"index\":2,\"data\":[{{\"role\":\"user\",\"content\":\"a torn nee\n\
             {{\"type\":\"message\",\"index\":3,\"data\":[{{\"role\":\"user\",\"content\":\"last needle\"}}]}}\n"
        );
        let path = temp("unreadable", &text);
        // Where the raw text can hold the words, the two records that cannot be read are counted
        // apart and take no message index; where it cannot, the line is not parsed (the
        // prefilter's gain), so only the torn one is seen: the record with the huge number
        // counts as a message there.
        for (words, counted) in [("needle", (2, 2)), ("absent", (3, 1))] {
            let q = Query::words(words).unwrap();
            let r = search_log(&path, &q, SearchOptions::default(), DEFAULT_MAX_BYTES).unwrap();
            assert_eq!((r.messages, r.skipped), counted, "{words}");
        }
        let q = Query::regex("needle").unwrap();
        let r = search_log(&path, &q, SearchOptions::default(), DEFAULT_MAX_BYTES).unwrap();
        assert_eq!((r.messages, r.matched, r.skipped), (2, 2, 2));
        let mut at: Vec<(usize, Option<usize>)> = r.hits.iter().map(|h| (h.message, h.line)).collect();
        at.sort_unstable();
        assert_eq!(at, vec![(0, Some(2)), (1, Some(5))]);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_line_of_records_joined_without_a_line_break_takes_no_message_index() {
        // The log (Python's SessionLog) cannot read such a line and numbers the messages after it
        // without it; the search counted it as a message where it could not match (not parsed),
        // so every later message was numbered one more than the log's.
        let record = |i: usize, text: &str| {
            format!("{{\"type\":\"message\",\"index\":{i},\"data\":[{{\"role\":\"user\",\"content\":\"{text}\"}}]}}")
        };
        for between in ["", " ", "\t", " \r "] {
            let text = format!(
                "{{\"type\":\"session\",\"version\":1,\"format\":\"openai\"}}\n{}\n{}{between}{}\n{}\n",
                record(0, "zero"),
                record(1, "one"),
                record(2, "two"),
                record(1, "needle"),
            );
            let path = temp("joined", &text);
            for q in [Query::words("needle").unwrap(), Query::regex("needle").unwrap()] {
                let r = search_log(&path, &q, SearchOptions::default(), DEFAULT_MAX_BYTES).unwrap();
                assert_eq!((r.messages, r.skipped), (2, 1), "{between:?}");
                assert_eq!((r.hits[0].message, r.hits[0].line), (1, Some(4)), "{between:?}");
            }
            std::fs::remove_file(&path).unwrap();
        }
    }

    #[test]
    fn a_record_that_is_not_utf8_takes_no_message_index_and_is_not_searched() {
        // The log (Python's SessionLog) cannot decode such a line and skips it; the search read
        // it lossily, numbered it as a message (every later message one more than the log's)
        // and could give a hit on it, a message the log does not have.
        let record = |i: usize, text: &[u8]| {
            let mut line =
                format!(r#"{{"type":"message","index":{i},"data":[{{"role":"user","content":""#).into_bytes();
            line.extend_from_slice(text);
            line.extend_from_slice(br#""}]}"#);
            line
        };
        for (bad, eol) in [
            (&b"needle one \xff"[..], "\n"),
            (b"other \xc3", "\r\n"),
            (b"\xc0\xae needle", "\n"),
        ] {
            let mut bytes = br#"{"type":"session","version":1,"format":"openai"}"#.to_vec();
            for line in [record(0, bad), record(1, b"needle two")] {
                bytes.extend_from_slice(eol.as_bytes());
                bytes.extend_from_slice(&line);
            }
            bytes.extend_from_slice(eol.as_bytes());
            let path = std::env::temp_dir().join(format!("agentcontext-logsearch-utf8-{}.jsonl", std::process::id()));
            std::fs::write(&path, &bytes).unwrap();
            for q in [
                Query::words("needle").unwrap(),
                Query::regex("needle").unwrap(),
                Query::words("two").unwrap(),
            ] {
                let r = search_log(&path, &q, SearchOptions::default(), DEFAULT_MAX_BYTES).unwrap();
                assert_eq!((r.messages, r.skipped, r.hits.len()), (1, 1, 1), "{bad:?}");
                assert_eq!((r.hits[0].message, r.hits[0].line), (0, Some(3)), "{bad:?}");
            }
            std::fs::remove_file(&path).unwrap();
        }
        // A surrogate's three bytes the log decodes (`surrogatepass`): still a message.
        let mut bytes = br#"{"type":"session","version":1,"format":"openai"}"#.to_vec();
        for line in [record(0, b"\xed\xa0\x80 one"), record(1, b"needle two")] {
            bytes.push(b'\n');
            bytes.extend_from_slice(&line);
        }
        bytes.push(b'\n');
        let path = temp("surrogate", "");
        std::fs::write(&path, &bytes).unwrap();
        let r = search_log(
            &path,
            &Query::words("needle").unwrap(),
            SearchOptions::default(),
            DEFAULT_MAX_BYTES,
        )
        .unwrap();
        assert_eq!((r.messages, r.skipped, r.hits[0].message), (2, 0, 1));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_hit_on_the_second_result_of_a_message_gives_that_results_call_id() {
        // Anthropic's user message answers every call of a turn: a hit on its second result said
        // the first's id, which recalls the other result.
        let text = concat!(
            r#"{"type":"session","version":1,"format":"anthropic"}"#,
            "\n",
            r#"{"type":"message","index":0,"data":[{"role":"assistant","content":[{"type":"tool_use","id":"a1","name":"bash","input":{}},{"type":"tool_use","id":"c","name":"bash","input":{}}]}]}"#,
            "\n",
            r#"{"type":"message","index":1,"data":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a1","content":"alpha out"},{"type":"tool_result","tool_use_id":"c","content":"bravo out"}]}]}"#,
            "\n",
        );
        let path = temp("two-results", text);
        for (word, id) in [("alpha", "a1"), ("bravo", "c"), ("out", "a1")] {
            let q = Query::words(word).unwrap();
            let r = search_log(&path, &q, SearchOptions::default(), DEFAULT_MAX_BYTES).unwrap();
            assert_eq!(r.hits[0].recall_id.as_deref(), Some(id), "{word}");
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_hit_on_a_result_of_a_reused_call_id_gives_the_name_its_placeholder_shows() {
        // Servers that number calls `call_0` afresh every turn: every hit said `call_0`, which
        // recalls the first call's result.
        let header = r#"{"type":"session","version":1,"format":"openai"}"#;
        let call = |i: usize, id: &str| {
            format!(
                r#"{{"type":"message","index":{i},"data":[{{"role":"assistant","content":null,"tool_calls":[{{"id":"{id}","type":"function","function":{{"name":"bash","arguments":"{{}}"}}}}]}}]}}"#
            )
        };
        let result = |i: usize, id: &str, text: &str| {
            format!(
                r#"{{"type":"message","index":{i},"data":[{{"role":"tool","tool_call_id":"{id}","content":"{text}"}}]}}"#
            )
        };
        let mut lines = vec![header.to_owned()];
        for (k, (id, word)) in [
            ("call_0", "alpha"),
            ("call_0", "bravo"),
            ("other", "delta"),
            ("call_0", "charlie"),
            ("x", "echo"),
            ("x", "foxtrot"),
            ("x#2", "golf"),
        ]
        .iter()
        .enumerate()
        {
            lines.push(call(2 * k, id));
            lines.push(result(2 * k + 1, id, &format!("{word} output")));
        }
        let path = temp("reused", &(lines.join("\n") + "\n"));
        for (word, expected) in [
            ("alpha", Some("call_0")),
            ("bravo", Some("call_0#2")),
            ("delta", Some("other")),
            ("charlie", Some("call_0#3")),
            ("echo", Some("x")),
            // The second `x` and the call whose id is `x#2` would both be named `x#2`: neither is.
            ("foxtrot", None),
            ("golf", None),
        ] {
            for q in [Query::words(word).unwrap(), Query::regex(word).unwrap()] {
                let r = search_log(&path, &q, SearchOptions::default(), DEFAULT_MAX_BYTES).unwrap();
                assert_eq!(r.hits.len(), 1, "{word}");
                assert_eq!(r.hits[0].recall_id.as_deref(), expected, "{word}");
            }
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn messages_of_any_format_are_searched_by_position() {
        let messages: Vec<Value> = serde_json::from_str(
            r#"[{"role":"user","content":"why does the build fail"},
                {"role":"assistant","content":null,"tool_calls":[{"id":"c1","name":"bash","arguments":"{\"cmd\":\"make\"}"}]},
                {"role":"tool","tool_call_id":"c1","content":"error: the build failed"}]"#,
        )
        .unwrap();
        let q = Query::words("build").unwrap();
        let r = search_messages(&messages, &q, SearchOptions::default());
        assert_eq!((r.messages, r.matched), (3, 2));
        let tool = r.hits.iter().find(|h| h.message == 2).unwrap();
        assert_eq!(
            (tool.line, tool.role.as_str(), tool.recall_id.as_deref()),
            (None, "tool", Some("c1"))
        );
    }
}
