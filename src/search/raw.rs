//! The raw-text prefilter of a words query: the words, searched for (case folded as the match
//! folds them) in the bytes of a line of raw JSON before anything is parsed, by the `regex`
//! crate's SIMD literal search (Teddy), and `\u` escapes by memchr's memmem.
//!
//! A document's text is its JSON strings decoded (and its numbers), joined by line breaks
//! (`log::text`). A string's characters appear in the raw line as they are, except the ones JSON
//! escapes: `"`, `\`, `/` (`\/`), control characters, and anything written as `\uXXXX`. So a word
//! with none of those characters and no space is in the raw line whenever it is in the text,
//! unless the line holds a `\u` escape (such a line is always parsed). A line whose bytes are not
//! UTF-8 is read with replacement characters: a word that holds one is looked for in the decoded
//! line instead of the bytes (the two agree on every other word).
//!
//! A regular expression's filter is built the same way from literals every match holds: the
//! prefixes every match starts with, or the suffixes every match ends with (`regex-syntax`'s
//! extraction), whichever are longer; none when they are not a finite set of such plain words.

use std::fmt::Write as _;

use memchr::memmem::Finder;
use regex::bytes::{Regex as BytesRegex, RegexBuilder as BytesRegexBuilder};
use regex_syntax::hir::literal::{ExtractKind, Extractor, Seq};
use regex_syntax::hir::{Class, Hir, HirKind, Literal};

/// Any of a words query's words, to be found in raw JSON.
#[derive(Clone, Debug)]
pub struct RawFilter {
    any: BytesRegex,
    /// For a words query whose every word holds a run of at least [`CASELESS_RUN`] characters that
    /// have no other case (digits, punctuation: `-7731` of `quokka-7731`): those runs, searched
    /// for first when lines are marked (a plain substring search, several times faster than the
    /// case-insensitive words' one); a line that holds one is then looked at with `any`.
    caseless: Option<BytesRegex>,
    /// Finds a `\u` escape (built once: building a finder costs about what a short line's search
    /// does).
    escape: Finder<'static>,
    /// A word holds U+FFFD: only the decoded line is looked at (see the module).
    decoded_only: bool,
}

/// Why [`RawFilter::needs_look`] marked a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    /// The line holds one of the literals (or, with [`RawFilter::caseless`], one of its runs).
    Literal,
    /// The line holds a `\u` escape.
    Escape,
}

impl RawFilter {
    /// The filter of a words query: any of `terms`, case-insensitive as the match is. None when a
    /// term is not written as it is in raw JSON.
    pub fn words(terms: &[String]) -> Option<RawFilter> {
        let plain = |t: &String| !t.contains(['"', '\\', '/', ' ']) && !t.bytes().any(|b| b < 0x20);
        if !terms.iter().all(plain) {
            return None;
        }
        let alternation = terms.iter().map(|t| regex::escape(t)).collect::<Vec<_>>().join("|");
        let any = BytesRegexBuilder::new(&alternation)
            .case_insensitive(true)
            .build()
            .ok()?;
        let runs: Option<Vec<String>> = terms.iter().map(|t| caseless_run(t)).collect();
        let caseless = runs.and_then(|runs| BytesRegexBuilder::new(&runs.join("|")).build().ok());
        Some(RawFilter {
            any,
            caseless,
            escape: Finder::new(br"\u"),
            decoded_only: terms.iter().any(|t| t.contains('\u{FFFD}')),
        })
    }

    /// The filter of a regular expression (as `regex` reads it): any of the literals every match
    /// holds, case-sensitive (the extraction spells out the case variants it matches). None when
    /// no finite set of plain literals is known.
    pub fn regex(pattern: &str) -> Option<RawFilter> {
        let hir = regex_syntax::parse(pattern).ok()?;
        let literals = [ExtractKind::Prefix, ExtractKind::Suffix]
            .into_iter()
            .filter_map(|kind| plain_literals(&Extractor::new().kind(kind).extract(&hir)))
            .max_by_key(|lits| (lits.iter().map(Vec::len).min(), std::cmp::Reverse(lits.len())))?;
        let mut alternation = String::new();
        for (i, lit) in literals.iter().enumerate() {
            alternation.push_str(if i == 0 { "(?-u:" } else { "|(?-u:" });
            for b in lit {
                let _ = write!(alternation, "\\x{b:02x}");
            }
            alternation.push(')');
        }
        let any = BytesRegexBuilder::new(&alternation).build().ok()?;
        Some(RawFilter {
            any,
            caseless: None,
            escape: Finder::new(br"\u"),
            // A literal that is not ASCII is looked for in the decoded line (a line that is not
            // UTF-8 decodes to replacement characters its bytes do not hold).
            decoded_only: literals.iter().any(|l| !l.is_ascii()),
        })
    }

    /// Whether the raw JSON line may hold a document that matches (false: it cannot); None when
    /// the line holds a `\u` escape, which can write any character.
    pub fn may_match(&self, raw: &[u8]) -> Option<bool> {
        if self.escape.find(raw).is_some() {
            return None;
        }
        Some(self.any.is_match(raw))
    }

    /// The lines of `buf` that need a closer look, found by searching the whole buffer at once
    /// instead of each line: `lines` are the lines' places (in order, as byte ranges of `buf`
    /// without their line break), and `marked` is called with the index of each line that holds
    /// one of the literals ([`Mark::Literal`]) or a `\u` escape ([`Mark::Escape`]), at most once
    /// for each. A line that is not marked is one [`may_match_bytes`](Self::may_match_bytes)
    /// answers `Some(false)` for (neither a literal nor a `\u` escape holds a line break, so none
    /// spans two lines); one marked with an escape, one it answers None for; one marked with a
    /// literal only, one it answers `Some(true)` for when [`marks_are_exact`](Self::marks_are_exact).
    /// With `escapes` false, `\u` escapes are not searched for (nothing is marked
    /// [`Mark::Escape`]: the caller tells them another way). None (nothing marked) when only the
    /// decoded lines can tell.
    pub(crate) fn needs_look(
        &self,
        buf: &[u8],
        lines: &[(usize, usize)],
        escapes: bool,
        mut marked: impl FnMut(usize, Mark),
    ) -> Option<()> {
        if self.decoded_only {
            return None;
        }
        let end = lines.last().map_or(0, |l| l.1);
        let haystack = &buf[..end];
        let start = lines.first().map_or(0, |l| l.0);
        // Where the shortest match ends is enough to tell its line (and cheaper than where the
        // leftmost one starts: no search backwards). A line marked may not hold a match (the
        // caller asks `may_match_bytes` of each marked line); every line that holds one is marked.
        let filter = self.caseless.as_ref().unwrap_or(&self.any);
        mark_lines(
            lines,
            start,
            |at| filter.shortest_match_at(haystack, at).map(|end| end - 1),
            &mut |i| marked(i, Mark::Literal),
        );
        if escapes {
            mark_lines(
                lines,
                start,
                |at| self.escape.find(&haystack[at..]).map(|i| at + i),
                &mut |i| marked(i, Mark::Escape),
            );
        }
        Some(())
    }

    /// Whether a line [`needs_look`](Self::needs_look) marks with a literal holds a match of the
    /// literals themselves (not only of the runs [`RawFilter::caseless`] looks for first).
    pub(crate) fn marks_are_exact(&self) -> bool {
        self.caseless.is_none()
    }

    /// [`may_match`](Self::may_match) on a line's bytes before they are decoded; None also when
    /// only the decoded line can tell.
    pub fn may_match_bytes(&self, raw: &[u8]) -> Option<bool> {
        if self.decoded_only {
            return None;
        }
        self.may_match(raw)
    }
}

/// A regular expression (as `regex` reads it, with its size limit) as it matches the raw bytes of
/// a JSON record, when whatever it matches is written in raw JSON as it is: every character it can
/// match is one JSON does not escape (not `"`, `\\`, `/` or a control character) and it asserts
/// nothing about what is around a match (no `\b`, `^`, `$`: the raw bytes around a match are
/// not the text's). Then, in a record whose bytes are UTF-8 and that holds no `\u` escape, each
/// match in the record's text is one in its raw bytes (within one string: the pieces of the text
/// are joined by a line break, which it cannot match), so a record whose raw bytes it does not
/// match holds no match. None for any other expression.
pub fn plain_regex(pattern: &str, size_limit: usize) -> Option<BytesRegex> {
    let hir = regex_syntax::parse(pattern).ok()?;
    if !plain_hir(&hir) {
        return None;
    }
    BytesRegexBuilder::new(pattern).size_limit(size_limit).build().ok()
}

/// Whether `hir` matches only characters JSON writes as they are, and asserts nothing.
fn plain_hir(hir: &Hir) -> bool {
    let escaped = |c: u32| c < 0x20 || c == u32::from(b'"') || c == u32::from(b'\\') || c == u32::from(b'/');
    let overlaps = |start: u32, end: u32| {
        start < 0x20
            || [b'"', b'\\', b'/']
                .iter()
                .any(|&b| (start..=end).contains(&u32::from(b)))
    };
    match hir.kind() {
        HirKind::Empty => true,
        HirKind::Literal(Literal(bytes)) => !bytes.iter().any(|&b| escaped(u32::from(b))),
        HirKind::Class(Class::Unicode(class)) => !class
            .ranges()
            .iter()
            .any(|r| overlaps(u32::from(r.start()), u32::from(r.end()))),
        HirKind::Class(Class::Bytes(class)) => !class
            .ranges()
            .iter()
            .any(|r| overlaps(u32::from(r.start()), u32::from(r.end()))),
        HirKind::Look(_) => false,
        HirKind::Repetition(rep) => plain_hir(&rep.sub),
        HirKind::Capture(cap) => plain_hir(&cap.sub),
        HirKind::Concat(subs) | HirKind::Alternation(subs) => subs.iter().all(plain_hir),
    }
}

/// The shortest run of characters [`RawFilter::caseless`] searches for.
const CASELESS_RUN: usize = 3;

/// The longest run of ASCII characters that are not letters in `term` (as a pattern), if it has
/// one of at least [`CASELESS_RUN`]: every match of the term, case folded, holds it as it is.
fn caseless_run(term: &str) -> Option<String> {
    let run = term
        .split(|c: char| !c.is_ascii_graphic() || c.is_ascii_alphabetic())
        .max_by_key(|run| run.len())?;
    (run.len() >= CASELESS_RUN).then(|| format!("(?-u:{})", regex::escape(run)))
}

/// Call `marked` with the index of each of `lines` (in order, byte ranges) that holds a match,
/// searching from `at`: `find` gives a byte of the first match that ends at or after a place (a
/// match holds no line break: the byte's line is the match's).
fn mark_lines(
    lines: &[(usize, usize)],
    mut at: usize,
    mut find: impl FnMut(usize) -> Option<usize>,
    marked: &mut impl FnMut(usize),
) {
    let mut line = 0;
    while let Some(inside) = find(at) {
        // The line the match is in (or the gap between two lines it falls in).
        while line < lines.len() && lines[line].1 < inside {
            line += 1;
        }
        match lines.get(line) {
            Some(&(from, to)) if from <= inside => {
                marked(line);
                line += 1;
                at = to;
            }
            Some(_) => at = inside + 1,
            None => break,
        }
    }
}

/// The literals of `seq` when it is a finite, non-empty set of non-empty literals that are written
/// in raw JSON as they are (no quote, backslash, slash or control character).
fn plain_literals(seq: &Seq) -> Option<Vec<Vec<u8>>> {
    let literals = seq.literals()?;
    let plain = |l: &[u8]| !l.is_empty() && !l.iter().any(|&b| matches!(b, b'"' | b'\\' | b'/') || b < 0x20);
    if literals.is_empty() || !literals.iter().all(|l| plain(l.as_bytes())) {
        return None;
    }
    Some(literals.iter().map(|l| l.as_bytes().to_vec()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_fold_case_and_refuse_what_json_escapes() {
        let f = RawFilter::words(&["Needle".into(), "hay".into()]).unwrap();
        assert_eq!(f.may_match(br#"{"a":"a NEEDLE"}"#), Some(true));
        assert_eq!(f.may_match(br#"{"a":"HAY"}"#), Some(true));
        assert_eq!(f.may_match(br#"{"a":"straw"}"#), Some(false));
        assert_eq!(f.may_match(br#"{"a":"\u0068ay"}"#), None);
        assert_eq!(f.may_match_bytes(br#"{"a":"straw"}"#), Some(false));
        for bad in ["a/b", "a\"b", r"a\b", "a b", "tab\there"] {
            assert!(RawFilter::words(&[bad.into()]).is_none(), "{bad}");
        }
        // A replacement character is only looked for once the line is decoded.
        let f = RawFilter::words(&["\u{FFFD}".into()]).unwrap();
        assert_eq!(f.may_match_bytes(b"{\"a\":\"\xff\"}"), None);
        assert_eq!(f.may_match("{\"a\":\"\u{FFFD}\"}".as_bytes()), Some(true));
    }

    #[test]
    fn lines_are_marked_where_the_line_by_line_filter_may_match() {
        let lines: [&[u8]; 9] = [
            br#"{"a":"the QUOKKA-7731"}"#,
            br#"{"a":"a -7731 but no quokka"}"#,
            br#"{"a":"plain hay"}"#,
            br#"{"a":"quo\u006bka-7731"}"#,
            b"",
            br#"{"a":"x-7731"} quokka-7731"#,
            br#"{"a":"needle \u00e9"}"#,
            br#"{"a":"NEEDLE"}"#,
            br#"{"a":"hay-77"}"#,
        ];
        let buf = lines.join(&b'\n');
        let mut ranges = Vec::new();
        let mut at = 0;
        for l in &lines {
            ranges.push((at, at + l.len()));
            at += l.len() + 1;
        }
        for terms in [
            &["quokka-7731"][..],
            &["needle"],
            &["quokka-7731", "hay-77"],
            &["needle", "x-7731"],
        ] {
            let f = RawFilter::words(&terms.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>()).unwrap();
            assert_eq!(
                f.caseless.is_some(),
                terms.iter().all(|t| t.contains("-77")),
                "{terms:?}"
            );
            let mut marked = vec![false; lines.len()];
            let mut literal = vec![false; lines.len()];
            f.needs_look(&buf, &ranges, true, |i, mark| {
                marked[i] = true;
                literal[i] |= mark == Mark::Literal;
            })
            .unwrap();
            for (i, line) in lines.iter().enumerate() {
                // A line the filter may match is marked; one not marked is ruled out line by line.
                if f.may_match_bytes(line) != Some(false) {
                    assert!(marked[i], "{terms:?} {}", String::from_utf8_lossy(line));
                }
                // Marked with a literal and no escape: the filter matches, when the marks are exact.
                if f.marks_are_exact() && literal[i] && !line.windows(2).any(|w| w == br"\u") {
                    assert_eq!(f.may_match_bytes(line), Some(true), "{terms:?}");
                }
            }
            if terms == ["needle"] {
                assert_eq!(marked, [false, false, false, true, false, false, true, true, false]);
            }
        }
    }

    #[test]
    fn regex_filters_hold_the_literals_every_match_holds() {
        // The longer of the prefixes and the suffixes.
        let f = RawFilter::regex(r"m\d+\.py").unwrap();
        assert_eq!(f.may_match(br#"{"a":"see m12.py"}"#), Some(true));
        assert_eq!(f.may_match(br#"{"a":"x.py"}"#), Some(true));
        assert_eq!(f.may_match(br#"{"a":"m12.rs"}"#), Some(false));
        let f = RawFilter::regex(r"[A-Z]\w+Error\b").unwrap();
        assert_eq!(f.may_match(br#"{"a":"ValueError"}"#), Some(true));
        assert_eq!(f.may_match(br#"{"a":"valueerror"}"#), Some(false));
        assert_eq!(f.may_match(br#"{"a":"Valu\u0065Error"}"#), None);
        // Case variants are spelled out.
        let f = RawFilter::regex(r"(?i)needle\W+\w+").unwrap();
        assert_eq!(f.may_match(br#"{"a":"NeEdLe: x"}"#), Some(true));
        assert_eq!(f.may_match(br#"{"a":"hay"}"#), Some(false));
        // No finite set of plain literals: no filter.
        for pattern in [r"\w+", r"a*", r"a/b", r"x\sy|\d", "a\"b", r"a\\b", r"\n", r"x|"] {
            assert!(RawFilter::regex(pattern).is_none(), "{pattern}");
        }
        assert!(RawFilter::regex("caf\u{e9}").unwrap().may_match_bytes(b"x").is_none());
    }

    #[test]
    fn plain_regexes_match_only_what_json_writes_as_it_is() {
        for pattern in [
            r"m\d+\.py",
            r"\d{4,}",
            r"\w+",
            "caf\u{e9}|x",
            r"(?i)needle",
            r"[a-z]+",
            "a*",
            r"\p{Greek}",
        ] {
            assert!(plain_regex(pattern, 1 << 20).is_some(), "{pattern}");
        }
        for pattern in [
            r"[A-Z]\w+Error\b",
            r"(?i)needle\W+\w+",
            r"^x",
            r"x$",
            r"a.b",
            r"a\sb",
            r"a/b",
            "a\"b",
            r"a\\b",
            r"[^a]",
            r"[\x00-a]",
            r"(?-u:\xff)|\t",
            "\u{1F}",
        ] {
            assert!(plain_regex(pattern, 1 << 20).is_none(), "{pattern}");
        }
    }
}
