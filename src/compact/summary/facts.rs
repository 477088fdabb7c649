//! The offline summary's sections that come straight from a handoff's long lists, written in the
//! core: the tests (with their last status) and the decisions of a long history run to thousands
//! of lines of which the fit takes a few, so they never become Python strings.

use super::fit::SECTIONS;
use crate::compact::handoff::Handoff;
use crate::compact::structure::FastSet;

/// The section of the tests' lines (`- name: status`, most recent first).
pub const TESTS: usize = 9;
/// The section of the decisions' lines (`- text`, most recent first).
pub const DECISIONS: usize = 11;

const _: () = assert!(matches!(SECTIONS[TESTS].as_bytes(), b"Tests (last status)"));
const _: () = assert!(matches!(SECTIONS[DECISIONS].as_bytes(), b"Decisions"));

/// The lines the offline summarizer writes from `h`'s tests and decisions, most recent first, as
/// `(section, lines)`: Python's `f"- {name}: {status}"` and `f"- {d}"` over the reversed lists.
#[must_use]
pub fn handoff_lines(h: &Handoff) -> Lines {
    [
        (
            TESTS,
            h.tests
                .iter()
                .rev()
                .map(|(name, status)| format!("- {name}: {status}"))
                .collect(),
        ),
        (DECISIONS, h.decisions.iter().rev().map(|d| format!("- {d}")).collect()),
    ]
}

/// The tests' and decisions' lines of a handoff, each with its section ([`handoff_lines`]).
pub type Lines = [(usize, Vec<String>); 2];

/// `new` then `old`, each line once at its first place (Python's
/// `list(dict.fromkeys([*new, *old]))`, the summarizer's merge with a previous summary).
#[must_use]
pub fn merged<'a>(new: &'a [String], old: &[&'a str]) -> Vec<&'a str> {
    let mut seen: FastSet<&str> = FastSet::default();
    seen.reserve(new.len() + old.len());
    new.iter()
        .map(String::as_str)
        .chain(old.iter().copied())
        .filter(|line| seen.insert(line))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_the_summarizers_most_recent_first() {
        let h = Handoff {
            tests: vec![("a".into(), "passed".into()), ("b".into(), "failed".into())],
            decisions: vec!["x".into(), "y".into()],
            ..Handoff::default()
        };
        let [(t, tests), (d, decisions)] = handoff_lines(&h);
        assert_eq!((t, d), (TESTS, DECISIONS));
        assert_eq!(tests, ["- b: failed", "- a: passed"]);
        assert_eq!(decisions, ["- y", "- x"]);
    }

    #[test]
    fn merge_keeps_first_places() {
        let new = vec!["- a".to_string(), "- b".into(), "- a".into()];
        assert_eq!(merged(&new, &["- c", "- b", "- c"]), ["- a", "- b", "- c"]);
        assert_eq!(merged(&[], &["- c", "- c"]), ["- c"]);
    }
}
