//! Content classes: what a text is (prose, code, JSON, CJK), by a cheap deterministic rule on its
//! characters, so token estimates can be calibrated per class (a provider's tokenizer differs
//! from the local one by a factor that depends on the kind of text).
//!
//! The rule looks at the first [`SAMPLE_CHARS`] characters (Unicode scalar values, as Python's
//! `len` counts them) and decides, in this order:
//! - `prose` for an empty text;
//! - `cjk` when at least a fifth of them are kana, CJK ideographs or Hangul syllables;
//! - `json` when, after leading whitespace, it opens with `{` or `[` followed by `"`, `{`, `[`,
//!   `]`, `}`, a newline or a space;
//! - `code` when at least one character in 25 is a code symbol (`{}();=<>[]_/\|&*#$%^~` and the
//!   backtick), or when there is a newline followed by four spaces or a tab per 40 characters;
//! - `prose` otherwise.

use super::Encoding;

/// Characters of a text the rule looks at.
pub const SAMPLE_CHARS: usize = 4000;

/// The class of a text (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ContentClass {
    Prose = 0,
    Code = 1,
    Json = 2,
    Cjk = 3,
}

/// Tokens per content class, indexed by [`ContentClass::index`].
pub type ClassCounts = [usize; 4];

impl ContentClass {
    /// Every class, in index order.
    pub const ALL: [ContentClass; 4] = [
        ContentClass::Prose,
        ContentClass::Code,
        ContentClass::Json,
        ContentClass::Cjk,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ContentClass::Prose => "prose",
            ContentClass::Code => "code",
            ContentClass::Json => "json",
            ContentClass::Cjk => "cjk",
        }
    }

    /// The class's index in a [`ClassCounts`].
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// The class of `text` (see the module docs).
    pub fn of(text: &str) -> ContentClass {
        let sample = match text.char_indices().nth(SAMPLE_CHARS) {
            Some((end, _)) => &text[..end],
            None => text,
        };
        let mut chars = 0;
        let mut cjk = 0;
        let mut symbols = 0;
        for c in sample.chars() {
            chars += 1;
            cjk += usize::from(is_cjk(c));
            symbols += usize::from(is_code_symbol(c));
        }
        if chars == 0 {
            return ContentClass::Prose;
        }
        if cjk * 5 >= chars {
            return ContentClass::Cjk;
        }
        let mut rest = sample.trim_start_matches(is_python_space).chars();
        if matches!(rest.next(), Some('{' | '['))
            && matches!(rest.next(), Some('"' | '{' | '[' | '\n' | ' ' | ']' | '}'))
        {
            return ContentClass::Json;
        }
        let indented = sample.matches("\n    ").count() + sample.matches("\n\t").count();
        if symbols * 25 >= chars || indented * 40 >= chars {
            return ContentClass::Code;
        }
        ContentClass::Prose
    }
}

/// Kana (U+3040–U+30FF), CJK ideographs (U+3400–U+9FFF) and Hangul syllables (U+AC00–U+D7AF).
fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3040}'..='\u{30ff}' | '\u{3400}'..='\u{9fff}' | '\u{ac00}'..='\u{d7af}')
}

fn is_code_symbol(c: char) -> bool {
    matches!(
        c,
        '{' | '}'
            | '('
            | ')'
            | ';'
            | '='
            | '<'
            | '>'
            | '['
            | ']'
            | '_'
            | '/'
            | '\\'
            | '|'
            | '&'
            | '*'
            | '#'
            | '$'
            | '%'
            | '^'
            | '~'
            | '`'
    )
}

/// Whitespace as Python's `str.isspace` has it: Unicode's `White_Space` and the information
/// separators U+001C–U+001F.
fn is_python_space(c: char) -> bool {
    c.is_whitespace() || matches!(c, '\u{1c}'..='\u{1f}')
}

/// The encoding texts are counted with for class estimates in `encoding`: the exact one for the
/// BPE encodings, the heuristic (aimed at `o200k_base`) otherwise.
pub fn counter(encoding: Encoding) -> Encoding {
    if encoding.is_bpe() {
        encoding
    } else {
        Encoding::Heuristic
    }
}

/// Add the tokens of `text` (counted with `counter`, through the memo) to its class in `counts`;
/// an empty text adds nothing.
pub fn add_text(counts: &mut ClassCounts, counter: Encoding, text: &str) {
    if !text.is_empty() {
        counts[ContentClass::of(text).index()] += counter.count_cached(text);
    }
}

#[cfg(test)]
mod tests {
    use super::ContentClass::{Cjk, Code, Json, Prose};
    use super::*;

    #[test]
    fn each_class_by_its_characters() {
        assert_eq!(ContentClass::of("The quick brown fox jumps over the lazy dog. "), Prose);
        assert_eq!(ContentClass::of(r#"{"a": [1, 2, {"b": null}]}"#), Json);
        assert_eq!(
            ContentClass::of(&"def f(x):\n    return {k: v for k, v in x.items()}\n".repeat(5)),
            Code
        );
        assert_eq!(ContentClass::of(&"这是一个关于上下文压缩的测试句子。".repeat(5)), Cjk);
        assert_eq!(ContentClass::of("カタカナ と ひらがな"), Cjk);
        assert_eq!(ContentClass::of("한국어 문장입니다"), Cjk);
        assert_eq!(ContentClass::of(""), Prose);
    }

    #[test]
    fn json_needs_an_opening_bracket_and_a_json_second_character() {
        for text in [
            "[]",
            "[1]x",
            "{}",
            " \n\t{\"a\": 1}",
            "[ 1 ]",
            "[\n1]",
            "{{",
            "[[",
            "[}",
        ] {
            let want = if text == "[1]x" { "not json" } else { "json" };
            let got = if ContentClass::of(text) == Json {
                "json"
            } else {
                "not json"
            };
            assert_eq!(got, want, "{text:?}");
        }
        // A lone bracket has no second character.
        assert_ne!(ContentClass::of("{"), Json);
        assert_ne!(ContentClass::of("   ["), Json);
        // Python's whitespace includes the information separators, Rust's does not.
        assert_eq!(ContentClass::of("\u{1c}\u{1f}[\"a\"]"), Json);
        // Zero-width space is not whitespace in either.
        assert_ne!(ContentClass::of("\u{200b}[\"a\"]"), Json);
    }

    #[test]
    fn python_whitespace_is_exactly_str_isspace() {
        // `[c for c in range(0x110000) if chr(c).isspace()]` under CPython 3.
        let python: Vec<u32> = [
            0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680,
        ]
        .into_iter()
        .chain(0x2000..=0x200a)
        .chain([0x2028, 0x2029, 0x202f, 0x205f, 0x3000])
        .collect();
        let ours: Vec<u32> = (0..=0x0010_ffff_u32)
            .filter_map(char::from_u32)
            .filter(|&c| is_python_space(c))
            .map(u32::from)
            .collect();
        assert_eq!(ours, python);
    }

    #[test]
    fn cjk_at_one_in_five_characters_and_the_range_edges() {
        assert_eq!(ContentClass::of("字abcd"), Cjk);
        assert_eq!(ContentClass::of("字abcde"), Prose);
        for edge in ['\u{3040}', '\u{30ff}', '\u{3400}', '\u{9fff}', '\u{ac00}', '\u{d7af}'] {
            assert_eq!(ContentClass::of(&edge.to_string()), Cjk, "{edge:?}");
        }
        for outside in ['\u{303f}', '\u{3100}', '\u{33ff}', '\u{a000}', '\u{abff}', '\u{d7b0}'] {
            assert_eq!(ContentClass::of(&outside.to_string()), Prose, "{outside:?}");
        }
    }

    #[test]
    fn code_by_symbol_density_or_indentation() {
        // One symbol in 25 characters is code, one in 26 is not.
        assert_eq!(ContentClass::of(&format!("={}", "a".repeat(24))), Code);
        assert_eq!(ContentClass::of(&format!("={}", "a".repeat(25))), Prose);
        // One indented line per 40 characters, by four spaces or a tab.
        let spaces = format!("\n    {}", "a".repeat(35));
        assert_eq!(ContentClass::of(&spaces), Code);
        assert_eq!(ContentClass::of(&format!("{spaces}a")), Prose);
        assert_eq!(ContentClass::of(&format!("\n\t{}", "a".repeat(38))), Code);
        assert_eq!(ContentClass::of(&format!("\n\t{}", "a".repeat(39))), Prose);
        // Three spaces are not an indent.
        assert_eq!(ContentClass::of(&format!("\n   {}", "a".repeat(30))), Prose);
    }

    #[test]
    fn only_the_first_4000_characters_count() {
        // Prose first, then code: the code is past the sample.
        let prose = "word ".repeat(800);
        assert_eq!(prose.chars().count(), SAMPLE_CHARS);
        assert_eq!(ContentClass::of(&format!("{prose}{}", "{};".repeat(2000))), Prose);
        // The sample is counted in characters, not bytes: 4,000 two-byte characters then CJK.
        let accents = "é".repeat(SAMPLE_CHARS);
        assert_eq!(ContentClass::of(&format!("{accents}{}", "字".repeat(4000))), Prose);
        assert_eq!(
            ContentClass::of(&format!("{}{}", &accents[..2 * 3199], "字".repeat(801))),
            Cjk
        );
    }

    #[test]
    fn texts_count_with_the_exact_encoding_or_the_heuristic() {
        assert_eq!(counter(Encoding::O200k), Encoding::O200k);
        assert_eq!(counter(Encoding::Cl100k), Encoding::Cl100k);
        assert_eq!(counter(Encoding::Approximate), Encoding::Heuristic);
        let mut counts = ClassCounts::default();
        add_text(&mut counts, Encoding::O200k, "");
        assert_eq!(counts, [0; 4]);
        add_text(&mut counts, Encoding::O200k, "plain words here");
        add_text(&mut counts, Encoding::O200k, "[\"a\", \"b\"]");
        assert_eq!(counts[Prose.index()], Encoding::O200k.count("plain words here"));
        assert_eq!(counts[Json.index()], Encoding::O200k.count("[\"a\", \"b\"]"));
        assert_eq!(counts[Code.index()] + counts[Cjk.index()], 0);
    }
}
