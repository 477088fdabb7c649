//! Pre-tokenization: a text split into the pieces that BPE merges.

use std::panic::{RefUnwindSafe, UnwindSafe};

use regex_automata::meta::{Cache, Regex};
use regex_automata::util::pool::{Pool, PoolGuard};
use regex_automata::{Anchored, Input};

use super::ascii::{Rules, piece};

/// Makes a search cache of the pattern.
type MakeCache = Box<dyn Fn() -> Cache + Send + Sync + UnwindSafe + RefUnwindSafe>;

/// Splits a text into pieces with several patterns tried at once, anchored at the end of the
/// previous piece. From bpe-openai (github.com/github/rust-gems, MIT): tiktoken's patterns use the
/// look-ahead `\s+(?!\S)`, which `regex-automata` does not support; it is written `\s+\s` and the
/// last character of its match is given back, which splits the same way (more than 3x faster
/// than a capture group, bpe-openai measured).
pub(super) struct Pretokenizer {
    pattern: Regex,
    /// Search caches, one taken per text split (the regex's own pool is asked once per piece,
    /// and from any thread but the first to search it that takes a lock: ~20% of counting the
    /// offline summary's lines one by one on the interpreter's thread).
    caches: Pool<Cache, MakeCache>,
    /// Per pattern: whether its match ends with one look-ahead character to give back.
    lookahead: Vec<bool>,
    /// The patterns' rules, followed by hand on ASCII text ([`super::ascii`]); None: the
    /// regular expression splits every piece.
    rules: Option<Rules>,
}

impl Pretokenizer {
    /// The pretokenizer of an encoding whose pattern is `main` then tiktoken's
    /// `\s+(?!\S)|\s+` (written `\s+\s` minus its last character: see [`Splits`]).
    pub(super) fn of(main: &str, rules: Option<Rules>) -> Pretokenizer {
        Pretokenizer::new(&[(main, false), ("\\s+\\s", true), ("\\s+", false)], rules)
    }

    fn new(patterns: &[(&str, bool)], rules: Option<Rules>) -> Pretokenizer {
        let (patterns, lookahead): (Vec<&str>, Vec<bool>) = patterns.iter().copied().unzip();
        let pattern = Regex::new_many(&patterns).expect("the encodings' patterns compile");
        let made = pattern.clone();
        let caches: Pool<Cache, MakeCache> = Pool::new(Box::new(move || made.create_cache()));
        Pretokenizer {
            pattern,
            caches,
            lookahead,
            rules,
        }
    }

    pub(super) fn split<'a>(&'a self, text: &'a str) -> Splits<'a> {
        Splits {
            pre: self,
            cache: self.caches.get(),
            text,
            at: 0,
        }
    }
}

pub(super) struct Splits<'a> {
    pre: &'a Pretokenizer,
    /// The search cache of this split, back in the pool when it is dropped.
    cache: PoolGuard<'a, Cache, MakeCache>,
    text: &'a str,
    at: usize,
}

impl<'a> Iterator for Splits<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = &self.text[self.at..];
        if let Some(end) = self.pre.rules.and_then(|rules| piece(rest.as_bytes(), rules)) {
            self.at += end;
            return Some(&rest[..end]);
        }
        let input = Input::new(rest).anchored(Anchored::Yes);
        let m = self.pre.pattern.search_with(&mut self.cache, &input)?;
        let mut end = m.end();
        if self.pre.lookahead[m.pattern().as_usize()] {
            // `\s+\s` matches at least two characters: giving the last back leaves one or more.
            end -= rest[..end].chars().next_back().map_or(0, char::len_utf8);
        }
        let piece = &rest[..end];
        self.at += end;
        Some(piece)
    }
}
