//! The length of a log record's searchable text counted straight from its raw JSON, for the
//! records a regular expression's prefilter rules out (BM25 still needs each one's length): one
//! pass over the bytes, strings skipped by memchr to their next quote or backslash, escapes
//! decoded only to count their UTF-8 length, nothing built.
//!
//! It answers only for what it reads with certainty: a record of JSON objects, arrays, strings,
//! `true`/`false`/`null` and plain integers (no fraction, no exponent, at most 18 digits, not
//! `-0`), with no control character anywhere, no escape in a key, no lone surrogate escape, and
//! no deeper than [`MAX_DEPTH`]. Anything else (a float, a huge number, a torn or malformed line)
//! is left to the parser (`text::record_text_len`), which is the reference: where this answers,
//! it answers what the parser does.

use memchr::memchr2;

use super::text::SKIP_KEYS;

/// Deeper nesting is left to the parser (which refuses nesting over 128).
const MAX_DEPTH: usize = 64;

/// The length of `record_text(raw)` when this scanner is certain of it (see the module); None:
/// not known, the caller parses the record.
pub(super) fn quick_len(raw: &str) -> Option<usize> {
    let b = raw.as_bytes();
    if b.iter().any(|&c| c < 0x20) {
        return None;
    }
    let mut s = Scanner { b, i: 0, len: 0 };
    s.record()?;
    s.skip_spaces();
    (s.i == b.len()).then_some(s.len)
}

/// What a value's strings and numbers count for: the text, or nothing (a skipped key's value,
/// a record's field other than `data`).
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Text,
    Ignore,
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    /// The text's length so far (pieces joined by line breaks, as `text::Sink` joins them).
    len: usize,
}

impl Scanner<'_> {
    fn skip_spaces(&mut self) {
        // No control character is in the line: JSON's whitespace there is the space.
        while self.b.get(self.i) == Some(&b' ') {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_spaces();
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn piece(&mut self, mode: Mode, n: usize) {
        if mode == Mode::Text {
            if self.len > 0 {
                self.len += 1;
            }
            self.len += n;
        }
    }

    /// The top-level object: only `data` holds text.
    fn record(&mut self) -> Option<()> {
        self.members(|key| if key == b"data" { Mode::Text } else { Mode::Ignore }, 0)
    }

    /// An object's members (at its `{`), each value read in the mode `mode_of` its key gives.
    fn members(&mut self, mode_of: impl Fn(&[u8]) -> Mode, depth: usize) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.eat(b'"')?;
            let end = self.i + memchr2(b'"', b'\\', &self.b[self.i..])?;
            if self.b[end] != b'"' {
                return None;
            }
            let mode = mode_of(&self.b[self.i..end]);
            self.i = end + 1;
            self.eat(b':')?;
            self.value(mode, depth + 1)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn value(&mut self, mode: Mode, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => {
                self.i += 1;
                let n = self.string()?;
                self.piece(mode, n);
            }
            b'{' => {
                let skip = |key: &[u8]| SKIP_KEYS.iter().any(|k| k.as_bytes() == key);
                self.members(|key| if skip(key) { Mode::Ignore } else { mode }, depth)?;
            }
            b'[' => self.array(mode, depth)?,
            b't' => self.literal(b"true")?,
            b'f' => self.literal(b"false")?,
            b'n' => self.literal(b"null")?,
            _ => {
                let n = self.integer()?;
                self.piece(mode, n);
            }
        }
        Some(())
    }

    fn array(&mut self, mode: Mode, depth: usize) -> Option<()> {
        self.i += 1;
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.value(mode, depth + 1)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.b[self.i..].starts_with(word).then(|| self.i += word.len())
    }

    /// A plain integer's length as the parser writes it back (the same digits: no leading zero,
    /// no `-0`, few enough digits to be an i64 or u64).
    fn integer(&mut self) -> Option<usize> {
        let start = self.i;
        let negative = self.b[self.i] == b'-';
        if negative {
            self.i += 1;
        }
        let digits = self.b[self.i..].iter().take_while(|c| c.is_ascii_digit()).count();
        let first = *self.b.get(self.i)?;
        if digits == 0 || digits > 18 || (first == b'0' && (digits > 1 || negative)) {
            return None;
        }
        self.i += digits;
        if matches!(self.b.get(self.i), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some(self.i - start)
    }

    /// A string's decoded length in bytes (after its opening quote; ends after its closing one).
    fn string(&mut self) -> Option<usize> {
        let mut n = 0;
        loop {
            let at = memchr2(b'"', b'\\', &self.b[self.i..])?;
            n += at;
            self.i += at + 1;
            if self.b[self.i - 1] == b'"' {
                return Some(n);
            }
            match *self.b.get(self.i)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                    self.i += 1;
                    n += 1;
                }
                b'u' => n += self.unicode_escape()?,
                _ => return None,
            }
        }
    }

    /// A `\u` escape (at its `u`): the UTF-8 length of the character it writes (a surrogate pair
    /// is one); None for a lone surrogate.
    fn unicode_escape(&mut self) -> Option<usize> {
        let unit = self.hex4(self.i + 1)?;
        self.i += 5;
        match unit {
            0..=0x7F => Some(1),
            0x80..=0x7FF => Some(2),
            0xD800..=0xDBFF => {
                if !self.b[self.i..].starts_with(b"\\u") {
                    return None;
                }
                let low = self.hex4(self.i + 2)?;
                self.i += 6;
                (0xDC00..=0xDFFF).contains(&low).then_some(4)
            }
            0xDC00..=0xDFFF => None,
            _ => Some(3),
        }
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.b.get(at..at + 4)?;
        digits
            .iter()
            .try_fold(0u32, |acc, &c| Some(acc * 16 + (c as char).to_digit(16)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::testing::xorshift;
    use crate::search::log::record_text;

    #[test]
    fn answers_for_plain_records_and_leaves_the_rest_to_the_parser() {
        for (raw, expected) in [
            (
                r#"{"type":"message","index":3,"data":[{"role":"user","content":"a\nb"}]}"#,
                Some(3),
            ),
            (
                r#"{"data":["", "x", "", 12, -3, true, null, {"id":"skip","n":{"a":"b"}}]}"#,
                Some(10),
            ),
            (r#"{"data":"\u00e9\ud83d\ude00\u4e2d\/"}"#, Some(10)),
            (r#"{"data":"one","data":"two","other":["not", "text"]}"#, Some(7)),
            (r#"{"data":[]}  "#, Some(0)),
            (r#"{"data":1.5}"#, None),
            (r#"{"data":-0}"#, None),
            (r#"{"data":01}"#, None),
            (r#"{"data":1e3}"#, None),
            (r#"{"data":"\ud83d"}"#, None),
            (r#"{"data":"\q"}"#, None),
            (r#"{"d\u0061ta":"x"}"#, None),
            (r#"{"data":"torn"#, None),
            (r#"{"data":"x",}"#, None),
            (r#"{"data":"x"} y"#, None),
            ("{\"data\":\"tab\tinside\"}", None),
            (r#"["data"]"#, None),
        ] {
            assert_eq!(quick_len(raw), expected, "{raw}");
            if let Some(n) = expected {
                assert_eq!(record_text(raw).map(|t| t.len()), Some(n), "{raw}");
            }
        }
        let deep = format!(r#"{{"data":{}{}}}"#, "[".repeat(100), "]".repeat(100));
        assert_eq!(quick_len(&deep), None);
    }

    #[test]
    fn where_it_answers_the_parser_agrees() {
        let pieces: [&str; 30] = [
            r#""plain""#,
            r#""""#,
            r#""a\"b\\c\/d\b\f\n\r\t""#,
            r#""\u0041\u00e9\u4e2d\ud83d\ude00""#,
            r#""\ud83d""#,
            r#""\ude00x""#,
            r#""\u12g4""#,
            r#""\x""#,
            "\"caf\u{e9} \u{212A}\"",
            "\"tab\there\"",
            "0",
            "-12",
            "123456789012345678",
            "1234567890123456789",
            "-0",
            "01",
            "1.5",
            "2e3",
            "true",
            "false",
            "null",
            "nul",
            "{}",
            "[]",
            r#"{"id":"x","content":"y"}"#,
            r#"{"tool_call_id":"c1","n":7}"#,
            r#"{"k\u0069":"v"}"#,
            "[1,]",
            "{\"a\":1,}",
            " ",
        ];
        let mut rng = xorshift(0x5eed_0032_0000_0005);
        let mut next = move |n: usize| (rng() % n as u64) as usize;
        let mut answered = 0;
        for _ in 0..4000 {
            let mut data = String::from("[");
            for k in 0..next(6) {
                if k > 0 {
                    data.push(',');
                }
                let piece = pieces[next(pieces.len())];
                match next(3) {
                    0 => data.push_str(piece),
                    1 => data.extend([r#"{"content":"#, piece, "}"]),
                    _ => data.extend(["[", piece, ",", pieces[next(pieces.len())], "]"]),
                }
            }
            data.push(']');
            let mut raw = format!(r#"{{"type":"message","index":{},"data":{data}}}"#, next(1000));
            if next(10) == 0 {
                // A torn line: cut anywhere, at a character's boundary.
                let mut cut = raw.len() - next(8) - 1;
                while !raw.is_char_boundary(cut) {
                    cut -= 1;
                }
                raw.truncate(cut);
            }
            if next(10) == 0 {
                raw.push_str([" ", "\t", "x", "}"][next(4)]);
            }
            if let Some(n) = quick_len(&raw) {
                answered += 1;
                assert_eq!(record_text(&raw).map(|t| t.len()), Some(n), "{raw}");
            }
        }
        // Both sides: most generated records answered, some left to the parser.
        assert!(answered > 400 && answered < 3900, "{answered}");
    }
}
