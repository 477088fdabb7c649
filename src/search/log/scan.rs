//! One pass over a log's records: each line classified (not a message, unreadable, a message
//! that cannot match, a message counted), a batch of lines at a time in parallel.

use rayon::prelude::*;
use serde_json::Value;

use super::BATCH_BYTES;
use super::text::record_text;
use crate::search::{Counted, Query, Stats};

enum Line {
    Other,
    /// A line that cannot be read as a record.
    Unreadable,
    /// A message that cannot match.
    Skipped,
    /// A message parsed and counted.
    Message(Counted),
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
            Err(_) => return Line::Unreadable,
        }
    };
    if !is_message {
        return Line::Other;
    }
    // A message the raw text says cannot match is not parsed (that is the prefilter's gain: a
    // syntax check of every such line made a rare word's search 2.2x slower); only a line that
    // does not end its object (torn, cut) is taken for unreadable there. A record that is well
    // formed to the eye but cannot be parsed is counted as a message there, and as unreadable
    // where it is parsed for its text.
    if query.may_match_raw(raw) == Some(false) {
        return if raw.trim_end().ends_with('}') {
            Line::Skipped
        } else {
            Line::Unreadable
        };
    }
    match record_text(raw) {
        Some(text) => Line::Message(count(query, &text)),
        None => Line::Unreadable,
    }
}

pub(super) fn count(query: &Query, text: &str) -> Counted {
    let counts = query.count(text);
    Counted {
        matches: counts.iter().sum(),
        tf: counts.into_iter().map(|c| c as f64).collect(),
        len: text.len(),
    }
}

/// A message that matched: where its record is, and its counts.
pub(super) struct Found {
    pub(super) message: usize,
    pub(super) line: usize,
    pub(super) offset: u64,
    pub(super) len: usize,
}

/// What a pass over a log's records found.
pub(super) struct Scanned {
    pub(super) stats: Stats,
    /// The counts of the messages that match, and where each is.
    pub(super) matched: Vec<Counted>,
    pub(super) found: Vec<Found>,
    pub(super) messages: usize,
    /// Lines that could not be read as a record.
    pub(super) skipped: usize,
}

/// Read the records after the header (`offset` bytes, line 1) a batch at a time, examining each
/// batch's lines in parallel.
pub(super) fn scan(reader: &mut impl std::io::BufRead, query: &Query, offset: u64) -> std::io::Result<Scanned> {
    let mut stats = Stats::new(query.units());
    let mut matched: Vec<Counted> = Vec::new();
    let mut found: Vec<Found> = Vec::new();
    let mut messages = 0usize;
    let mut skipped = 0usize;
    let mut line = 2usize; // of the next line read (the header is line 1)
    let mut offset = offset; // of the next line read
    let mut batch: Vec<u8> = Vec::new();
    let mut spans: Vec<Span> = Vec::new();
    let mut more = true;
    while more {
        batch.clear();
        spans.clear();
        more = fill_batch(reader, &mut batch, &mut spans, &mut line, &mut offset, &mut skipped)?;
        let classified: Vec<Line> = spans
            .par_iter()
            .map(|span| classify(query, &String::from_utf8_lossy(&batch[span.start..span.end])))
            .collect();
        for (span, kind) in spans.iter().zip(classified) {
            match kind {
                Line::Other => {}
                Line::Unreadable => skipped += 1,
                Line::Skipped => messages += 1,
                Line::Message(counted) => {
                    stats.add(&counted);
                    if counted.matches > 0 {
                        matched.push(counted);
                        found.push(Found {
                            message: messages,
                            line: span.line,
                            offset: span.offset,
                            len: span.end - span.start,
                        });
                    }
                    messages += 1;
                }
            }
        }
    }
    Ok(Scanned {
        stats,
        matched,
        found,
        messages,
        skipped,
    })
}

/// A line of a batch: its bytes `start..end` (line break excluded), its number and where it is in
/// the file.
struct Span {
    start: usize,
    end: usize,
    line: usize,
    offset: u64,
}

/// Consume the rest of a line without keeping it: its length with its line break, or None when
/// the file ends first.
fn skip_line(reader: &mut impl std::io::BufRead) -> std::io::Result<Option<u64>> {
    let mut skipped = 0u64;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(None);
        }
        if let Some(i) = memchr::memchr(b'\n', buf) {
            reader.consume(i + 1);
            return Ok(Some(skipped + i as u64 + 1));
        }
        let n = buf.len();
        skipped += n as u64;
        reader.consume(n);
    }
}

/// Read lines into `batch` (their spans into `spans`) up to [`BATCH_BYTES`], skipping those that
/// are never a record; `line` and `offset` are the next line's number and place and move past the
/// lines read. Returns whether lines may follow the batch.
fn fill_batch(
    reader: &mut impl std::io::BufRead,
    batch: &mut Vec<u8>,
    spans: &mut Vec<Span>,
    line: &mut usize,
    offset: &mut u64,
    skipped: &mut usize,
) -> std::io::Result<bool> {
    let mut more = true;
    while batch.len() < BATCH_BYTES {
        let buf = reader.fill_buf()?;
        let Some(&lead) = buf.first() else {
            more = false;
            break;
        };
        if !matches!(lead, b'{' | b' ' | b'\t' | b'\r' | b'\n') {
            // Never a record (one is a JSON object): skipped, not read into memory, however
            // long (a sparse file of zeros is one line).
            *skipped += 1;
            match skip_line(reader)? {
                Some(n) => {
                    *line += 1;
                    *offset += n;
                }
                None => more = false,
            }
            continue;
        }
        let start = batch.len();
        let n = reader.read_until(b'\n', batch)?;
        if batch.last() != Some(&b'\n') {
            // A last line without a line break is a torn append: not a record (as the log
            // itself reads it), and counted as unread unless blank.
            if !batch[start..].trim_ascii().is_empty() {
                *skipped += 1;
            }
            batch.truncate(start);
            more = false;
            break;
        }
        spans.push(Span {
            start,
            end: batch.len() - 1,
            line: *line,
            offset: *offset,
        });
        *line += 1;
        *offset += n as u64;
    }
    Ok(more)
}
