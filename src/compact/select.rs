//! Selection over a conversation with cached counts: the protected set, the longest recent
//! suffix that fits a budget, and splitting into parts of equal token share — all at boundaries
//! that never separate a tool call from its result.

use std::collections::BTreeSet;
use std::ops::Range;

use super::structure::{Pairing, Shape, groups, groups_of, preamble_len, rounds, rounds_of, safe_cuts, safe_cuts_of};
use crate::model::Message;

/// Messages and tool interactions that clearing and summarizing must leave alone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Protected {
    /// Message indices: the union of the last N messages, the messages of the last K completed
    /// tool interactions, and the pinned messages.
    pub messages: BTreeSet<usize>,
    /// Indices (into `Pairing::calls`) of the protected completed calls.
    pub calls: BTreeSet<usize>,
}

impl Protected {
    /// The protected messages and calls as flags by index, for conversations of `messages`
    /// messages and `calls` calls: O(1) lookups when every call is checked.
    pub fn flags(&self, messages: usize, calls: usize) -> (Vec<bool>, Vec<bool>) {
        let mut m = vec![false; messages];
        for &i in self.messages.range(..messages) {
            m[i] = true;
        }
        let mut c = vec![false; calls];
        for &i in self.calls.range(..calls) {
            c[i] = true;
        }
        (m, c)
    }
}

/// The union of the last `recent_messages` messages and the last `recent_tools` completed tool
/// interactions (call and result, paired by id), each computed over the whole conversation, plus
/// `pinned` messages.
pub fn protected(
    messages: &[Message],
    pairing: &Pairing,
    recent_messages: usize,
    recent_tools: usize,
    pinned: &BTreeSet<usize>,
) -> Protected {
    protected_n(messages.len(), pairing, recent_messages, recent_tools, pinned)
}

/// [`protected`] for `n` messages.
pub fn protected_n(
    n: usize,
    pairing: &Pairing,
    recent_messages: usize,
    recent_tools: usize,
    pinned: &BTreeSet<usize>,
) -> Protected {
    let mut p = Protected::default();
    p.messages.extend(n.saturating_sub(recent_messages)..n);
    p.messages.extend(pinned.iter().copied().filter(|&i| i < n));
    let mut completed: Vec<usize> = (0..pairing.calls.len())
        .filter(|&i| pairing.calls[i].result.is_some())
        .collect();
    // The most recent interactions are the ones whose results came last.
    completed.sort_by_key(|&i| pairing.calls[i].result);
    for &ci in completed.iter().rev().take(recent_tools) {
        let c = &pairing.calls[ci];
        p.calls.insert(ci);
        p.messages.insert(c.at.0);
        if let Some(r) = c.result {
            p.messages.insert(r.0);
        }
    }
    // A call or result inside a protected message protects its pair too (flags: one lookup per
    // call instead of a tree search).
    let mut flagged = vec![false; n];
    for &i in &p.messages {
        flagged[i] = true;
    }
    let is_protected = |i: usize| flagged.get(i).copied().unwrap_or(false);
    for (ci, c) in pairing.calls.iter().enumerate() {
        if let Some(r) = c.result {
            if is_protected(c.at.0) || is_protected(r.0) {
                p.calls.insert(ci);
            }
        }
    }
    p
}

/// Where a suffix starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Boundary {
    /// At the start of an interaction group (a real user message).
    Group,
    /// Between API rounds inside a group too large to keep whole.
    Round,
    /// Nothing fits (see `overflow`).
    None,
}

impl Boundary {
    pub fn as_str(self) -> &'static str {
        match self {
            Boundary::Group => "group",
            Boundary::Round => "round",
            Boundary::None => "none",
        }
    }
}

/// The result of [`recent_suffix`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Suffix {
    /// First message of the kept suffix (`messages.len()` when nothing is kept).
    pub start: usize,
    pub tokens: usize,
    pub boundary: Boundary,
    /// The last indivisible round when even it is larger than the budget: it is never split.
    pub overflow: Option<Range<usize>>,
    /// Number of leading system/developer messages, kept out of the selection.
    pub preamble: usize,
}

/// The longest contiguous suffix of history (after the preamble) whose tokens fit `budget`,
/// cut at a group boundary, or between rounds inside the last group when that group alone is too
/// large, and never between a tool call and its result.
pub fn recent_suffix(messages: &[Message], counts: &[usize], pairing: &Pairing, budget: usize) -> Suffix {
    recent_suffix_of(messages, counts, pairing, budget)
}

/// [`recent_suffix`] of any [`Shape`].
pub fn recent_suffix_of<S: Shape + ?Sized>(messages: &S, counts: &[usize], pairing: &Pairing, budget: usize) -> Suffix {
    let n = messages.message_count();
    let pre = super::structure::preamble_len_of(messages);
    let safe = safe_cuts_of(messages, pairing);
    let mut suffix_tokens = vec![0usize; n + 1];
    for i in (0..n).rev() {
        suffix_tokens[i] = suffix_tokens[i + 1] + counts[i];
    }
    let group_starts: Vec<usize> = groups_of(messages)
        .iter()
        .map(|g| g.start)
        .filter(|&s| safe[s])
        .collect();
    if let Some(&start) = group_starts.iter().find(|&&s| suffix_tokens[s] <= budget) {
        return Suffix {
            start,
            tokens: suffix_tokens[start],
            boundary: Boundary::Group,
            overflow: None,
            preamble: pre,
        };
    }
    // The last group alone is too large: keep its latest rounds that fit.
    let round_starts: Vec<usize> = rounds_of(messages)
        .iter()
        .map(|r| r.start)
        .chain(group_starts.iter().copied())
        .filter(|&s| safe[s])
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if let Some(&start) = round_starts.iter().find(|&&s| suffix_tokens[s] <= budget && s < n) {
        return Suffix {
            start,
            tokens: suffix_tokens[start],
            boundary: Boundary::Round,
            overflow: None,
            preamble: pre,
        };
    }
    let last = round_starts.last().copied().unwrap_or(pre);
    Suffix {
        start: n,
        tokens: 0,
        boundary: Boundary::None,
        overflow: (last < n).then_some(last..n),
        preamble: pre,
    }
}

/// Where history may be cut: the starts of groups and rounds that keep every tool call with its
/// result, ascending (all at or after the preamble, before the end).
pub fn cut_points_of<S: Shape + ?Sized>(s: &S, pairing: &Pairing) -> Vec<usize> {
    let safe = safe_cuts_of(s, pairing);
    let mut points: Vec<usize> = groups_of(s)
        .iter()
        .map(|g| g.start)
        .chain(rounds_of(s).iter().map(|r| r.start))
        .filter(|&i| safe[i])
        .collect();
    points.sort_unstable();
    points.dedup();
    points
}

/// Split history (after the preamble) into at most `parts` contiguous ranges of about equal token
/// share, at safe group boundaries (or round boundaries when groups are too coarse).
pub fn split_by_share(messages: &[Message], counts: &[usize], pairing: &Pairing, parts: usize) -> Vec<Range<usize>> {
    let n = messages.len();
    let pre = preamble_len(messages);
    if parts <= 1 || n <= pre {
        return std::iter::once(pre..n).filter(|r| !r.is_empty()).collect();
    }
    let safe = safe_cuts(messages, pairing);
    let mut cuts: BTreeSet<usize> = groups(messages).iter().map(|g| g.start).filter(|&s| safe[s]).collect();
    if cuts.len() < parts {
        cuts.extend(rounds(messages).iter().map(|r| r.start).filter(|&s| safe[s]));
    }
    let total: usize = counts[pre..].iter().sum();
    let mut prefix = vec![0usize; n + 1];
    for i in 0..n {
        prefix[i + 1] = prefix[i] + counts[i];
    }
    let mut chosen = vec![pre];
    for k in 1..parts {
        let target = prefix[pre] + total * k / parts;
        let last = *chosen.last().expect("starts with the preamble end");
        let best = cuts
            .iter()
            .copied()
            .filter(|&c| c > last && c < n)
            .min_by_key(|&c| prefix[c].abs_diff(target));
        if let Some(c) = best {
            chosen.push(c);
        }
    }
    chosen.dedup();
    chosen
        .iter()
        .enumerate()
        .map(|(i, &s)| s..chosen.get(i + 1).copied().unwrap_or(n))
        .collect()
}

/// Message indices where history may be cut, in order: the starts of groups and of rounds that
/// do not separate a tool call from its result.
pub fn cut_points(messages: &[Message], pairing: &Pairing) -> Vec<usize> {
    let safe = safe_cuts(messages, pairing);
    let mut points: Vec<usize> = groups(messages)
        .iter()
        .map(|g| g.start)
        .chain(rounds(messages).iter().map(|r| r.start))
        .filter(|&i| safe[i])
        .collect();
    points.sort_unstable();
    points.dedup();
    points
}

#[cfg(test)]
mod cut_point_tests {
    use super::*;
    use crate::compact::testing::{call, chat, xorshift};
    use serde_json::{Value, json};

    #[test]
    fn cut_points_are_group_and_round_starts_between_calls_and_results() {
        let messages = chat(json!([
            {"role": "system", "content": "rules"},
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "x"},
            {"role": "tool", "tool_call_id": "b", "content": "y"},
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "two"},
            {"role": "assistant", "content": "ok"}
        ]));
        let pairing = Pairing::of(&messages);
        assert_eq!(cut_points(&messages, &pairing), [1, 2, 5, 6, 7]);
    }

    #[test]
    fn cut_points_never_separate_a_call_from_its_result() {
        // Generated agent histories, some calls answered late or never.
        let mut rng = xorshift(0x0c07_9017_5eed_0001);
        for _ in 0..300 {
            let mut turns = vec![json!({"role": "user", "content": "go"})];
            let mut open: Vec<String> = Vec::new();
            for k in 0..(rng() % 14) {
                match rng() % 4 {
                    0 => turns.push(json!({"role": "user", "content": format!("u{k}")})),
                    1 => turns.push(json!({"role": "assistant", "content": format!("a{k}")})),
                    _ => {
                        let id = format!("c{k}");
                        turns.push(json!({"role": "assistant", "content": null, "tool_calls": [call(&id)]}));
                        open.push(id);
                        while let Some(id) = open.pop() {
                            if rng() % 5 != 0 {
                                turns.push(json!({"role": "tool", "tool_call_id": id, "content": "r"}));
                            }
                        }
                    }
                }
            }
            let messages = chat(Value::Array(turns));
            let pairing = Pairing::of(&messages);
            let points = cut_points(&messages, &pairing);
            assert!(points.is_sorted() && points.windows(2).all(|w| w[0] < w[1]));
            for &p in &points {
                assert!(p < messages.len());
                for c in &pairing.calls {
                    if let Some(r) = c.result {
                        assert!(!(c.at.0 < p && p <= r.0), "{p} separates {:?} from {r:?}", c.at);
                    }
                }
            }
            // Every group start that separates nothing is one.
            let safe = safe_cuts(&messages, &pairing);
            for g in groups(&messages) {
                assert_eq!(points.contains(&g.start), safe[g.start]);
            }
        }
    }
}
