//! A conversation that owns its parsed messages and their token counts.
//!
//! Appending is O(new messages): each message is parsed and counted once, and the totals by role
//! and by tool are updated incrementally.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::formats;
use crate::model::{Body, Format, Message, Role};
use crate::tokens::{self, Encoding, MessageTokens, ToolSide};

mod classes;
mod replace;

use classes::ClassCache;
pub use classes::{ClassTotals, message_class_counts};

/// Name used in per-tool totals for a result whose call is not in the conversation.
pub const UNKNOWN_TOOL: &str = "(unknown)";

/// Calls, and tokens of calls plus results, of one tool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ToolTotals {
    pub calls: usize,
    pub results: usize,
    pub tokens: usize,
}

/// Running totals over a list of messages and their counts.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    pub total: usize,
    /// Indexed by [`Role::index`]. Tool-result blocks count as `tool` in every format (in
    /// Anthropic they travel inside user messages).
    pub by_role: [usize; 5],
    pub messages_by_role: [usize; 5],
    pub by_tool: BTreeMap<String, ToolTotals>,
    pub tool_calls: usize,
    /// Tool call id → its tool's name (an index in `tool_names`), to attribute results. An index
    /// rather than a copy of the name: one entry per call of the conversation, 24 bytes and the
    /// id's allocation instead of 48 bytes and two allocations.
    names: HashMap<Box<str>, usize>,
    /// Each tool name seen, once.
    tool_names: Vec<Box<str>>,
    /// Tool name → its index in `tool_names`.
    tool_index: HashMap<Box<str>, usize>,
    /// A message was taken off ([`Tally::remove`]): its calls' ids stay in `names`, so this
    /// tally may attribute a later result where a tally of the same messages anew would not.
    removed: bool,
}

impl PartialEq for Tally {
    /// The totals, and which tool each call id was attributed to (not the order names were seen in).
    fn eq(&self, other: &Self) -> bool {
        self.total == other.total
            && self.by_role == other.by_role
            && self.messages_by_role == other.messages_by_role
            && self.by_tool == other.by_tool
            && self.tool_calls == other.tool_calls
            && self.names.len() == other.names.len()
            && self.names.keys().all(|id| self.name_of(id) == other.name_of(id))
    }
}

impl Eq for Tally {}

impl Tally {
    pub fn of(messages: &[Message], counts: &[MessageTokens]) -> Tally {
        let mut t = Tally::default();
        for (m, c) in messages.iter().zip(counts) {
            t.add(m, c);
        }
        t
    }

    pub fn add(&mut self, m: &Message, c: &MessageTokens) {
        self.apply(m, c, true);
    }

    pub fn remove(&mut self, m: &Message, c: &MessageTokens) {
        self.removed = true;
        self.apply(m, c, false);
    }

    fn apply(&mut self, m: &Message, c: &MessageTokens, add: bool) {
        let step = |v: &mut usize, n: usize| {
            if add {
                *v += n;
            } else {
                *v -= n;
            }
        };
        for b in m.blocks.iter() {
            if let Body::ToolUse { id, name, .. } = &b.body {
                if add {
                    let tool = self.intern(name);
                    if let Some(at) = self.names.get_mut(id.as_str()) {
                        *at = tool;
                    } else {
                        self.names.insert(id.as_str().into(), tool);
                    }
                }
            }
        }
        step(&mut self.total, c.total);
        step(&mut self.messages_by_role[m.role.index()], 1);
        let mut tool_tokens = 0;
        for t in c.tools() {
            let (n, side) = (&t.tokens, t.side);
            let id = match m.blocks.get(t.block()).map(|b| &b.body) {
                Some(Body::ToolUse { id, .. }) => id.as_str(),
                Some(Body::ToolResult { tool_use_id, .. }) => tool_use_id.as_str(),
                _ => "",
            };
            // Fields, not `name_of`: `by_tool` is updated while the name is borrowed.
            let name = self.names.get(id).map_or(UNKNOWN_TOOL, |&i| &*self.tool_names[i]);
            // Look up before inserting: a key is allocated only for a tool seen the first time.
            if !self.by_tool.contains_key(name) {
                self.by_tool.insert(name.to_owned(), ToolTotals::default());
            }
            let entry = self.by_tool.get_mut(name).expect("inserted above");
            step(&mut entry.tokens, *n);
            match side {
                ToolSide::Call => {
                    step(&mut entry.calls, 1);
                    step(&mut self.tool_calls, 1);
                }
                ToolSide::Result => {
                    step(&mut entry.results, 1);
                    tool_tokens += n;
                }
            }
        }
        step(&mut self.by_role[Role::Tool.index()], tool_tokens);
        step(&mut self.by_role[m.role.index()], c.total - tool_tokens);
        if !add {
            self.by_tool.retain(|_, t| t.calls + t.results > 0);
        }
    }

    /// The name of the tool the call `id` is of, if that call was seen.
    fn name_of(&self, id: &str) -> Option<&str> {
        self.names.get(id).map(|&i| &*self.tool_names[i])
    }

    /// The index of `name` in `tool_names`, added the first time it is seen.
    fn intern(&mut self, name: &str) -> usize {
        if let Some(&i) = self.tool_index.get(name) {
            return i;
        }
        let i = self.tool_names.len();
        self.tool_names.push(name.into());
        self.tool_index.insert(name.into(), i);
        i
    }
}

#[derive(Clone, Debug)]
pub struct Conversation {
    format: Format,
    encoding: Encoding,
    messages: Vec<Message>,
    counts: Vec<MessageTokens>,
    tally: Tally,
    /// Messages that are never cleared or summarized and always rendered.
    pinned: BTreeSet<usize>,
    /// Tokens per content class of each message, once asked for ([`Self::class_tokens`]).
    classes: Option<ClassCache>,
    /// Where history may be cut, once asked for ([`Self::cut_points`]); forgotten when messages
    /// are appended.
    cuts: std::sync::OnceLock<Vec<usize>>,
}

impl Conversation {
    pub fn new(format: Format, encoding: Encoding) -> Self {
        Conversation {
            format,
            encoding,
            messages: Vec::new(),
            counts: Vec::new(),
            tally: Tally::default(),
            pinned: BTreeSet::new(),
            classes: None,
            cuts: std::sync::OnceLock::new(),
        }
    }

    /// A conversation of `messages` in the same format and encoding, reusing the counts of the
    /// messages at `unchanged` positions (`messages[i]` is `self.messages()[i]` for each) and
    /// counting the rest. Pins carry over to unchanged positions.
    #[must_use]
    pub fn derive(&self, messages: Vec<Message>, unchanged: impl Fn(usize) -> bool) -> Conversation {
        self.derive_known(messages, unchanged, |_| None)
    }

    /// [`derive`](Self::derive), taking the counts `known` gives (the count of the new message
    /// at that position, as [`tokens::count_message`] would give it) instead of counting.
    #[must_use]
    pub fn derive_known(
        &self,
        messages: Vec<Message>,
        unchanged: impl Fn(usize) -> bool,
        known: impl Fn(usize) -> Option<MessageTokens>,
    ) -> Conversation {
        let unchanged = |i: usize| i < self.messages.len() && unchanged(i);
        let mut counts: Vec<Option<MessageTokens>> = (0..messages.len())
            .map(|i| {
                if unchanged(i) {
                    Some(self.counts[i].clone())
                } else {
                    known(i)
                }
            })
            .collect();
        let fresh: Vec<usize> = (0..messages.len()).filter(|&i| counts[i].is_none()).collect();
        let fresh_counts = tokens::count_each(self.encoding, &messages, &fresh);
        for (i, c) in fresh.iter().zip(fresh_counts) {
            counts[*i] = Some(c);
        }
        let counts: Vec<MessageTokens> = counts.into_iter().map(|c| c.expect("every message counted")).collect();
        // Nothing changed and nothing added: the totals are the same.
        let tally = if (0..messages.len()).all(unchanged) && messages.len() == self.messages.len() {
            self.tally.clone()
        } else {
            Tally::of(&messages, &counts)
        };
        let pinned = self
            .pinned
            .iter()
            .copied()
            .filter(|&i| i < messages.len() && unchanged(i))
            .collect();
        let classes = ClassCache::derive(self.classes.as_ref(), messages.len(), unchanged);
        Conversation {
            format: self.format,
            encoding: self.encoding,
            messages,
            counts,
            tally,
            pinned,
            classes,
            cuts: std::sync::OnceLock::new(),
        }
    }

    /// Messages `start..stop` as a conversation, with their counts and pins.
    #[must_use]
    pub fn from_counted(other: &Conversation, start: usize, stop: usize) -> Conversation {
        let messages = other.messages[start..stop].to_vec();
        let counts = other.counts[start..stop].to_vec();
        // A copy of the whole (the ladder's snapshot) has the same tally: cloned, not tallied anew
        // (unless a message was taken off it: a tally anew forgets that message's call ids).
        let tally = if start == 0 && stop == other.len() && !other.tally.removed {
            other.tally.clone()
        } else {
            Tally::of(&messages, &counts)
        };
        Conversation {
            format: other.format,
            encoding: other.encoding,
            messages,
            counts,
            tally,
            pinned: other
                .pinned
                .iter()
                .filter(|&&i| (start..stop).contains(&i))
                .map(|i| i - start)
                .collect(),
            classes: ClassCache::slice(other.classes.as_ref(), start, stop),
            cuts: std::sync::OnceLock::new(),
        }
    }

    /// The conversations one after the other, counts reused (formats and encodings must match;
    /// the caller checks).
    #[must_use]
    pub fn concat(parts: &[&Conversation]) -> Conversation {
        let first = parts[0];
        let mut out = Conversation::new(first.format, first.encoding);
        for p in parts {
            let offset = out.messages.len();
            out.pinned.extend(p.pinned.iter().map(|i| i + offset));
            out.messages.extend(p.messages.iter().cloned());
            out.counts.extend(p.counts.iter().cloned());
        }
        out.tally = Tally::of(&out.messages, &out.counts);
        out.classes = ClassCache::concat(parts.iter().map(|p| (p.classes.as_ref(), p.len())));
        out
    }

    /// Messages never cleared or summarized.
    pub fn pinned(&self) -> &BTreeSet<usize> {
        &self.pinned
    }

    /// Pin (or unpin) a message.
    pub fn set_pinned(&mut self, index: usize, pinned: bool) -> Result<()> {
        self.get(index)?;
        if pinned {
            self.pinned.insert(index);
        } else {
            self.pinned.remove(&index);
        }
        Ok(())
    }

    /// Token counts per message (totals only).
    pub fn totals(&self) -> Vec<usize> {
        self.counts.iter().map(|c| c.total).collect()
    }

    pub fn from_messages(format: Format, encoding: Encoding, messages: Vec<Message>) -> Self {
        let mut c = Conversation::new(format, encoding);
        c.extend(messages);
        c
    }

    pub fn format(&self) -> Format {
        self.format
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Where history may be cut (`compact::select::cut_points_of`: starts of groups and rounds
    /// that do not separate a tool call from its result, ascending), computed once.
    pub fn cut_points(&self) -> &[usize] {
        self.cuts.get_or_init(|| {
            let m = self.messages.as_slice();
            crate::compact::select::cut_points_of(m, &crate::compact::Pairing::of(m))
        })
    }

    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    pub fn counts(&self) -> &[MessageTokens] {
        &self.counts
    }

    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    pub fn len(&self) -> usize {
        self.messages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    pub fn total_tokens(&self) -> usize {
        self.tally.total
    }

    pub fn get(&self, index: usize) -> Result<&Message> {
        self.messages.get(index).ok_or(Error::IndexOutOfRange {
            index,
            len: self.messages.len(),
        })
    }

    /// Parse `values` in the conversation's format and append them.
    pub fn extend_values(&mut self, values: Vec<Value>) -> Result<()> {
        let parsed = formats::read(self.format, values)?;
        self.extend(parsed);
        Ok(())
    }

    /// Append parsed messages, counting only them. A Responses assistant turn that arrives item by
    /// item is merged into the open assistant message, which is then recounted alone.
    pub fn extend(&mut self, mut messages: Vec<Message>) {
        if messages.is_empty() {
            return;
        }
        self.cuts = std::sync::OnceLock::new();
        let merge = matches!(
            (self.messages.last(), messages.first()),
            (Some(last), Some(first)) if formats::responses::is_open_group(last)
                && formats::responses::is_open_group(first)
                && first.blocks.first().is_some_and(|b| formats::responses::joins(last, b))
        );
        if merge {
            let first = messages.remove(0);
            let last = self.messages.len() - 1;
            let old = self.counts.pop().expect("counts follow messages");
            self.tally.remove(&self.messages[last], &old);
            let merged = self.messages[last]
                .blocks
                .iter()
                .chain(first.blocks.iter())
                .cloned()
                .collect();
            self.messages[last].blocks = merged;
            if let Some(c) = &mut self.classes {
                c.forget(last);
            }
            let new = tokens::count_message(self.encoding, &self.messages[last]);
            self.tally.add(&self.messages[last], &new);
            self.counts.push(new);
        }
        let counts = tokens::count_messages(self.encoding, &messages);
        for (m, c) in messages.iter().zip(&counts) {
            self.tally.add(m, c);
        }
        self.messages.extend(messages);
        self.counts.extend(counts);
    }

    /// Write the conversation in `format`.
    pub fn to_format(&self, format: Format) -> Result<Vec<Value>> {
        formats::write(format, &self.messages)
    }

    /// Write the conversation as an Anthropic request: `(system, messages)`.
    pub fn to_anthropic(&self) -> Result<(Option<Value>, Vec<Value>)> {
        formats::anthropic::write(&self.messages)
    }

    /// Write the conversation in `format` for a provider's request: only messages read from
    /// `format` keep their unknown fields ([`formats::for_request`]).
    pub fn to_request(&self, format: Format) -> Result<Vec<Value>> {
        formats::write(format, &formats::for_request(&self.messages, format))
    }

    /// [`Self::to_anthropic`] for a provider's request ([`formats::for_request`]).
    pub fn to_anthropic_request(&self) -> Result<(Option<Value>, Vec<Value>)> {
        formats::anthropic::write(&formats::for_request(&self.messages, Format::Anthropic))
    }

    /// Totals under another encoding (counted now, not cached).
    pub fn tally_with(&self, encoding: Encoding) -> Tally {
        if encoding == self.encoding {
            return self.tally.clone();
        }
        let counts = tokens::count_messages(encoding, &self.messages);
        Tally::of(&self.messages, &counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chat(values: Vec<Value>) -> Conversation {
        let mut c = Conversation::new(Format::OpenAiChat, Encoding::O200k);
        c.extend_values(values).unwrap();
        c
    }

    #[test]
    fn cut_points_are_kept_until_messages_are_appended() {
        let mut c = chat(vec![
            json!({"role": "system", "content": "rules"}),
            json!({"role": "user", "content": "go"}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}),
        ]);
        let fresh = |c: &Conversation| {
            crate::compact::select::cut_points_of(c.messages(), &crate::compact::Pairing::of(c.messages()))
        };
        assert_eq!(c.cut_points(), fresh(&c).as_slice());
        // The call's result arrives, then a new request: a cut point after the pair.
        c.extend_values(vec![
            json!({"role": "tool", "tool_call_id": "c1", "content": "ok"}),
            json!({"role": "user", "content": "next"}),
        ])
        .unwrap();
        assert_eq!(c.cut_points(), fresh(&c).as_slice());
        assert!(c.cut_points().contains(&4));
        let part = Conversation::from_counted(&c, 0, 3);
        assert_eq!(part.cut_points(), fresh(&part).as_slice());
    }

    #[test]
    fn incremental_totals_match_a_full_recount() {
        let msgs = vec![
            json!({"role": "system", "content": "You are terse."}),
            json!({"role": "user", "content": "List the files."}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"cmd\": \"ls\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"}),
            json!({"role": "assistant", "content": "Two files."}),
        ];
        let mut inc = Conversation::new(Format::OpenAiChat, Encoding::O200k);
        for m in &msgs {
            inc.extend_values(vec![m.clone()]).unwrap();
        }
        let full = chat(msgs);
        assert_eq!(inc.tally(), full.tally());
        let t = full.tally();
        assert_eq!(t.tool_calls, 1);
        assert_eq!(t.by_tool["bash"].calls, 1);
        assert_eq!(t.by_tool["bash"].results, 1);
        assert_eq!(t.by_role.iter().sum::<usize>(), t.total);
        assert_eq!(t.total, full.counts().iter().map(|c| c.total).sum::<usize>());
    }

    #[test]
    fn a_whole_slice_has_the_tally_of_its_messages() {
        let msgs = vec![
            json!({"role": "user", "content": "List the files."}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "a.py"}),
            json!({"role": "tool", "tool_call_id": "c9", "content": "orphan"}),
        ];
        let whole = chat(msgs);
        for (start, stop) in [(0, 4), (0, 3), (1, 4), (2, 4)] {
            let part = Conversation::from_counted(&whole, start, stop);
            let anew = Tally::of(part.messages(), part.counts());
            assert_eq!(part.tally(), &anew, "{start}..{stop}");
            assert_eq!(part.tally().by_tool, anew.by_tool);
        }
        // Items merged into the last message (its tally taken off and added again): a whole
        // slice is tallied anew, as before.
        let mut merged = Conversation::new(Format::Responses, Encoding::O200k);
        for it in [
            json!({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}),
            json!({"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"}),
            json!({"type": "function_call_output", "call_id": "c1", "output": "ok"}),
        ] {
            merged.extend_values(vec![it]).unwrap();
        }
        assert!(merged.tally.removed);
        let part = Conversation::from_counted(&merged, 0, merged.len());
        assert!(!part.tally.removed);
        assert_eq!(part.tally(), &Tally::of(merged.messages(), merged.counts()));
    }

    #[test]
    fn responses_items_one_by_one_merge_like_a_batch() {
        let items = vec![
            json!({"role": "user", "content": "hi"}),
            json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}]}),
            json!({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}),
            json!({"type": "function_call_output", "call_id": "c1", "output": "ok"}),
        ];
        let mut one = Conversation::new(Format::Responses, Encoding::O200k);
        for it in &items {
            one.extend_values(vec![it.clone()]).unwrap();
        }
        let mut batch = Conversation::new(Format::Responses, Encoding::O200k);
        batch.extend_values(items.clone()).unwrap();
        assert_eq!(one.len(), 3);
        assert_eq!(one.messages(), batch.messages());
        assert_eq!(one.tally(), batch.tally());
        assert_eq!(one.to_format(Format::Responses).unwrap(), items);
    }

    fn call(id: &str, name: &str) -> Value {
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": "{}"}}]})
    }

    fn result(id: &str, text: &str) -> Value {
        json!({"role": "tool", "tool_call_id": id, "content": text})
    }

    #[test]
    fn results_go_to_the_latest_call_of_their_id_and_tallies_compare_by_attribution() {
        let in_order = chat(vec![
            call("c1", "read"),
            call("c2", "bash"),
            result("c1", "text"),
            result("c2", "out"),
        ]);
        let tally = in_order.tally();
        assert_eq!((tally.by_tool["read"].calls, tally.by_tool["read"].results), (1, 1));
        assert_eq!((tally.by_tool["bash"].calls, tally.by_tool["bash"].results), (1, 1));
        // Names seen in another order are the same attribution.
        let swapped = chat(vec![
            call("c2", "bash"),
            call("c1", "read"),
            result("c1", "text"),
            result("c2", "out"),
        ]);
        assert_eq!(in_order.tally(), swapped.tally());
        // An id called again under another name: its later result is that tool's; a result
        // without a call is the unknown tool's.
        let again = chat(vec![
            call("c1", "read"),
            call("c1", "grep"),
            result("c1", "x"),
            result("c9", "y"),
        ]);
        let tally = again.tally();
        assert_eq!((tally.by_tool["read"].calls, tally.by_tool["read"].results), (1, 0));
        assert_eq!((tally.by_tool["grep"].calls, tally.by_tool["grep"].results), (1, 1));
        assert_eq!(tally.by_tool[UNKNOWN_TOOL].results, 1);
        assert_ne!(in_order.tally(), again.tally());
        // Removing the last message gives the totals of the conversation without it.
        let mut tally = again.tally().clone();
        let last = again.len() - 1;
        tally.remove(&again.messages()[last], &again.counts()[last]);
        let shorter = chat(vec![call("c1", "read"), call("c1", "grep"), result("c1", "x")]);
        assert_eq!(tally.by_tool, shorter.tally().by_tool);
        assert_eq!(tally.total, shorter.tally().total);
    }
}
