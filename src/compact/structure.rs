//! The structure of a conversation: tool-call pairing, interaction groups, API rounds, and the
//! positions where it may be cut without separating a tool_use from its tool_result.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;

use super::request::AskKind;
use crate::model::{Body, Message, Role};

/// A word-at-a-time hash with a folded multiply (the 128-bit product's halves xor-ed, so every
/// input bit reaches every output bit): keys here are short ids and names, and attacker-chosen
/// collisions cost only speed, so a simple fast hash beats the default SipHash (and
/// byte-at-a-time FNV) for pairing and lookups by id or name.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl FxHasher {
    const SEED: u64 = 0xf135_7aea_2e62_a9c5;

    /// A hasher seeded with `seed`.
    pub(crate) fn seeded(seed: u64) -> Self {
        FxHasher(seed)
    }

    #[inline]
    fn add(&mut self, word: u64) {
        let product = u128::from(self.0 ^ word) * u128::from(Self::SEED);
        self.0 = (product as u64) ^ ((product >> 64) as u64);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        let n = rest.len();
        if n >= 4 {
            // Two overlapping 4-byte reads cover 4 to 7 bytes.
            let lo = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes"));
            let hi = u32::from_le_bytes(rest[n - 4..].try_into().expect("4 bytes"));
            self.add(u64::from(lo) | u64::from(hi) << 32);
        } else if n > 0 {
            self.add(u64::from(rest[0]) | u64::from(rest[n / 2]) << 8 | u64::from(rest[n - 1]) << 16);
        }
    }

    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

/// A hash map with [`FxHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;
/// A hash set with [`FxHasher`].
pub type FastSet<K> = std::collections::HashSet<K, BuildHasherDefault<FxHasher>>;

/// A tool call and where its result is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call<'a> {
    pub id: &'a str,
    pub name: &'a str,
    /// Message and block index of the tool_use.
    pub at: (usize, usize),
    /// Message and block index of its result: the first result with this id after the call, or,
    /// when one message makes several calls of the id, the first result not taken by an earlier
    /// call of that message (they are answered in order).
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
    /// The built-in tool calls held as opaque items ([`opaque_call`]) with no output after them
    /// (`name`: the item's type): not in `calls` (the library cannot write their output), but
    /// a provider refuses a request holding one ("No tool output found for computer call").
    pub unanswered_opaque: Vec<Call<'a>>,
}

/// A tool call or result, for [`Pairing::from_blocks`].
#[derive(Clone, Copy, Debug)]
pub struct ToolBlock<'a> {
    /// Message and block index.
    pub at: (usize, usize),
    /// The call id (of a call, or the call a result answers).
    pub id: &'a str,
    /// The tool name for a call; `None` for a result.
    pub name: Option<&'a str>,
}

/// A tool call or result found by the first pass of [`Pairing::of`].
struct Event<'a> {
    id: Prehashed<'a>,
    /// The tool name for a call; `None` for a result.
    name: Option<&'a str>,
    at: (usize, usize),
}

/// A key hashed in advance: the table only reads the stored hash, equality compares the text.
#[derive(Clone, Copy)]
struct Prehashed<'a> {
    hash: u64,
    text: &'a str,
}

impl<'a> Prehashed<'a> {
    fn new(text: &'a str) -> Self {
        // The length seeds the hash: the tail reads above do not tell every length apart.
        let mut h = FxHasher(text.len() as u64);
        h.write(text.as_bytes());
        Prehashed { hash: h.finish(), text }
    }
}

impl PartialEq for Prehashed<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && same_text(self.text.as_bytes(), other.text.as_bytes())
    }
}

impl Eq for Prehashed<'_> {}

/// Byte equality without a library call for the short ids that are the rule.
#[inline]
pub(crate) fn same_text(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let n = a.len();
    let word = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().expect("8 bytes"));
    if (8..=16).contains(&n) {
        word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8)
    } else {
        a == b
    }
}

impl std::hash::Hash for Prehashed<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// Passes a [`Prehashed`] key's hash through unchanged.
#[derive(Default, Clone, Copy)]
pub(crate) struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used by `Prehashed`; anything else still hashes.
        let mut h = FxHasher(self.0);
        h.write(bytes);
        self.0 = h.finish();
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

impl<'a> Pairing<'a> {
    /// The pairing of the calls and results of `messages`. The calls are `tool_use` blocks and
    /// the built-in tool calls a Responses list holds as opaque items ([`opaque_call`]: a
    /// `computer_call`, say, named by its type) that have an output after them; an opaque call
    /// without one is left out of `calls` (the library cannot write its output) and listed in
    /// `unanswered_opaque` (validate reports it, repair drops it).
    pub fn of(messages: &'a [Message]) -> Pairing<'a> {
        // First every call and result with its id hashed: the messages are independent of each
        // other here, so the memory reads of many overlap; then the pairing itself, in order.
        let mut events: Vec<Event<'a>> = Vec::with_capacity(messages.len() + messages.len() / 2);
        let mut opaque = false;
        for (mi, m) in messages.iter().enumerate() {
            for (bi, b) in m.blocks.iter().enumerate() {
                match &b.body {
                    Body::ToolUse { id, name, .. } => events.push(Event {
                        id: Prehashed::new(id),
                        name: Some(name),
                        at: (mi, bi),
                    }),
                    Body::ToolResult { tool_use_id, .. } => events.push(Event {
                        id: Prehashed::new(tool_use_id),
                        name: None,
                        at: (mi, bi),
                    }),
                    Body::Opaque { value } => {
                        if let Some((id, kind)) = opaque_call(value) {
                            opaque = true;
                            events.push(Event {
                                id: Prehashed::new(id),
                                name: Some(kind),
                                at: (mi, bi),
                            });
                        }
                    }
                    _ => {}
                }
            }
        }
        let mut p = Self::pair(events);
        if opaque {
            let unanswered = |c: &Call<'a>| {
                c.result.is_none() && !matches!(messages[c.at.0].blocks[c.at.1].body, Body::ToolUse { .. })
            };
            p.unanswered_opaque = p.calls.iter().filter(|c| unanswered(c)).cloned().collect();
            p.retain_calls(|c| !unanswered(c));
        }
        p
    }

    /// Only the calls `keep` keeps (a reused id stays marked so).
    fn retain_calls(&mut self, keep: impl Fn(&Call<'a>) -> bool) {
        let mut new_index = Vec::with_capacity(self.calls.len());
        let mut kept = 0;
        for c in &self.calls {
            new_index.push(keep(c).then_some(kept));
            kept += usize::from(keep(c));
        }
        self.reused_ids = self.reused_ids.iter().filter_map(|&ci| new_index[ci]).collect();
        let mut k = 0;
        self.calls.retain(|_| {
            k += 1;
            new_index[k - 1].is_some()
        });
    }

    /// The pairing of tool calls and results given in conversation order, for callers that
    /// read them from something other than messages.
    pub fn from_blocks(blocks: impl IntoIterator<Item = ToolBlock<'a>>) -> Pairing<'a> {
        Self::pair(
            blocks
                .into_iter()
                .map(|b| Event {
                    id: Prehashed::new(b.id),
                    name: b.name,
                    at: b.at,
                })
                .collect(),
        )
    }

    fn pair(events: Vec<Event<'a>>) -> Pairing<'a> {
        /// How many of the latest calls are kept at hand for the results that follow them.
        const AT_HAND: usize = 16;
        let uses = events.iter().filter(|e| e.name.is_some()).count();
        let mut p = Pairing {
            calls: Vec::with_capacity(uses),
            ..Pairing::default()
        };
        // id → the calls of the latest message that used it ([`Open`]): a result takes the first
        // of them still waiting. A call of the id in a later message starts them afresh (the
        // earlier message's calls still waiting are left without a result).
        let mut ids: HashMap<Prehashed<'a>, Open, BuildHasherDefault<PassThrough>> =
            HashMap::with_capacity_and_hasher(uses, BuildHasherDefault::default());
        // For a call, the next call of its id in its message (`NONE`: none); set only when one
        // message uses an id twice.
        let mut next_same: Vec<usize> = Vec::new();
        // The latest calls still waiting, with their hashed ids: a result nearly always answers
        // one of them, found here without a table lookup. Only while no id has been reused (then
        // a call found here is the only one with its id, as the table would say).
        let mut waiting: Vec<(Prehashed<'a>, usize)> = Vec::with_capacity(AT_HAND + 1);
        for e in events {
            if let Some(name) = e.name {
                let ci = p.calls.len();
                let fresh = Open { first: ci, last: ci };
                match ids.entry(e.id) {
                    Entry::Vacant(v) => {
                        v.insert(fresh);
                    }
                    Entry::Occupied(mut o) => {
                        p.reused_ids.push(ci);
                        let open = o.get_mut();
                        if p.calls[open.last].at.0 == e.at.0 {
                            // The same message again: this call waits after the others.
                            if next_same.len() < uses {
                                next_same.resize(uses, Open::NONE);
                            }
                            next_same[open.last] = ci;
                            open.last = ci;
                            // (All answered: a result found at hand answers a call without
                            // moving `first` on.)
                            if open.first == Open::NONE || p.calls[open.first].result.is_some() {
                                open.first = ci;
                            }
                        } else {
                            *open = fresh;
                        }
                    }
                }
                p.calls.push(Call {
                    id: e.id.text,
                    name,
                    at: e.at,
                    result: None,
                });
                waiting.push((e.id, ci));
                if waiting.len() > AT_HAND {
                    waiting.remove(0);
                }
                continue;
            }
            if p.reused_ids.is_empty() {
                if let Some(k) = waiting.iter().rposition(|(id, _)| *id == e.id) {
                    let (_, ci) = waiting.remove(k);
                    p.calls[ci].result = Some(e.at);
                    continue;
                }
            }
            match ids.get_mut(&e.id) {
                Some(open) if open.first != Open::NONE && p.calls[open.first].result.is_none() => {
                    p.calls[open.first].result = Some(e.at);
                    open.first = next_same.get(open.first).copied().unwrap_or(Open::NONE);
                }
                Some(_) => p.duplicate_results.push(e.at),
                None => p.orphans.push(e.at),
            }
        }
        p
    }
}

/// The calls of one message with one id, waiting for their results in order, for
/// [`Pairing::of`]: the first still waiting ([`Open::NONE`]: all answered) and the last.
#[derive(Clone, Copy)]
struct Open {
    first: usize,
    last: usize,
}

impl Open {
    const NONE: usize = usize::MAX;
}

/// The `call_id` and type of a built-in tool's call that a Responses list holds as an opaque
/// item and answers with an output item of its own (a `computer_call` and its
/// `computer_call_output`, a `shell_call`, a `local_shell_call`, an `apply_patch_call`): an item
/// whose type ends in `_call` and that has a string `call_id`. (An `mcp_call` or a
/// `web_search_call` holds its own output and has no `call_id`.)
pub fn opaque_call(value: &serde_json::Value) -> Option<(&str, &str)> {
    let kind = value.get("type")?.as_str()?;
    let id = value.get("call_id")?.as_str()?;
    kind.ends_with("_call").then_some((id, kind))
}

/// What the selection passes read of a conversation: its length, each message's role, and
/// which messages only carry tool results. Implemented by `[Message]`, and by lighter
/// skeletons that never build messages (the whole-list fast path).
pub trait Shape {
    fn message_count(&self) -> usize;
    fn role_at(&self, i: usize) -> Role;
    /// Whether message `i` only carries tool results ([`Message::is_tool_results_only`]).
    fn results_only_at(&self, i: usize) -> bool;
    /// What message `i` is to the search for the user's latest ask
    /// ([`super::request::latest_ask`]); by default every user turn is a request.
    fn ask_at(&self, i: usize) -> AskKind {
        if user_turn_at(self, i) {
            AskKind::Request
        } else {
            AskKind::Not
        }
    }
}

impl Shape for [Message] {
    fn message_count(&self) -> usize {
        self.len()
    }

    fn role_at(&self, i: usize) -> Role {
        self[i].role
    }

    fn results_only_at(&self, i: usize) -> bool {
        self[i].is_tool_results_only()
    }

    fn ask_at(&self, i: usize) -> AskKind {
        super::request::ask_kind(&self[i])
    }
}

/// Whether message `i` is a user turn: a user message that is not only tool results.
pub(crate) fn user_turn_at<S: Shape + ?Sized>(s: &S, i: usize) -> bool {
    s.role_at(i) == Role::User && !s.results_only_at(i)
}

pub(crate) fn result_carrier_at<S: Shape + ?Sized>(s: &S, i: usize) -> bool {
    match s.role_at(i) {
        Role::Tool => true,
        Role::User => s.results_only_at(i),
        _ => false,
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
    preamble_len_of(messages)
}

/// [`preamble_len`] of any [`Shape`].
pub fn preamble_len_of<S: Shape + ?Sized>(s: &S) -> usize {
    (0..s.message_count())
        .take_while(|&i| s.role_at(i).is_instruction())
        .count()
}

/// Interaction groups after the preamble: each starts at a real user message and holds every
/// message up to the next one. Messages before the first user message form a group of their own.
pub fn groups(messages: &[Message]) -> Vec<Range<usize>> {
    groups_of(messages)
}

/// [`groups`] of any [`Shape`].
pub fn groups_of<S: Shape + ?Sized>(s: &S) -> Vec<Range<usize>> {
    let n = s.message_count();
    let start = preamble_len_of(s);
    let mut starts: Vec<usize> = (start..n).filter(|&i| i == start || user_turn_at(s, i)).collect();
    starts.dedup();
    bounds_to_ranges(&starts, n)
}

/// API rounds after the preamble: each assistant message with the tool results that follow it.
/// User messages and other messages outside rounds are not part of any round.
pub fn rounds(messages: &[Message]) -> Vec<Range<usize>> {
    rounds_of(messages)
}

/// [`rounds`] of any [`Shape`].
pub fn rounds_of<S: Shape + ?Sized>(s: &S) -> Vec<Range<usize>> {
    let n = s.message_count();
    let mut out = Vec::new();
    let mut i = preamble_len_of(s);
    while i < n {
        if s.role_at(i) == Role::Assistant {
            let mut end = i + 1;
            while end < n && result_carrier_at(s, end) {
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
/// result may still come; see `repair`), but those abandoned ([`safe_cuts_of`]).
pub fn safe_cuts(messages: &[Message], pairing: &Pairing) -> Vec<bool> {
    safe_cuts_of(messages, pairing)
}

/// [`safe_cuts`] for `n` messages.
pub fn safe_cuts_n(n: usize, pairing: &Pairing) -> Vec<bool> {
    cuts(n, pairing, |_| false)
}

/// [`safe_cuts`] of any [`Shape`], but that a call without a result is abandoned when a message
/// that is not only tool results follows its message (a user's next turn, the model's next
/// answer: its result can no longer come where a provider takes it) and blocks no cut: a call
/// whose result may still come is one of the last such message.
pub fn safe_cuts_of<S: Shape + ?Sized>(s: &S, pairing: &Pairing) -> Vec<bool> {
    let n = s.message_count();
    let last = (0..n).rev().find(|&i| !s.results_only_at(i));
    cuts(n, pairing, |at| last.is_some_and(|last| at < last))
}

/// The cut positions of [`safe_cuts_n`], a call without a result blocking none when
/// `abandoned(its message)`.
fn cuts(n: usize, pairing: &Pairing, abandoned: impl Fn(usize) -> bool) -> Vec<bool> {
    // Difference array over cut positions: a pair (call at i, result at k > i) forbids i+1..=k.
    let mut diff = vec![0i64; n + 2];
    for c in &pairing.calls {
        if c.result.is_none() && abandoned(c.at.0) {
            continue;
        }
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
    use crate::compact::testing::{call, chat, xorshift};
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

    /// The plain two-table definition the one-table pairing must match: a result answers the
    /// first call still waiting of the latest message that used its id.
    fn reference_pairing<'a>(blocks: &[ToolBlock<'a>]) -> Pairing<'a> {
        let mut open: HashMap<&str, (usize, std::collections::VecDeque<usize>)> = HashMap::new();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        let mut p = Pairing::default();
        for b in blocks {
            if let Some(name) = b.name {
                let ci = p.calls.len();
                if seen.insert(b.id, ci).is_some() {
                    p.reused_ids.push(ci);
                }
                match open.get_mut(b.id) {
                    Some((message, waiting)) if *message == b.at.0 => waiting.push_back(ci),
                    _ => {
                        open.insert(b.id, (b.at.0, [ci].into()));
                    }
                }
                p.calls.push(Call {
                    id: b.id,
                    name,
                    at: b.at,
                    result: None,
                });
            } else if let Some(ci) = open.get_mut(b.id).and_then(|(_, waiting)| waiting.pop_front()) {
                p.calls[ci].result = Some(b.at);
            } else if seen.contains_key(b.id) {
                p.duplicate_results.push(b.at);
            } else {
                p.orphans.push(b.at);
            }
        }
        p
    }

    #[test]
    fn calls_of_one_id_in_one_message_take_their_results_in_order() {
        // Before, the second call took the first result and the first call had none.
        let m = chat(json!([
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": null, "tool_calls": [call("x"), call("y"), call("x")]},
            {"role": "tool", "tool_call_id": "x", "content": "first"},
            {"role": "tool", "tool_call_id": "y", "content": "y"},
            {"role": "tool", "tool_call_id": "x", "content": "second"},
            {"role": "tool", "tool_call_id": "x", "content": "third"},
            {"role": "assistant", "content": null, "tool_calls": [call("x")]},
            {"role": "tool", "tool_call_id": "x", "content": "next turn"},
        ]));
        let p = Pairing::of(&m);
        let results: Vec<_> = p.calls.iter().map(|c| c.result).collect();
        assert_eq!(results, vec![Some((2, 0)), Some((3, 0)), Some((4, 0)), Some((7, 0))]);
        assert_eq!(p.duplicate_results, vec![(5, 0)]);
        assert_eq!(p.reused_ids, vec![2, 3]);
        assert!(p.orphans.is_empty());
    }

    #[test]
    fn pairs_like_the_definition_with_several_calls_per_message() {
        let ids = ["a", "b", "call_0", ""];
        let mut next = xorshift(0x51_7cc1_b727_220a);
        for _ in 0..3_000 {
            let mut blocks = Vec::new();
            let (mut mi, mut bi) = (0, 0);
            for _ in 0..(next() % 30) {
                let state = next();
                // A new message now and then; calls and results may share one (malformed input).
                if state % 3 == 0 {
                    (mi, bi) = (mi + 1, 0);
                }
                blocks.push(ToolBlock {
                    at: (mi, bi),
                    id: ids[((state >> 8) % ids.len() as u64) as usize],
                    name: ((state >> 20) % 5 < 2).then_some("f"),
                });
                bi += 1;
            }
            assert_eq!(Pairing::from_blocks(blocks.iter().copied()), reference_pairing(&blocks));
        }
    }

    #[test]
    fn pairs_like_the_two_table_definition() {
        let ids = [
            "a",
            "b",
            "c",
            "call_1",
            "call_2",
            "toolu_01ABCDEFGHIJKLMNOPQRSTUV",
            "",
            "call_12345678",
        ];
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for _ in 0..2_000 {
            let mut blocks = Vec::new();
            let len = (next() % 40) as usize;
            for i in 0..len {
                let state = next();
                let id = ids[(state % ids.len() as u64) as usize];
                let name = (state >> 20) % 2 == 0;
                blocks.push(ToolBlock {
                    at: (i, 0),
                    id,
                    name: name.then_some("f"),
                });
            }
            assert_eq!(Pairing::from_blocks(blocks.iter().copied()), reference_pairing(&blocks));
        }
    }

    #[test]
    fn pairs_like_the_definition_with_many_open_calls() {
        // Mostly distinct ids, results that lag far behind their calls (more than are kept at
        // hand), missing, repeated and orphan results, and now and then a reused id.
        let ids: Vec<String> = (0..300).map(|k| format!("call_{k}")).collect();
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..500 {
            let calls = (next() % 120) as usize;
            let mut blocks: Vec<ToolBlock> = Vec::new();
            let mut issued: Vec<usize> = Vec::new();
            let mut fresh = 0;
            while issued.len() < calls || !issued.is_empty() && next() % 3 != 0 {
                let r = next();
                let at = (blocks.len(), 0);
                if issued.len() < calls && (r % 5 < 2 || issued.is_empty()) {
                    // A call: a fresh id, or (rarely) one used before.
                    let k = if r % 97 == 0 && fresh > 0 {
                        (r >> 8) as usize % fresh
                    } else {
                        fresh
                    };
                    fresh += usize::from(k == fresh);
                    issued.push(k);
                    blocks.push(ToolBlock {
                        at,
                        id: &ids[k],
                        name: Some("f"),
                    });
                } else if r % 41 == 0 {
                    blocks.push(ToolBlock {
                        at,
                        id: &ids[299],
                        name: None,
                    });
                } else if !issued.is_empty() {
                    // A result for some issued call, often not the latest; sometimes twice.
                    let pick = (r >> 16) as usize % issued.len();
                    let k = if r % 13 == 0 { issued[pick] } else { issued.remove(pick) };
                    blocks.push(ToolBlock {
                        at,
                        id: &ids[k],
                        name: None,
                    });
                }
                if blocks.len() > 400 {
                    break;
                }
            }
            assert_eq!(Pairing::from_blocks(blocks.iter().copied()), reference_pairing(&blocks));
        }
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
