//! Handoffs of several spans that start at the same message, from one scan: the facts of each
//! message and of each tool call are scanned once and kept, so that the handoff of a shorter or
//! longer span only scans what it has not seen (the messages past the longest span scanned, and a
//! call whose result now lies inside or outside the span) and merges.

use rayon::prelude::*;

use super::scan::{CallFacts, MessageFacts, PARALLEL_CALLS, is_read_tool, is_write_tool, scan_call, scan_message};
use super::{Fields, Handoff, merge, merge_texts};
use crate::compact::structure::{Call, FastMap, Pairing};
use crate::model::Message;

/// A call's position and that of its result (None: none in the span).
type CallKey = ((usize, usize), Option<(usize, usize)>);

/// The scanned facts of the messages of spans that start at one message, positions relative to
/// it. The messages scanned must not change between calls (a conversation only grows).
#[derive(Default)]
pub struct Scan {
    messages: Vec<MessageFacts>,
    calls: FastMap<CallKey, CallFacts>,
    /// The span merged last: its calls, and its ledger fields once merged (a compaction asks for
    /// the ledger of a span and then for its whole handoff).
    last: Option<Span>,
}

/// The calls of a span of `len` messages (as [`Pairing::of`] gives them) and its handoff with
/// the ledger fields only, once merged.
struct Span {
    len: usize,
    calls: Vec<CallKey>,
    ledger: Option<Handoff>,
}

impl Scan {
    /// The handoff of `messages` (a span starting where every earlier span given started):
    /// what [`super::extract`] returns for it.
    pub fn handoff(&mut self, messages: &[Message]) -> Handoff {
        self.merged(messages, Fields::All)
    }

    /// [`Scan::handoff`] with only the fields a task ledger reads: the user requests, their
    /// rules, the previous ledger, the files read and modified, the commands, the errors, the
    /// artifact trail, the plan and the counts (the others empty). The messages are scanned
    /// whole all the same, for a later [`Scan::handoff`].
    pub fn ledger_handoff(&mut self, messages: &[Message]) -> Handoff {
        self.merged(messages, Fields::Ledger)
    }

    fn merged(&mut self, messages: &[Message], fields: Fields) -> Handoff {
        let seen = self.messages.len();
        if messages.len() > seen {
            let new = &messages[seen..];
            if new.len() >= PARALLEL_CALLS {
                let scanned: Vec<MessageFacts> = new
                    .par_iter()
                    .enumerate()
                    .map(|(i, m)| scan_message(seen + i, m))
                    .collect();
                self.messages.extend(scanned);
            } else {
                self.messages
                    .extend(new.iter().enumerate().map(|(i, m)| scan_message(seen + i, m)));
            }
        }
        // The same span again (the spans start at one message): its calls are known.
        let mut span = match self.last.take() {
            Some(span) if span.len == messages.len() => span,
            _ => {
                let pairing = Pairing::of(messages);
                self.scan_calls(messages, &pairing);
                Span {
                    len: messages.len(),
                    calls: pairing.calls.iter().map(|c| (c.at, c.result)).collect(),
                    ledger: None,
                }
            }
        };
        let facts: Vec<&CallFacts> = span.calls.iter().map(|k| &self.calls[k]).collect();
        let at: Vec<usize> = span.calls.iter().map(|((m, _), _)| *m).collect();
        let scanned = &self.messages[..messages.len()];
        let h = match (&span.ledger, fields) {
            (Some(ledger), Fields::Ledger) => ledger.clone(),
            // The whole handoff is the ledger's fields and those of the texts.
            (Some(ledger), Fields::All) => {
                let mut h = ledger.clone();
                merge_texts(&mut h, messages, &at, scanned, &facts);
                h
            }
            (None, _) => {
                let h = merge(messages, &at, scanned, &facts, fields);
                if fields == Fields::Ledger {
                    span.ledger = Some(h.clone());
                }
                h
            }
        };
        self.last = Some(span);
        h
    }

    /// Scan the calls of `pairing` not scanned yet with their result (on all cores for many).
    fn scan_calls(&mut self, messages: &[Message], pairing: &Pairing<'_>) {
        let missing: Vec<&Call<'_>> = pairing
            .calls
            .iter()
            .filter(|c| !self.calls.contains_key(&(c.at, c.result)))
            .collect();
        let mut kinds: FastMap<&str, (bool, bool)> = FastMap::default();
        for c in &missing {
            kinds
                .entry(c.name)
                .or_insert_with(|| (is_read_tool(c.name), is_write_tool(c.name)));
        }
        let scanned: Vec<CallFacts> = if missing.len() >= PARALLEL_CALLS {
            missing
                .par_iter()
                .map(|c| scan_call(messages, c, kinds[c.name]))
                .collect()
        } else {
            missing.iter().map(|c| scan_call(messages, c, kinds[c.name])).collect()
        };
        self.calls.extend(missing.iter().map(|c| (c.at, c.result)).zip(scanned));
    }
}
