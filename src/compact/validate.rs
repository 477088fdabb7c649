//! Protocol validation: every way a conversation can make a provider reject the request over
//! tool pairing, placement, ids, reasoning order or empty messages, with message indices.

use super::structure::{Call, Pairing, Shape, result_carrier_at};
use crate::model::{Body, Format, Message, Role};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ViolationKind {
    /// A tool result whose id no earlier tool call has.
    OrphanResult,
    /// A tool call with no result after it.
    MissingResult,
    /// A result that exists but not where the format requires it.
    MisplacedResult,
    /// A second result for a call that already has one.
    DuplicateResult,
    /// A tool call id used by an earlier call too.
    DuplicateId,
    /// A thinking / reasoning block after a tool call or text in the same assistant turn.
    ThinkingOrder,
    /// A message with nothing in it.
    EmptyMessage,
}

impl ViolationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ViolationKind::OrphanResult => "orphan_result",
            ViolationKind::MissingResult => "missing_result",
            ViolationKind::MisplacedResult => "misplaced_result",
            ViolationKind::DuplicateResult => "duplicate_result",
            ViolationKind::DuplicateId => "duplicate_id",
            ViolationKind::ThinkingOrder => "thinking_order",
            ViolationKind::EmptyMessage => "empty_message",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub kind: ViolationKind,
    /// The message where the problem is.
    pub index: usize,
    /// The tool call id involved, if any.
    pub id: Option<String>,
    pub detail: String,
}

/// What validation reads of a conversation beyond its [`Shape`]: implemented by parsed messages
/// (`[Message]`) and by the whole-list fast path's skeleton of borrowed dicts, so that both judge
/// validity by the one set of rules below.
pub trait Checked: Shape {
    /// Whether the results of calls in message `i` travel in the one user message after it
    /// (Anthropic) rather than in the result messages after it.
    fn results_in_next_user(&self, i: usize) -> bool;
    /// Whether message `i` has nothing in it: no block but text that is empty or only whitespace.
    fn is_empty_at(&self, i: usize) -> bool;
    /// Whether message `m` holds anything but tool results before its block `b`.
    fn not_results_before(&self, m: usize, b: usize) -> bool;
    /// Whether assistant message `i` has a thinking block after a tool call or text.
    fn thinking_out_of_order(&self, i: usize) -> bool;
    /// The call id of the tool result at `at`.
    fn result_id(&self, at: (usize, usize)) -> Option<String>;
}

impl Checked for [Message] {
    fn results_in_next_user(&self, i: usize) -> bool {
        self[i].origin == Format::Anthropic
    }

    fn is_empty_at(&self, i: usize) -> bool {
        self[i].blocks.iter().all(|b| match &b.body {
            Body::Text { text } => text.trim().is_empty(),
            _ => false,
        })
    }

    fn not_results_before(&self, m: usize, b: usize) -> bool {
        self[m].blocks[..b]
            .iter()
            .any(|b| !matches!(b.body, Body::ToolResult { .. }))
    }

    fn thinking_out_of_order(&self, i: usize) -> bool {
        let mut seen_other = false;
        for b in self[i].blocks.iter() {
            match &b.body {
                Body::Thinking { .. } | Body::RedactedThinking { .. } if seen_other => return true,
                Body::ToolUse { .. } | Body::Text { .. } => seen_other = true,
                _ => {}
            }
        }
        false
    }

    fn result_id(&self, (m, b): (usize, usize)) -> Option<String> {
        match &self[m].blocks[b].body {
            Body::ToolResult { tool_use_id, .. } => Some(tool_use_id.clone()),
            _ => None,
        }
    }
}

/// Where the results of the calls in assistant message `call_msg` must be: the messages right
/// after it that carry only results (for Anthropic: the one user message right after it, with
/// the results first). `runs[i]` is where the run of result carriers from message `i` ends.
fn result_zone<S: Checked + ?Sized>(messages: &S, runs: &[usize], call_msg: usize) -> std::ops::Range<usize> {
    let start = call_msg + 1;
    if messages.results_in_next_user(call_msg) {
        let end = if start < messages.message_count() && messages.role_at(start) == Role::User {
            start + 1
        } else {
            start
        };
        return start..end;
    }
    start..runs[start]
}

/// For each message, and one past the end: where the run of result carriers from it ends.
fn carrier_runs<S: Shape + ?Sized>(messages: &S) -> Vec<usize> {
    let n = messages.message_count();
    let mut runs = vec![n; n + 1];
    for i in (0..n).rev() {
        runs[i] = if result_carrier_at(messages, i) { runs[i + 1] } else { i };
    }
    runs
}

/// The violation of a built-in tool call with no output item ([`Pairing::unanswered_opaque`]).
fn unanswered(c: &Call<'_>) -> Violation {
    Violation {
        kind: ViolationKind::MissingResult,
        index: c.at.0,
        id: Some(c.id.to_owned()),
        detail: format!("built-in tool call {} ({}) has no output item", c.id, c.name),
    }
}

pub fn validate(messages: &[Message]) -> Vec<Violation> {
    let pairing = Pairing::of(messages);
    validate_with(messages, &pairing)
}

/// The violations of `messages` paired as `pairing`, sorted by message index and kind.
pub fn validate_with<S: Checked + ?Sized>(messages: &S, pairing: &Pairing) -> Vec<Violation> {
    let mut out = Vec::new();
    let id_at = |at: (usize, usize)| messages.result_id(at);
    let runs = carrier_runs(messages);
    for &at in &pairing.orphans {
        out.push(Violation {
            kind: ViolationKind::OrphanResult,
            index: at.0,
            id: id_at(at),
            detail: "tool result without an earlier tool call of this id".into(),
        });
    }
    for &at in &pairing.duplicate_results {
        out.push(Violation {
            kind: ViolationKind::DuplicateResult,
            index: at.0,
            id: id_at(at),
            detail: "a second result for a call that already has one".into(),
        });
    }
    for &ci in &pairing.reused_ids {
        let c = &pairing.calls[ci];
        out.push(Violation {
            kind: ViolationKind::DuplicateId,
            index: c.at.0,
            id: Some(c.id.to_owned()),
            detail: "tool call id already used by an earlier call".into(),
        });
    }
    out.extend(pairing.unanswered_opaque.iter().map(unanswered));
    for c in &pairing.calls {
        match c.result {
            None => out.push(Violation {
                kind: ViolationKind::MissingResult,
                index: c.at.0,
                id: Some(c.id.to_owned()),
                detail: format!("tool call {} ({}) has no result", c.id, c.name),
            }),
            Some((rm, rb)) => {
                let zone = result_zone(messages, &runs, c.at.0);
                // Anthropic: tool results also open the user message that carries them.
                let misplaced =
                    !zone.contains(&rm) || (messages.results_in_next_user(rm) && messages.not_results_before(rm, rb));
                if misplaced {
                    out.push(Violation {
                        kind: ViolationKind::MisplacedResult,
                        index: rm,
                        id: Some(c.id.to_owned()),
                        detail: format!(
                            "the result of {} (message {}) is not right after its call",
                            c.id, c.at.0
                        ),
                    });
                }
            }
        }
    }
    for i in 0..messages.message_count() {
        let role = messages.role_at(i);
        if role == Role::Assistant && messages.thinking_out_of_order(i) {
            out.push(Violation {
                kind: ViolationKind::ThinkingOrder,
                index: i,
                id: None,
                detail: "thinking after a tool call or text in the same turn".into(),
            });
        }
        if !role.is_instruction() && messages.is_empty_at(i) {
            out.push(Violation {
                kind: ViolationKind::EmptyMessage,
                index: i,
                id: None,
                detail: format!("{} message with no content", role.as_str()),
            });
        }
    }
    out.sort_by_key(|v| (v.index, v.kind.as_str()));
    out
}
