//! Paging a text by lines or by characters, fed in pieces (a stored result read as it is paged):
//! only the page is held. Offsets are in characters (Unicode scalar values), so a page is exactly
//! `full[start..end]` by character index, and a line longer than the page is paged by character.

use std::fmt;

/// What to show of a text: lines from `offset` (1-based) and at most `lines` of them, or the
/// characters from `char_offset`; never more than `max_chars` characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub offset: usize,
    pub lines: usize,
    pub char_offset: Option<usize>,
    pub max_chars: usize,
}

/// One page: `text` is the characters `start..end` of the whole; `hint` says how to continue when
/// more follows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CharPage {
    pub text: String,
    pub start: usize,
    pub end: usize,
    pub total_chars: usize,
    pub start_line: usize,
    pub end_line: usize,
    pub total_lines: usize,
    pub hint: Option<String>,
}

/// A page asked for past the end of the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PastEnd {
    Offset { offset: usize, total_lines: usize },
    CharOffset { char_offset: usize, total_chars: usize },
}

impl fmt::Display for PastEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PastEnd::Offset { offset, total_lines } => write!(
                f,
                "offset {offset} is past the end (the text has {} lines)",
                grouped(*total_lines)
            ),
            PastEnd::CharOffset {
                char_offset,
                total_chars,
            } => write!(
                f,
                "char_offset {} is past the end (the text has {} chars)",
                grouped(*char_offset),
                grouped(*total_chars)
            ),
        }
    }
}

/// `n` with a comma every three digits (`1,234,567`).
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// The byte index of character `chars` of `s` (its length when `s` is shorter).
fn byte_at(s: &str, chars: usize) -> usize {
    s.char_indices().nth(chars).map_or(s.len(), |(b, _)| b)
}

/// Line breaks in the first `chars` characters of `s`.
fn newlines_before(s: &str, chars: usize) -> usize {
    s[..byte_at(s, chars)].bytes().filter(|&b| b == b'\n').count()
}

/// Reads the pieces of a text in order and keeps only the page.
#[derive(Debug)]
pub struct Pager {
    ask: Request,
    /// Characters and line breaks seen.
    seen: usize,
    newlines: usize,
    ends_with_newline: bool,
    /// Where the page starts, once known (line mode finds it while reading).
    start: Option<usize>,
    /// Line breaks before `start`.
    before: usize,
    /// The characters from `start`, at most `max_chars`.
    kept: String,
    room: usize,
}

impl Pager {
    pub fn new(ask: Request) -> Pager {
        let start = match ask.char_offset {
            None if ask.offset <= 1 => Some(0),
            at => at,
        };
        Pager {
            ask,
            seen: 0,
            newlines: 0,
            ends_with_newline: false,
            start,
            before: 0,
            kept: String::new(),
            room: ask.max_chars,
        }
    }

    /// Read the next piece.
    pub fn push(&mut self, piece: &str) {
        if piece.is_empty() {
            return;
        }
        let size = piece.chars().count();
        let breaks = piece.bytes().filter(|&b| b == b'\n').count();
        let n = self.seen;
        match self.start {
            None => {
                let need = self.ask.offset - 1 - self.newlines;
                if breaks >= need {
                    let (at, _) = piece
                        .chars()
                        .enumerate()
                        .filter(|(_, c)| *c == '\n')
                        .nth(need - 1)
                        .expect("counted");
                    self.start = Some(n + at + 1);
                    self.before = self.ask.offset - 1;
                }
            }
            Some(start) if self.ask.char_offset.is_some() && start > n => {
                self.before += newlines_before(piece, start - n);
            }
            Some(_) => {}
        }
        if let Some(start) = self.start {
            if self.room > 0 && n + size > start {
                let lo = byte_at(piece, start.saturating_sub(n));
                let rest = &piece[lo..];
                let take = &rest[..byte_at(rest, self.room)];
                self.kept.push_str(take);
                self.room -= take.chars().count();
            }
        }
        self.newlines += breaks;
        self.seen += size;
        self.ends_with_newline = piece.ends_with('\n');
    }

    /// The page.
    pub fn finish(self) -> Result<CharPage, PastEnd> {
        let n = self.seen;
        // A final line break ends the last line; it does not start another.
        let total_lines = (self.newlines + usize::from(!self.ends_with_newline)).max(1);
        let head: Vec<char> = self.kept.chars().collect();
        let (start, stop) = match (self.ask.char_offset, self.start) {
            (None, Some(start)) if self.ask.offset <= total_lines => (start, line_stop(&head, start, n, self.ask)),
            (None, _) => {
                return Err(PastEnd::Offset {
                    offset: self.ask.offset,
                    total_lines,
                });
            }
            (Some(at), _) if at > n || (at == n && n > 0) => {
                return Err(PastEnd::CharOffset {
                    char_offset: at,
                    total_chars: n,
                });
            }
            (Some(at), _) => (at, n.min(at + self.ask.max_chars)),
        };
        let shown = &head[..(stop - start).min(head.len())];
        let text: String = shown.iter().collect();
        let first = self.before + 1;
        // Line breaks before the last character: a final one ends the last line shown.
        let last = first
            + shown[..shown.len().saturating_sub(1)]
                .iter()
                .filter(|&&c| c == '\n')
                .count();
        let hint = (stop < n).then(|| {
            if text.ends_with('\n') {
                format!(
                    "[Showing lines {first}-{last} of {total_lines}. Use offset={} to continue.]",
                    last + 1
                )
            } else {
                format!(
                    "[Showing chars {start}-{stop} of {n} (line {last} of {total_lines}). Use char_offset={stop} to continue.]"
                )
            }
        });
        Ok(CharPage {
            text,
            start,
            end: stop,
            total_chars: n,
            start_line: first,
            end_line: last,
            total_lines,
            hint,
        })
    }
}

/// Where a page of lines from `start` ends: after its `lines`-th line break, at the end of the
/// text, or (never more than `max_chars`) after the last line break that fits, else mid-line.
fn line_stop(head: &[char], start: usize, n: usize, ask: Request) -> usize {
    let breaks: Vec<usize> = head
        .iter()
        .enumerate()
        .filter(|(_, c)| **c == '\n')
        .map(|(i, _)| i)
        .take(ask.lines)
        .collect();
    if breaks.len() == ask.lines {
        return start + breaks[ask.lines - 1] + 1;
    }
    if start + head.len() == n {
        return n;
    }
    match head[..head.len().min(ask.max_chars)].iter().rposition(|c| *c == '\n') {
        Some(nl) => start + nl + 1,
        None => start + ask.max_chars,
    }
}

/// One page of `text` ([`Pager`] over one piece).
pub fn page(text: &str, ask: Request) -> Result<CharPage, PastEnd> {
    let mut pager = Pager::new(ask);
    pager.push(text);
    pager.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::testing::xorshift;

    fn ask(offset: usize, lines: usize, char_offset: Option<usize>, max_chars: usize) -> Request {
        Request {
            offset,
            lines,
            char_offset,
            max_chars,
        }
    }

    fn chars(s: &str, a: usize, b: usize) -> String {
        s.chars().skip(a).take(b - a).collect()
    }

    #[test]
    fn pages_by_lines_then_by_characters_with_hints() {
        let text = "one\ntwo\nthree\n";
        let p = page(text, ask(1, 2, None, 100)).unwrap();
        assert_eq!(
            (p.text.as_str(), p.start, p.end, p.start_line, p.end_line),
            ("one\ntwo\n", 0, 8, 1, 2)
        );
        assert_eq!(
            p.hint.as_deref(),
            Some("[Showing lines 1-2 of 3. Use offset=3 to continue.]")
        );
        let p = page(text, ask(3, 2, None, 100)).unwrap();
        assert_eq!((p.text.as_str(), p.hint), ("three\n", None));
        // A line longer than the page is paged by character.
        let long = format!("{}\nend", "é".repeat(30));
        let p = page(&long, ask(1, 5, None, 10)).unwrap();
        assert_eq!((p.text.chars().count(), p.end), (10, 10));
        assert_eq!(
            p.hint.as_deref(),
            Some("[Showing chars 0-10 of 34 (line 1 of 2). Use char_offset=10 to continue.]")
        );
        let p = page(&long, ask(1, 500, Some(28), 10)).unwrap();
        assert_eq!(
            (p.text.as_str(), p.start_line, p.end_line, p.hint),
            ("éé\nend", 1, 2, None)
        );
        assert_eq!(
            page(text, ask(5, 1, None, 10)).unwrap_err().to_string(),
            "offset 5 is past the end (the text has 3 lines)"
        );
        assert_eq!(
            page(&"x".repeat(1234), ask(1, 1, Some(1234), 10))
                .unwrap_err()
                .to_string(),
            "char_offset 1,234 is past the end (the text has 1,234 chars)"
        );
        let empty = page("", ask(1, 1, Some(0), 10)).unwrap();
        assert_eq!((empty.text.as_str(), empty.total_lines, empty.hint), ("", 1, None));
    }

    #[test]
    fn any_split_into_pieces_pages_like_the_whole_text() {
        let mut next = xorshift(0xfeed);
        let alphabet = ['a', 'b', '\n', 'é', '漢', ' ', '\n'];
        for round in 0..300 {
            let len = (next() % 120) as usize;
            let text: String = (0..len).map(|_| alphabet[(next() % 7) as usize]).collect();
            let total = text.chars().count();
            let char_offset = (round % 2 == 0).then(|| (next() % (total as u64 + 2)) as usize);
            let a = ask(
                1 + (next() % 12) as usize,
                1 + (next() % 6) as usize,
                char_offset,
                1 + (next() % 40) as usize,
            );
            let whole = page(&text, a);
            let mut pager = Pager::new(a);
            let mut rest = text.as_str();
            while !rest.is_empty() {
                let cut = byte_at(rest, (next() % 9) as usize);
                pager.push(&rest[..cut]);
                rest = &rest[cut..];
            }
            assert_eq!(pager.finish(), whole, "round {round}: {text:?} {a:?}");
            if let Ok(p) = whole {
                assert_eq!(p.text, chars(&text, p.start, p.end), "round {round}");
                assert!(p.text.chars().count() <= a.max_chars);
                assert_eq!(p.total_chars, total);
                assert_eq!(p.hint.is_some(), p.end < total);
                let lines_before = chars(&text, 0, p.start).matches('\n').count();
                assert_eq!(p.start_line, lines_before + 1, "round {round}");
            }
        }
    }

    #[test]
    fn groups_digits_by_three() {
        for (n, s) in [(0, "0"), (999, "999"), (1000, "1,000"), (1_234_567, "1,234,567")] {
            assert_eq!(grouped(n), s);
        }
    }
}
