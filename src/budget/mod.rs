//! Budgets on text entering the context: head + marker + tail truncation, tail importance,
//! token-budget fitting, JSON previews and file-read paging.

pub mod chars;
pub mod count;
mod cut;
pub mod fit;
pub mod json_path;
pub mod json_preview;
pub mod paging;
pub mod tail;

use std::fmt::Write as _;

use crate::error::{Error, Result};
use crate::tokens::Encoding;
use count::text_counts;
use cut::{cut_head, cut_tail, fit_tokens, fits_tokens, shrink_to_tokens};

/// What a budget is measured in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Chars,
    Bytes,
    Lines,
    Tokens(Encoding),
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::Chars => "chars",
            Unit::Bytes => "bytes",
            Unit::Lines => "lines",
            Unit::Tokens(_) => "tokens",
        }
    }
}

/// Which part of an over-budget text to keep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Strategy {
    Head,
    Tail,
    /// Keep both ends; `head_share` of the room goes to the head.
    HeadTail {
        head_share: f64,
    },
    /// Head and tail when the tail looks important (see [`tail`]), else the head.
    Auto {
        head_share: f64,
    },
}

/// What the marker may say about getting the omitted text back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Retrieval {
    /// A recall id for the stored full text.
    pub recall_id: Option<String>,
    /// A file holding the full text.
    pub path: Option<String>,
    /// Nothing holds the full text, and the marker says so (when neither of the above is set).
    pub unstored: bool,
}

/// Sizes of a piece of text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Size {
    pub bytes: usize,
    pub chars: usize,
    /// Line breaks (`\n`).
    pub lines: usize,
}

impl Size {
    pub fn of(text: &str) -> Size {
        let c = text_counts(text.as_bytes());
        Size {
            bytes: text.len(),
            chars: c.chars,
            lines: c.newlines,
        }
    }
}

/// The result of [`truncate`].
#[derive(Clone, Debug, PartialEq)]
pub struct Truncation {
    /// The text to use: the original when it fits, else head + marker + tail.
    pub text: String,
    pub truncated: bool,
    /// Bytes of the original kept at the start (a prefix).
    pub head_bytes: usize,
    /// Bytes of the original kept at the end (a suffix).
    pub tail_bytes: usize,
    pub original: Size,
    pub omitted: Size,
    /// Tokens omitted, when the budget is in tokens and counting them was asked for.
    pub omitted_tokens: Option<usize>,
    /// The strategy that was applied (`Auto` resolves to head or head_tail).
    pub kept: Kept,
    /// The tail-importance rule that fired, for `Auto`.
    pub tail_rule: Option<&'static str>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kept {
    All,
    Head,
    Tail,
    HeadTail,
}

impl Kept {
    pub fn as_str(self) -> &'static str {
        match self {
            Kept::All => "all",
            Kept::Head => "head",
            Kept::Tail => "tail",
            Kept::HeadTail => "head_tail",
        }
    }
}

/// Options of [`truncate`] beyond the budget itself.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub retrieval: Retrieval,
    /// For token budgets: also count the omitted tokens (costs tokenizing the omitted text).
    pub count_omitted_tokens: bool,
}

/// A cut never keeps less than this share of the room just to land on a line boundary.
const MIN_LINE_CUT_SHARE: f64 = 0.5;

/// Truncate `text` to `limit` units.
///
/// Over budget, the result is head + marker + tail (or head + marker, or marker + tail). The marker
/// sits where text was removed and states how many lines and characters were omitted (and tokens,
/// when counted) and how to get them back when `options.retrieval` names a recall id or a path.
/// Cuts fall on line boundaries when that keeps at least half of the room, and never inside a
/// UTF-8 character. The output, marker included, never exceeds `limit`.
pub fn truncate(text: &str, limit: usize, unit: Unit, strategy: Strategy, options: &Options) -> Result<Truncation> {
    let original = Size::of(text);
    let fits = match unit {
        Unit::Chars => original.chars <= limit,
        Unit::Bytes => original.bytes <= limit,
        // A text of N line breaks spans N + 1 lines unless it ends with one.
        Unit::Lines => line_count(text, original) <= limit,
        Unit::Tokens(enc) => fits_tokens(text, limit, enc),
    };
    if fits {
        return Ok(untouched(text, original, options));
    }
    let (kept, head_share, tail_rule) = match strategy {
        Strategy::Head => (Kept::Head, 1.0, None),
        Strategy::Tail => (Kept::Tail, 0.0, None),
        Strategy::HeadTail { head_share } => (Kept::HeadTail, head_share.clamp(0.0, 1.0), None),
        Strategy::Auto { head_share } => match tail::important_tail(text) {
            Some(rule) => (Kept::HeadTail, head_share.clamp(0.0, 1.0), Some(rule)),
            None => (Kept::Head, 1.0, None),
        },
    };
    // The worst-case marker: every count at its largest.
    let worst = marker(original, Some(original.chars), &options.retrieval);
    let reserve = measure(&worst, unit);
    if reserve > limit {
        return Err(Error::BudgetTooSmall {
            limit,
            unit: unit.name(),
            needed: reserve,
            what: "the truncation marker".into(),
        });
    }
    // Token counts of pieces do not add up exactly once joined; a token budget keeps a small
    // margin so the sum of the pieces can stand without counting the result again.
    let margin = match unit {
        Unit::Tokens(_) => token_margin(limit).min(limit - reserve),
        _ => 0,
    };
    let room = limit - reserve - margin;
    let head_room = (room as f64 * head_share).floor() as usize;
    let tail_room = room - head_room;
    // For token budgets, an upper bound on the tokens of the kept head and tail.
    let (head_end, tail_start, kept_tokens) = match unit {
        Unit::Tokens(enc) => fit_tokens(text, head_room, tail_room, enc),
        _ => (cut_head(text, head_room, unit), cut_tail(text, tail_room, unit), 0),
    };
    let tail_start = tail_start.max(head_end);
    let omitted_text = &text[head_end..tail_start];
    // Only the kept ends are measured; the omitted middle is what is left of the original.
    let (head_size, tail_size) = (Size::of(&text[..head_end]), Size::of(&text[tail_start..]));
    let omitted = Size {
        bytes: original.bytes - head_size.bytes - tail_size.bytes,
        chars: original.chars - head_size.chars - tail_size.chars,
        lines: original.lines - head_size.lines - tail_size.lines,
    };
    let omitted_tokens = match unit {
        Unit::Tokens(enc) if options.count_omitted_tokens => Some(enc.count(omitted_text)),
        _ => None,
    };
    let mark = marker(omitted, omitted_tokens, &options.retrieval);
    let out = compose(text, head_end, tail_start, &mark);
    let mut result = Truncation {
        text: out,
        truncated: true,
        head_bytes: head_end,
        tail_bytes: text.len() - tail_start,
        original,
        omitted,
        omitted_tokens,
        kept,
        tail_rule,
    };
    if let Unit::Tokens(enc) = unit {
        // The kept lines were counted one by one and BPE counts are not exactly additive where
        // pieces are joined. With a clear margin the sum stands; near the limit the result is
        // counted as a whole and whole lines are given back until it fits.
        let estimate = kept_tokens + enc.count(&mark) + 2;
        if estimate + token_margin(limit) > limit {
            shrink_to_tokens(text, &mut result, limit, enc, &options.retrieval);
        }
    }
    Ok(result)
}

/// The result of [`truncate`] for a text that fits: the text itself, nothing omitted.
fn untouched(text: &str, original: Size, options: &Options) -> Truncation {
    Truncation {
        text: text.to_owned(),
        truncated: false,
        head_bytes: text.len(),
        tail_bytes: 0,
        original,
        omitted: Size::default(),
        omitted_tokens: Some(0).filter(|_| options.count_omitted_tokens),
        kept: Kept::All,
        tail_rule: None,
    }
}

/// The margin a token budget keeps for joins: 2% of it, at least 4 tokens.
fn token_margin(limit: usize) -> usize {
    (limit / 50).max(4)
}

fn line_count(text: &str, size: Size) -> usize {
    if text.is_empty() {
        0
    } else {
        size.lines + usize::from(!text.ends_with('\n'))
    }
}

/// The room a marker takes, with the two line breaks that may set it apart.
fn measure(marker: &str, unit: Unit) -> usize {
    match unit {
        Unit::Chars => marker.chars().count() + 2,
        Unit::Bytes => marker.len() + 2,
        Unit::Lines => 1,
        Unit::Tokens(enc) => enc.count(marker) + 2,
    }
}

/// Head + marker + tail, the marker on a line of its own.
fn compose(text: &str, head_end: usize, tail_start: usize, mark: &str) -> String {
    let head = &text[..head_end];
    let tail = &text[tail_start..];
    let mut out = String::with_capacity(head.len() + mark.len() + tail.len() + 2);
    out.push_str(head);
    if !head.is_empty() && !head.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(mark);
    if !tail.is_empty() {
        out.push('\n');
    }
    out.push_str(tail);
    out
}

/// The marker: what and how much was omitted, and how to get it back.
pub fn marker(omitted: Size, tokens: Option<usize>, retrieval: &Retrieval) -> String {
    let mut m = String::from("[... ");
    let _ = write!(m, "{} lines, {} chars", omitted.lines, omitted.chars);
    if let Some(t) = tokens {
        let _ = write!(m, ", {t} tokens");
    }
    m.push_str(" omitted");
    match (&retrieval.recall_id, &retrieval.path) {
        (Some(id), _) => {
            let _ = write!(m, "; full text: recall(id=\"{id}\")");
        }
        (None, Some(path)) => {
            let _ = write!(m, "; full text in {path}");
        }
        (None, None) if retrieval.unstored => m.push_str("; the full text is not stored"),
        (None, None) => {}
    }
    m.push_str(" ...]");
    m
}

#[cfg(test)]
#[allow(clippy::format_collect)]
mod tests {
    use super::*;

    fn lines(n: usize) -> String {
        (0..n).map(|i| format!("line {i}\n")).collect()
    }

    fn check(text: &str, limit: usize, unit: Unit, strategy: Strategy) -> Truncation {
        let r = truncate(text, limit, unit, strategy, &Options::default()).unwrap();
        let size = match unit {
            Unit::Chars => r.text.chars().count(),
            Unit::Bytes => r.text.len(),
            Unit::Lines => line_count(&r.text, Size::of(&r.text)),
            Unit::Tokens(enc) => enc.count(&r.text),
        };
        assert!(size <= limit, "{size} > {limit} for {unit:?} {strategy:?}");
        assert!(r.text.starts_with(&text[..r.head_bytes]));
        assert!(r.text.ends_with(&text[text.len() - r.tail_bytes..]));
        if r.truncated {
            let kept = Size::of(&text[..r.head_bytes]);
            let tail = Size::of(&text[text.len() - r.tail_bytes..]);
            assert_eq!(kept.chars + tail.chars + r.omitted.chars, r.original.chars);
            assert_eq!(kept.lines + tail.lines + r.omitted.lines, r.original.lines);
        }
        r
    }

    #[test]
    fn fits_untouched() {
        let r = check("short", 100, Unit::Chars, Strategy::Head);
        assert!(!r.truncated);
        assert_eq!(r.text, "short");
    }

    #[test]
    fn head_tail_on_line_boundaries() {
        let text = lines(1000);
        let r = check(&text, 400, Unit::Chars, Strategy::HeadTail { head_share: 0.5 });
        assert!(r.truncated);
        assert!(r.text.starts_with("line 0\n"));
        assert!(r.text.ends_with("line 999\n"));
        assert!(text[..r.head_bytes].ends_with('\n'));
        assert!(text[text.len() - r.tail_bytes..].starts_with("line "));
        assert!(r.text.contains(" lines, "));
    }

    #[test]
    fn every_unit_and_strategy_stays_in_budget() {
        let text = format!("{}Traceback (most recent call last):\nValueError: x\n", lines(300));
        for unit in [Unit::Chars, Unit::Bytes, Unit::Lines, Unit::Tokens(Encoding::O200k)] {
            for strategy in [
                Strategy::Head,
                Strategy::Tail,
                Strategy::HeadTail { head_share: 0.3 },
                Strategy::Auto { head_share: 0.5 },
            ] {
                let limit = if unit == Unit::Lines { 20 } else { 300 };
                check(&text, limit, unit, strategy);
            }
        }
        let r = check(&text, 300, Unit::Chars, Strategy::Auto { head_share: 0.5 });
        assert_eq!(r.kept, Kept::HeadTail);
        assert_eq!(r.tail_rule, Some("traceback"));
        assert!(r.text.ends_with("ValueError: x\n"));
    }

    #[test]
    fn never_splits_a_character() {
        let text = "漢字🎉".repeat(500);
        for limit in [60, 61, 62, 63, 100, 257] {
            for unit in [Unit::Chars, Unit::Bytes, Unit::Tokens(Encoding::O200k)] {
                check(&text, limit, unit, Strategy::HeadTail { head_share: 0.5 });
            }
        }
    }

    #[test]
    fn too_small_a_budget_is_an_error() {
        let err = truncate(&lines(100), 10, Unit::Chars, Strategy::Head, &Options::default()).unwrap_err();
        assert!(matches!(err, Error::BudgetTooSmall { limit: 10, .. }));
    }

    #[test]
    fn marker_names_the_retrieval() {
        let options = Options {
            retrieval: Retrieval {
                recall_id: Some("r-1".into()),
                path: None,
                unstored: false,
            },
            count_omitted_tokens: true,
        };
        let r = truncate(
            &lines(500),
            200,
            Unit::Tokens(Encoding::O200k),
            Strategy::Head,
            &options,
        )
        .unwrap();
        assert!(r.text.contains("recall(id=\"r-1\")"));
        assert!(r.omitted_tokens.unwrap() > 0);
        assert!(Encoding::O200k.count(&r.text) <= 200);
    }

    #[test]
    fn marker_says_when_nothing_is_stored() {
        let options = Options {
            retrieval: Retrieval {
                recall_id: None,
                path: None,
                unstored: true,
            },
            count_omitted_tokens: false,
        };
        let r = truncate(&lines(500), 300, Unit::Chars, Strategy::Head, &options).unwrap();
        assert!(
            r.text.contains(" omitted; the full text is not stored ...]"),
            "{}",
            r.text
        );
        assert!(!r.text.contains("recall"));
        assert!(r.text.chars().count() <= 300);
    }
}
