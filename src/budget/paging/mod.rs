//! File reads for agents: pages of at most N lines or M bytes, with a continuation hint, long
//! lines cut, a byte gate before reading and a token gate after, and clear answers for binary and
//! non-UTF-8 files.
//!
//! A page is read by streaming: the lines before its offset are skipped in a fixed buffer, its own
//! lines are read up to `line_max_chars` each, and past them at most `scan_bytes` more are looked
//! at (the rest of cut lines, then the line count after the page). Memory stays O(page) whatever
//! the file's size, and a page near the start of a huge file costs a few reads, not the file. Only
//! regular files are read ([`crate::files::open_regular`]).

mod page;
mod scan;

use std::io::{self, BufReader, Read};
use std::path::Path;

use crate::error::{Error, Result, io_reason};
use crate::files::{OpenError, human, open_regular};
use crate::tokens::Encoding;
use page::page_from;

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

#[cfg(test)]
#[allow(clippy::format_collect)]
mod tests {
    use super::*;
    use std::io::BufRead;

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

    #[test]
    fn a_nul_byte_before_the_offset_is_binary_and_ends_the_skip() {
        // A sparse file's hole: NUL bytes with no line end, read lazily; the skip stops at the
        // first buffer of it, not at the end of an endless line.
        let head = "a\nb\n".as_bytes();
        let hole = io::BufReader::new(io::repeat(0).take(64 << 20));
        let err = page_from(head.chain(hole), "s", 1 << 40, Some(10), None, &ReadLimits::default()).unwrap_err();
        assert_eq!(err, ("binary", binary_message("s", 1 << 40)));
        let text: String = (1..=300_000).map(|i| format!("line {i}\n")).collect();
        let p = page_from(text.as_bytes(), "s", 0, Some(299_999), None, &ReadLimits::default()).unwrap();
        assert_eq!(
            (p.start_line, p.end_line, p.total_lines),
            (299_999, 300_000, Some(300_000))
        );
        let err = page_from(text.as_bytes(), "s", 0, Some(300_002), None, &ReadLimits::default()).unwrap_err();
        assert_eq!(err.1, "s has 300000 lines; offset=300002 is past the end.");
        // A short line with a NUL byte is skipped as before (only a long one is a hole).
        let p = page_from(&b"a\n\x00\nb\n"[..], "s", 6, Some(3), None, &ReadLimits::default()).unwrap();
        assert_eq!((p.start_line, p.text.as_str()), (3, "     3\tb\n"));
    }
}
