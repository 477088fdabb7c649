//! The streaming scan under a page: a reader read forward once and hashed, and one line of the
//! page read from it, kept up to its character limit and the rest counted.

use std::fmt::Write as _;
use std::hash::{DefaultHasher, Hasher};
use std::io::{self, BufRead};

use crate::budget::count::text_counts;
use crate::error::io_reason;

/// Where a scan stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stop {
    /// After a `\n`.
    Newline,
    /// At the end of the input.
    Eof,
    /// Its byte budget is spent.
    Budget,
}

/// A reader scanned forward once, hashing every byte it passes.
pub(super) struct Scan<R> {
    pub(super) reader: R,
    /// Bytes consumed so far.
    pub(super) pos: u64,
    /// The last byte consumed.
    pub(super) last: Option<u8>,
    pub(super) hasher: DefaultHasher,
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

    pub(super) fn at_eof(&mut self) -> io::Result<bool> {
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
    pub(super) fn line(&mut self, budget: &mut u64, mut sink: impl FnMut(&[u8])) -> io::Result<(Stop, u64)> {
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
    pub(super) fn count_newlines(&mut self, budget: &mut u64) -> io::Result<(usize, Stop)> {
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

/// One line of the page as read: its shown text (cut if need be) and what was cut.
pub(super) struct ReadLine {
    pub(super) text: String,
    /// Whether the line was read to its end (else the scan budget ran out inside it).
    pub(super) ended: bool,
    pub(super) cut: bool,
}

/// Read the line at the scan's position: up to `keep_bytes` bytes kept (of which at most
/// `line_max_chars` characters are shown), the rest of the line counted (within `budget`) and
/// dropped.
pub(super) fn read_line<R: BufRead>(
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
    let (rest_chars, ended) = match stop {
        Stop::Newline => {
            prefix.pop();
            if prefix.last() == Some(&b'\r') {
                prefix.pop();
            }
            (0, true)
        }
        Stop::Eof => {
            if prefix.last() == Some(&b'\r') {
                prefix.pop();
            }
            (0, true)
        }
        Stop::Budget => rest_of_line(scan, budget, &mut prefix).map_err(io_error)?,
    };
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

/// Consume the rest of a line whose kept part filled `prefix`, within `budget`, counting its
/// characters; a `\r` just before the line's end is left out of the count (or popped off
/// `prefix` when the rest starts with the line's end). Returns the characters of the rest and
/// whether the line was read to its end.
fn rest_of_line<R: BufRead>(scan: &mut Scan<R>, budget: &mut u64, prefix: &mut Vec<u8>) -> io::Result<(u64, bool)> {
    let mut rest_chars = 0u64;
    let mut ended = true;
    // The last two bytes of the rest, to tell a `\r` before the line's end.
    let mut tail: (Option<u8>, Option<u8>) = (None, None);
    let (stop, consumed) = scan.line(budget, |piece| {
        rest_chars += chars_in(piece);
        tail = match piece {
            [.., a, b] => (Some(*a), Some(*b)),
            [b] => (tail.1, Some(*b)),
            [] => tail,
        };
    })?;
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
    Ok((rest_chars, ended))
}
