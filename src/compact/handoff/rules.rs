//! User constraints and corrections: the sentences of a real user message that state a rule
//! ("never ...", "don't ...", "use X not Y", "must", "always", "avoid", "only ...", "stop ..."),
//! kept verbatim for the task ledger.

use super::text::has;

/// Sentences longer than this are pasted text more often than rules: not taken.
const MAX_SENTENCE_CHARS: usize = 400;
/// At most this many rules are taken from one message (a pasted style guide is not the task's).
const MAX_PER_MESSAGE: usize = 12;

/// Whether one of `needles` (each starting with an ASCII letter) occurs in `lower` at the start
/// of a word (not after a letter, digit or `_`, in Unicode's sense): one pass over the text for
/// all of them.
fn has_word(lower: &str, needles: &[&str]) -> bool {
    // Byte by byte while ASCII (an ASCII byte is never part of another character in UTF-8); a
    // longer character is decoded for Unicode's letters and digits.
    let b = lower.as_bytes();
    let mut after_word = false;
    let mut at = 0;
    while at < b.len() {
        let x = b[at];
        if x.is_ascii() {
            if !after_word && x.is_ascii_alphabetic() {
                let rest = &b[at..];
                if needles
                    .iter()
                    .any(|n| n.as_bytes()[0] == x && rest.starts_with(n.as_bytes()))
                {
                    return true;
                }
            }
            after_word = x.is_ascii_alphanumeric() || x == b'_';
            at += 1;
        } else {
            let c = lower[at..].chars().next().expect("a character starts here");
            after_word = c.is_alphanumeric();
            at += c.len_utf8();
        }
    }
    false
}

/// Words that may open a sentence before its rule ("please", "and", "also", "you").
const OPENERS: &[&str] = &[
    "please ",
    "and ",
    "but ",
    "also ",
    "so ",
    "you ",
    "we ",
    "i want you to ",
    "remember to ",
    "remember: ",
];

/// Whether a sentence (ASCII lower case, apostrophes straightened) states a rule: a prohibition
/// or obligation anywhere in it, or an imperative that limits the work at its start.
fn states_a_rule(lower: &str) -> bool {
    const ANYWHERE: &[&str] = &[
        "never ",
        "don't ",
        "dont ",
        "do not ",
        "must ",
        "mustn't ",
        "instead of ",
        "rather than ",
        "avoid ",
        "make sure ",
        "shouldn't ",
        "should not ",
        "not allowed",
        "under no circumstances",
    ];
    if has_word(lower, ANYWHERE) {
        return true;
    }
    let mut rest = lower.trim_start_matches(|c: char| !c.is_alphanumeric());
    while let Some(r) = OPENERS.iter().find_map(|o| rest.strip_prefix(o)) {
        rest = r;
    }
    if ["always ", "only ", "stop ", "keep ", "leave "]
        .iter()
        .any(|p| rest.starts_with(p))
    {
        return true;
    }
    // "use X, not Y" / "use X instead".
    rest.starts_with("use ") && (has_word(rest, &["not "]) || has(rest, " instead") || has(rest, ", not"))
}

/// The sentences of `text` that state a rule, verbatim (trimmed), in order: lines outside code
/// fences, split after `.`, `!` or `?` followed by a space.
pub(super) fn constraints_in(text: &str, out: &mut Vec<String>) {
    let mut fenced = false;
    let mut taken = 0;
    let mut lower = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || trimmed.is_empty() || trimmed.starts_with('<') || trimmed.starts_with('>') {
            continue;
        }
        for sentence in sentences(trimmed) {
            let s = sentence.trim();
            // No more bytes than the limit is no more characters (most sentences): not counted.
            if s.len() < 8 || (s.len() > MAX_SENTENCE_CHARS && s.chars().count() > MAX_SENTENCE_CHARS) {
                continue;
            }
            lowered_sentence(s, &mut lower);
            lower.push(' ');
            if states_a_rule(&lower) {
                out.push(s.to_owned());
                taken += 1;
                if taken >= MAX_PER_MESSAGE {
                    return;
                }
            }
        }
    }
}

/// `s` in ASCII lower case with its curly apostrophes straightened, in `lower` (reused).
fn lowered_sentence(s: &str, lower: &mut String) {
    lower.clear();
    if s.is_ascii() {
        // No curly apostrophe to straighten: lowered as bytes.
        lower.push_str(s);
        lower.make_ascii_lowercase();
    } else {
        lower.extend(s.chars().map(|c| match c {
            '\u{2019}' | '\u{2018}' => '\'',
            c => c.to_ascii_lowercase(),
        }));
    }
}

/// `line` split after each `.`, `!` or `?` that a space follows (a path's or version's dot is
/// not an end).
fn sentences(line: &str) -> impl Iterator<Item = &str> {
    let b = line.as_bytes();
    let mut start = 0;
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() {
            let end = matches!(b[i], b'.' | b'!' | b'?') && b.get(i + 1) == Some(&b' ');
            i += 1;
            if end {
                let s = &line[start..i];
                start = i;
                return Some(s);
            }
        }
        if start < b.len() {
            let s = &line[start..];
            start = b.len();
            return Some(s);
        }
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        constraints_in(text, &mut out);
        out
    }

    #[test]
    fn rules_are_taken_verbatim_and_chatter_is_not() {
        let text = "Fix the failing test in tests/test_app.py. Never push to main! \
                    Don’t touch src/legacy.py, it is frozen. Use pnpm, not npm.\n\
                    - always run `cargo fmt` before committing\n\
                    Please only change files under src/.\n\
                    The parser is slow. It should be faster.\n\
                    ```\nrm -rf / # never run this\n```\n\
                    Use ripgrep instead of grep for searches. Stop adding comments to every line.";
        assert_eq!(
            rules(text),
            vec![
                "Never push to main!",
                "Don’t touch src/legacy.py, it is frozen.",
                "Use pnpm, not npm.",
                "- always run `cargo fmt` before committing",
                "Please only change files under src/.",
                "Use ripgrep instead of grep for searches.",
                "Stop adding comments to every line.",
            ]
        );
        assert!(rules("Let's try version 1.2.3 of the crate. Thanks!").is_empty());
        assert!(
            rules("Whatever happens, the neverending loop is fine.").is_empty(),
            "a word's inside is not a rule"
        );
        assert_eq!(
            rules("You must keep the public API stable"),
            vec!["You must keep the public API stable"]
        );
        let many = "Never do this thing again. "
            .repeat(30)
            .replace("thing again", "thing now");
        let many: String = many
            .split_inclusive(". ")
            .enumerate()
            .map(|(i, s)| s.replace("now", &i.to_string()))
            .collect();
        assert_eq!(rules(&many).len(), MAX_PER_MESSAGE);
    }

    #[test]
    fn sentences_are_lowered_and_limited_by_characters() {
        for s in ["", "Never DO it", "Don’t ‘x’ Ü É", "MUST\u{212a}", "A'b"] {
            let plain: String = s
                .chars()
                .map(|c| match c {
                    '\u{2019}' | '\u{2018}' => '\'',
                    c => c.to_ascii_lowercase(),
                })
                .collect();
            let mut lower = "stale".to_owned();
            lowered_sentence(s, &mut lower);
            assert_eq!(lower, plain, "{s:?}");
        }
        // The limit counts characters: 400 two-byte characters are within it, 401 are not.
        let within = format!("Never {}", "é".repeat(MAX_SENTENCE_CHARS - 6));
        let over = format!("{within}é");
        assert_eq!(rules(&within), vec![within.clone()]);
        assert!(rules(&over).is_empty());
    }
}

#[cfg(test)]
mod word_tests {
    use super::*;

    /// The plain definition: an occurrence of `needle` that no letter, digit or `_` precedes.
    fn has_word_plain(lower: &str, needle: &str) -> bool {
        lower.match_indices(needle).any(|(at, _)| {
            lower[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric() && c != '_')
        })
    }

    #[test]
    fn one_pass_finds_what_a_search_per_needle_finds() {
        let texts = [
            "",
            "never ",
            "xnever never ",
            "ünever do it ",
            "énot allowed here ",
            "—never again ",
            "漢never ",
            "_never ",
            "9never ",
            "(never) ",
            "you must\u{a0}never ",
            "it's not allowedx",
            "under no circumstance ",
            "we should not do this ",
            "the neverending story ",
            "ça ne va pas: do not push ",
        ];
        let singles: Vec<[&str; 1]> = ANYWHERE_FOR_TESTS.iter().map(|n| [*n]).collect();
        for text in texts {
            assert_eq!(
                has_word(text, ANYWHERE_FOR_TESTS),
                ANYWHERE_FOR_TESTS.iter().any(|n| has_word_plain(text, n)),
                "{text:?}"
            );
            for n in &singles {
                assert_eq!(has_word(text, n), has_word_plain(text, n[0]), "{text:?} {n:?}");
            }
        }
    }

    #[test]
    fn the_byte_scan_finds_what_the_plain_definition_finds_in_generated_texts() {
        // Pieces that make word starts and word insides of every kind: ASCII and Unicode letters
        // and digits, `_`, punctuation, spaces of both kinds, and the needles themselves.
        let pieces = [
            "never ",
            "not ",
            "must ",
            "do not ",
            "not allowed",
            "x",
            "é",
            "漢",
            "_",
            "9",
            "٣",
            " ",
            "\u{a0}",
            "(",
            "—",
            "'",
            "n",
            "ever ",
        ];
        let mut state = 11u64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            usize::try_from(state >> 33).unwrap()
        };
        for _ in 0..3000 {
            let len = next() % 9;
            let text: String = (0..len).map(|_| pieces[next() % pieces.len()]).collect();
            assert_eq!(
                has_word(&text, ANYWHERE_FOR_TESTS),
                ANYWHERE_FOR_TESTS.iter().any(|n| has_word_plain(&text, n)),
                "{text:?}"
            );
        }
    }

    const ANYWHERE_FOR_TESTS: &[&str] = &["never ", "do not ", "not allowed", "not ", "must "];
}
