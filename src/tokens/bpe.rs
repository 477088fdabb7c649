//! Exact byte-pair encoding counts for OpenAI's public encodings, equal to tiktoken's.
//!
//! Each encoding is its token list ([`data`](self) holds `o200k_base.tokens` and
//! `cl100k_base.tokens`: every token in rank order, one length byte then its bytes; 1.6 MB and
//! 0.7 MB, packed from OpenAI's `.tiktoken` files by `data/pack.py`) embedded in the binary as it
//! is, and a rank table built from it the first time the encoding counts (a hash map from token
//! bytes to rank that borrows the embedded bytes: ~6 MB for o200k, built in a few milliseconds).
//! An encoding that is never used costs nothing but its embedded list.
//!
//! Counting is tiktoken's algorithm: the text is split into pieces by the encoding's
//! pre-tokenization pattern (the regular expressions of bpe-openai, which match tiktoken's
//! look-ahead patterns without look-ahead support; see [`Splits`]), a piece that is a token is
//! one token, and any other piece is merged pair by pair, the lowest-ranked adjacent pair first
//! (the leftmost of equals), until no adjacent pair forms a token; the parts left are its tokens.
//! Short pieces merge on a vector (what tiktoken does); long ones on a heap, so a megabyte of one
//! letter costs `n log n`, not `n²`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::LazyLock;

use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};

type Ranks = HashMap<&'static [u8], u32, foldhash::fast::FixedState>;

/// One encoding: its rank table and its pre-tokenizer.
pub struct Bpe {
    ranks: Ranks,
    split: Pretokenizer,
}

/// Pieces from this many bytes on merge on a heap ([`Bpe::merge_long`]).
const LONG_PIECE: usize = 128;

const NO_RANK: u32 = u32::MAX;

static O200K: LazyLock<Bpe> = LazyLock::new(|| {
    let letters = [
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        "\\p{N}{1,3}",
        " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*",
        "\\s*[\\r\\n]+",
        "\\s+$",
    ]
    .join("|");
    Bpe::new(include_bytes!("data/o200k_base.tokens"), &letters)
});

static CL100K: LazyLock<Bpe> = LazyLock::new(|| {
    Bpe::new(
        include_bytes!("data/cl100k_base.tokens"),
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+$",
    )
});

/// `o200k_base`, built on first use.
pub fn o200k_base() -> &'static Bpe {
    &O200K
}

/// `cl100k_base`, built on first use.
pub fn cl100k_base() -> &'static Bpe {
    &CL100K
}

impl Bpe {
    /// The encoding of the packed token list `tokens` (see the module docs), split by `main`
    /// and then tiktoken's `\s+(?!\S)|\s+` for whitespace.
    fn new(tokens: &'static [u8], main: &str) -> Bpe {
        let mut ranks = Ranks::with_capacity_and_hasher(tokens.len() / 8, foldhash::fast::FixedState::default());
        let mut at = 0;
        let mut rank = 0u32;
        while at < tokens.len() {
            let len = usize::from(tokens[at]);
            ranks.insert(&tokens[at + 1..at + 1 + len], rank);
            at += 1 + len;
            rank += 1;
        }
        // `\s+(?!\S)` as `\s+\s` minus its last character (bpe-openai's rewrite, see [`Splits`]).
        let split = Pretokenizer::new(&[(main, false), ("\\s+\\s", true), ("\\s+", false)]);
        Bpe { ranks, split }
    }

    /// Tokens in `text`.
    pub fn count(&self, text: &str) -> usize {
        self.split
            .split(text)
            .map(|piece| self.count_piece(piece.as_bytes()))
            .sum()
    }

    /// The number of tokens of one pre-tokenized piece.
    fn count_piece(&self, piece: &[u8]) -> usize {
        // Every byte is a token of both encodings.
        if piece.len() <= 1 || self.ranks.contains_key(piece) {
            piece.len().min(1)
        } else if piece.len() < LONG_PIECE {
            self.merge_short(piece)
        } else {
            self.merge_long(piece)
        }
    }

    fn rank(&self, bytes: &[u8]) -> u32 {
        self.ranks.get(bytes).copied().unwrap_or(NO_RANK)
    }

    /// tiktoken's `_byte_pair_merge`: `parts` holds each part's start and the rank of it merged
    /// with the next part; the lowest rank (the first of equals) merges until none is left.
    fn merge_short(&self, piece: &[u8]) -> usize {
        let mut parts: Vec<(usize, u32)> = Vec::with_capacity(piece.len() + 1);
        let mut min = (NO_RANK, usize::MAX);
        for i in 0..piece.len() - 1 {
            let rank = self.rank(&piece[i..i + 2]);
            if rank < min.0 {
                min = (rank, i);
            }
            parts.push((i, rank));
        }
        parts.push((piece.len() - 1, NO_RANK));
        parts.push((piece.len(), NO_RANK));
        let rank_at = |parts: &[(usize, u32)], i: usize| {
            if i + 3 < parts.len() {
                self.rank(&piece[parts[i].0..parts[i + 3].0])
            } else {
                NO_RANK
            }
        };
        while min.0 != NO_RANK {
            let i = min.1;
            if i > 0 {
                parts[i - 1].1 = rank_at(&parts, i - 1);
            }
            parts[i].1 = rank_at(&parts, i);
            parts.remove(i + 1);
            min = (NO_RANK, usize::MAX);
            for (i, &(_, rank)) in parts[..parts.len() - 1].iter().enumerate() {
                if rank < min.0 {
                    min = (rank, i);
                }
            }
        }
        parts.len() - 1
    }

    /// The same merges in the same order as [`merge_short`](Self::merge_short), with the parts in
    /// a linked list and the candidate pairs in a heap ordered by (rank, start): a pair whose
    /// part has been merged away or whose rank has changed since it was pushed is skipped when
    /// it comes up (a part's pair only ever grows, so its rank never comes back to an old value).
    fn merge_long(&self, piece: &[u8]) -> usize {
        let n = piece.len();
        // Parts are identified by their start; `next[s]` is the start of the part after `s` (n at
        // the end), `prev[s]` the one before, `rank[s]` the rank of `s` merged with `next[s]`.
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|s| s.wrapping_sub(1)).collect();
        let mut rank = vec![NO_RANK; n];
        let mut alive = vec![true; n];
        let mut heap = BinaryHeap::with_capacity(n);
        for s in 0..n - 1 {
            rank[s] = self.rank(&piece[s..s + 2]);
            if rank[s] != NO_RANK {
                heap.push(Reverse((rank[s], s)));
            }
        }
        let pair_rank = |next: &[usize], s: usize| {
            let end = next[s];
            if end >= n {
                return NO_RANK;
            }
            let after = next[end];
            self.rank(&piece[s..after])
        };
        let mut parts = n;
        while let Some(Reverse((r, s))) = heap.pop() {
            if !alive[s] || rank[s] != r {
                continue;
            }
            // Merge `s` with the part after it.
            let gone = next[s];
            alive[gone] = false;
            next[s] = next[gone];
            if next[s] < n {
                prev[next[s]] = s;
            }
            parts -= 1;
            rank[s] = pair_rank(&next, s);
            if rank[s] != NO_RANK {
                heap.push(Reverse((rank[s], s)));
            }
            let p = prev[s];
            if p != usize::MAX {
                rank[p] = pair_rank(&next, p);
                if rank[p] != NO_RANK {
                    heap.push(Reverse((rank[p], p)));
                }
            }
        }
        parts
    }
}

/// Splits a text into pieces with several patterns tried at once, anchored at the end of the
/// previous piece. From bpe-openai (github.com/github/rust-gems, MIT): tiktoken's patterns use the
/// look-ahead `\s+(?!\S)`, which `regex-automata` does not support; it is written `\s+\s` and the
/// last character of its match is given back, which splits the same way (more than 3x faster
/// than a capture group, bpe-openai measured).
struct Pretokenizer {
    pattern: Regex,
    /// Per pattern: whether its match ends with one look-ahead character to give back.
    lookahead: Vec<bool>,
}

impl Pretokenizer {
    fn new(patterns: &[(&str, bool)]) -> Pretokenizer {
        let (patterns, lookahead): (Vec<&str>, Vec<bool>) = patterns.iter().copied().unzip();
        let pattern = Regex::new_many(&patterns).expect("the encodings' patterns compile");
        Pretokenizer { pattern, lookahead }
    }

    fn split<'a>(&'a self, text: &'a str) -> Splits<'a> {
        Splits { pre: self, text, at: 0 }
    }
}

struct Splits<'a> {
    pre: &'a Pretokenizer,
    text: &'a str,
    at: usize,
}

impl<'a> Iterator for Splits<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = &self.text[self.at..];
        let m = self.pre.pattern.find(Input::new(rest).anchored(Anchored::Yes))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tables() -> [(&'static Bpe, &'static tiktoken_rs::CoreBPE, usize); 2] {
        [
            (o200k_base(), tiktoken_rs::o200k_base_singleton(), 199_998),
            (cl100k_base(), tiktoken_rs::cl100k_base_singleton(), 100_256),
        ]
    }

    #[test]
    fn tables_equal_tiktoken_rs() {
        for (bpe, tk, n) in tables() {
            assert_eq!(bpe.ranks.len(), n);
            for (bytes, &rank) in &bpe.ranks {
                assert_eq!(tk.decode_bytes(&[rank]).unwrap(), *bytes, "rank {rank}");
            }
        }
    }

    /// Texts whose pieces are long (merged on the heap) and short, with repeats that make equal
    /// ranks compete (the leftmost must merge first).
    #[test]
    fn counts_equal_tiktoken_rs_on_long_and_short_pieces() {
        let long_word = "abcabcabcxyz".repeat(40);
        let texts = [
            "a".repeat(1000),
            "aa".repeat(301),
            " ".repeat(517),
            "\n\n\t  \n".repeat(90),
            "ab".repeat(64) + "c",
            long_word.clone(),
            format!("{long_word} {long_word}123456789 ééé{long_word}"),
            "0123456789".repeat(50),
            "!!!???...///".repeat(40),
            "😀🦀".repeat(70),
            "Zürich naïve façade — 東京 привет мир".repeat(10),
            String::new(),
            "x".into(),
        ];
        for (bpe, tk, _) in tables() {
            for text in &texts {
                assert_eq!(bpe.count(text), tk.encode_ordinary(text).len(), "{text:?}");
            }
        }
    }

    #[test]
    fn heap_and_vector_merges_agree() {
        let bpe = o200k_base();
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let alphabet = b"aab c.\xc3\xa9\x01zzQ9_-";
        for _ in 0..2000 {
            let len = 2 + (next() % 200) as usize;
            let piece: Vec<u8> = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            assert_eq!(bpe.merge_short(&piece), bpe.merge_long(&piece), "{piece:?}");
        }
    }
}
