//! Protocol validation: every way a conversation can make a provider reject the request over
//! tool pairing, placement, ids, reasoning order or empty messages, with message indices.

use super::structure::{Pairing, is_result_carrier};
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

/// Where the results of the calls in assistant message `call_msg` must be: the messages right
/// after it that carry only results (for Anthropic: the one user message right after it, with
/// the results first).
fn result_zone(messages: &[Message], call_msg: usize) -> std::ops::Range<usize> {
    let start = call_msg + 1;
    if messages[call_msg].origin == Format::Anthropic {
        let end = if start < messages.len() && messages[start].role == Role::User {
            start + 1
        } else {
            start
        };
        return start..end;
    }
    let mut end = start;
    while end < messages.len() && is_result_carrier(&messages[end]) {
        end += 1;
    }
    start..end
}

fn is_empty(m: &Message) -> bool {
    m.blocks.iter().all(|b| match &b.body {
        Body::Text { text } => text.trim().is_empty(),
        _ => false,
    })
}

pub fn validate(messages: &[Message]) -> Vec<Violation> {
    let pairing = Pairing::of(messages);
    validate_with(messages, &pairing)
}

pub fn validate_with(messages: &[Message], pairing: &Pairing) -> Vec<Violation> {
    let mut out = Vec::new();
    let id_at = |(m, b): (usize, usize)| match &messages[m].blocks[b].body {
        Body::ToolResult { tool_use_id, .. } => Some(tool_use_id.clone()),
        _ => None,
    };
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
    for c in &pairing.calls {
        match c.result {
            None => out.push(Violation {
                kind: ViolationKind::MissingResult,
                index: c.at.0,
                id: Some(c.id.to_owned()),
                detail: format!("tool call {} ({}) has no result", c.id, c.name),
            }),
            Some((rm, rb)) => {
                let zone = result_zone(messages, c.at.0);
                // Anthropic: tool results also open the user message that carries them.
                let m = &messages[rm];
                let misplaced = !zone.contains(&rm)
                    || (m.origin == Format::Anthropic
                        && m.blocks[..rb]
                            .iter()
                            .any(|b| !matches!(b.body, Body::ToolResult { .. })));
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
    for (i, m) in messages.iter().enumerate() {
        if m.role == Role::Assistant {
            let mut seen_other = false;
            for b in m.blocks.iter() {
                match &b.body {
                    Body::Thinking { .. } | Body::RedactedThinking { .. } if seen_other => {
                        out.push(Violation {
                            kind: ViolationKind::ThinkingOrder,
                            index: i,
                            id: None,
                            detail: "thinking after a tool call or text in the same turn".into(),
                        });
                        break;
                    }
                    Body::ToolUse { .. } | Body::Text { .. } => seen_other = true,
                    _ => {}
                }
            }
        }
        if is_empty(m) && !m.role.is_instruction() {
            out.push(Violation {
                kind: ViolationKind::EmptyMessage,
                index: i,
                id: None,
                detail: format!("{} message with no content", m.role.as_str()),
            });
        }
    }
    out.sort_by_key(|v| (v.index, v.kind.as_str()));
    out
}
