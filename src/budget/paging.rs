//! File reads for agents: pages of at most N lines or M bytes, with a continuation hint, long
//! lines cut, a byte gate before reading and a token gate after, and clear answers for binary and
//! non-UTF-8 files.

use std::fmt::Write as _;
use std::hash::{DefaultHasher, Hasher};
use std::path::Path;

use super::count::text_counts;
use crate::error::{Error, Result};
use crate::tokens::Encoding;

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
    pub total_lines: usize,
    pub file_bytes: u64,
    /// Lines cut because they were longer than `line_max_chars`.
    pub long_lines_cut: usize,
    /// Whether the page stopped before the end of the file.
    pub more: bool,
    /// A hash of the whole file's bytes (to tell an unchanged file from a changed one).
    pub content_hash: u64,
}

fn refuse(path: &Path, kind: &'static str, message: String) -> Error {
    Error::FileRead {
        path: path.display().to_string(),
        kind,
        message,
    }
}

fn human(bytes: u64) -> String {
    if bytes >= 1024 * 1024 {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    } else {
        format!("{:.0} KB", (bytes as f64 / 1024.0).ceil())
    }
}

/// Read one page of the file at `path`. `offset` is the first line (1-based); `limit` the number
/// of lines. Either given means the caller is paging, and the byte gate does not apply.
pub fn read_page(path: &Path, offset: Option<usize>, limit: Option<usize>, limits: &ReadLimits) -> Result<Page> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| refuse(path, "io", format!("Cannot read {shown}: {e}.")))?;
    if meta.is_dir() {
        return Err(refuse(
            path,
            "directory",
            format!("{shown} is a directory, not a file. List it instead."),
        ));
    }
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
    let bytes = std::fs::read(path).map_err(|e| refuse(path, "io", format!("Cannot read {shown}: {e}.")))?;
    page_bytes(&bytes, &shown, offset, limit, limits, true).map_err(|(kind, message)| refuse(path, kind, message))
}

/// [`read_page`] over bytes already in memory (`name` is used in messages). `sniff_binary`
/// refuses input with a NUL byte in its first 8 KiB, as files of that kind are binary.
pub fn page_bytes(
    bytes: &[u8],
    name: &str,
    offset: Option<usize>,
    limit: Option<usize>,
    limits: &ReadLimits,
    sniff_binary: bool,
) -> std::result::Result<Page, (&'static str, String)> {
    if sniff_binary && bytes[..bytes.len().min(8192)].contains(&0) {
        return Err((
            "binary",
            format!(
                "{name} is a binary file ({} bytes); it has no text to show.",
                bytes.len()
            ),
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        (
            "not_utf8",
            format!(
                "{name} is not UTF-8 text (invalid byte at offset {}); it may be in another encoding such as \
                 Latin-1, or binary.",
                e.valid_up_to()
            ),
        )
    })?;
    let mut hasher = DefaultHasher::new();
    hasher.write(bytes);
    let content_hash = hasher.finish();
    let counts = text_counts(bytes);
    let total_lines = if text.is_empty() {
        0
    } else {
        counts.newlines + usize::from(!text.ends_with('\n'))
    };
    if total_lines == 0 {
        return Ok(Page {
            text: format!("[{name} is empty.]"),
            start_line: 0,
            end_line: 0,
            total_lines: 0,
            file_bytes: bytes.len() as u64,
            long_lines_cut: 0,
            more: false,
            content_hash,
        });
    }
    let start = offset.unwrap_or(1).max(1);
    if start > total_lines {
        return Err((
            "offset_past_end",
            format!("{name} has {total_lines} lines; offset={start} is past the end."),
        ));
    }
    let want = limit.unwrap_or(limits.max_lines).clamp(1, limits.max_lines);
    let mut out = String::new();
    let mut used_bytes = 0usize;
    let mut end = start - 1;
    let mut long_lines_cut = 0;
    let number_width = total_lines.to_string().len().max(6);
    for (i, raw) in text.split_inclusive('\n').enumerate().skip(start - 1).take(want) {
        let line = raw.strip_suffix('\n').unwrap_or(raw);
        let line = line.strip_suffix('\r').unwrap_or(line);
        let mut rendered = String::new();
        if limits.line_numbers {
            let _ = write!(rendered, "{:>number_width$}\t", i + 1);
        }
        match line.char_indices().nth(limits.line_max_chars) {
            Some((cut, _)) => {
                let rest = line[cut..].chars().count();
                rendered.push_str(&line[..cut]);
                let _ = write!(rendered, " [... line cut: {rest} more chars]");
                long_lines_cut += 1;
            }
            None => rendered.push_str(line),
        }
        rendered.push('\n');
        if used_bytes + rendered.len() > limits.max_bytes && end >= start {
            break;
        }
        used_bytes += rendered.len();
        out.push_str(&rendered);
        end = i + 1;
    }
    let more = end < total_lines;
    if more {
        let _ = write!(
            out,
            "\n[Showing lines {start}-{end} of {total_lines}. Use offset={} to continue.]",
            end + 1
        );
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
        file_bytes: bytes.len() as u64,
        long_lines_cut,
        more,
        content_hash,
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
        assert_eq!((p.start_line, p.end_line, p.total_lines), (1, 2000, 5000));
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
        assert_eq!(p.total_lines, 3);
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
}
