//! Deduplicating repeated read-only calls: earlier results of the same tool called with the same
//! input become a short stub pointing to the latest call.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::placeholder::{SUPERSEDED, describe_call};
use super::{Cleared, apply, live_result, with_text};
use crate::compact::select::Protected;
use crate::compact::structure::Pairing;
use crate::model::{Block, Body, Message, ToolInput};
use crate::tokens::{self, Encoding};

/// Replace the results of earlier calls to the same read-only tool with the same input by a
/// short stub pointing to the latest one. Protected messages are left alone.
pub fn dedup_repeated_calls<'m>(
    messages: &[Message],
    pairing: &Pairing<'m>,
    protected: &Protected,
    read_only: &BTreeSet<String>,
) -> (Vec<Message>, Vec<Cleared<'m>>) {
    // (name, canonical input) → the latest completed call
    let mut latest: HashMap<(String, String), usize> = HashMap::new();
    let canonical = |input: &ToolInput| match input {
        ToolInput::Freeform(s) => s.clone(),
        other => other.to_object().to_string(),
    };
    let input_of = |ci: usize| {
        let c = &pairing.calls[ci];
        match &messages[c.at.0].blocks[c.at.1].body {
            Body::ToolUse { input, .. } => Some(input),
            _ => None,
        }
    };
    for (ci, c) in pairing.calls.iter().enumerate() {
        if c.result.is_some() && read_only.contains(c.name) {
            if let Some(input) = input_of(ci) {
                latest.insert((c.name.to_owned(), canonical(input)), ci);
            }
        }
    }
    let mut replace: HashMap<(usize, usize), Block> = HashMap::new();
    let mut stubbed = Vec::new();
    for (ci, c) in pairing.calls.iter().enumerate() {
        let (Some(at), Some(input)) = (c.result, input_of(ci)) else {
            continue;
        };
        if !read_only.contains(c.name) || protected.messages.contains(&at.0) {
            continue;
        }
        let later = latest[&(c.name.to_owned(), canonical(input))];
        if later == ci {
            continue;
        }
        let Some((block, tool_use_id, is_error)) = live_result(messages, at) else {
            continue;
        };
        let text = format!(
            "{SUPERSEDED}{} was called again later (call {}); its latest result is the current one]",
            describe_call(c.name, input),
            pairing.calls[later].id
        );
        let before = tokens::count_block(Encoding::Heuristic, block);
        let new = with_text(block, tool_use_id, is_error, text);
        let after = tokens::count_block(Encoding::Heuristic, &new);
        if after >= before {
            continue;
        }
        stubbed.push(Cleared {
            index: at.0,
            tool_use_id: Cow::Borrowed(c.id),
            tool_name: Cow::Borrowed(c.name),
            tokens_before: before,
            tokens_after: after,
            // Counted with the heuristic, whatever the conversation's encoding.
            after_exact: false,
        });
        replace.insert(at, new);
    }
    // Only the messages holding a stubbed result are rebuilt; the rest are shared.
    let mut changed: HashMap<usize, Message> = HashMap::new();
    for ((mi, bi), block) in replace {
        let m = changed.entry(mi).or_insert_with(|| messages[mi].clone());
        Arc::make_mut(&mut m.blocks)[bi] = block;
    }
    let out = apply(messages, changed.into_iter().collect());
    (out, stubbed)
}
