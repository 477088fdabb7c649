//! The encodings' pre-tokenizer patterns matched by hand on ASCII text.
//!
//! Splitting is most of counting a text (the patterns' regular expression runs its lazy DFA
//! once per piece, a piece being a word or so). On ASCII every class of the patterns is a plain
//! byte test and every alternative reads ahead only through runs of one class, so the piece at
//! a place can be told by scanning those runs. Where a run would read a byte that is not ASCII
//! (a letter, digit or space there may continue it: `é`, `²`, a no-break space), or a
//! contraction would read one (`'ſ` is `'s` to `(?i)`), [`piece`] gives up and the regular
//! expression splits that piece: the pieces are the same either way (`tests` compares them on
//! random texts of the characters that tell the classes apart).
//!
//! The alternatives, in the order the patterns try them (`L` letters, `Lu` upper, `Ll` lower,
//! `N` digits, `\s` white space; on ASCII the patterns' upper and lower classes are `Lu` and
//! `Ll`):
//!
//! - o200k: `[^\r\n L N]? Lu* Ll+ 'x?`, `[^\r\n L N]? Lu+ Ll* 'x?`, `N{1,3}`,
//!   ` ?[^\s L N]+[\r\n/]*`, then the white-space ones;
//! - cl100k: `'x`, `[^\r\n L N]? L+`, `N{1,3}`, ` ?[^\s L N]+[\r\n]*`, then the white-space ones;
//! - white space (both): `\s*[\r\n]+`, `\s+$`, `\s+(?!\S)`, `\s+`.
//!
//! (`'x`: `(?i:'s|'t|'re|'ve|'m|'ll|'d)`.)

/// Which encoding's patterns [`piece`] follows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Rules {
    O200k,
    Cl100k,
}

/// `\s` on ASCII: tab, line feed, vertical tab, form feed, carriage return, space.
fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ')
}

/// `[^\r\n\p{L}\p{N}]` on ASCII: what may stand before a word.
fn is_lead(b: u8) -> bool {
    b != b'\r' && b != b'\n' && !b.is_ascii_alphanumeric()
}

/// `[^\s\p{L}\p{N}]` on ASCII: punctuation, symbols and control characters.
fn is_other(b: u8) -> bool {
    !is_space(b) && !b.is_ascii_alphanumeric()
}

/// Where the run of bytes `class` holds that starts at `at` ends; None when it reaches a byte
/// that is not ASCII (the class may hold that character: only the regular expression knows).
fn run(b: &[u8], mut at: usize, class: fn(u8) -> bool) -> Option<usize> {
    while let Some(&c) = b.get(at) {
        if !c.is_ascii() {
            return None;
        }
        if !class(c) {
            return Some(at);
        }
        at += 1;
    }
    Some(at)
}

/// Where the run of bytes `class` holds that starts at `at` ends, for a class of ASCII bytes
/// only (a byte that is not ASCII ends it).
fn run_ascii(b: &[u8], mut at: usize, class: fn(u8) -> bool) -> usize {
    while b.get(at).is_some_and(|&c| class(c)) {
        at += 1;
    }
    at
}

/// The length of `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `at` (0: none there); None when telling
/// needs a byte that is not ASCII.
fn contraction(b: &[u8], at: usize) -> Option<usize> {
    if b.get(at) != Some(&b'\'') {
        return Some(0);
    }
    let Some(&first) = b.get(at + 1) else {
        return Some(0);
    };
    if !first.is_ascii() {
        return None;
    }
    let second = match first.to_ascii_lowercase() {
        b's' | b't' | b'm' | b'd' => return Some(2),
        b'r' | b'v' => b'e',
        b'l' => b'l',
        _ => return Some(0),
    };
    match b.get(at + 2) {
        None => Some(0),
        Some(c) if !c.is_ascii() => None,
        Some(c) => Some(if c.to_ascii_lowercase() == second { 3 } else { 0 }),
    }
}

/// The end of the piece that starts `b` under `rules`; None when `b` is empty or telling it
/// needs a byte that is not ASCII (the regular expression splits it then).
pub(super) fn piece(b: &[u8], rules: Rules) -> Option<usize> {
    let &c = b.first()?;
    if !c.is_ascii() {
        return None;
    }
    if rules == Rules::Cl100k && c == b'\'' {
        let n = contraction(b, 0)?;
        if n > 0 {
            return Some(n);
        }
    }
    // A word, with one character before it that is no letter, digit or line break.
    let word = if c.is_ascii_alphabetic() {
        Some(0)
    } else if is_lead(c) {
        match b.get(1) {
            Some(&d) if !d.is_ascii() => return None,
            Some(&d) if d.is_ascii_alphabetic() => Some(1),
            _ => None,
        }
    } else {
        None
    };
    if let Some(start) = word {
        return match rules {
            Rules::Cl100k => run(b, start, |x| x.is_ascii_alphabetic()),
            Rules::O200k => {
                let upper = run(b, start, |x| x.is_ascii_uppercase())?;
                let lower = run(b, upper, |x| x.is_ascii_lowercase())?;
                Some(lower + contraction(b, lower)?)
            }
        };
    }
    if c.is_ascii_digit() {
        let mut end = 1;
        while end < 3 {
            match b.get(end) {
                Some(d) if !d.is_ascii() => return None,
                Some(d) if d.is_ascii_digit() => end += 1,
                _ => break,
            }
        }
        return Some(end);
    }
    // Punctuation (with one space before it), and the line breaks and slashes after it.
    let punct = usize::from(c == b' ');
    match b.get(punct) {
        Some(d) if !d.is_ascii() => return None,
        Some(&d) if is_other(d) => {
            let end = run(b, punct, is_other)?;
            return Some(match rules {
                Rules::O200k => run_ascii(b, end, |x| matches!(x, b'\r' | b'\n' | b'/')),
                Rules::Cl100k => run_ascii(b, end, |x| matches!(x, b'\r' | b'\n')),
            });
        }
        _ => {}
    }
    // White space: up to its last line break; all of it at the end of the text; else all but
    // its last character (which goes with what follows), or the one character.
    let end = run(b, 0, is_space)?;
    if let Some(last) = b[..end].iter().rposition(|&x| x == b'\r' || x == b'\n') {
        return Some(last + 1);
    }
    if end == b.len() || end == 1 {
        return Some(end);
    }
    Some(end - 1)
}

#[cfg(test)]
mod tests {
    use super::super::pretokenize::Pretokenizer;
    use super::super::{CL100K_PATTERN, O200K_PATTERN};
    use super::*;
    use crate::compact::testing::xorshift;

    type Splitters = [(Rules, Pretokenizer, Pretokenizer); 2];

    /// The pretokenizers of both encodings, with the ASCII path and with the regular expression
    /// alone.
    fn splitters() -> Splitters {
        [(Rules::O200k, O200K_PATTERN), (Rules::Cl100k, CL100K_PATTERN)]
            .map(|(rules, main)| (rules, Pretokenizer::of(main, Some(rules)), Pretokenizer::of(main, None)))
    }

    fn assert_same_pieces(splitters: &Splitters, text: &str) {
        for (rules, fast, slow) in splitters {
            let a: Vec<&str> = fast.split(text).collect();
            let b: Vec<&str> = slow.split(text).collect();
            assert_eq!(a, b, "{rules:?} {text:?}");
        }
    }

    /// Characters that tell the patterns' classes apart: every ASCII byte, and characters that
    /// are not ASCII but letters (upper, lower, title, modifier, other), marks, digits, white
    /// space or punctuation, and the ones `(?i)` folds to ASCII letters.
    fn alphabet() -> Vec<char> {
        let mut chars: Vec<char> = (0u8..128).map(char::from).collect();
        // Weighted: the characters that decide most.
        chars.extend("'''''sStTrReEvVmMlLdD   \n\n\r\t//..,,--aZ0099".chars());
        chars.extend([
            'é', 'É', 'ǅ', 'ʰ', '中', '\u{301}', '²', '٣', 'Ⅻ', '\u{a0}', '\u{2028}', '\u{3000}', '\u{85}', '—', '€',
            '。', 'ſ', '\u{212a}', '😀',
        ]);
        chars
    }

    #[test]
    fn pieces_equal_the_regular_expression_on_random_texts() {
        let chars = alphabet();
        let splitters = splitters();
        let mut next = xorshift(0x5eed_0044_0000_0001);
        for round in 0..60_000 {
            let len = (next() % if round % 10 == 0 { 200 } else { 24 }) as usize;
            let text: String = (0..len)
                .map(|_| chars[(next() % chars.len() as u64) as usize])
                .collect();
            assert_same_pieces(&splitters, &text);
        }
    }

    /// Texts made of ASCII only never fall back to the regular expression, and split the same.
    #[test]
    fn pieces_of_ascii_text_are_all_found_by_hand() {
        let splitters = splitters();
        let mut next = xorshift(0x5eed_0044_0000_0002);
        let chars: Vec<u8> = (0u8..128).chain(*b"'''sStTlLdD  \n\r\t/aZ09").collect();
        for _ in 0..20_000 {
            let len = (next() % 40) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| chars[(next() % chars.len() as u64) as usize])
                .collect();
            let text = String::from_utf8(bytes).expect("ASCII");
            for rules in [Rules::O200k, Rules::Cl100k] {
                let mut at = 0;
                while at < text.len() {
                    at += piece(&text.as_bytes()[at..], rules).expect("ASCII is split by hand");
                }
            }
            assert_same_pieces(&splitters, &text);
        }
    }

    #[test]
    fn pieces_at_the_patterns_edges() {
        let splitters = splitters();
        for text in [
            "",
            "a",
            "'s",
            "'S",
            "'sam",
            "'re'RE'Ll'lL've'd'm't",
            "don't I'LL we'Ve",
            "x'ſ",
            "x'\u{17f}t",
            "x'r\u{e9}",
            "HELLOworld HELLO World hELLO",
            "  \n\n  x",
            "  \t x",
            " \u{a0}x",
            "x  ",
            "x \n",
            "\r\n\r\n",
            "12345678",
            "12²",
            "1٣",
            " .../\n/\nx",
            " €",
            "a\u{301}b",
            "Éa aÉ",
            "\u{b}\u{c}word",
            "\ta\t \t",
            "a/b//c\n",
        ] {
            assert_same_pieces(&splitters, text);
        }
    }
}
