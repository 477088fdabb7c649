//! Text helpers of the offline summary with Python's string semantics, which the summaries this
//! library wrote before the fit moved into the core follow to the byte: whitespace is what
//! Python's `str.isspace` calls whitespace, lengths and cuts are in characters (code points).

/// Whether Python's `str.isspace` holds for `c` (Unicode White_Space, and the four ASCII
/// separators `\x1c`–`\x1f` that Python counts too).
pub fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// `" ".join(text.split())`: the words of `text` between runs of whitespace, one space apart.
pub fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split(py_space).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// `text.strip()`.
pub fn py_strip(text: &str) -> &str {
    text.trim_matches(py_space)
}

/// Python's `text.splitlines()` (the line boundaries Python knows; `\r\n` is one).
pub fn py_splitlines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let end = match c {
            '\r' => {
                if let Some(&(_, '\n')) = chars.peek() {
                    chars.next();
                    i + 2
                } else {
                    i + 1
                }
            }
            '\n' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}' | '\u{2029}' => i + c.len_utf8(),
            _ => continue,
        };
        lines.push(&text[start..i]);
        start = end;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// `n` as a signed count (counts of characters and tokens never come near `i64::MAX`).
pub fn wide(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Python's `len(text)`: its characters (code points).
pub fn chars_of(text: &str) -> i64 {
    wide(text.chars().count())
}

/// The byte offset of character `n` of `text` (its length when it has fewer).
fn byte_at(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

/// Python's `text[start:end]` over characters, `None` for an open end; negative bounds count from
/// the end, as in Python.
pub fn py_slice(text: &str, start: Option<i64>, end: Option<i64>) -> &str {
    let n = chars_of(text);
    let bound = |b: i64| if b < 0 { (n + b).max(0) } else { b.min(n) };
    let lo = start.map_or(0, bound);
    let hi = end.map_or(n, bound);
    if lo >= hi {
        return "";
    }
    let a = byte_at(text, lo as usize);
    let b = a + byte_at(&text[a..], (hi - lo) as usize);
    &text[a..b]
}

/// Characters beyond a cut that [`one_line`] and [`head_tail`] fold first.
const FOLD_SLACK: i64 = 64;

/// `summary_text.one_line`: `text` on one line, cut to `limit` characters (the last an ellipsis).
pub fn one_line(text: &str, limit: i64) -> String {
    let len = chars_of(text);
    if limit >= 1 && len > 2 * limit + FOLD_SLACK {
        let head = fold(py_slice(text, None, Some(2 * limit + FOLD_SLACK)));
        if chars_of(&head) > limit {
            return format!("{}…", py_slice(&head, None, Some(limit - 1)));
        }
    }
    let line = fold(text);
    if chars_of(&line) <= limit {
        line
    } else {
        format!("{}…", py_slice(&line, None, Some(limit - 1)))
    }
}

/// `summary_text.head_tail`: `text` on one line, cut to head and tail when longer than `chars`.
pub fn head_tail(text: &str, chars: i64) -> String {
    let head = (chars * 2).div_euclid(3);
    let tail = chars - head - 5;
    let len = chars_of(text);
    if tail >= 1 && len > 2 * chars + FOLD_SLACK {
        let first = fold(py_slice(text, None, Some(chars + FOLD_SLACK)));
        let last = fold(py_slice(text, Some(-(chars + FOLD_SLACK)), None));
        if chars_of(&first) > chars && chars_of(&last) >= tail {
            return format!(
                "{} [...] {}",
                py_slice(&first, None, Some(head)),
                py_slice(&last, Some(-tail), None)
            );
        }
    }
    let line = fold(text);
    if chars_of(&line) <= chars {
        return line;
    }
    format!(
        "{} [...] {}",
        py_slice(&line, None, Some(head)),
        py_slice(&line, Some(-tail), None)
    )
}

/// Whether `c` is one of the characters between words of a summary's facts (`_WORD_BREAK`).
pub fn word_break(c: char) -> bool {
    py_space(c)
        || matches!(
            c,
            '"' | '\'' | '`' | '(' | ')' | '[' | ']' | '{' | '}' | '<' | '>' | ',' | ';'
        )
}

/// `_WORD_BREAK.split(text)`: the pieces between runs of break characters (an empty first or
/// last piece when `text` opens or ends with one, one empty piece for an empty text).
pub fn split_words(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_break = false;
    for (i, c) in text.char_indices() {
        if word_break(c) {
            if !in_break {
                out.push(&text[start..i]);
                in_break = true;
            }
        } else if in_break {
            start = i;
            in_break = false;
        }
    }
    out.push(if in_break { "" } else { &text[start..] });
    out
}

/// `word.rstrip(".:;!?")`.
pub fn strip_stops(word: &str) -> &str {
    word.trim_end_matches(['.', ':', ';', '!', '?'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_is_pythons() {
        assert!(py_space('\x1c') && py_space('\u{3000}') && py_space('\u{85}'));
        assert!(!py_space('\u{200b}') && !py_space('a'));
        assert_eq!(fold("  a\x1fb \n c  "), "a b c");
        assert_eq!(py_strip("\x1e x \u{2028}"), "x");
    }

    #[test]
    fn splitlines_as_python() {
        assert_eq!(py_splitlines("a\r\nb\rc\x0bd\n"), vec!["a", "b", "c", "d"]);
        assert_eq!(py_splitlines("a\n\nb"), vec!["a", "", "b"]);
        assert!(py_splitlines("").is_empty());
    }

    #[test]
    fn slices_as_python() {
        assert_eq!(py_slice("héllo", None, Some(2)), "hé");
        assert_eq!(py_slice("héllo", Some(-2), None), "lo");
        assert_eq!(py_slice("héllo", Some(-0), None), "héllo");
        assert_eq!(py_slice("héllo", None, Some(-1)), "héll");
        assert_eq!(py_slice("ab", Some(5), None), "");
    }

    #[test]
    fn head_tail_and_one_line_cut() {
        assert_eq!(head_tail("a  b", 10), "a b");
        let long = "x".repeat(500);
        let cut = head_tail(&long, 90);
        assert_eq!(cut, format!("{} [...] {}", "x".repeat(60), "x".repeat(25)));
        assert_eq!(one_line("a\nb", 80), "a b");
        assert_eq!(one_line(&long, 80), format!("{}…", "x".repeat(79)));
    }

    #[test]
    fn words_split_as_the_pattern() {
        assert_eq!(split_words("a, b"), vec!["a", "b"]);
        assert_eq!(split_words("(a)"), vec!["", "a", ""]);
        assert_eq!(split_words(""), vec![""]);
        assert_eq!(strip_stops("x.:?"), "x");
    }
}
