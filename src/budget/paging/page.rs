//! One page from a scanned reader: the lines before it skipped, its lines read within the page's
//! limits, the rest of the input counted within the scan budget, then the page rendered and
//! checked against the token gate.

use std::fmt::Write as _;
use std::hash::{DefaultHasher, Hasher};
use std::io::{self, BufRead};

use super::scan::{ReadLine, Scan, Stop, read_line};
use super::{Page, ReadLimits};
use crate::error::io_reason;
use crate::files::human;

/// A refusal: its kind and its message.
type Refusal = (&'static str, String);

fn digits(n: usize) -> usize {
    n.to_string().len()
}

pub(super) fn page_from<R: BufRead>(
    reader: R,
    name: &str,
    size: u64,
    offset: Option<usize>,
    limit: Option<usize>,
    limits: &ReadLimits,
) -> std::result::Result<Page, Refusal> {
    let mut scan = Scan {
        reader,
        pos: 0,
        last: None,
        hasher: DefaultHasher::new(),
    };
    let start = offset.unwrap_or(1).max(1);
    let want = limit.unwrap_or(limits.max_lines).clamp(1, limits.max_lines);
    // Lines before the page: skipped, whatever their length.
    let Some(mut seen) = skip_before(&mut scan, name, size, start)? else {
        return Ok(Page {
            text: format!("[{name} is empty.]"),
            start_line: 0,
            end_line: 0,
            total_lines: Some(0),
            file_bytes: 0,
            long_lines_cut: 0,
            more: false,
            content_hash: scan.hasher.finish(),
        });
    };
    // The page's lines, each at most `line_max_chars` kept, until `want` lines or `max_bytes`.
    let mut budget = limits.scan_bytes;
    let (lines, inside_line) = read_lines(&mut scan, name, limits, start, want, &mut budget, &mut seen)?;
    // The rest of the file, counted within what is left of the scan budget.
    let (total_lines, at_least) = count_rest(&mut scan, name, inside_line, seen, &mut budget)?;
    let (out, end, more, long_lines_cut) = render(&lines, start, limits, total_lines, at_least, size);
    token_gate(&out, limits, name, start, end)?;
    Ok(Page {
        text: out,
        start_line: start,
        end_line: end,
        total_lines,
        file_bytes: if total_lines.is_some() { scan.pos } else { size },
        long_lines_cut,
        more,
        content_hash: scan.hasher.finish(),
    })
}

/// Bytes [`skip_before`] reads between two checks for a NUL byte.
const SKIP_CHUNK: u64 = 64 * 1024;

/// Skip the lines before line `start`. Returns the lines seen, or `None` for an empty input.
/// A line longer than [`SKIP_CHUNK`] with a NUL byte in it refuses the file as binary (its first
/// bytes had none): a sparse file's hole reads as NUL bytes, and a line-long hole of terabytes is
/// not read to its end. A short line with a NUL byte is skipped as any other (text files are paged
/// as they were).
fn skip_before<R: BufRead>(
    scan: &mut Scan<R>,
    name: &str,
    size: u64,
    start: usize,
) -> std::result::Result<Option<usize>, Refusal> {
    let io_error = |e: io::Error| ("io", format!("Cannot read {name}: {}.", io_reason(&e)));
    let mut seen = 0usize;
    let mut in_line = false;
    let mut nul = false;
    while seen < start - 1 {
        let mut chunk = SKIP_CHUNK;
        let (stop, consumed) = scan
            .line(&mut chunk, |piece| nul |= memchr::memchr(0, piece).is_some())
            .map_err(io_error)?;
        if nul && stop == Stop::Budget {
            return Err(("binary", super::binary_message(name, size)));
        }
        in_line |= consumed > 0;
        match stop {
            Stop::Budget => {}
            Stop::Newline => {
                seen += 1;
                in_line = false;
                nul = false;
            }
            Stop::Eof => {
                seen += usize::from(in_line);
                break;
            }
        }
    }
    if seen < start - 1 || scan.at_eof().map_err(io_error)? {
        if seen == 0 {
            return Ok(None);
        }
        return Err((
            "offset_past_end",
            format!("{name} has {seen} lines; offset={start} is past the end."),
        ));
    }
    Ok(Some(seen))
}

/// The width of the line numbers of a page whose last line is `last` (with the tab after them).
fn number_width(limits: &ReadLimits, last: usize) -> usize {
    if limits.line_numbers {
        digits(last).max(6) + 1
    } else {
        0
    }
}

/// Read the page's lines; `seen` counts them. Also returns whether the read stopped inside a
/// line (its scan budget ran out there).
fn read_lines<R: BufRead>(
    scan: &mut Scan<R>,
    name: &str,
    limits: &ReadLimits,
    start: usize,
    want: usize,
    budget: &mut u64,
    seen: &mut usize,
) -> std::result::Result<(Vec<ReadLine>, bool), Refusal> {
    let io_error = |e: io::Error| ("io", format!("Cannot read {name}: {}.", io_reason(&e)));
    // Enough bytes for `line_max_chars` characters of up to 4 bytes, but never more than the page
    // may hold (a line is cut there too, however large `line_max_chars` is).
    let keep_bytes = (limits.line_max_chars as u64)
        .saturating_mul(4)
        .min(limits.max_bytes.max(4) as u64);
    let estimated_width = number_width(limits, start.saturating_add(want - 1));
    let mut lines: Vec<ReadLine> = Vec::new();
    let mut used = 0usize;
    let mut inside_line = false;
    while lines.len() < want && !scan.at_eof().map_err(io_error)? {
        let line = read_line(scan, name, limits.line_max_chars, keep_bytes, budget)?;
        *seen += 1;
        inside_line = !line.ended;
        let size = estimated_width + line.text.len() + 1;
        if used + size > limits.max_bytes && !lines.is_empty() {
            break;
        }
        used += size;
        lines.push(line);
        if inside_line {
            break;
        }
    }
    Ok((lines, inside_line))
}

/// The input's lines (`None` when not counted to its end) and the fewest it may have.
fn count_rest<R: BufRead>(
    scan: &mut Scan<R>,
    name: &str,
    inside_line: bool,
    seen: usize,
    budget: &mut u64,
) -> std::result::Result<(Option<usize>, usize), Refusal> {
    let io_error = |e: io::Error| ("io", format!("Cannot read {name}: {}.", io_reason(&e)));
    Ok(if inside_line {
        (None, seen)
    } else if scan.at_eof().map_err(io_error)? {
        (Some(seen), seen)
    } else {
        match scan.count_newlines(budget).map_err(io_error)? {
            (newlines, Stop::Eof) => {
                let total = seen + newlines + usize::from(scan.last != Some(b'\n'));
                (Some(total), total)
            }
            (newlines, _) => (None, seen + newlines + 1),
        }
    })
}

/// The page's text (numbered lines within `max_bytes`, then the continuation hint), its last
/// line, whether more lines follow and how many shown lines were cut.
fn render(
    lines: &[ReadLine],
    start: usize,
    limits: &ReadLimits,
    total_lines: Option<usize>,
    at_least: usize,
    size: u64,
) -> (String, usize, bool, usize) {
    let width = number_width(limits, total_lines.unwrap_or(start + lines.len() - 1));
    let mut out = String::new();
    let mut shown = 0;
    let mut long_lines_cut = 0;
    for (i, line) in lines.iter().enumerate() {
        let before = out.len();
        if limits.line_numbers {
            let _ = write!(out, "{:>w$}\t", start + i, w = width - 1);
        }
        out.push_str(&line.text);
        out.push('\n');
        if out.len() > limits.max_bytes && shown > 0 {
            out.truncate(before);
            break;
        }
        shown += 1;
        long_lines_cut += usize::from(line.cut);
    }
    let end = start + shown - 1;
    let more = total_lines.is_none_or(|total| end < total);
    if more {
        match total_lines {
            Some(total) => {
                let _ = write!(
                    out,
                    "\n[Showing lines {start}-{end} of {total}. Use offset={} to continue.]",
                    end + 1
                );
            }
            None => {
                let _ = write!(
                    out,
                    "\n[Showing lines {start}-{end} of at least {at_least} ({} in all; the file was not read to its \
                     end to count its lines). Use offset={} to continue.]",
                    human(size),
                    end + 1
                );
            }
        }
    }
    (out, end, more, long_lines_cut)
}

/// Refuse a page of lines `start`-`end` over the token gate.
fn token_gate(
    out: &str,
    limits: &ReadLimits,
    name: &str,
    start: usize,
    end: usize,
) -> std::result::Result<(), Refusal> {
    if let Some((enc, gate)) = limits.token_gate {
        // Cheap bound first: a page under `gate` bytes cannot be over `gate` tokens.
        if out.len() > gate {
            let tokens = enc.count(out);
            if tokens > gate {
                return Err((
                    "token_gate",
                    format!(
                        "Lines {start}-{end} of {name} are {tokens} tokens, over the {gate}-token limit for one \
                         read. Read fewer lines with limit (for example limit={}), or search with grep.",
                        ((end - start + 1) * gate / tokens).max(1)
                    ),
                ));
            }
        }
    }
    Ok(())
}
