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
use std::io::{Read, Seek as _, SeekFrom};

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
///
/// The ids are searched for at once, as one alternation of literals (the regex crate's SIMD
/// multi-literal search): ten hits' ids searched one after the other, each over the whole log,
/// were a third of a common word's search (ids that share a prefix, `toolu_bdrk_01...`, defeat
/// memmem's rare-byte prefilter).
struct Needles(Option<regex::bytes::Regex>);

impl Needles {
    fn of<'a>(ids: impl Iterator<Item = &'a str>) -> Needles {
        let mut literals = Vec::new();
        for id in ids {
            let base = id.split('#').next().unwrap_or(id);
            if base.is_empty()
                || base
                    .bytes()
                    .any(|b| !(0x20..0x80).contains(&b) || matches!(b, b'"' | b'\\' | b'/'))
            {
                return Needles(None);
            }
            literals.push(regex::escape(base));
        }
        // Too many ids for the regex crate's size limits: every line is read.
        Needles(regex::bytes::Regex::new(&literals.join("|")).ok())
    }

    /// The places `(start, end)` in `region` (whole lines, each ended by `\n` or the region's
    /// end) of the lines that may hold a needle, in order, each once: with needles, their
    /// places are found by searching the whole region (no needle holds a line
    /// break, so each place lies on one line), and only those lines are split out; without, every
    /// line. `out` is cleared first.
    fn lines(&self, region: &[u8], out: &mut Vec<(usize, usize)>) {
        out.clear();
        let end_of = |at: usize| memchr::memchr(b'\n', &region[at..]).map_or(region.len(), |k| at + k);
        let Some(needles) = &self.0 else {
            let mut start = 0;
            while start < region.len() {
                let end = end_of(start);
                out.push((start, end));
                start = end + 1;
            }
            return;
        };
        let mut at = 0;
        while let Some(found) = needles.find_at(region, at) {
            let start = memchr::memrchr(b'\n', &region[..found.start()]).map_or(0, |k| k + 1);
            let end = end_of(found.start());
            out.push((start, end));
            at = end;
        }
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
    mut reader: impl Read,
    mut offset: usize,
    format: Format,
    hits: &[(usize, &str)],
) -> std::io::Result<Vec<Option<String>>> {
    let needles = Needles::of(hits.iter().map(|(_, id)| *id));
    let mut tools: Vec<Tool> = Vec::new();
    // Whole lines are searched a buffer at a time (a line longer than the buffer grows it); the
    // bytes after the last whole line move to the front. `filled`: the bytes of `buf` read.
    let (mut buf, mut lines) = (vec![0u8; BATCH_BYTES], Vec::new());
    let (mut filled, mut ended) = (0, false);
    while !ended {
        if filled == buf.len() {
            buf.resize(2 * buf.len(), 0);
        }
        while filled < buf.len() {
            match reader.read(&mut buf[filled..]) {
                Ok(0) => {
                    ended = true;
                    break;
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let whole = if ended {
            filled
        } else {
            match memchr::memrchr(b'\n', &buf[..filled]) {
                Some(k) => k + 1,
                None => continue,
            }
        };
        needles.lines(&buf[..whole], &mut lines);
        for &(start, end) in &lines {
            let raw = &buf[start..end];
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            if raw.starts_with(b"{") {
                tools_of(raw, offset + start, format, &mut tools);
            }
        }
        offset += whole;
        buf.copy_within(whole..filled, 0);
        filled -= whole;
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
    let reader = (&*file).take(size.saturating_sub(start));
    let asked: Vec<(usize, &str)> = answering.iter().map(|(_, at, id)| (*at, id.as_str())).collect();
    let names = hit_names(reader, header.len(), format, &asked)?;
    for ((h, _, _), name) in answering.iter().zip(names) {
        hits[*h].recall_id = name;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::testing::xorshift;

    /// The lines of `region` that hold one of `ids` up to its first `#` (every line for None),
    /// split one by one.
    fn lines_one_by_one(ids: Option<&[&str]>, region: &[u8]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut start = 0;
        while start < region.len() {
            let end = memchr::memchr(b'\n', &region[start..]).map_or(region.len(), |k| start + k);
            let line = &region[start..end];
            let holds = ids.is_none_or(|ids| {
                ids.iter()
                    .map(|id| id.split('#').next().unwrap_or(id).as_bytes())
                    .any(|base| line.windows(base.len()).any(|w| w == base))
            });
            if holds {
                out.push((start, end));
            }
            start = end + 1;
        }
        out
    }

    #[test]
    fn the_lines_found_in_a_whole_region_are_the_lines_that_hold_a_needle() {
        let pieces: [&[u8]; 9] = [
            b"call_1", b"call_12", b"ab", b"\n", b"\r\n", b"x", b"call_", b"{", b"b\n",
        ];
        let mut rng = xorshift(0x5eed_0047_0000_0003);
        let mut next = move |n: usize| (rng() % n as u64) as usize;
        let mut out = Vec::new();
        let mut found = 0;
        for _ in 0..5000 {
            let region: Vec<u8> = (0..next(20))
                .flat_map(|_| pieces[next(pieces.len())].to_vec())
                .collect();
            let ids: &[&str] = [
                &["call_1"][..],
                &["call_12", "ab"],
                &["b", "call_1", "x"],
                &["a/b"],
                &["call_1#2", "a.b"],
            ][next(5)];
            let needles = Needles::of(ids.iter().copied());
            needles.lines(&region, &mut out);
            // (`a/b` is an id JSON may write otherwise: every line is read.)
            let plain = Some(ids).filter(|ids| !ids.contains(&"a/b"));
            assert_eq!(
                out,
                lines_one_by_one(plain, &region),
                "{ids:?} {:?}",
                String::from_utf8_lossy(&region)
            );
            found += out.len();
        }
        assert!(found > 5000, "{found}");
    }

    /// A reader that gives a few bytes at a time.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(out.len()).min(self.0.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_line_longer_than_the_buffer_and_a_last_line_without_a_break_are_read() {
        let call = |id: &str| {
            format!(
                r#"{{"type":"message","index":0,"data":[{{"role":"assistant","content":null,"tool_calls":[{{"id":"{id}","type":"function","function":{{"name":"bash","arguments":"{{}}"}}}}]}}]}}"#
            )
        };
        let result = |id: &str| {
            format!(
                r#"{{"type":"message","index":1,"data":[{{"role":"tool","tool_call_id":"{id}","content":"out"}}]}}"#
            )
        };
        // A note of 3 MiB that names the id (read whole), two calls with it, the result last.
        let note = format!("note {} call_7", "x".repeat(3 << 20));
        let head = format!("{note}\n{}\r\n{}\n", call("call_7"), call("call_7"));
        let log = format!("{head}{}", result("call_7"));
        for step in [log.len(), 1 << 20, 4099] {
            let names = hit_names(
                Trickle(log.as_bytes(), step),
                10,
                Format::OpenAiChat,
                &[(10 + head.len(), "call_7")],
            )
            .unwrap();
            assert_eq!(names, [Some("call_7#2".to_owned())], "{step}");
        }
    }
}
