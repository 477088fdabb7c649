//! Repair: turn any conversation into one every provider accepts, reporting each change.
//!
//! Results move right after their calls, a call without a result gets a clearly marked error
//! result, a result with no call before it (orphan) or a second result for a call becomes a user
//! message that says so and keeps its text (no content is lost), reused call ids are renamed
//! `id#2`, `id#3`, ... (with their results), thinking moves before the rest of its turn, and empty
//! messages are dropped. A valid conversation comes back unchanged, so repair is idempotent.
//! The agent-session importers (`agentcontext.importers`) build their conversations with this
//! repair, so imported and repaired conversations follow one convention.

use std::collections::HashMap;
use std::sync::Arc;

use super::request::{DUPLICATE_PREFIX, ORPHAN_PREFIX};
use super::structure::Pairing;
use super::validate::{ViolationKind, validate_with};
use crate::model::{Block, Body, ContentForm, Extra, Format, Message, ResultContent, Role};

/// The content of the result synthesized for a call that has none.
pub const INTERRUPTED: &str = "[no result: the tool call was interrupted before it returned]";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    MovedResult,
    SynthesizedResult,
    OrphanToUser,
    DuplicateToUser,
    RenamedId,
    ReorderedThinking,
    DroppedEmpty,
    DroppedCall,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::MovedResult => "moved_result",
            ChangeKind::SynthesizedResult => "synthesized_result",
            ChangeKind::OrphanToUser => "orphan_to_user",
            ChangeKind::DuplicateToUser => "duplicate_to_user",
            ChangeKind::RenamedId => "renamed_id",
            ChangeKind::ReorderedThinking => "reordered_thinking",
            ChangeKind::DroppedEmpty => "dropped_empty",
            ChangeKind::DroppedCall => "dropped_call",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub kind: ChangeKind,
    /// The message of the input the change is about.
    pub index: usize,
    /// The call id the change is about: as the input has it, except for a synthesized result,
    /// where it is the id the output gives the call (renamed when the call reused an id).
    pub id: Option<String>,
}

/// How [`repair_with`] repairs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RepairOptions {
    /// Leave the calls of the last message that is not a tool message (an agent's loop between a
    /// call and its result) without a synthesized result when nothing but results follows them in
    /// the repaired list: their results may still come. (A result after them that becomes a user
    /// message ends their wait: they get [`INTERRUPTED`].)
    pub leave_open: bool,
}

/// Repair `messages`; returns the repaired messages and what was changed (empty when the input
/// was valid, in which case the output equals the input).
pub fn repair(messages: &[Message]) -> (Vec<Message>, Vec<Change>) {
    repair_with(messages, RepairOptions::default())
}

/// [`repair`] as `options` say.
pub fn repair_with(messages: &[Message], options: RepairOptions) -> (Vec<Message>, Vec<Change>) {
    let pairing = Pairing::of(messages);
    if validate_with(messages, &pairing).is_empty() {
        return (messages.to_vec(), Vec::new());
    }
    let mut changes = Vec::new();

    // New ids for calls that reuse an id, and the result that follows each call.
    let renamed = rename_reused(&pairing, &mut changes);
    let call_at: HashMap<(usize, usize), usize> = pairing.calls.iter().enumerate().map(|(i, c)| (c.at, i)).collect();
    let result_of: HashMap<(usize, usize), usize> = pairing
        .calls
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.result.map(|r| (r, i)))
        .collect();
    // Results that answer no call (orphans) or a call already answered: user messages.
    let unpaired = unpaired_results(&pairing);
    let open = if options.leave_open {
        still_open(messages, &unpaired)
    } else {
        None
    };
    let dropped = dropped_calls(&pairing, open);

    let mut out: Vec<Message> = Vec::with_capacity(messages.len() + 4);
    for (mi, m) in messages.iter().enumerate() {
        let has_results = m.blocks.iter().any(|b| matches!(b.body, Body::ToolResult { .. }));
        let has_calls = m
            .blocks
            .iter()
            .enumerate()
            .any(|(bi, b)| is_call(b, (mi, bi), &call_at));
        if !has_results && !has_calls {
            match without_dropped(m, mi, &dropped, &mut changes) {
                Some(kept) => keep_plain(&kept, mi, &mut out, &mut changes),
                None => keep_plain(m, mi, &mut out, &mut changes),
            }
            continue;
        }
        // Results leave their carrier; they are written again right after their calls, or, when
        // they answer no call, as user messages where they stood.
        if has_results {
            unpaired_as_user(m, mi, &unpaired, &mut out, &mut changes);
        }
        let mut kept = m.clone();
        // Rename reused call ids first, while block indices still match the pairing.
        rename_calls(&mut kept, mi, &call_at, &renamed);
        if let Some(without) = without_dropped(&kept, mi, &dropped, &mut changes) {
            kept = without;
        }
        if has_results {
            kept.blocks = kept
                .blocks
                .iter()
                .filter(|b| !matches!(b.body, Body::ToolResult { .. }))
                .cloned()
                .collect();
        }
        if kept.role == Role::Assistant && reorder_thinking(&mut kept) {
            changes.push(Change {
                kind: ChangeKind::ReorderedThinking,
                index: mi,
                id: None,
            });
        }
        let emptied = is_empty(&kept) && !kept.role.is_instruction();
        if !kept.blocks.is_empty() && !emptied {
            out.push(kept);
        } else if !kept.blocks.is_empty() {
            changes.push(Change {
                kind: ChangeKind::DroppedEmpty,
                index: mi,
                id: None,
            });
        }
        if has_calls {
            let calls = Calls {
                pairing: &pairing,
                call_at: &call_at,
                result_of: &result_of,
                renamed: &renamed,
                open: open == Some(mi),
            };
            emit_results(messages, mi, &calls, &mut out, &mut changes);
        }
    }
    (out, changes)
}

/// [`repair`] for a list about to be sent as a request, or `None` when it needs none: the calls
/// of the last message that is not a tool message (an agent's loop between a call and its result)
/// may still get their results, so those left without one get no synthesized result as long as
/// nothing but results follows them; a call id reused with each call answered is left as it is
/// (providers accept it). Every other violation is repaired as [`repair`] does: a call without a
/// result gets [`INTERRUPTED`], a result with no call becomes a user message ([`orphan_note`]).
pub fn repair_request(messages: &[Message]) -> Option<Vec<Message>> {
    let pairing = Pairing::of(messages);
    let open = messages.iter().rposition(|m| m.role != Role::Tool);
    let needed = validate_with(messages, &pairing).iter().any(|v| match v.kind {
        ViolationKind::DuplicateId => false,
        ViolationKind::MissingResult => Some(v.index) != open,
        _ => true,
    });
    if !needed {
        return None;
    }
    Some(repair_with(messages, RepairOptions { leave_open: true }).0)
}

/// The last message that is not a tool message, when results alone follow it once repaired:
/// no result after it answers no call or a call already answered (`unpaired`), which would
/// become a user message after it.
fn still_open(messages: &[Message], unpaired: &HashMap<(usize, usize), ChangeKind>) -> Option<usize> {
    let open = messages.iter().rposition(|m| m.role != Role::Tool)?;
    let answered = unpaired.keys().all(|&(m, _)| m <= open);
    answered.then_some(open)
}

/// The note that opens the user message an orphan result becomes.
pub fn orphan_note(id: &str) -> String {
    format!("{ORPHAN_PREFIX}{id}, which is not in the conversation]")
}

/// The note that opens the user message a second result for a call becomes.
pub fn duplicate_note(id: &str) -> String {
    format!("{DUPLICATE_PREFIX}{id}, which already has one]")
}

/// Write the results of message `mi` that answer no call (or a call already answered) as user
/// messages: a note naming the call id, then the result's text. In the library's own format, a
/// tool message that carried just that result keeps its other fields (metadata such as a
/// compaction marker); a provider format's fields of a result (a Responses item's `type`, a Chat
/// tool message's `name`) would be wrong on a user message and are not kept.
fn unpaired_as_user(
    m: &Message,
    mi: usize,
    unpaired: &HashMap<(usize, usize), ChangeKind>,
    out: &mut Vec<Message>,
    changes: &mut Vec<Change>,
) {
    for (bi, b) in m.blocks.iter().enumerate() {
        let Body::ToolResult {
            tool_use_id, content, ..
        } = &b.body
        else {
            continue;
        };
        let Some(&kind) = unpaired.get(&(mi, bi)) else {
            continue;
        };
        changes.push(Change {
            kind,
            index: mi,
            id: Some(tool_use_id.clone()),
        });
        let note = if kind == ChangeKind::OrphanToUser {
            orphan_note(tool_use_id)
        } else {
            duplicate_note(tool_use_id)
        };
        let text = content.text();
        let text = if text.is_empty() {
            note
        } else {
            format!("{note}\n{text}")
        };
        let whole = m.role == Role::Tool && m.blocks.len() == 1 && m.origin == Format::Native;
        out.push(Message {
            role: Role::User,
            blocks: Arc::new([Block::new(Body::Text { text })]),
            form: ContentForm::String,
            origin: m.origin,
            extra: if whole { m.extra.clone() } else { Extra::new() },
        });
    }
}

fn is_empty(m: &Message) -> bool {
    m.blocks
        .iter()
        .all(|b| matches!(&b.body, Body::Text { text } if text.trim().is_empty()))
}

/// Move thinking blocks before the other blocks of an assistant turn; true if anything moved.
fn reorder_thinking(m: &mut Message) -> bool {
    let is_thinking = |b: &Block| matches!(b.body, Body::Thinking { .. } | Body::RedactedThinking { .. });
    let first_other = m.blocks.iter().position(|b| !is_thinking(b));
    let misplaced = first_other.is_some_and(|i| m.blocks[i..].iter().any(is_thinking));
    if misplaced {
        let (thinking, rest): (Vec<Block>, Vec<Block>) = m.blocks.iter().cloned().partition(is_thinking);
        m.blocks = thinking.into_iter().chain(rest).collect();
    }
    misplaced
}

/// New ids for calls that reuse an id (`#2`, `#3`, ... after it, unused), by call index.
fn rename_reused(pairing: &Pairing, changes: &mut Vec<Change>) -> HashMap<usize, String> {
    let mut renamed: HashMap<usize, String> = HashMap::new();
    let mut used: HashMap<String, usize> = HashMap::new();
    for c in &pairing.calls {
        *used.entry(c.id.to_owned()).or_default() += 1;
    }
    // Per id, the number after which the next free one is looked for: every one up to the last
    // given is used (`used` only grows), so the search starts after it, not at 2 again (a message
    // of 20,000 calls of one id took minutes).
    let mut after: HashMap<&str, usize> = HashMap::new();
    for &ci in &pairing.reused_ids {
        let base = &pairing.calls[ci].id;
        let from = after.entry(base).or_insert(1);
        let mut n = *from + 1;
        let mut candidate = format!("{base}#{n}");
        while used.contains_key(&candidate) {
            n += 1;
            candidate = format!("{base}#{n}");
        }
        *from = n;
        used.insert(candidate.clone(), 1);
        renamed.insert(ci, candidate);
        changes.push(Change {
            kind: ChangeKind::RenamedId,
            index: pairing.calls[ci].at.0,
            id: Some((*base).to_owned()),
        });
    }
    renamed
}

/// Results that answer no call (orphans) or a call already answered, by place, with the change
/// that makes them user messages.
fn unpaired_results(pairing: &Pairing) -> HashMap<(usize, usize), ChangeKind> {
    let mut unpaired: HashMap<(usize, usize), ChangeKind> = HashMap::new();
    for &at in &pairing.orphans {
        unpaired.insert(at, ChangeKind::OrphanToUser);
    }
    for &at in &pairing.duplicate_results {
        unpaired.insert(at, ChangeKind::DuplicateToUser);
    }
    unpaired
}

/// Keep message `mi` (`m`), which holds no call and no result: dropped when empty, its thinking
/// put first.
/// The built-in tool calls with no output item (a `computer_call`) to drop, by place, with
/// their ids: the library cannot write their output (a screenshot). All but those of the
/// message left `open`.
fn dropped_calls<'a>(pairing: &Pairing<'a>, open: Option<usize>) -> HashMap<(usize, usize), &'a str> {
    pairing
        .unanswered_opaque
        .iter()
        .filter(|c| open != Some(c.at.0))
        .map(|c| (c.at, c.id))
        .collect()
}

/// Message `mi` without its blocks `dropped` (unanswered built-in tool calls, by place, with
/// their ids), each a [`ChangeKind::DroppedCall`]; None when it holds none.
fn without_dropped(
    m: &Message,
    mi: usize,
    dropped: &HashMap<(usize, usize), &str>,
    changes: &mut Vec<Change>,
) -> Option<Message> {
    if dropped.is_empty() || !(0..m.blocks.len()).any(|bi| dropped.contains_key(&(mi, bi))) {
        return None;
    }
    let mut blocks = Vec::with_capacity(m.blocks.len());
    for (bi, b) in m.blocks.iter().enumerate() {
        match dropped.get(&(mi, bi)) {
            Some(id) => changes.push(Change {
                kind: ChangeKind::DroppedCall,
                index: mi,
                id: Some((*id).to_owned()),
            }),
            None => blocks.push(b.clone()),
        }
    }
    let mut kept = m.clone();
    kept.blocks = blocks.into();
    Some(kept)
}

fn keep_plain(m: &Message, mi: usize, out: &mut Vec<Message>, changes: &mut Vec<Change>) {
    if is_empty(m) && !m.role.is_instruction() {
        changes.push(Change {
            kind: ChangeKind::DroppedEmpty,
            index: mi,
            id: None,
        });
        return;
    }
    let mut kept = m.clone();
    if kept.role == Role::Assistant && reorder_thinking(&mut kept) {
        changes.push(Change {
            kind: ChangeKind::ReorderedThinking,
            index: mi,
            id: None,
        });
    }
    out.push(kept);
}

/// What [`emit_results`] reads of the calls: their pairing, each call's index by place, each
/// paired result's call, the calls renamed, and whether the message's calls are left open
/// ([`RepairOptions::leave_open`]).
struct Calls<'p, 'a> {
    pairing: &'p Pairing<'a>,
    call_at: &'p HashMap<(usize, usize), usize>,
    result_of: &'p HashMap<(usize, usize), usize>,
    renamed: &'p HashMap<usize, String>,
    open: bool,
}

/// Write the results of the calls in message `mi` right after it, in call order: a call without
/// one gets [`INTERRUPTED`], unless the message's calls are left open.
fn emit_results(messages: &[Message], mi: usize, calls: &Calls, out: &mut Vec<Message>, changes: &mut Vec<Change>) {
    let Calls {
        pairing,
        call_at,
        result_of,
        renamed,
        open,
    } = *calls;
    let m = &messages[mi];
    let anthropic = m.origin == Format::Anthropic;
    let mut blocks: Vec<(Block, Option<usize>)> = Vec::new();
    for (bi, b) in m.blocks.iter().enumerate() {
        if !is_call(b, (mi, bi), call_at) {
            continue;
        }
        let ci = call_at[&(mi, bi)];
        let call = &pairing.calls[ci];
        let id = renamed.get(&ci).map_or_else(|| call.id.to_owned(), Clone::clone);
        if let Some(at) = call.result {
            {
                let mut block = messages[at.0].blocks[at.1].clone();
                if let Body::ToolResult { tool_use_id, .. } = &mut block.body {
                    tool_use_id.clone_from(&id);
                }
                if !in_place(messages, mi, at) {
                    changes.push(Change {
                        kind: ChangeKind::MovedResult,
                        index: at.0,
                        id: Some(call.id.to_owned()),
                    });
                }
                debug_assert_eq!(result_of.get(&at), Some(&ci));
                blocks.push((block, Some(at.0)));
            }
        } else if !open {
            {
                changes.push(Change {
                    kind: ChangeKind::SynthesizedResult,
                    index: mi,
                    id: Some(id.clone()),
                });
                let block = Block::new(Body::ToolResult {
                    tool_use_id: id,
                    content: ResultContent::Text(INTERRUPTED.to_owned()),
                    is_error: Some(true),
                });
                blocks.push((block, None));
            }
        }
    }
    if !blocks.is_empty() {
        push_results(messages, m, anthropic, blocks, out);
    }
}

/// Write the result `blocks` of the calls in `m` (each with the message it came from): one user
/// message for Anthropic, else a tool message each.
fn push_results(
    messages: &[Message],
    m: &Message,
    anthropic: bool,
    blocks: Vec<(Block, Option<usize>)>,
    out: &mut Vec<Message>,
) {
    if anthropic {
        // One user message; it keeps the fields of the message the results came from when that
        // message carried nothing else.
        let sources: Vec<usize> = blocks.iter().filter_map(|(_, s)| *s).collect();
        let template = sources
            .first()
            .filter(|&&s| sources.iter().all(|&x| x == s) && messages[s].is_tool_results_only())
            .map(|&s| &messages[s]);
        out.push(Message {
            role: Role::User,
            blocks: blocks.into_iter().map(|(b, _)| b).collect(),
            form: ContentForm::Parts,
            origin: Format::Anthropic,
            extra: template.map(|t| t.extra.clone()).unwrap_or_default(),
        });
    } else {
        for (block, source) in blocks {
            // A tool message that carried just this result moves whole, keeping its fields.
            let original = source
                .map(|s| &messages[s])
                .filter(|s| s.role == Role::Tool && s.blocks.len() == 1);
            out.push(match original {
                Some(orig) => Message {
                    blocks: Arc::new([block]),
                    ..orig.clone()
                },
                None => Message {
                    role: Role::Tool,
                    form: if matches!(
                        &block.body,
                        Body::ToolResult {
                            content: ResultContent::Parts(_),
                            ..
                        }
                    ) {
                        ContentForm::Parts
                    } else {
                        ContentForm::String
                    },
                    blocks: Arc::new([block]),
                    origin: m.origin,
                    extra: Extra::new(),
                },
            });
        }
    }
}

/// Give the calls of message `kept` (message `mi` of the input) that reuse an id their new ids
/// (`renamed`, by call index; `call_at`: each call's index by place).
fn rename_calls(
    kept: &mut Message,
    mi: usize,
    call_at: &HashMap<(usize, usize), usize>,
    renamed: &HashMap<usize, String>,
) {
    if renamed.is_empty() {
        return;
    }
    for (bi, b) in Arc::make_mut(&mut kept.blocks).iter_mut().enumerate() {
        let Some(new) = call_at.get(&(mi, bi)).and_then(|ci| renamed.get(ci)) else {
            continue;
        };
        match &mut b.body {
            Body::ToolUse { id, .. } => id.clone_from(new),
            Body::Opaque { value } => {
                if let Some(object) = value.as_object_mut() {
                    object.insert("call_id".into(), new.clone().into());
                }
            }
            _ => {}
        }
    }
}

/// Whether block `b` at `at` is a call of the pairing (`call_at`): a `tool_use`, or a built-in
/// tool's opaque call paired with its output ([`Pairing::of`]).
fn is_call(b: &Block, at: (usize, usize), call_at: &HashMap<(usize, usize), usize>) -> bool {
    match b.body {
        Body::ToolUse { .. } => true,
        Body::Opaque { .. } => call_at.contains_key(&at),
        _ => false,
    }
}

/// Whether the result at `at` already sits right after its call message `mi`, in a message that
/// carries only results (a carrier with other content is split by the repair).
fn in_place(messages: &[Message], mi: usize, at: (usize, usize)) -> bool {
    if at.0 <= mi || !messages[at.0].is_tool_results_only() {
        return false;
    }
    messages[mi + 1..at.0].iter().all(super::structure::is_result_carrier)
        && (messages[mi].origin != Format::Anthropic || at.0 == mi + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::testing::{call, chat};
    use crate::compact::validate::validate;
    use crate::formats;
    use serde_json::json;

    #[test]
    fn repairs_every_kind_and_is_idempotent() {
        let m = chat(json!([
            {"role": "user", "content": "a"},
            {"role": "tool", "tool_call_id": "ghost", "content": "orphan"},
            {"role": "assistant", "content": null, "tool_calls": [call("1"), call("2")]},
            {"role": "user", "content": "interrupting"},
            {"role": "tool", "tool_call_id": "1", "content": "late"},
            {"role": "assistant", "content": null, "tool_calls": [call("1")]},
            {"role": "tool", "tool_call_id": "1", "content": "reused"},
            {"role": "assistant", "content": ""},
        ]));
        assert!(!validate(&m).is_empty());
        let (fixed, changes) = repair(&m);
        assert!(validate(&fixed).is_empty(), "{:?}", validate(&fixed));
        let kinds: Vec<&str> = changes.iter().map(|c| c.kind.as_str()).collect();
        for k in [
            "orphan_to_user",
            "moved_result",
            "synthesized_result",
            "renamed_id",
            "dropped_empty",
        ] {
            assert!(kinds.contains(&k), "{k} missing from {kinds:?}");
        }
        let (again, none) = repair(&fixed);
        assert_eq!(again, fixed);
        assert!(none.is_empty());
        let out = formats::openai_chat::write(&fixed);
        assert_eq!(out[1]["role"], "user");
        assert_eq!(out[1]["content"], format!("{}\norphan", orphan_note("ghost")));
        assert_eq!(out[3]["content"], "late");
        assert_eq!(out[4]["content"], INTERRUPTED);
        assert_eq!(out[6]["tool_calls"][0]["id"], "1#2");
        assert_eq!(out[7]["tool_call_id"], "1#2");
    }

    #[test]
    fn a_request_is_repaired_but_for_the_calls_still_open() {
        let open = chat(json!([
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": null, "tool_calls": [call("1"), call("2")]},
            {"role": "tool", "tool_call_id": "1", "content": "one"},
        ]));
        assert_eq!(repair_request(&open), None);
        let m = chat(json!([
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": null, "tool_calls": [call("1")]},
            {"role": "user", "content": "b"},
            {"role": "tool", "tool_call_id": "ghost", "content": "lost"},
            {"role": "assistant", "content": null, "tool_calls": [call("2"), call("3")]},
            {"role": "tool", "tool_call_id": "2", "content": "two"},
        ]));
        let fixed = formats::openai_chat::write(&repair_request(&m).unwrap());
        assert_eq!(fixed[2]["content"], INTERRUPTED);
        assert_eq!(fixed[4]["content"], format!("{}\nlost", orphan_note("ghost")));
        assert_eq!(fixed.len(), 7); // the open call 3 still waits for its result
        assert_eq!(fixed[6]["tool_call_id"], "2");
        // An orphan after the open calls: they no longer end the list and get a result.
        let m = chat(json!([
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": null, "tool_calls": [call("1")]},
            {"role": "tool", "tool_call_id": "ghost", "content": "lost"},
        ]));
        let fixed = repair_request(&m).unwrap();
        assert!(validate(&fixed).is_empty(), "{:?}", validate(&fixed));
    }
}

#[cfg(test)]
#[path = "repair_pairs_tests.rs"]
mod pairs_tests;
