//! File reads for agents: pages of at most N lines or M bytes, with a continuation hint, long
//! lines cut, a byte gate before reading and a token gate after, and clear answers for binary and
//! non-UTF-8 files.
//!
//! A page is read by streaming: the lines before its offset are skipped in a fixed buffer, its own
//! lines are read up to `line_max_chars` each, and past them at most `scan_bytes` more are looked
//! at (the rest of cut lines, then the line count after the page). Memory stays O(page) whatever
//! the file's size, and a page near the start of a huge file costs a few reads, not the file. Only
//! regular files are read ([`crate::files::open_regular`]).

use std::fmt::Write as _;
use std::hash::{DefaultHasher, Hasher};
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use super::count::text_counts;
use crate::error::{Error, Result, io_reason};
use crate::files::{OpenError, human, open_regular};
use crate::tokens::Encoding;

/// Bytes looked at for a NUL to call a file binary.
const SNIFF_BYTES: usize = 8192;
/// The read buffer of a file page.
const BUFFER_BYTES: usize = 64 * 1024;

/// Limits of one read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReadLimits {
    /// Lines per page when the caller gives no `limit` (and the most a `limit` may ask for).
    pub max_lines: usize,
    /// Bytes per page, whichever of the two comes first.
    pub max_bytes: usize,
    /// A longer line is cut, with a marker.
    pub line_max_chars: usize,
    /// Files larger than this are refused unless the caller pages with offset/limit.
    pub byte_gate: Option<u64>,
    /// A page over this many tokens is refused (after reading).
    pub token_gate: Option<(Encoding, usize)>,
    /// Prefix each line with its number (`cat -n` style).
    pub line_numbers: bool,
    /// Bytes a page may read beyond what it shows: the rest of its cut lines, then the lines
    /// after it to count the file's lines. Past it the total is reported unknown (`None`).
    pub scan_bytes: u64,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            max_lines: 2_000,
            max_bytes: 50 * 1024,
            line_max_chars: 2_000,
            byte_gate: Some(256 * 1024),
            token_gate: Some((Encoding::O200k, 25_000)),
            line_numbers: true,
            scan_bytes: 8 * 1024 * 1024,
        }
    }
}

/// One page of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// The lines (numbered if asked), then the continuation hint when more lines follow.
    pub text: String,
    /// First and last line shown (1-based, inclusive); `0, 0` for an empty file.
    pub start_line: usize,
    pub end_line: usize,
    /// Lines in the file; `None` when the read stopped before the end of the file (the part after
    /// the page, or one of its lines, is longer than `scan_bytes`), so they were not counted.
    pub total_lines: Option<usize>,
    /// The file's size: the bytes read when the read reached the end, else the size the file
    /// system reports.
    pub file_bytes: u64,
    /// Lines cut because they were longer than `line_max_chars`.
    pub long_lines_cut: usize,
    /// Whether the page stopped before the end of the file.
    pub more: bool,
    /// A hash of the bytes the read went through, from the start of the file to the end of the
    /// page and the bytes scanned after it: the whole file whenever `total_lines` is known.
    pub content_hash: u64,
}

fn refuse(path: &Path, kind: &'static str, message: String) -> Error {
    Error::FileRead {
        path: path.display().to_string(),
        kind,
        message,
    }
}

/// Read one page of the file at `path`. `offset` is the first line (1-based); `limit` the number
/// of lines. Either given means the caller is paging, and the byte gate does not apply.
pub fn read_page(path: &Path, offset: Option<usize>, limit: Option<usize>, limits: &ReadLimits) -> Result<Page> {
    let shown = path.display().to_string();
    let (file, meta) = open_regular(path).map_err(|e| match e {
        OpenError::Io(e) => refuse(path, "io", format!("Cannot read {shown}: {}.", io_reason(&e))),
        OpenError::Directory => refuse(
            path,
            "directory",
            format!("{shown} is a directory, not a file. List it instead."),
        ),
        OpenError::Special(what) => refuse(
            path,
            "not_regular",
            format!("{shown} is {what}, not a regular file; only regular files are read."),
        ),
    })?;
    let paging = offset.is_some() || limit.is_some();
    if let Some(gate) = limits.byte_gate {
        if meta.len() > gate && !paging {
            return Err(refuse(
                path,
                "too_large",
                format!(
                    "{shown} is {}, over the {} limit for reading a whole file. Read a part with offset and limit \
                     (for example offset=1, limit=200), or search it with grep for what you need.",
                    human(meta.len()),
                    human(gate)
                ),
            ));
        }
    }
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&file)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| refuse(path, "io", format!("Cannot read {shown}: {}.", io_reason(&e))))?;
    if head.contains(&0) {
        return Err(refuse(path, "binary", binary_message(&shown, meta.len())));
    }
    let reader = BufReader::with_capacity(BUFFER_BYTES, io::Cursor::new(head).chain(file));
    page_from(reader, &shown, meta.len(), offset, limit, limits).map_err(|(kind, message)| refuse(path, kind, message))
}

fn binary_message(name: &str, bytes: u64) -> String {
    format!("{name} is a binary file ({bytes} bytes); it has no text to show.")
}

/// [`read_page`] over bytes already in memory (`name` is used in messages). `sniff_binary`
/// refuses input with a NUL byte in its first 8 KiB, as files of that kind are binary. The input
/// is in memory already, so it is always counted to its end (`total_lines` is never `None`).
pub fn page_bytes(
    bytes: &[u8],
    name: &str,
    offset: Option<usize>,
    limit: Option<usize>,
    limits: &ReadLimits,
    sniff_binary: bool,
) -> std::result::Result<Page, (&'static str, String)> {
    if sniff_binary && bytes[..bytes.len().min(SNIFF_BYTES)].contains(&0) {
        return Err(("binary", binary_message(name, bytes.len() as u64)));
    }
    let limits = ReadLimits {
        scan_bytes: u64::MAX,
        ..*limits
    };
    page_from(bytes, name, bytes.len() as u64, offset, limit, &limits)
}

/// Where a scan stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// After a `\n`.
    Newline,
    /// At the end of the input.
    Eof,
    /// Its byte budget is spent.
    Budget,
}

/// A reader scanned forward once, hashing every byte it passes.
struct Scan<R> {
    reader: R,
    /// Bytes consumed so far.
    pos: u64,
    /// The last byte consumed.
    last: Option<u8>,
    hasher: DefaultHasher,
}

impl<R: BufRead> Scan<R> {
    fn fill(&mut self) -> io::Result<&[u8]> {
        loop {
            match self.reader.fill_buf() {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Re-borrowed here so the loop above does not hold the borrow.
                Ok(_) => return self.reader.fill_buf(),
                Err(e) => return Err(e),
            }
        }
    }

    fn at_eof(&mut self) -> io::Result<bool> {
        Ok(self.fill()?.is_empty())
    }

    /// Consume `n` bytes of the buffer (which holds at least `n`).
    fn consume(&mut self, n: usize) {
        if n > 0 {
            let buf = self.reader.fill_buf().unwrap_or_default();
            self.hasher.write(&buf[..n]);
            self.last = Some(buf[n - 1]);
            self.reader.consume(n);
            self.pos += n as u64;
        }
    }

    /// Consume through the next `\n`, at most `budget` bytes (taken off it), handing each piece
    /// to `sink`. Also returns the bytes consumed.
    fn line(&mut self, budget: &mut u64, mut sink: impl FnMut(&[u8])) -> io::Result<(Stop, u64)> {
        let mut consumed = 0u64;
        loop {
            if *budget == 0 {
                return Ok((Stop::Budget, consumed));
            }
            let cap = usize::try_from(*budget).unwrap_or(usize::MAX);
            let buf = self.fill()?;
            if buf.is_empty() {
                return Ok((Stop::Eof, consumed));
            }
            let window = &buf[..buf.len().min(cap)];
            let (n, found) = match memchr::memchr(b'\n', window) {
                Some(i) => (i + 1, true),
                None => (window.len(), false),
            };
            sink(&window[..n]);
            self.consume(n);
            consumed += n as u64;
            *budget -= n as u64;
            if found {
                return Ok((Stop::Newline, consumed));
            }
        }
    }

    /// Count the `\n` bytes up to the end of the input, reading at most `budget` bytes.
    fn count_newlines(&mut self, budget: &mut u64) -> io::Result<(usize, Stop)> {
        let mut newlines = 0;
        loop {
            if *budget == 0 {
                return Ok((newlines, Stop::Budget));
            }
            let cap = usize::try_from(*budget).unwrap_or(usize::MAX);
            let buf = self.fill()?;
            if buf.is_empty() {
                return Ok((newlines, Stop::Eof));
            }
            let n = buf.len().min(cap);
            newlines += memchr::memchr_iter(b'\n', &buf[..n]).count();
            self.consume(n);
            *budget -= n as u64;
        }
    }
}

/// Characters in UTF-8 `bytes` (which may start or end inside one): the bytes that are not
/// continuation bytes.
fn chars_in(bytes: &[u8]) -> u64 {
    text_counts(bytes).chars as u64
}

fn digits(n: usize) -> usize {
    n.to_string().len()
}

/// One line of the page as read: its shown text (cut if need be) and what was cut.
struct ReadLine {
    text: String,
    /// Whether the line was read to its end (else the scan budget ran out inside it).
    ended: bool,
    cut: bool,
}

/// Read the line at the scan's position: up to `keep_bytes` bytes kept (of which at most
/// `line_max_chars` characters are shown), the rest of the line counted (within `budget`) and
/// dropped.
fn read_line<R: BufRead>(
    scan: &mut Scan<R>,
    name: &str,
    line_max_chars: usize,
    keep_bytes: u64,
    budget: &mut u64,
) -> std::result::Result<ReadLine, (&'static str, String)> {
    let io_error = |e: io::Error| ("io", format!("Cannot read {name}: {}.", io_reason(&e)));
    let line_start = scan.pos;
    let mut prefix = Vec::new();
    let mut cap = keep_bytes;
    let (stop, _) = scan
        .line(&mut cap, |piece| prefix.extend_from_slice(piece))
        .map_err(io_error)?;
    let mut rest_chars = 0u64;
    let mut ended = true;
    match stop {
        Stop::Newline => {
            prefix.pop();
            if prefix.last() == Some(&b'\r') {
                prefix.pop();
            }
        }
        Stop::Eof => {
            if prefix.last() == Some(&b'\r') {
                prefix.pop();
            }
        }
        Stop::Budget => {
            // The last two bytes of the rest, to tell a `\r` before the line's end.
            let mut tail: (Option<u8>, Option<u8>) = (None, None);
            let (stop, consumed) = scan
                .line(budget, |piece| {
                    rest_chars += chars_in(piece);
                    tail = match piece {
                        [.., a, b] => (Some(*a), Some(*b)),
                        [b] => (tail.1, Some(*b)),
                        [] => tail,
                    };
                })
                .map_err(io_error)?;
            let before_end = match stop {
                Stop::Newline => {
                    rest_chars -= 1;
                    if consumed == 1 { prefix.last().copied() } else { tail.0 }
                }
                Stop::Eof if consumed > 0 => tail.1,
                Stop::Eof => prefix.last().copied(),
                Stop::Budget => {
                    ended = false;
                    None
                }
            };
            if before_end == Some(b'\r') {
                if consumed > u64::from(stop == Stop::Newline) {
                    rest_chars -= 1;
                } else {
                    prefix.pop();
                }
            }
        }
    }
    let (valid, bad) = match std::str::from_utf8(&prefix) {
        Ok(_) => (prefix.len(), false),
        // An incomplete character at the end of a cut prefix goes on in the part not kept.
        Err(e) => (e.valid_up_to(), e.error_len().is_some() || stop != Stop::Budget),
    };
    let text = std::str::from_utf8(&prefix[..valid]).expect("valid up to here");
    let (shown, after) = match text.char_indices().nth(line_max_chars) {
        Some((cut, _)) => (&text[..cut], chars_in(&prefix[cut..]) + rest_chars),
        None if bad => {
            return Err((
                "not_utf8",
                format!(
                    "{name} is not UTF-8 text (invalid byte at offset {}); it may be in another encoding such as \
                     Latin-1, or binary.",
                    line_start + valid as u64
                ),
            ));
        }
        None => (text, chars_in(&prefix[valid..]) + rest_chars),
    };
    let mut out = String::with_capacity(shown.len() + 64);
    out.push_str(shown);
    let cut = after > 0 || !ended;
    if ended && cut {
        let _ = write!(out, " [... line cut: {after} more chars]");
    } else if cut && after > 0 {
        let _ = write!(
            out,
            " [... line cut: over {after} more chars; the rest of the line was not read]"
        );
    } else if cut {
        out.push_str(" [... line cut here; the rest of the line was not read]");
    }
    Ok(ReadLine { text: out, ended, cut })
}

#[allow(clippy::too_many_lines)] // one pass over the lines: position, limits and the token gate together
fn page_from<R: BufRead>(
    reader: R,
    name: &str,
    size: u64,
    offset: Option<usize>,
    limit: Option<usize>,
    limits: &ReadLimits,
) -> std::result::Result<Page, (&'static str, String)> {
    let io_error = |e: io::Error| ("io", format!("Cannot read {name}: {}.", io_reason(&e)));
    let mut scan = Scan {
        reader,
        pos: 0,
        last: None,
        hasher: DefaultHasher::new(),
    };
    let start = offset.unwrap_or(1).max(1);
    let want = limit.unwrap_or(limits.max_lines).clamp(1, limits.max_lines);
    // Lines before the page: skipped, whatever their length.
    let mut seen = 0usize;
    let mut unlimited = u64::MAX;
    while seen < start - 1 {
        let (stop, consumed) = scan.line(&mut unlimited, |_| {}).map_err(io_error)?;
        if stop == Stop::Newline || consumed > 0 {
            seen += 1;
        }
        if stop != Stop::Newline {
            break;
        }
    }
    if seen < start - 1 || scan.at_eof().map_err(io_error)? {
        if seen == 0 {
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
        }
        return Err((
            "offset_past_end",
            format!("{name} has {seen} lines; offset={start} is past the end."),
        ));
    }
    // The page's lines, each at most `line_max_chars` kept, until `want` lines or `max_bytes`.
    let mut budget = limits.scan_bytes;
    // Enough bytes for `line_max_chars` characters of up to 4 bytes, but never more than the page
    // may hold (a line is cut there too, however large `line_max_chars` is).
    let keep_bytes = (limits.line_max_chars as u64)
        .saturating_mul(4)
        .min(limits.max_bytes.max(4) as u64);
    let number_width = |last: usize| {
        if limits.line_numbers {
            digits(last).max(6) + 1
        } else {
            0
        }
    };
    let estimated_width = number_width(start.saturating_add(want - 1));
    let mut lines: Vec<ReadLine> = Vec::new();
    let mut used = 0usize;
    let mut inside_line = false;
    while lines.len() < want && !scan.at_eof().map_err(io_error)? {
        let line = read_line(&mut scan, name, limits.line_max_chars, keep_bytes, &mut budget)?;
        seen += 1;
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
    // The rest of the file, counted within what is left of the scan budget.
    let (total_lines, at_least) = if inside_line {
        (None, seen)
    } else if scan.at_eof().map_err(io_error)? {
        (Some(seen), seen)
    } else {
        match scan.count_newlines(&mut budget).map_err(io_error)? {
            (newlines, Stop::Eof) => {
                let total = seen + newlines + usize::from(scan.last != Some(b'\n'));
                (Some(total), total)
            }
            (newlines, _) => (None, seen + newlines + 1),
        }
    };
    let width = number_width(total_lines.unwrap_or(start + lines.len() - 1));
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
    if let Some((enc, gate)) = limits.token_gate {
        // Cheap bound first: a page under `gate` bytes cannot be over `gate` tokens.
        if out.len() > gate {
            let tokens = enc.count(&out);
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

#[cfg(test)]
#[allow(clippy::format_collect)]
mod tests {
    use super::*;

    fn page(text: &str, offset: Option<usize>, limit: Option<usize>) -> Page {
        page_bytes(text.as_bytes(), "f", offset, limit, &ReadLimits::default(), true).unwrap()
    }

    #[test]
    fn pages_with_a_continuation_hint() {
        let text: String = (1..=5000).map(|i| format!("row {i}\n")).collect();
        let p = page(&text, None, None);
        assert_eq!((p.start_line, p.end_line, p.total_lines), (1, 2000, Some(5000)));
        assert!(
            p.text
                .ends_with("[Showing lines 1-2000 of 5000. Use offset=2001 to continue.]")
        );
        let p = page(&text, Some(4990), None);
        assert_eq!((p.start_line, p.end_line, p.more), (4990, 5000, false));
        assert!(p.text.trim_end().ends_with("row 5000"));
    }

    #[test]
    fn long_lines_are_cut() {
        let text = format!("{}\nshort\n", "x".repeat(5000));
        let p = page(&text, None, None);
        assert_eq!(p.long_lines_cut, 1);
        assert!(p.text.contains("[... line cut: 3000 more chars]"));
    }

    #[test]
    fn crlf_and_no_trailing_newline() {
        let p = page("a\r\nb\r\nc", None, None);
        assert_eq!(p.total_lines, Some(3));
        assert!(p.text.contains("     1\ta\n"));
        assert!(p.text.contains("     3\tc\n"));
    }

    #[test]
    fn binary_and_latin1_are_refused_clearly() {
        let err = page_bytes(b"\x00\x01ELF", "a.out", None, None, &ReadLimits::default(), true).unwrap_err();
        assert_eq!(err.0, "binary");
        let err = page_bytes(b"caf\xe9\n", "l1.txt", None, None, &ReadLimits::default(), true).unwrap_err();
        assert_eq!(err.0, "not_utf8");
        assert!(err.1.contains("offset 3"));
    }
    fn streamed(reader: impl BufRead, offset: Option<usize>, limit: Option<usize>, scan_bytes: u64) -> Page {
        let limits = ReadLimits {
            scan_bytes,
            line_numbers: false,
            ..ReadLimits::default()
        };
        page_from(reader, "s", 0, offset, limit, &limits).unwrap()
    }

    #[test]
    fn endless_input_is_read_only_as_far_as_the_page_needs() {
        // One endless line: kept up to line_max_chars, the rest scanned within scan_bytes.
        let p = streamed(BufReader::new(io::repeat(b'x')), None, None, 1 << 20);
        assert_eq!((p.start_line, p.end_line, p.total_lines, p.more), (1, 1, None, true));
        assert_eq!(p.long_lines_cut, 1);
        assert!(
            p.text
                .contains("[... line cut: over 1054576 more chars; the rest of the line was not read]")
        );
        assert!(p.text.contains("of at least 1 ("), "{}", p.text);
        // Endless short lines: the page, then the count gives up at scan_bytes.
        let p = streamed(BufReader::new(io::repeat(b'\n')), Some(5), Some(10), 1000);
        assert_eq!((p.start_line, p.end_line, p.total_lines, p.more), (5, 14, None, true));
        assert!(p.text.ends_with("[Showing lines 5-14 of at least 1015 (0 KB in all; the file was not read to its end to count its lines). Use offset=15 to continue.]"), "{}", p.text);
    }

    #[test]
    fn cut_lines_count_characters_not_bytes_and_leave_out_the_line_end() {
        let text = format!("{}\r\ny\r\n{}\r\n", "x".repeat(5000), "é".repeat(4500));
        let p = page(&text, None, None);
        assert_eq!(p.total_lines, Some(3));
        assert!(p.text.contains("     1\txx"));
        assert!(
            p.text.contains(" [... line cut: 3000 more chars]\n     2\ty\n"),
            "{}",
            p.text
        );
        assert!(
            p.text
                .ends_with(&format!("\t{} [... line cut: 2500 more chars]\n", "é".repeat(2000)))
        );
        // A line that ends with \r just past the kept part.
        let p = page(&format!("{}\r\n", "z".repeat(8000)), None, None);
        assert!(p.text.contains("[... line cut: 6000 more chars]"), "{}", p.text);
        let p = page(&format!("{}\r", "z".repeat(8001)), None, None);
        assert!(p.text.contains("[... line cut: 6001 more chars]"), "{}", p.text);
    }

    #[test]
    fn a_line_is_cut_at_the_page_size_whatever_line_max_chars_says() {
        let limits = ReadLimits {
            line_max_chars: usize::MAX,
            max_bytes: 1000,
            scan_bytes: 5000,
            line_numbers: false,
            ..ReadLimits::default()
        };
        let p = page_from(BufReader::new(io::repeat(b'y')), "s", 0, None, None, &limits).unwrap();
        assert!(
            p.text
                .starts_with(&format!("{} [... line cut: over 5000 more chars;", "y".repeat(1000)))
        );
        let p = page_bytes("é".repeat(600).as_bytes(), "s", None, None, &limits, true).unwrap();
        assert!(
            p.text
                .starts_with(&format!("{} [... line cut: 100 more chars]", "é".repeat(500)))
        );
    }

    #[test]
    fn the_total_is_counted_within_the_scan_budget_only() {
        let text: String = (1..=1000).map(|i| format!("{i}\n")).collect();
        let counted = streamed(text.as_bytes(), Some(10), Some(5), 10_000);
        assert_eq!(
            (counted.total_lines, counted.file_bytes),
            (Some(1000), text.len() as u64)
        );
        let unknown = streamed(text.as_bytes(), Some(10), Some(5), 100);
        assert_eq!((unknown.end_line, unknown.total_lines, unknown.more), (14, None, true));
        assert_ne!(
            counted.content_hash, unknown.content_hash,
            "the hash covers the bytes read"
        );
        let err = page_from(text.as_bytes(), "s", 0, Some(1001), None, &ReadLimits::default()).unwrap_err();
        assert_eq!(
            err,
            (
                "offset_past_end",
                "s has 1000 lines; offset=1001 is past the end.".to_owned()
            )
        );
    }
}
