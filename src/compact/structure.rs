//! The structure of a conversation: tool-call pairing, interaction groups, API rounds, and the
//! positions where it may be cut without separating a tool_use from its tool_result.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;

use crate::model::{Body, Message, Role};

/// FNV-1a: call ids are short and attacker-chosen collisions cost only speed here, so a
/// simple fast hash beats the default SipHash for pairing.
#[derive(Default)]
pub struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

/// A tool call and where its result is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call<'a> {
    pub id: &'a str,
    pub name: &'a str,
    /// Message and block index of the tool_use.
    pub at: (usize, usize),
    /// Message and block index of the first result with this id after the call.
    pub result: Option<(usize, usize)>,
}

/// Every tool call with its result, plus the results and ids that break the protocol.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pairing<'a> {
    pub calls: Vec<Call<'a>>,
    /// Results with no earlier call of their id.
    pub orphans: Vec<(usize, usize)>,
    /// Second and later results for a call that already has one.
    pub duplicate_results: Vec<(usize, usize)>,
    /// Calls (indices into `calls`) whose id an earlier call already used.
    pub reused_ids: Vec<usize>,
}

impl<'a> Pairing<'a> {
    pub fn of(messages: &'a [Message]) -> Pairing<'a> {
        let mut p = Pairing::default();
        // id → index of the call waiting for its result
        let mut open: FastMap<&str, usize> = FastMap::default();
        // id → the call that last used it (answered or not)
        let mut seen: FastMap<&str, usize> = FastMap::default();
        for (mi, m) in messages.iter().enumerate() {
            for (bi, b) in m.blocks.iter().enumerate() {
                match &b.body {
                    Body::ToolUse { id, name, .. } => {
                        let ci = p.calls.len();
                        if seen.insert(id.as_str(), ci).is_some() {
                            p.reused_ids.push(ci);
                        }
                        open.insert(id.as_str(), ci);
                        p.calls.push(Call {
                            id,
                            name,
                            at: (mi, bi),
                            result: None,
                        });
                    }
                    Body::ToolResult { tool_use_id, .. } => {
                        if let Some(ci) = open.remove(tool_use_id.as_str()) {
                            p.calls[ci].result = Some((mi, bi));
                        } else if seen.contains_key(tool_use_id.as_str()) {
                            p.duplicate_results.push((mi, bi));
                        } else {
                            p.orphans.push((mi, bi));
                        }
                    }
                    _ => {}
                }
            }
        }
        p
    }
}

/// A "real" user message: one that carries something from the user, not only tool results.
pub fn is_user_turn(m: &Message) -> bool {
    m.role == Role::User && !m.is_tool_results_only()
}

/// Whether a message only carries tool results (an OpenAI `tool` message or an Anthropic user
/// message of tool_result blocks).
pub fn is_result_carrier(m: &Message) -> bool {
    m.role == Role::Tool || (m.role == Role::User && m.is_tool_results_only())
}

/// Number of leading system/developer messages (the system prompt, kept out of history
/// selection).
pub fn preamble_len(messages: &[Message]) -> usize {
    messages.iter().take_while(|m| m.role.is_instruction()).count()
}

/// Interaction groups after the preamble: each starts at a real user message and holds every
/// message up to the next one. Messages before the first user message form a group of their own.
pub fn groups(messages: &[Message]) -> Vec<Range<usize>> {
    let start = preamble_len(messages);
    let mut starts: Vec<usize> = (start..messages.len())
        .filter(|&i| i == start || is_user_turn(&messages[i]))
        .collect();
    starts.dedup();
    bounds_to_ranges(&starts, messages.len())
}

/// API rounds after the preamble: each assistant message with the tool results that follow it.
/// User messages and other messages outside rounds are not part of any round.
pub fn rounds(messages: &[Message]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = preamble_len(messages);
    while i < messages.len() {
        if messages[i].role == Role::Assistant {
            let mut end = i + 1;
            while end < messages.len() && is_result_carrier(&messages[end]) {
                end += 1;
            }
            out.push(i..end);
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

fn bounds_to_ranges(starts: &[usize], len: usize) -> Vec<Range<usize>> {
    starts
        .iter()
        .enumerate()
        .map(|(k, &s)| s..starts.get(k + 1).copied().unwrap_or(len))
        .collect()
}

/// For each position `c` in `0..=len`, whether cutting before message `c` keeps every paired call
/// and its result on the same side. Calls without a result block every cut after them (their
/// result may still come; see `repair`).
pub fn safe_cuts(messages: &[Message], pairing: &Pairing) -> Vec<bool> {
    let n = messages.len();
    // Difference array over cut positions: a pair (call at i, result at k > i) forbids i+1..=k.
    let mut diff = vec![0i64; n + 2];
    for c in &pairing.calls {
        let from = c.at.0 + 1;
        let to = c.result.map_or(n, |r| r.0);
        if to >= from {
            diff[from] += 1;
            diff[to + 1] -= 1;
        }
    }
    let mut out = Vec::with_capacity(n + 1);
    let mut depth = 0i64;
    for d in diff.iter().take(n + 1) {
        depth += d;
        out.push(depth == 0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::testing::{call, chat};
    use serde_json::json;

    #[test]
    fn groups_rounds_and_cuts() {
        let m = chat(json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": null, "tool_calls": [call("1"), call("2")]},
            {"role": "tool", "tool_call_id": "1", "content": "r1"},
            {"role": "tool", "tool_call_id": "2", "content": "r2"},
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "b"},
            {"role": "assistant", "content": "ok"},
        ]));
        assert_eq!(groups(&m), vec![1..6, 6..8]);
        assert_eq!(rounds(&m), vec![2..5, 5..6, 7..8]);
        let p = Pairing::of(&m);
        assert_eq!(p.calls.len(), 2);
        assert_eq!(p.calls[1].result, Some((4, 0)));
        let cuts = safe_cuts(&m, &p);
        assert_eq!(cuts, vec![true, true, true, false, false, true, true, true, true]);
    }

    #[test]
    fn orphans_duplicates_and_reused_ids() {
        let m = chat(json!([
            {"role": "user", "content": "a"},
            {"role": "tool", "tool_call_id": "x", "content": "orphan"},
            {"role": "assistant", "content": null, "tool_calls": [call("1")]},
            {"role": "tool", "tool_call_id": "1", "content": "r"},
            {"role": "tool", "tool_call_id": "1", "content": "again"},
            {"role": "assistant", "content": null, "tool_calls": [call("1")]},
        ]));
        let p = Pairing::of(&m);
        assert_eq!(p.orphans, vec![(1, 0)]);
        assert_eq!(p.duplicate_results, vec![(4, 0)]);
        assert_eq!(p.reused_ids, vec![1]);
        assert_eq!(p.calls[1].result, None);
    }
}
