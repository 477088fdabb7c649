//! The lines of a log, read in large blocks straight into one buffer (no copy through a reader's
//! buffer, no call per line) and split at their line breaks by memchr.
//!
//! While the lines of one buffer are examined, the next buffer can be read into a second one
//! ([`Blocks::read_ahead`]): the kernel's copy of the file (a quarter of a search's time) then
//! overlaps the search instead of preceding it.
//!
//! A line that never starts a record (its first byte is not `{` or JSON whitespace) is counted
//! and passed over, not kept: however long it is, it holds at most one buffer. A last line
//! without a line break is a torn append: not a line (as the log itself reads it), and counted
//! unless it is blank.

use std::io::{ErrorKind, Read};

/// A line of the buffer: its bytes `start..end` (line break excluded), its number and where it is
/// in the file.
pub(super) struct Span {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) line: usize,
    pub(super) offset: u64,
}

/// Reads a file's lines a buffer at a time.
pub(super) struct Blocks<R> {
    reader: R,
    buf: Vec<u8>,
    /// The buffer read ahead into (see [`Blocks::read_ahead`]), and its bytes read.
    spare: Vec<u8>,
    spare_filled: usize,
    /// Whether `spare` holds the next buffer (the rest of `buf` first, then the bytes read).
    ahead: bool,
    /// An error reading ahead, returned by the next [`next_batch`](Self::next_batch).
    error: Option<std::io::Error>,
    /// Bytes of `buf` read.
    filled: usize,
    /// Where the lines not handed out yet start in `buf`.
    next: usize,
    /// The number and place in the file of the line at `next`.
    line: usize,
    offset: u64,
    /// In a line that never starts a record, longer than the buffer.
    passing: bool,
    eof: bool,
    /// Lines that never start a record, and a torn last line that is not blank.
    pub(super) skipped: usize,
}

/// Whether a line that starts with `lead` may be a record (an empty line's lead is its break).
fn may_be_record(lead: u8) -> bool {
    matches!(lead, b'{' | b' ' | b'\t' | b'\r' | b'\n')
}

impl<R: Read> Blocks<R> {
    /// Lines from `reader`, the first one numbered `line` at `offset` in the file, read
    /// `capacity` bytes at a time (more for a longer line that may be a record).
    pub(super) fn new(reader: R, line: usize, offset: u64, capacity: usize) -> Blocks<R> {
        Blocks {
            reader,
            buf: vec![0; capacity.max(1)],
            spare: Vec::new(),
            spare_filled: 0,
            ahead: false,
            error: None,
            filled: 0,
            next: 0,
            line,
            offset,
            passing: false,
            eof: false,
            skipped: 0,
        }
    }

    /// The buffer the spans of [`next_batch`](Self::next_batch) point into.
    #[cfg(test)]
    pub(super) fn buf(&self) -> &[u8] {
        &self.buf
    }

    /// Fill the buffer and put the spans of the lines that may be records into `spans` (cleared
    /// first). Returns whether lines may follow.
    pub(super) fn next_batch(&mut self, spans: &mut Vec<Span>) -> std::io::Result<bool> {
        spans.clear();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if self.ahead {
            std::mem::swap(&mut self.buf, &mut self.spare);
            self.filled = self.spare_filled;
            self.ahead = false;
        } else {
            self.buf.copy_within(self.next..self.filled, 0);
            self.filled -= self.next;
        }
        self.next = 0;
        loop {
            while !self.eof && self.filled < self.buf.len() {
                match self.reader.read(&mut self.buf[self.filled..]) {
                    Ok(0) => self.eof = true,
                    Ok(n) => self.filled += n,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            let before = (self.next, self.line);
            self.split(spans);
            if self.eof {
                self.end();
                return Ok(false);
            }
            if (self.next, self.line) != before || self.passing {
                return Ok(true);
            }
            // No line break in a full buffer: a line longer than it.
            if may_be_record(self.buf[0]) {
                let grown = self.buf.len() * 2;
                self.buf.resize(grown, 0);
            } else {
                self.passing = true;
                self.pass_over();
                return Ok(true);
            }
        }
    }

    /// The buffer the spans of the last [`next_batch`](Self::next_batch) point into, and a reader
    /// of the next buffer that may run (on another thread) while they are examined: it takes the
    /// rest of this buffer (a line not complete yet) and then reads as much of the file as fits;
    /// the next `next_batch` goes on from there.
    pub(super) fn read_ahead(&mut self) -> (&[u8], ReadAhead<'_, R>) {
        let len = self.buf.len();
        if self.spare.len() < len {
            self.spare.resize(len, 0);
        }
        let ahead = ReadAhead {
            reader: &mut self.reader,
            rest: &self.buf[self.next..self.filled],
            spare: &mut self.spare[..len],
            filled: &mut self.spare_filled,
            eof: &mut self.eof,
            ahead: &mut self.ahead,
            error: &mut self.error,
        };
        (&self.buf, ahead)
    }

    /// Consume the bytes of a line that never starts a record up to its break, or all of them.
    fn pass_over(&mut self) {
        let rest = &self.buf[self.next..self.filled];
        let n = memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1);
        if n > 0 && rest[n - 1] == b'\n' {
            self.passing = false;
            self.skipped += 1;
            self.line += 1;
        }
        self.next += n;
        self.offset += n as u64;
    }

    /// Hand out the complete lines after `next`.
    fn split(&mut self, spans: &mut Vec<Span>) {
        if self.passing {
            self.pass_over();
            if self.passing {
                return;
            }
        }
        let (from, mut line, mut offset) = (self.next, self.line, self.offset);
        let mut at = from;
        for end in memchr::memchr_iter(b'\n', &self.buf[from..self.filled]).map(|i| from + i) {
            if may_be_record(self.buf.get(at).copied().unwrap_or(b'\n')) {
                spans.push(Span {
                    start: at,
                    end,
                    line,
                    offset,
                });
            } else {
                self.skipped += 1;
            }
            line += 1;
            offset += (end + 1 - at) as u64;
            at = end + 1;
        }
        (self.next, self.line, self.offset) = (at, line, offset);
    }

    /// At the end of the file: what is left is a torn last line.
    fn end(&mut self) {
        let rest = &self.buf[self.next..self.filled];
        if self.passing || (!rest.is_empty() && (!may_be_record(rest[0]) || !rest.trim_ascii().is_empty())) {
            self.skipped += 1;
        }
        self.offset += rest.len() as u64;
        self.next = self.filled;
        self.passing = false;
    }
}

/// Reads the next buffer ahead: see [`Blocks::read_ahead`].
pub(super) struct ReadAhead<'a, R> {
    reader: &'a mut R,
    rest: &'a [u8],
    spare: &'a mut [u8],
    filled: &'a mut usize,
    eof: &'a mut bool,
    ahead: &'a mut bool,
    error: &'a mut Option<std::io::Error>,
}

impl<R: Read> ReadAhead<'_, R> {
    pub(super) fn run(self) {
        let mut filled = self.rest.len();
        self.spare[..filled].copy_from_slice(self.rest);
        while !*self.eof && filled < self.spare.len() {
            match self.reader.read(&mut self.spare[filled..]) {
                Ok(0) => *self.eof = true,
                Ok(n) => filled += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    *self.error = Some(e);
                    break;
                }
            }
        }
        *self.filled = filled;
        *self.ahead = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::testing::xorshift;

    /// Gives at most `step` bytes a read, as a pipe or a slow disk may.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(out.len()).min(self.1);
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    type Lines = Vec<(usize, u64, Vec<u8>)>;

    /// The lines of a whole file split at once: (number, offset, bytes) of each that may be a
    /// record, and the count of the others.
    fn reference(data: &[u8]) -> (Lines, usize) {
        let (mut out, mut skipped, mut offset) = (Vec::new(), 0, 0u64);
        let mut parts: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
        let last = parts.pop().unwrap_or_default();
        let record = |p: &[u8]| p.is_empty() || b"{ \t\r".contains(&p[0]);
        for (i, p) in parts.iter().enumerate() {
            if record(p) {
                out.push((i + 2, offset + 10, p.to_vec()));
            } else {
                skipped += 1;
            }
            offset += p.len() as u64 + 1;
        }
        if !last.is_empty() && (!record(last) || !last.trim_ascii().is_empty()) {
            skipped += 1;
        }
        (out, skipped)
    }

    /// The lines read a buffer at a time, the next one read ahead after the batches `ahead` says.
    fn read(data: &[u8], capacity: usize, step: usize, ahead: impl Fn(usize) -> bool) -> (Lines, usize, usize) {
        let mut blocks = Blocks::new(Trickle(data, step), 2, 10, capacity);
        let (mut out, mut spans, mut more, mut batch) = (Vec::new(), Vec::new(), true, 0);
        while more {
            more = blocks.next_batch(&mut spans).unwrap();
            let (buf, reader) = blocks.read_ahead();
            for s in &spans {
                out.push((s.line, s.offset, buf[s.start..s.end].to_vec()));
            }
            if ahead(batch) {
                reader.run();
            }
            batch += 1;
        }
        (out, blocks.skipped, blocks.buf().len())
    }

    #[test]
    fn lines_are_the_ones_a_split_of_the_whole_file_gives() {
        let long_record = format!("{{\"a\":\"{}\"}}", "x".repeat(70));
        let pieces: [&[u8]; 10] = [
            b"{\"a\":1}",
            b"\n",
            b"\n",
            b"  ",
            b"\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
            b"x",
            b"\r",
            b"\x0c",
            b"{",
            long_record.as_bytes(),
        ];
        let mut rng = xorshift(0x5eed_0030_0005_0001);
        let mut next = move |n: usize| (rng() % n as u64) as usize;
        for _ in 0..400 {
            let mut data = Vec::new();
            for _ in 0..next(30) {
                data.extend_from_slice(pieces[next(pieces.len())]);
            }
            let expected = reference(&data);
            let (capacity, step) = ([1, 2, 3, 7, 16, 64, 4096][next(7)], [1, 5, 1 << 20][next(3)]);
            let ahead = next(3);
            let (lines, skipped, _) = read(&data, capacity, step, |batch| {
                ahead == 1 || (ahead == 2 && batch % 2 == 0)
            });
            assert_eq!(
                (lines, skipped),
                expected,
                "{:?} {capacity} {step}",
                String::from_utf8_lossy(&data)
            );
        }
    }

    #[test]
    fn a_line_that_never_starts_a_record_holds_one_buffer_however_long() {
        let mut data = vec![0u8; 100_000];
        data.extend_from_slice(b"\n{}\n");
        data.extend_from_slice(&vec![b'x'; 50_000]);
        let (lines, skipped, held) = read(&data, 64, 1 << 20, |_| false);
        assert_eq!((lines.len(), skipped, held), (1, 2, 64));
        assert_eq!(lines[0], (3, 10 + 100_001, b"{}".to_vec()));
        // A record longer than the buffer grows it.
        let (lines, _, held) = read(b"{\"a\":\"a long record\"}\n", 4, 3, |_| true);
        assert_eq!((lines.len(), held), (1, 32));
    }
}
