//! Truncation to an exact token count. [`super::truncate`] sizes its cut by an upper bound of the
//! kept text's tokens (so its output always fits, but may be well under the limit); this searches
//! the room given to it for the largest cut whose whole output, marker included, still counts at
//! most the limit.

use super::{Options, Strategy, Truncation, Unit, truncate};
use crate::error::{Error, Result};
use crate::tokens::Encoding;

/// Rooms above the limit searched: up to twice the limit plus this.
const EXTRA_ROOM: usize = 64;

/// `text` truncated to at most `limit` tokens of `encoding`, counted exactly on the output: the
/// cut [`truncate`] makes with the largest room in `limit..=2 * limit + 64` whose output counts at
/// most `limit` (a binary search over the room, starting from the cut `limit` gives, which always
/// fits). [`Error::BudgetTooSmall`] when not even a marker fits `limit`.
pub fn truncate_exact(
    text: &str,
    limit: usize,
    encoding: Encoding,
    strategy: Strategy,
    options: &Options,
) -> Result<Truncation> {
    let cut = |room: usize| truncate(text, room, Unit::Tokens(encoding), strategy, options);
    let mut best = cut(limit)?;
    let (mut lo, mut hi) = (limit, limit.saturating_mul(2).saturating_add(EXTRA_ROOM));
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        match cut(mid) {
            Ok(candidate) if encoding.count(&candidate.text) <= limit => {
                lo = mid;
                best = candidate;
            }
            Ok(_) | Err(Error::BudgetTooSmall { .. }) => hi = mid - 1,
            Err(other) => return Err(other),
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::Retrieval;
    use crate::compact::testing::xorshift;

    /// What the Python ladder searched before this existed (`harnesses/alyx.py`, `largest_head`).
    fn searched_in_python(text: &str, limit: usize, enc: Encoding, options: &Options) -> Option<String> {
        let cut = |room| {
            truncate(text, room, Unit::Tokens(enc), Strategy::Head, options)
                .ok()
                .map(|t| t.text)
        };
        let mut best = cut(limit)?;
        let (mut lo, mut hi) = (limit, 2 * limit + 64);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2); // Python: (lo + hi + 1) // 2
            match cut(mid) {
                Some(c) if enc.count(&c) <= limit => {
                    lo = mid;
                    best = c;
                }
                _ => hi = mid - 1,
            }
        }
        Some(best)
    }

    fn generated(next: &mut impl FnMut() -> u64) -> String {
        let words = [
            "fn", "let", "x", "=", "value", "\n", "ünï", "  ", "Error:", "{}", "test_a", "漢字", "0x1f",
        ];
        let n = (next() % 600) as usize;
        (0..n)
            .map(|_| words[(next() % words.len() as u64) as usize])
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn fits_exactly_and_equals_the_search_it_replaces() {
        let mut next = xorshift(0x5eed);
        for round in 0..60 {
            let text = generated(&mut next);
            let limit = (next() % 200) as usize;
            let enc = if round % 2 == 0 {
                Encoding::O200k
            } else {
                Encoding::Cl100k
            };
            let options = Options {
                retrieval: Retrieval {
                    recall_id: (round % 3 == 0).then(|| "r-7".to_owned()),
                    path: None,
                    unstored: round % 3 != 0,
                },
                count_omitted_tokens: false,
            };
            let got = truncate_exact(&text, limit, enc, Strategy::Head, &options);
            let want = searched_in_python(&text, limit, enc, &options);
            assert_eq!(got.as_ref().ok().map(|t| t.text.clone()), want, "round {round}");
            if let Ok(t) = got {
                assert!(enc.count(&t.text) <= limit, "round {round}");
                assert!(t.text.starts_with(&text[..t.head_bytes]));
                let plain = truncate(&text, limit, Unit::Tokens(enc), Strategy::Head, &options).unwrap();
                assert!(t.head_bytes >= plain.head_bytes, "never less than the plain cut keeps");
            }
        }
    }

    #[test]
    fn keeps_more_than_the_plain_cut_and_refuses_a_budget_no_marker_fits() {
        let text = (0..400)
            .map(|i| format!("line {i} of the output"))
            .collect::<Vec<_>>()
            .join("\n");
        let enc = Encoding::O200k;
        let plain = truncate(&text, 300, Unit::Tokens(enc), Strategy::Head, &Options::default()).unwrap();
        let exact = truncate_exact(&text, 300, enc, Strategy::Head, &Options::default()).unwrap();
        assert!(exact.head_bytes > plain.head_bytes);
        assert!(enc.count(&exact.text) <= 300);
        let whole = truncate_exact("short", 300, enc, Strategy::Head, &Options::default()).unwrap();
        assert_eq!((whole.text.as_str(), whole.truncated), ("short", false));
        assert!(matches!(
            truncate_exact(&text, 2, enc, Strategy::Head, &Options::default()),
            Err(Error::BudgetTooSmall { .. })
        ));
    }
}
