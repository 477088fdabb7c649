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

use memchr::memmem::Finder;
use regex::bytes::{Regex as BytesRegex, RegexBuilder as BytesRegexBuilder};

/// Any of a words query's words, to be found in raw JSON.
#[derive(Clone, Debug)]
pub struct RawFilter {
    any: BytesRegex,
    /// Finds a `\u` escape (built once: building a finder costs about what a short line's search
    /// does).
    escape: Finder<'static>,
    /// A word holds U+FFFD: only the decoded line is looked at (see the module).
    decoded_only: bool,
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
        Some(RawFilter {
            any,
            escape: Finder::new(br"\u"),
            decoded_only: terms.iter().any(|t| t.contains('\u{FFFD}')),
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

    /// [`may_match`](Self::may_match) on a line's bytes before they are decoded; None also when
    /// only the decoded line can tell.
    pub fn may_match_bytes(&self, raw: &[u8]) -> Option<bool> {
        if self.decoded_only {
            return None;
        }
        self.may_match(raw)
    }
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
}
