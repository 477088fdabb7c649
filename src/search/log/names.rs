//! The recall ids of the tool results a log search hits, as placeholders name them: a result
//! answers a call, and the call's recall id is its id unless the id is reused in the log (then
//! the k-th call with it is `<id>#k`; see [`RecallIds`]). A hit's raw call id alone would recall
//! the first call's result.
//!
//! Found by a second pass over the log, made only when a hit answers a call: the lines that can
//! hold a call or result the name depends on are parsed (a line that holds none of the hits'
//! ids, up to their first `#`, in its raw bytes cannot: see [`Needles`]), and only their tool
//! blocks are kept (ids, names and the recall ids placeholders show), never the file.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read as _, Seek as _, SeekFrom};

use memchr::memmem::Finder;
use serde_json::Value;

use crate::compact::clear::{RecallIds, shown_by, shown_in};
use crate::compact::structure::{Pairing, ToolBlock};
use crate::model::{Body, Format, Message};

use super::{BATCH_BYTES, LogHit};

/// A tool call or result of the log: where it is (the byte offset of its record's line and its
/// place among the record's blocks), its id, the tool's name for a call, and the recall id it
/// shows already (a placeholder's), if any.
struct Tool {
    at: (usize, usize),
    id: String,
    name: Option<String>,
    shown: Option<String>,
}

/// What a line must hold in its raw bytes to hold a tool block a hit's name depends on: each
/// hit's id up to its first `#` (every call whose name could be the hit's — the id itself, or
/// `<id>#k` — and every placeholder that shows it holds that). None: every line is read (an id
/// JSON may write otherwise: a quote, a backslash, `/`, a control or non-ASCII character).
struct Needles(Option<Vec<Finder<'static>>>);

impl Needles {
    fn of<'a>(ids: impl Iterator<Item = &'a str>) -> Needles {
        let mut finders = Vec::new();
        for id in ids {
            let base = id.split('#').next().unwrap_or(id);
            if base.is_empty()
                || base
                    .bytes()
                    .any(|b| !(0x20..0x80).contains(&b) || matches!(b, b'"' | b'\\' | b'/'))
            {
                return Needles(None);
            }
            finders.push(Finder::new(base.as_bytes()).into_owned());
        }
        Needles(Some(finders))
    }

    fn may_hold(&self, line: &[u8]) -> bool {
        self.0
            .as_ref()
            .is_none_or(|finders| finders.iter().any(|f| f.find(line).is_some()))
    }
}

/// The tool blocks of a message record's line (none when it is not one or cannot be read).
fn tools_of(line: &[u8], offset: usize, format: Format, out: &mut Vec<Tool>) {
    let Ok(Value::Object(mut record)) = serde_json::from_slice::<Value>(line) else {
        return;
    };
    if record.get("type").and_then(Value::as_str) != Some("message") {
        return;
    }
    let values = match record.remove("data") {
        Some(Value::Array(values)) => values,
        Some(other) => vec![other],
        None => return,
    };
    let Ok(messages) = crate::formats::read(format, values) else {
        return;
    };
    let blocks = messages.iter().flat_map(|m| m.blocks.iter());
    for (bi, block) in blocks.enumerate() {
        let (id, name) = match &block.body {
            Body::ToolUse { id, name, .. } => (id, Some(name.clone())),
            Body::ToolResult { tool_use_id, .. } => (tool_use_id, None),
            _ => continue,
        };
        out.push(Tool {
            at: (offset, bi),
            id: id.clone(),
            name,
            shown: shown_by(&block.body).map(str::to_owned),
        });
    }
}

/// The recall id of each hit `(offset of its record's line, the call id its result answers)`,
/// reading the log's records from `reader` (at byte `offset` of the file, after the header):
/// the name of the call the hit's result answers (the call id, or `<id>#k`), None when two
/// calls would have that name (nothing recalls it; see [`RecallIds`]); the call id itself for a
/// result no earlier call answers.
pub(super) fn hit_names(
    mut reader: impl BufRead,
    mut offset: usize,
    format: Format,
    hits: &[(usize, &str)],
) -> std::io::Result<Vec<Option<String>>> {
    let needles = Needles::of(hits.iter().map(|(_, id)| *id));
    let mut tools: Vec<Tool> = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line)?;
        if read == 0 {
            break;
        }
        let raw = line.strip_suffix(b"\n").unwrap_or(&line);
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.starts_with(b"{") && needles.may_hold(raw) {
            tools_of(raw, offset, format, &mut tools);
        }
        offset += read;
    }
    let pairing = Pairing::from_blocks(tools.iter().map(|t| ToolBlock {
        at: t.at,
        id: &t.id,
        name: t.name.as_deref(),
    }));
    let shown: HashMap<(usize, usize), &str> = tools
        .iter()
        .filter_map(|t| t.shown.as_deref().map(|s| (t.at, s)))
        .collect();
    let ids = RecallIds::shown(&pairing, true, |ci| {
        let c = &pairing.calls[ci];
        c.result
            .into_iter()
            .chain([c.at])
            .filter_map(|at| shown.get(&at).map(|s| (*s).to_owned()))
            .collect()
    });
    Ok(hits
        .iter()
        .map(|&(line_at, id)| {
            let result = tools
                .iter()
                .find(|t| t.at.0 == line_at && t.name.is_none() && t.id == id);
            name_of(&pairing, &ids, result.map(|r| r.at), id)
        })
        .collect())
}

/// The recall id of the result at `result` answering call `id`: the name of the latest call with
/// the id before it (the call `Pairing` pairs it with; a second result of a call, too), None when
/// two calls would have that name; the id itself for a result no call answers.
fn name_of(pairing: &Pairing<'_>, ids: &RecallIds<'_, '_>, result: Option<(usize, usize)>, id: &str) -> Option<String> {
    let call = result.and_then(|at| pairing.calls.iter().rposition(|c| c.id == id && c.at < at));
    match call {
        Some(ci) => Some(ids.get(ci).to_owned()).filter(|name| !name.is_empty()),
        None => Some(id.to_owned()),
    }
}

/// Set the recall id of each of `hits` (on `messages`, held whole: [`super::search_messages`]'s)
/// that answers a call to the name its placeholder shows, as [`hit_names`] does for a log.
pub fn name_message_hits(messages: &[Message], hits: &mut [LogHit]) {
    if hits.iter().all(|h| h.recall_id.is_none()) {
        return;
    }
    let pairing = Pairing::of(messages);
    let ids = RecallIds::shown(&pairing, true, shown_in(messages, &pairing));
    for hit in hits {
        let Some(id) = hit.recall_id.take() else { continue };
        let result = messages.get(hit.message).and_then(|m| {
            m.blocks
                .iter()
                .position(|b| matches!(&b.body, Body::ToolResult { tool_use_id, .. } if *tool_use_id == id))
        });
        hit.recall_id = name_of(&pairing, &ids, result.map(|bi| (hit.message, bi)), &id);
    }
}

/// Set the recall id of each of `hits` that answers a call (`places`: the byte offsets of their
/// records' lines) to the name its placeholder shows ([`hit_names`]), reading the log `file`
/// (of `size` bytes, whose header line is `header`) once more; nothing is read when no hit
/// answers a call or the header names no format.
pub(super) fn name_hits(
    file: &mut File,
    header: &[u8],
    size: u64,
    hits: &mut [LogHit],
    places: &[u64],
) -> std::io::Result<()> {
    let answering: Vec<(usize, usize, String)> = hits
        .iter()
        .zip(places)
        .enumerate()
        .filter_map(|(h, (hit, &at))| Some((h, usize::try_from(at).ok()?, hit.recall_id.clone()?)))
        .collect();
    let format = serde_json::from_slice::<Value>(header)
        .ok()
        .and_then(|h| h.get("format").and_then(Value::as_str).and_then(Format::parse));
    let Some(format) = format.filter(|_| !answering.is_empty()) else {
        return Ok(());
    };
    let start = header.len() as u64;
    file.seek(SeekFrom::Start(start))?;
    let reader = BufReader::with_capacity(BATCH_BYTES, (&*file).take(size.saturating_sub(start)));
    let asked: Vec<(usize, &str)> = answering.iter().map(|(_, at, id)| (*at, id.as_str())).collect();
    let names = hit_names(reader, header.len(), format, &asked)?;
    for ((h, _, _), name) in answering.iter().zip(names) {
        hits[*h].recall_id = name;
    }
    Ok(())
}
