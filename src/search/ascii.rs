//! A query's units as they match a text that is ASCII, built without Unicode: the `regex`
//! crate's lazy DFA gives up on a Unicode word boundary (`\b`) as soon as it reads a character
//! that is not ASCII, and the slower engines then read the rest of the text (a record of 100 KB
//! holding one such character: most of a regular expression's search time). These run on the DFA
//! throughout, on the texts, or the parts of a text, that are ASCII.

use regex_syntax::hir::{Class, Hir, HirKind, Look};

use super::REGEX_SIZE_LIMIT;

/// The units as they match a text that is ASCII, built without Unicode ([`ascii_unit`]), and
/// where a text that is not ASCII may be cut into parts searched apart (its characters that are
/// not ASCII searched with the Unicode units only in the few words around them).
#[derive(Clone, Debug)]
pub(super) struct Ascii {
    pub(super) units: Vec<regex::bytes::Regex>,
    /// The ASCII characters no match of any unit holds that are not word characters (bit `b` for
    /// byte `b`), when every unit asserts nothing but word boundaries and matches no empty text;
    /// else 0. A match lies between two of them, and a word boundary next to one is what it is at
    /// a text's ends: the parts between them are searched apart as they are in the text.
    pub(super) barriers: u128,
}

/// Where the Unicode units search a text that is not ASCII: around each character that is not
/// ASCII, from the barrier before it to the one after it; two such stretches less than this many
/// bytes apart are searched as one (one call of the slower engine, not many short ones).
const JOIN: usize = 16;

impl Ascii {
    /// The ASCII units of `patterns` (each with whether it is case-insensitive), when all of them
    /// have one.
    pub(super) fn of(patterns: &[(String, bool)]) -> Option<Ascii> {
        let units = patterns
            .iter()
            .map(|(p, ci)| ascii_unit(p, *ci))
            .collect::<Option<Vec<_>>>()?;
        // Every ASCII character that is not a word character, less those a unit matches.
        let mut barriers: u128 = (0u8..128)
            .filter(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
            .fold(0, |m, b| m | (1u128 << b));
        for (p, ci) in patterns {
            let hir = regex_syntax::ParserBuilder::new()
                .case_insensitive(*ci)
                .build()
                .parse(p)
                .ok();
            match hir {
                Some(hir) if hir.properties().minimum_len().is_some_and(|n| n > 0) && only_words_asserted(&hir) => {
                    barriers &= !held(&hir);
                }
                _ => barriers = 0,
            }
        }
        Some(Ascii { units, barriers })
    }

    /// Call `f(offset, part, ascii)` for the parts of `text` the units are run on one by one, in
    /// order, `ascii` saying whether the ASCII units run on it: the whole text when it is ASCII or
    /// there are no barriers; else its stretches around the characters that are not ASCII
    /// (Unicode units) and the ASCII ones between them. Each part begins and ends at the text's
    /// ends or beside a barrier, so no match spans two parts and each part's matches are the
    /// text's matches in it.
    pub(super) fn each_part<'t>(&self, text: &'t str, mut f: impl FnMut(usize, &'t str, bool)) {
        let bytes = text.as_bytes();
        let wide_from = |at: usize| first_wide(&bytes[at..]).map(|k| at + k);
        let Some(first) = wide_from(0) else {
            return f(0, text, true);
        };
        if self.barriers == 0 {
            return f(0, text, false);
        }
        let barrier = |b: &u8| b.is_ascii() && self.barriers & (1u128 << *b) != 0;
        let after = |w: usize| bytes[w..].iter().position(barrier).map_or(bytes.len(), |k| w + k);
        let (mut at, mut wide) = (0, Some(first));
        while let Some(w) = wide {
            let start = bytes[at..w].iter().rposition(barrier).map_or(at, |k| at + k + 1);
            let mut end = after(w);
            wide = wide_from(end);
            while let Some(next) = wide.filter(|&n| n - end < JOIN) {
                end = after(next);
                wide = wide_from(end);
            }
            if start > at {
                f(at, &text[at..start], true);
            }
            f(start, &text[start..end], false);
            at = end;
        }
        if at < bytes.len() {
            f(at, &text[at..], true);
        }
    }
}

/// Where the first byte of `bytes` that is not ASCII is, read 16 at a time.
fn first_wide(bytes: &[u8]) -> Option<usize> {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(16);
    for (i, chunk) in chunks.by_ref().enumerate() {
        let (a, b) = chunk.split_at(8);
        let word = |half: &[u8]| u64::from_ne_bytes(half.try_into().unwrap_or([0; 8]));
        if (word(a) | word(b)) & HIGH != 0 {
            return chunk.iter().position(|b| !b.is_ascii()).map(|k| 16 * i + k);
        }
    }
    let done = bytes.len() - chunks.remainder().len();
    chunks.remainder().iter().position(|b| !b.is_ascii()).map(|k| done + k)
}

/// Whether `hir` asserts nothing but word boundaries.
fn only_words_asserted(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Empty | HirKind::Literal(_) | HirKind::Class(_) => true,
        HirKind::Look(l) => matches!(
            l,
            Look::WordAscii
                | Look::WordAsciiNegate
                | Look::WordUnicode
                | Look::WordUnicodeNegate
                | Look::WordStartAscii
                | Look::WordEndAscii
                | Look::WordStartUnicode
                | Look::WordEndUnicode
                | Look::WordStartHalfAscii
                | Look::WordEndHalfAscii
                | Look::WordStartHalfUnicode
                | Look::WordEndHalfUnicode
        ),
        HirKind::Repetition(r) => only_words_asserted(&r.sub),
        HirKind::Capture(c) => only_words_asserted(&c.sub),
        HirKind::Concat(subs) | HirKind::Alternation(subs) => subs.iter().all(only_words_asserted),
    }
}

/// The ASCII characters a match of `hir` may hold (bit `b` for byte `b`).
fn held(hir: &Hir) -> u128 {
    let range = |lo: u32, hi: u32| (lo.min(128)..=hi.min(127)).fold(0u128, |m, b| m | (1u128 << b));
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => 0,
        HirKind::Literal(l) => l.0.iter().filter(|b| b.is_ascii()).fold(0, |m, b| m | (1u128 << b)),
        HirKind::Class(Class::Unicode(c)) => c
            .ranges()
            .iter()
            .fold(0, |m, r| m | range(u32::from(r.start()), u32::from(r.end()))),
        HirKind::Class(Class::Bytes(c)) => c
            .ranges()
            .iter()
            .fold(0, |m, r| m | range(u32::from(r.start()), u32::from(r.end()))),
        HirKind::Repetition(r) => held(&r.sub),
        HirKind::Capture(c) => held(&c.sub),
        HirKind::Concat(subs) | HirKind::Alternation(subs) => subs.iter().fold(0, |m, h| m | held(h)),
    }
}

/// A unit's pattern as it matches a text that is ASCII, built without Unicode (bytes, with the
/// unit's case folding), when it matches exactly where the Unicode one does on every ASCII text:
/// the two parse to the same expression once each class is cut to its ASCII characters and a
/// word boundary is read as the same test (on ASCII text, Unicode's word characters are ASCII's).
/// None when they differ there (`(?i)\x{17F}`, the long s, matches `s` only with Unicode) or
/// the pattern does not build without Unicode (`\p{Greek}`).
fn ascii_unit(pattern: &str, case_insensitive: bool) -> Option<regex::bytes::Regex> {
    use regex_syntax::ParserBuilder;
    let unicode = ParserBuilder::new()
        .case_insensitive(case_insensitive)
        .build()
        .parse(pattern)
        .ok()?;
    let ascii = ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .case_insensitive(case_insensitive)
        .build()
        .parse(pattern)
        .ok()?;
    if !same_on_ascii(&unicode, &ascii) {
        return None;
    }
    regex::bytes::RegexBuilder::new(pattern)
        .unicode(false)
        .case_insensitive(case_insensitive)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .ok()
}

/// Whether `u` (parsed with Unicode) and `a` (without) match the same on every ASCII text: the
/// same expression, each class holding the same ASCII characters, each look the same test there.
fn same_on_ascii(u: &Hir, a: &Hir) -> bool {
    let ascii_part = |c: &Class| -> Vec<(u32, u32)> {
        let cut = |lo: u32, hi: u32| (lo <= 0x7F).then(|| (lo, hi.min(0x7F)));
        match c {
            Class::Unicode(c) => c
                .ranges()
                .iter()
                .filter_map(|r| cut(u32::from(r.start()), u32::from(r.end())))
                .collect(),
            Class::Bytes(c) => c
                .ranges()
                .iter()
                .filter_map(|r| cut(u32::from(r.start()), u32::from(r.end())))
                .collect(),
        }
    };
    let look = |l: Look| match l {
        Look::WordUnicode => Look::WordAscii,
        Look::WordUnicodeNegate => Look::WordAsciiNegate,
        Look::WordStartUnicode => Look::WordStartAscii,
        Look::WordEndUnicode => Look::WordEndAscii,
        Look::WordStartHalfUnicode => Look::WordStartHalfAscii,
        Look::WordEndHalfUnicode => Look::WordEndHalfAscii,
        other => other,
    };
    match (u.kind(), a.kind()) {
        (HirKind::Empty, HirKind::Empty) => true,
        (HirKind::Literal(x), HirKind::Literal(y)) => x == y,
        (HirKind::Class(x), HirKind::Class(y)) => ascii_part(x) == ascii_part(y),
        (HirKind::Look(x), HirKind::Look(y)) => look(*x) == look(*y),
        (HirKind::Repetition(x), HirKind::Repetition(y)) => {
            x.min == y.min && x.max == y.max && x.greedy == y.greedy && same_on_ascii(&x.sub, &y.sub)
        }
        (HirKind::Capture(x), HirKind::Capture(y)) => {
            x.index == y.index && x.name == y.name && same_on_ascii(&x.sub, &y.sub)
        }
        (HirKind::Concat(x), HirKind::Concat(y)) | (HirKind::Alternation(x), HirKind::Alternation(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_on_ascii(x, y))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::Query;

    /// Each unit's matches and the spans as the Unicode units alone find them (the search before
    /// ASCII units: what they must not change).
    fn reference(q: &Query, text: &str, max: usize) -> (Vec<usize>, Vec<(usize, usize)>) {
        let counts = q.units.iter().map(|re| re.find_iter(text).count()).collect();
        let mut spans: Vec<(usize, usize)> = q
            .units
            .iter()
            .filter_map(|re| re.find(text).map(|m| (m.start(), m.end())))
            .collect();
        if spans.len() < max {
            for re in &q.units {
                spans.extend(re.find_iter(text).skip(1).take(max).map(|m| (m.start(), m.end())));
            }
        }
        spans.sort_unstable();
        spans.dedup();
        (counts, spans)
    }

    #[test]
    fn ascii_units_match_as_the_unicode_ones() {
        let texts = [
            "FooError here\nBarError: x\n",
            "caf\u{e9}Error and Caf\u{e9}Error\nplain ValueError\nKeyError\u{e9}",
            "\u{e9}\nTypeError\n\u{e9}TypeError \u{e9} TypeError\u{e9}\n\nIOError",
            "the \u{212A}elvin sign and kelvin, a long \u{17F} and s\r\nSTRASSE stra\u{df}e",
            "no break at all: \u{e9}t\u{e9} ErrnoError ZError\u{1F600}YError",
            "",
            "\n\n\u{e9}\n",
            "ASCII only\nlines of it\nAError BError\n",
            "x\u{e9}\nx\ny\u{e9}y\n\u{e9}",
        ];
        let patterns = [
            r"[A-Z]\w+Error\b",
            r"\bError",
            r"\BError",
            r"(?i)k",
            r"(?i)kelvin",
            r"(?i)\x{17F}",
            r"(?i)[\x{212A}]",
            r"(?i)s",
            r"\w+",
            r"\W+",
            r".",
            r"a.b",
            r"\s+",
            r"x*",
            r"^x",
            r"(?m)^x",
            r"x$",
            r"\pL+",
            r"[^a]+",
            r"\x{e9}+",
            r"(?i)stra\x{df}e",
            r"\d+",
            r"\b\w",
            "x\ny",
            r"[\x00-\xff]+",
            r"(?i)\w+error\b",
            r"\b",
        ];
        for pattern in patterns {
            let q = Query::regex(pattern).unwrap();
            for text in texts {
                let got = (q.count(text), q.spans(text, 3));
                assert_eq!(got, reference(&q, text, 3), "{pattern:?} on {text:?}");
            }
        }
        for words in ["error", "kelvin strasse", "\"test failed\"", "caf\u{e9}", "s k"] {
            let q = Query::words(words).unwrap();
            for text in texts {
                assert_eq!(
                    (q.count(text), q.spans(text, 3)),
                    reference(&q, text, 3),
                    "{words:?} on {text:?}"
                );
            }
        }
        // The ASCII units exist where they are the same, and the line-by-line search where
        // matches stay within lines.
        let ascii = |p: &str| Query::regex(p).unwrap().ascii.map(|a| a.barriers != 0);
        assert_eq!(ascii(r"[A-Z]\w+Error\b"), Some(true));
        assert_eq!(ascii(r"\s+"), Some(true));
        assert_eq!(ascii(r"\W+"), Some(false));
        assert_eq!(ascii(r"x*"), Some(false));
        assert_eq!(ascii(r"^x"), Some(false));
        assert_eq!(ascii(r"(?i)\x{17F}"), None);
        assert_eq!(ascii(r"\pL+"), None);
    }

    #[test]
    fn parts_match_as_the_whole_text_on_random_texts() {
        // Texts of word characters, separators and characters that are not ASCII (some folding to
        // ASCII letters), long enough for several stretches and joins; every pattern's counts and
        // spans as the Unicode units alone find them.
        let alphabet = [
            "a",
            "b",
            "E",
            "r",
            "o",
            "Error",
            "K",
            "s",
            "S",
            "_",
            "7",
            " ",
            " ",
            "\n",
            ".",
            ":",
            "/",
            "-",
            "\t",
            "\u{e9}",
            "\u{17F}",
            "\u{212A}",
            "\u{1F600}",
            "\u{4E2D}",
            "\u{df}",
            "\u{a0}",
            "\u{2028}",
        ];
        let patterns = [
            r"[A-Z]\w+Error\b",
            r"\b\w+\b",
            r"\w+",
            r"\S+",
            r"(?i)error",
            r"(?i)\bks\b",
            r"[a-z ]+",
            r"\BE",
            r"\w+\s+\w+",
            r"[^\s]+",
            r"\d+\b",
            r"Er+or",
            r"(?i)s",
        ];
        let queries: Vec<Query> = patterns
            .iter()
            .map(|p| Query::regex(p).unwrap())
            .chain(["error \"ks s\"", "S k"].iter().map(|w| Query::words(w).unwrap()))
            .collect();
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            usize::try_from(state % n as u64).unwrap()
        };
        for round in 0..300 {
            let len = 1 + next(if round % 10 == 0 { 2000 } else { 120 });
            // Mostly ASCII, as real texts are: a character that is not ASCII one time in `rare`.
            let rare = 1 + next(60);
            let text: String = (0..len)
                .map(|_| {
                    if next(rare) == 0 {
                        alphabet[19 + next(8)]
                    } else {
                        alphabet[next(19)]
                    }
                })
                .collect();
            for q in &queries {
                assert_eq!(
                    (q.count(&text), q.spans(&text, 3)),
                    reference(q, &text, 3),
                    "{:?} on {text:?}",
                    q.units
                );
            }
        }
    }
}
