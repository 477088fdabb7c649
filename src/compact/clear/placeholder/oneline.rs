//! Writing text on one line, cut to a number of characters: the call descriptions of placeholders.

use serde_json::Value;

use super::VALUE_CHARS;

/// `s` on one line, at most [`VALUE_CHARS`] characters, in `scratch`.
pub(super) fn shortened<'s>(scratch: &'s mut String, s: &str) -> &'s str {
    scratch.clear();
    OneLine::new(scratch, VALUE_CHARS).push_str(s);
    scratch
}

/// A JSON value's compact text on one line, at most [`VALUE_CHARS`] characters, in `scratch`
/// (the value is written only as far as the cut).
pub(super) fn shortened_value<'s>(scratch: &'s mut String, v: &Value) -> &'s str {
    use std::fmt::Write as _;
    scratch.clear();
    // An error here only means the value was cut short.
    let _ = write!(OneLine::new(scratch, VALUE_CHARS), "{v}");
    scratch
}

/// Appends text as `split_whitespace().join(" ")` would, up to `max` characters: text longer
/// than that keeps its first `max - 1` characters and gets `…`.
pub(super) struct OneLine<'o> {
    out: &'o mut String,
    max: usize,
    /// Characters written.
    chars: usize,
    /// A whitespace run was seen after the last character written.
    space: bool,
    /// Where the text ends if it must be cut: after `max - 1` characters.
    cut: usize,
    full: bool,
}

impl<'o> OneLine<'o> {
    pub(super) fn new(out: &'o mut String, max: usize) -> Self {
        let cut = out.len();
        OneLine {
            out,
            max,
            chars: 0,
            space: false,
            cut,
            full: false,
        }
    }

    pub(super) fn is_full(&self) -> bool {
        self.full
    }

    pub(super) fn push_str(&mut self, s: &str) {
        if self.full {
            return;
        }
        let bytes = s.as_bytes();
        // Printable ASCII without spaces (names, keys, paths): one run. The check runs over
        // every byte without stopping early, which the compiler turns into wide compares.
        if bytes.iter().fold(true, |ok, &b| ok & (b.wrapping_sub(0x21) < 0x5e)) {
            if !bytes.is_empty() && std::mem::take(&mut self.space) && !self.put(' ') {
                return;
            }
            self.put_ascii(s);
            return;
        }
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i].is_ascii() {
                if is_ascii_space(bytes[i]) {
                    self.space = self.chars > 0;
                    i += 1;
                    continue;
                }
                // A run of ASCII characters that are not whitespace, written at once.
                let start = i;
                while i < bytes.len() && bytes[i].is_ascii() && !is_ascii_space(bytes[i]) {
                    i += 1;
                }
                if std::mem::take(&mut self.space) && !self.put(' ') || !self.put_ascii(&s[start..i]) {
                    return;
                }
            } else {
                let c = s[i..].chars().next().expect("a character starts here");
                i += c.len_utf8();
                if c.is_whitespace() {
                    self.space = self.chars > 0;
                    continue;
                }
                if std::mem::take(&mut self.space) && !self.put(' ') || !self.put(c) {
                    return;
                }
            }
        }
    }

    /// [`put`](Self::put) for each character of an ASCII run.
    fn put_ascii(&mut self, run: &str) -> bool {
        let k = run.len();
        if self.chars + k <= self.max {
            if self.chars < self.max && self.chars + k >= self.max {
                self.cut = self.out.len() + (self.max - 1 - self.chars);
            }
            self.out.push_str(run);
            self.chars += k;
            return true;
        }
        let keep = self.max.saturating_sub(1);
        if self.chars <= keep {
            self.out.push_str(&run[..keep - self.chars]);
        } else {
            self.out.truncate(self.cut);
        }
        self.out.push('…');
        self.full = true;
        false
    }

    /// Write one character; false once the text is over `max` (then cut and closed).
    fn put(&mut self, c: char) -> bool {
        if self.chars == self.max {
            self.out.truncate(self.cut);
            self.out.push('…');
            self.full = true;
            return false;
        }
        if self.chars + 1 == self.max {
            self.cut = self.out.len();
        }
        self.out.push(c);
        self.chars += 1;
        true
    }
}

/// What `char::is_whitespace` says of an ASCII byte.
fn is_ascii_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ')
}

impl std::fmt::Write for OneLine<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.push_str(s);
        if self.full { Err(std::fmt::Error) } else { Ok(()) }
    }
}
