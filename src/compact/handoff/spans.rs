//! Handoffs of several spans that start at the same message, from one scan: the facts of each
//! message and of each tool call are scanned once and kept, so that the handoff of a shorter or
//! longer span only scans what it has not seen (the messages past the longest span scanned, and a
//! call whose result now lies inside or outside the span) and merges.

use rayon::prelude::*;

use super::scan::{CallFacts, MessageFacts, PARALLEL_CALLS, is_read_tool, is_write_tool, scan_call, scan_message};
use super::{Fields, Handoff, merge, merge_texts, merge_texts_with};
use crate::compact::structure::{Call, FastMap, Pairing};
use crate::model::Message;

/// A call's position and that of its result (None: none in the span).
type CallKey = ((usize, usize), Option<(usize, usize)>);

/// The scanned facts of the messages of spans that start at one message, positions relative to
/// it. The messages scanned must not change between calls (a conversation only grows).
#[derive(Default)]
pub struct Scan {
    messages: Vec<MessageFacts>,
    /// The facts of each call scanned, in the order scanned, and where each call's are.
    calls: Vec<CallFacts>,
    at: FastMap<CallKey, usize>,
    /// The span merged last: its calls, and its ledger fields once merged (a compaction asks for
    /// the ledger of a span and then for its whole handoff).
    last: Option<Span>,
}

/// The calls of a span of `len` messages (as [`Pairing::of`] gives them) and its handoff with
/// the ledger fields only, once merged.
struct Span {
    len: usize,
    /// The message of each call, and where its facts are in [`Scan::calls`].
    calls: Vec<(usize, usize)>,
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

    /// Whether the whole handoff of the span of `len` messages can be made without reading them
    /// ([`Scan::known_handoff`]): it is the span merged last, with its ledger fields (a compaction
    /// asks for the ledger of its span before the whole handoff).
    pub fn knows(&self, len: usize) -> bool {
        self.last
            .as_ref()
            .is_some_and(|span| span.len == len && span.ledger.is_some())
    }

    /// Where the last message with assistant text is among the first `len` scanned (the one a
    /// handoff's `last_assistant` is of).
    pub fn last_text(&self, len: usize) -> Option<usize> {
        self.messages.get(..len)?.iter().rposition(|f| f.has_text)
    }

    /// [`Scan::handoff`] of the span of `len` messages when [`Scan::knows`] it, given its last
    /// assistant text (`last_assistant`, as a handoff holds it: that of the message
    /// [`Scan::last_text`] names, trimmed and clipped); None otherwise.
    pub fn known_handoff(&self, len: usize, last_assistant: Option<String>) -> Option<Handoff> {
        let span = self.last.as_ref().filter(|span| span.len == len)?;
        let ledger = span.ledger.as_ref()?;
        let facts: Vec<&CallFacts> = span.calls.iter().map(|&(_, k)| &self.calls[k]).collect();
        let at: Vec<usize> = span.calls.iter().map(|&(m, _)| m).collect();
        let mut h = ledger.clone();
        merge_texts_with(&mut h, last_assistant, &at, &self.messages[..len], &facts);
        Some(h)
    }

    fn merged(&mut self, messages: &[Message], fields: Fields) -> Handoff {
        let seen = self.messages.len();
        let new = messages.get(seen..).unwrap_or_default();
        // The same span again (the spans start at one message): its calls are known.
        let known = self.last.take().filter(|span| span.len == messages.len());
        let Scan {
            messages: scanned,
            calls,
            at,
            ..
        } = self;
        // The new messages and the span's new calls, scanned side by side on all cores when many.
        let mut scan_messages = || {
            // Scanned into place (no list of facts made and then moved).
            if new.len() >= PARALLEL_CALLS {
                crate::parallel::install(|| {
                    scanned.par_extend(new.par_iter().enumerate().map(|(i, m)| scan_message(seen + i, m)));
                });
            } else {
                scanned.extend(new.iter().enumerate().map(|(i, m)| scan_message(seen + i, m)));
            }
        };
        let scan_span = || {
            known.unwrap_or_else(|| {
                let pairing = Pairing::of(messages);
                scan_calls(calls, at, messages, &pairing);
                Span {
                    len: messages.len(),
                    calls: pairing.calls.iter().map(|c| (c.at.0, at[&(c.at, c.result)])).collect(),
                    ledger: None,
                }
            })
        };
        let mut span = if new.len() >= PARALLEL_CALLS {
            crate::parallel::install(|| rayon::join(scan_messages, scan_span).1)
        } else {
            scan_messages();
            scan_span()
        };
        let facts: Vec<&CallFacts> = span.calls.iter().map(|&(_, k)| &self.calls[k]).collect();
        let at: Vec<usize> = span.calls.iter().map(|&(m, _)| m).collect();
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
}

/// Scan the calls of `pairing` not scanned yet with their result (on all cores for many) into
/// `calls`, noting where each call's facts are in `at`.
fn scan_calls(
    calls: &mut Vec<CallFacts>,
    at: &mut FastMap<CallKey, usize>,
    messages: &[Message],
    pairing: &Pairing<'_>,
) {
    let missing: Vec<&Call<'_>> = pairing
        .calls
        .iter()
        .filter(|c| !at.contains_key(&(c.at, c.result)))
        .collect();
    let mut kinds: FastMap<&str, (bool, bool)> = FastMap::default();
    for c in &missing {
        kinds
            .entry(c.name)
            .or_insert_with(|| (is_read_tool(c.name), is_write_tool(c.name)));
    }
    let first = calls.len();
    at.extend(missing.iter().enumerate().map(|(k, c)| ((c.at, c.result), first + k)));
    // Scanned into place, as the messages are.
    if missing.len() >= PARALLEL_CALLS {
        crate::parallel::install(|| {
            calls.par_extend(missing.par_iter().map(|c| scan_call(messages, c, kinds[c.name])));
        });
    } else {
        calls.extend(missing.iter().map(|c| scan_call(messages, c, kinds[c.name])));
    }
}
