//! Search by words or by a regular expression, ranked with BM25, with snippets around the
//! matches. One implementation for everything that is searched: memory records
//! ([`crate::memory`]) and the originals of a session log ([`log`]).

mod ascii;
pub mod log;
mod raw;

use rayon::prelude::*;
use regex::{Regex, RegexBuilder};

use crate::error::{Error, Result};
use ascii::Ascii;
pub(crate) use raw::Mark;
use raw::RawFilter;

/// The most terms a words query may have.
pub const MAX_TERMS: usize = 32;
/// The largest compiled regular expression (bytes), so a pathological pattern fails fast.
const REGEX_SIZE_LIMIT: usize = 1 << 22;

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// A parsed query.
#[derive(Clone, Debug)]
pub struct Query {
    units: Vec<Regex>,
    /// What a raw JSON text must hold to hold a document the units match (None: not known).
    raw: Option<RawFilter>,
    /// The units as they match the bytes of a raw JSON record, when every one of them is a plain
    /// word (written in raw JSON as it is: see `raw`), so that its matches in a record's text are
    /// its matches in the record's strings (`log` counts them there).
    raw_units: Option<Vec<regex::bytes::Regex>>,
    /// A regular expression as it matches raw JSON bytes, when its matches in a record's text are
    /// matches in the record's bytes (see `raw::plain_regex`).
    raw_regex: Option<regex::bytes::Regex>,
    /// The units as they match ASCII text (see [`Ascii`]); None when a pattern may match
    /// otherwise there.
    ascii: Option<Ascii>,
    /// Whether a search over a log counts every message record into the collection's statistics
    /// (a regular expression: a record the raw filter rules out is still parsed for its length and
    /// checked to be readable), or only the ones the raw filter lets through (words).
    every_record: bool,
}

/// How well a document matched.
#[derive(Clone, Debug, PartialEq)]
pub struct Scored {
    pub score: f64,
    /// Matches of all terms together.
    pub matches: usize,
}

fn invalid(reason: impl Into<String>) -> Error {
    Error::InvalidArgument {
        what: "query",
        reason: reason.into(),
    }
}

impl Query {
    /// Words (case-insensitive), each found anywhere in a document; `"a phrase"` in double quotes
    /// is one term. A document matches when it holds at least one term; holding more of them,
    /// rarer ones, and more often ranks it higher.
    pub fn words(query: &str) -> Result<Query> {
        let mut terms: Vec<String> = Vec::new();
        for (i, chunk) in query.split('"').enumerate() {
            if i % 2 == 1 {
                let phrase = chunk.split_whitespace().collect::<Vec<_>>().join(" ");
                if !phrase.is_empty() {
                    terms.push(phrase);
                }
            } else {
                terms.extend(chunk.split_whitespace().map(str::to_owned));
            }
        }
        let mut seen = std::collections::HashSet::new();
        terms.retain(|t| seen.insert(t.to_lowercase()));
        if terms.is_empty() {
            return Err(invalid("no words to search for"));
        }
        if terms.len() > MAX_TERMS {
            return Err(invalid(format!("{} words (at most {MAX_TERMS})", terms.len())));
        }
        // Each term's pattern, case-insensitive: its words apart by any whitespace.
        let patterns: Vec<(String, bool)> = terms
            .iter()
            .map(|t| (regex::escape(t).replace(' ', r"\s+"), true))
            .collect();
        let units = patterns
            .iter()
            .map(|(pattern, _)| {
                RegexBuilder::new(pattern)
                    .case_insensitive(true)
                    .build()
                    .map_err(|e| invalid(e.to_string()))
            })
            .collect::<Result<Vec<_>>>()?;
        // A term JSON would write differently (escaped) cannot be looked for in raw JSON.
        let raw = RawFilter::words(&terms);
        let raw_units = raw.as_ref().and_then(|_| {
            terms
                .iter()
                .map(|t| {
                    regex::bytes::RegexBuilder::new(&regex::escape(t))
                        .case_insensitive(true)
                        .build()
                        .ok()
                })
                .collect()
        });
        Ok(Query {
            units,
            ascii: Ascii::of(&patterns),
            raw,
            raw_units,
            raw_regex: None,
            every_record: false,
        })
    }

    /// A regular expression (Rust `regex` syntax: no backreferences or lookaround; linear time).
    /// Case-sensitive unless the pattern says `(?i)`.
    pub fn regex(pattern: &str) -> Result<Query> {
        if pattern.is_empty() {
            return Err(invalid("empty regular expression"));
        }
        let re = RegexBuilder::new(pattern)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|e| {
                // regex's syntax errors draw the pattern over several lines; the last says what is wrong.
                let text = e.to_string();
                let why = text
                    .lines()
                    .last()
                    .unwrap_or_default()
                    .trim_start_matches("error: ")
                    .to_owned();
                invalid(format!("bad regular expression {pattern:?}: {why}"))
            })?;
        Ok(Query {
            units: vec![re],
            ascii: Ascii::of(&[(pattern.to_owned(), false)]),
            raw: RawFilter::regex(pattern),
            raw_units: None,
            raw_regex: raw::plain_regex(pattern, REGEX_SIZE_LIMIT),
            every_record: true,
        })
    }

    pub fn parse(query: &str, regex: bool) -> Result<Query> {
        if regex {
            Query::regex(query)
        } else {
            Query::words(query)
        }
    }

    pub fn units(&self) -> usize {
        self.units.len()
    }

    /// The units as they match raw JSON bytes, when they are all plain words (see `raw_units`).
    pub(crate) fn raw_units(&self) -> Option<&[regex::bytes::Regex]> {
        self.raw_units.as_deref()
    }

    /// The regular expression as it matches raw JSON bytes, when a record whose bytes are UTF-8,
    /// that holds no `\u` escape and whose bytes it does not match cannot match (see
    /// `raw::plain_regex`).
    pub(crate) fn raw_regex(&self) -> Option<&regex::bytes::Regex> {
        self.raw_regex.as_ref()
    }

    /// Matches of each unit in `text`.
    pub fn count(&self, text: &str) -> Vec<usize> {
        let mut counts = vec![0; self.units.len()];
        // (Each regex's own `find_iter(..).count()`, not `matches_in`: the regex crate counts
        // its matches faster than an iterator over them: 144 against 128 ms for `[A-Z]\w+Error\b`
        // over the 100 MB bench log.)
        self.each_part(text, |_, part, ascii| match ascii {
            Some(units) => {
                for (c, re) in counts.iter_mut().zip(units) {
                    *c += re.find_iter(part.as_bytes()).count();
                }
            }
            None => {
                for (c, re) in counts.iter_mut().zip(&self.units) {
                    *c += re.find_iter(part).count();
                }
            }
        });
        counts
    }

    /// Unit `u`'s matches in `part` (byte ranges), by its ASCII form when `ascii` holds the
    /// ASCII units (see [`each_part`](Self::each_part)), else by the unit itself.
    fn matches_in<'a>(
        &'a self,
        u: usize,
        part: &'a str,
        ascii: Option<&'a [regex::bytes::Regex]>,
    ) -> impl Iterator<Item = (usize, usize)> + 'a {
        let (bytes, text) = match ascii {
            Some(units) => (Some(units[u].find_iter(part.as_bytes())), None),
            None => (None, Some(self.units[u].find_iter(part))),
        };
        let bytes = bytes.into_iter().flatten().map(|m| (m.start(), m.end()));
        bytes.chain(text.into_iter().flatten().map(|m| (m.start(), m.end())))
    }

    /// Call `f(offset, part, ascii_units)` for the parts of `text` the units are run on one by
    /// one (see [`Ascii::each_part`]; the whole text with the Unicode units when the query has no
    /// ASCII units).
    fn each_part<'t>(&self, text: &'t str, mut f: impl FnMut(usize, &'t str, Option<&[regex::bytes::Regex]>)) {
        match &self.ascii {
            None => f(0, text, None),
            Some(ascii) => ascii.each_part(text, |offset, part, on_ascii| {
                f(offset, part, on_ascii.then_some(&ascii.units[..]));
            }),
        }
    }

    /// Whether raw JSON text that holds a document might match (false means it cannot); None when
    /// this query cannot be decided on raw JSON (a regular expression without literals every match
    /// holds), or this text (see `raw`: the words, case folded as the match folds them, or the
    /// regular expression's literals, are searched for in the bytes).
    ///
    /// The units' own folding is the prefilter's (Unicode simple case folding: `kelvin` finds
    /// `\u{212A}elvin`, KELVIN SIGN).
    pub fn may_match_raw(&self, raw: &[u8]) -> Option<bool> {
        self.raw.as_ref()?.may_match(raw)
    }

    /// [`may_match_raw`](Self::may_match_raw) on a line's bytes before they are decoded as UTF-8
    /// (None also when only the decoded line can tell).
    pub fn may_match_raw_bytes(&self, raw: &[u8]) -> Option<bool> {
        self.raw.as_ref()?.may_match_bytes(raw)
    }

    /// The lines of `buf` (byte ranges, in order) whose bytes may not be ruled out raw: see
    /// [`RawFilter::needs_look`] (`\u` escapes searched for only with `escapes`). None when this
    /// query has no raw filter for undecoded bytes (every line needs a look).
    pub(crate) fn raw_needs_look(
        &self,
        buf: &[u8],
        lines: &[(usize, usize)],
        escapes: bool,
        marked: impl FnMut(usize, Mark),
    ) -> Option<()> {
        self.raw.as_ref()?.needs_look(buf, lines, escapes, marked)
    }

    /// Whether a line [`raw_needs_look`](Self::raw_needs_look) marks with a literal (and no
    /// escape) is one [`may_match_raw_bytes`](Self::may_match_raw_bytes) answers `Some(true)` for.
    pub(crate) fn raw_marks_are_exact(&self) -> bool {
        self.raw.as_ref().is_some_and(RawFilter::marks_are_exact)
    }

    /// Whether a log search counts every message record in the statistics (see `every_record`).
    pub(crate) fn counts_every_record(&self) -> bool {
        self.every_record
    }

    /// The first few match spans (byte ranges) in `text`, in order, one per unit first.
    pub fn spans(&self, text: &str, max: usize) -> Vec<(usize, usize)> {
        // Each unit's first `max + 1` matches: its first, then up to `max` more when the firsts
        // are fewer than `max`.
        let mut found: Vec<Vec<(usize, usize)>> = vec![Vec::new(); self.units.len()];
        self.each_part(text, |offset, part, ascii| {
            for (u, got) in found.iter_mut().enumerate() {
                let room = (max + 1).saturating_sub(got.len());
                got.extend(
                    self.matches_in(u, part, ascii)
                        .take(room)
                        .map(|(s, e)| (offset + s, offset + e)),
                );
            }
        });
        let mut spans: Vec<(usize, usize)> = found.iter().filter_map(|got| got.first().copied()).collect();
        if spans.len() < max {
            for got in &found {
                spans.extend(got.iter().skip(1).take(max));
            }
        }
        spans.sort_unstable();
        spans.dedup();
        spans
    }

    /// Rank documents made of weighted fields: the indices of the matching documents with their
    /// scores, best first (ties by position), at most `limit`.
    pub fn rank_fields<'a, D: AsRef<[&'a str]> + Sync>(
        &self,
        docs: &[D],
        weights: &[f64],
        limit: usize,
    ) -> Vec<(usize, Scored)> {
        let counted: Vec<Counted> = crate::parallel::install(|| {
            docs.par_iter()
                .map(|d| {
                    let fields = d.as_ref();
                    let mut tf = vec![0.0; self.units.len()];
                    let mut matches = 0;
                    for (f, w) in fields.iter().zip(weights) {
                        for (u, c) in self.count(f).into_iter().enumerate() {
                            tf[u] += w * c as f64;
                            matches += c;
                        }
                    }
                    Counted {
                        tf,
                        len: fields.iter().map(|f| f.len()).sum(),
                        matches,
                    }
                })
                .collect()
        });
        let ranked = bm25(&counted, docs.len());
        best(ranked, limit)
    }
}

/// Term frequencies and length of one document.
#[derive(Clone, Debug)]
pub(crate) struct Counted {
    pub tf: Vec<f64>,
    pub len: usize,
    pub matches: usize,
}

/// What BM25 needs of a whole collection: how many documents were counted, their total length,
/// and per unit how many of them hold it.
#[derive(Clone, Debug)]
pub(crate) struct Stats {
    pub docs: usize,
    pub len: usize,
    pub df: Vec<usize>,
}

impl Stats {
    pub fn new(units: usize) -> Stats {
        Stats {
            docs: 0,
            len: 0,
            df: vec![0; units],
        }
    }

    pub fn add(&mut self, doc: &Counted) {
        self.docs += 1;
        self.len += doc.len;
        for (df, &tf) in self.df.iter_mut().zip(&doc.tf) {
            *df += usize::from(tf > 0.0);
        }
    }
}

/// BM25 scores of the documents that match at least once (index into `docs`), over a collection
/// of `total` documents (documents that were not counted because they cannot match included).
pub(crate) fn bm25(docs: &[Counted], total: usize) -> Vec<(usize, Scored)> {
    let mut stats = Stats::new(docs.first().map_or(0, |d| d.tf.len()));
    for d in docs {
        stats.add(d);
    }
    bm25_of(docs, &stats, total)
}

/// BM25 scores of the documents of `docs` that match at least once (index into `docs`), in a
/// collection described by `stats` (which may have counted more documents than `docs` holds: the
/// ones that matched nothing need not be kept) of `total` documents.
pub(crate) fn bm25_of(docs: &[Counted], stats: &Stats, total: usize) -> Vec<(usize, Scored)> {
    let n = total.max(stats.docs) as f64;
    let avg = (stats.len as f64 / stats.docs.max(1) as f64).max(1.0);
    let idf: Vec<f64> = stats
        .df
        .iter()
        .map(|&df| {
            let df = df as f64;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .collect();
    docs.iter()
        .enumerate()
        .filter(|(_, d)| d.matches > 0)
        .map(|(i, d)| {
            let norm = K1 * (1.0 - B + B * d.len as f64 / avg);
            let score =
                d.tf.iter()
                    .zip(&idf)
                    .map(|(&tf, idf)| idf * tf * (K1 + 1.0) / (tf + norm))
                    .sum();
            (
                i,
                Scored {
                    score,
                    matches: d.matches,
                },
            )
        })
        .collect()
}

pub(crate) fn best(mut ranked: Vec<(usize, Scored)>, limit: usize) -> Vec<(usize, Scored)> {
    ranked.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then(a.0.cmp(&b.0)));
    ranked.truncate(limit);
    ranked
}

/// Up to `max` snippets of about `width` characters around the matches of `query` in `text`,
/// whitespace collapsed, `…` where text was cut.
pub fn snippets(query: &Query, text: &str, width: usize, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut covered_to = 0usize;
    for (start, end) in query.spans(text, max * 2) {
        if out.len() >= max {
            break;
        }
        if start < covered_to {
            continue;
        }
        let (s, e) = window(text, start, end, width);
        let mut snippet = String::new();
        if s > 0 {
            snippet.push('…');
        }
        let mut space = false;
        for c in text[s..e].chars() {
            if c.is_whitespace() {
                space = true;
            } else {
                if space && !snippet.is_empty() && !snippet.ends_with('…') {
                    snippet.push(' ');
                }
                space = false;
                snippet.push(c);
            }
        }
        if e < text.len() {
            snippet.push('…');
        }
        out.push(snippet);
        covered_to = e;
    }
    out
}

/// A byte window of about `width` chars holding the match, a third of the room before it.
fn window(text: &str, start: usize, end: usize, width: usize) -> (usize, usize) {
    let before = width.saturating_sub(end - start) / 3;
    let mut s = start;
    for _ in 0..before {
        match text[..s].chars().next_back() {
            Some(c) => s -= c.len_utf8(),
            None => break,
        }
    }
    let mut e = s;
    for (taken, c) in text[s..].chars().enumerate() {
        if taken >= width && e >= end {
            break;
        }
        e += c.len_utf8();
    }
    (s, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_rank_rarer_and_more_complete_matches_higher() {
        let docs = [
            ["the build failed", ""],
            ["flaky test in CI: the build failed with ECONNRESET", ""],
            ["nothing here", ""],
            ["ECONNRESET", "econnreset again"],
        ];
        let q = Query::words("econnreset build").unwrap();
        let ranked = q.rank_fields(&docs, &[1.0, 1.0], 10);
        let order: Vec<usize> = ranked.iter().map(|(i, _)| *i).collect();
        assert_eq!(order[0], 1);
        assert!(!order.contains(&2));
        assert_eq!(order.len(), 3);
    }

    #[test]
    fn phrases_regex_and_errors() {
        let q = Query::words("\"build   failed\"").unwrap();
        assert_eq!(q.count("the BUILD\nfailed; build failed"), vec![2]);
        assert!(Query::words("  ").is_err());
        assert!(Query::regex("(unclosed").is_err());
        let r = Query::regex(r"E[A-Z]{5,}").unwrap();
        assert_eq!(r.count("ECONNRESET and EPIPE and eagain"), vec![1]);
        assert_eq!(r.may_match_raw(b"x"), Some(false));
        assert!(Query::regex(r"\w+").unwrap().may_match_raw(b"x").is_none());
    }

    #[test]
    fn raw_prefilter_is_never_wrong_for_plain_words() {
        let q = Query::words("Needle").unwrap();
        assert_eq!(q.may_match_raw(br#"{"a":"a needle"}"#), Some(true));
        assert_eq!(q.may_match_raw(br#"{"a":"a neeDLE"}"#), Some(true));
        assert_eq!(q.may_match_raw(br#"{"a":"hay"}"#), Some(false));
        assert_eq!(q.may_match_raw(br#"{"a":"\u006eeedle"}"#), None);
        assert!(Query::words(r"a\b").unwrap().may_match_raw(b"x").is_none());
    }

    #[test]
    fn raw_prefilter_folds_case_as_the_match_does() {
        // KELVIN SIGN and LONG S fold to k and s; the prefilter was ASCII-only and skipped them.
        for (word, raw) in [
            ("kelvin", "{\"a\":\"273 \u{212A}elvin\"}"),
            ("class", "{\"a\":\"cla\u{17F}\u{17F}\"}"),
            ("café", "{\"a\":\"CAFÉ\"}"),
        ] {
            let q = Query::words(word).unwrap();
            let text = record_text_of(raw);
            assert_eq!(q.count(&text), vec![1], "{word} in {text}");
            assert_eq!(q.may_match_raw(raw.as_bytes()), Some(true), "{word} in {raw}");
        }
        assert_eq!(
            Query::words("café").unwrap().may_match_raw(b"{\"a\":\"cafe\"}"),
            Some(false)
        );
    }

    fn record_text_of(raw: &str) -> String {
        serde_json::from_str::<serde_json::Value>(raw).unwrap()["a"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn snippets_are_bounded_and_marked() {
        let text = format!("{} the secret is 42 {}", "a ".repeat(200), "b ".repeat(200));
        let q = Query::words("secret").unwrap();
        let s = snippets(&q, &text, 40, 2);
        assert_eq!(s.len(), 1);
        assert!(s[0].starts_with('…') && s[0].ends_with('…'));
        assert!(s[0].contains("the secret is 42"));
        assert!(s[0].chars().count() <= 44);
        assert_eq!(snippets(&q, "é secret é", 3, 1), vec!["…secret…".to_owned()]);
    }
}
