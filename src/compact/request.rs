//! Request recognition: which user turn holds the user's latest ask — a real request, a summary of
//! earlier history (it holds the requests it replaced), or neither (tool results, harness texts).
//! `trim_messages` keeps what it finds, the offline handoff quotes it, the compactor checks
//! summaries against it.

use std::borrow::Cow;

use super::structure::{Shape, is_user_turn};
use crate::model::{Body, Message, Role};

/// Text that starts a summary this library (or a well-known harness) wrote into history: ours,
/// Claude Code's, pi's, and Codex's hand-off. A message an importer marked with a `compaction`
/// key is a summary too, whatever its words.
pub const SUMMARY_PREFIXES: &[&str] = &[
    "[agentcontext: earlier conversation compacted",
    "This session is being continued from a previous conversation",
    "The conversation history before this point was compacted",
    "Another language model started to solve this problem",
];

/// How the task ledger this library writes into a compacted working set opens: a user turn the
/// user did not type (never taken for a request; see `agentcontext.compaction.ledger`).
pub const LEDGER_PREFIX: &str = "[agentcontext: task ledger";

/// How every other text this library writes into a user turn opens (the marker that takes the
/// place of dropped messages: `[agentcontext: 3 earlier messages ... were dropped ...]`). Never a
/// request: the marker after a request kept apart from the recent part would be the latest
/// request of the next compaction, and the user's own would be dropped.
pub const MARKER_PREFIX: &str = "[agentcontext: ";

/// Text that harnesses put in user turns without the user typing it: Claude Code's task
/// notifications, command echoes, interruption markers and reminders. Such a message is never
/// taken for the user's request (its identifiers and paths still count).
pub const NOT_REQUEST_PREFIXES: &[&str] = &[
    "<task-notification>",
    "<local-command-",
    "<command-name>",
    "<command-message>",
    "<system-reminder>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "[Request interrupted by user",
    "Caveat: The messages below were generated",
    LEDGER_PREFIX,
    MARKER_PREFIX,
    ORPHAN_PREFIX,
    DUPLICATE_PREFIX,
];

/// How the user message a result without its call becomes opens (`super::repair::orphan_note`),
/// and one for a second result of a call (`super::repair::duplicate_note`): the repair's words,
/// never the user's request.
pub const ORPHAN_PREFIX: &str = "[tool result for call ";
pub const DUPLICATE_PREFIX: &str = "[another tool result for call ";

/// What a message is to the search for the user's latest ask ([`latest_ask`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AskKind {
    /// Not the user's ask: an assistant, system or tool message, a user message of tool results
    /// only, or a harness text in a user turn ([`NOT_REQUEST_PREFIXES`]).
    Not,
    /// A real user request.
    Request,
    /// A summary of earlier history ([`SUMMARY_PREFIXES`]): it holds the requests it replaced.
    Summary,
}

/// What the text of a user turn is ([`AskKind`]); `marked` says the message carries an importer's
/// `compaction` key.
pub fn ask_kind_of_text(text: &str, marked: bool) -> AskKind {
    if marked || SUMMARY_PREFIXES.iter().any(|p| text.starts_with(p)) {
        return AskKind::Summary;
    }
    let trimmed = text.trim();
    if trimmed.is_empty() || NOT_REQUEST_PREFIXES.iter().any(|p| trimmed.starts_with(p)) {
        AskKind::Not
    } else {
        AskKind::Request
    }
}

/// What `m` is to the search for the latest ask ([`AskKind`]): a summary by its first text
/// block; else a request when any of its text blocks is one (Claude Code may put a reminder
/// block before the user's own words).
pub fn ask_kind(m: &Message) -> AskKind {
    if !is_user_turn(m) {
        return AskKind::Not;
    }
    let marked = m.extra.contains_key("compaction");
    let mut texts = m.blocks.iter().filter_map(|b| match &b.body {
        Body::Text { text } if !text.trim().is_empty() => Some(text.as_str()),
        _ => None,
    });
    let Some(first) = texts.next() else {
        return if marked { AskKind::Summary } else { AskKind::Not };
    };
    match ask_kind_of_text(first, marked) {
        AskKind::Not if texts.any(|t| ask_kind_of_text(t, false) == AskKind::Request) => AskKind::Request,
        kind => kind,
    }
}

/// Whether `m` is a real user request: a user turn with text that is not only tool results,
/// not a summary of earlier history and not a harness text ([`NOT_REQUEST_PREFIXES`]).
pub fn is_request(m: &Message) -> bool {
    ask_kind(m) == AskKind::Request
}

/// The message at or after `from` that holds the user's latest ask: the latest real request, or a
/// summary of earlier history when no request follows it (it holds the requests it replaced).
/// The one search for "the latest request" — `trim_messages` keeps what it finds, the offline
/// handoff quotes it, the compactor checks summaries against it.
pub fn latest_ask<S: Shape + ?Sized>(messages: &S, from: usize) -> Option<(usize, AskKind)> {
    (from..messages.message_count())
        .rev()
        .map(|i| (i, messages.ask_at(i)))
        .find(|(_, kind)| *kind != AskKind::Not)
}

/// The latest real user request in `messages` ([`latest_ask`], when it is a request and not a
/// summary): its index and text.
pub fn latest_request(messages: &[Message]) -> Option<(usize, String)> {
    match latest_ask(messages, 0)? {
        (i, AskKind::Request) => Some((i, text_of(&messages[i]).trim().to_owned())),
        _ => None,
    }
}

/// Whether `m` holds a summary of earlier history (see [`SUMMARY_PREFIXES`]).
pub fn is_summary(m: &Message) -> bool {
    m.role == Role::User && ask_kind(m) == AskKind::Summary
}

/// The text of a message's text blocks joined by newlines ([`Message::joined_text`]), borrowed
/// when there is only one.
pub(crate) fn text_of(m: &Message) -> Cow<'_, str> {
    let mut texts = m.blocks.iter().filter_map(|b| match &b.body {
        Body::Text { text } => Some(text.as_str()),
        _ => None,
    });
    match (texts.next(), texts.next()) {
        (None, _) => Cow::Borrowed(""),
        (Some(only), None) => Cow::Borrowed(only),
        _ => Cow::Owned(m.joined_text()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats;
    use serde_json::json;

    #[test]
    fn the_latest_ask_skips_harness_texts_and_falls_back_to_a_summary() {
        let v = json!([
            {"role": "user", "content": "[agentcontext: earlier conversation compacted: 3 earlier messages]\n\nnotes"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "Port the parser."},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "1", "content": "done"},
            {"role": "user", "content": "<task-notification>\n<summary>Background command done</summary>\n</task-notification>"},
            {"role": "user", "content": "[Request interrupted by user]"},
            {"role": "user", "content": "  "}
        ]);
        let m = formats::openai_chat::read(serde_json::from_value(v).unwrap()).unwrap();
        assert_eq!(latest_ask(&m[..], 0), Some((2, AskKind::Request)));
        assert_eq!(latest_request(&m).map(|(i, _)| i), Some(2));
        assert_eq!(latest_ask(&m[..], 3), None);
        assert_eq!(latest_ask(&m[..2], 0), Some((0, AskKind::Summary)));
        assert_eq!(latest_request(&m[..2]), None, "a summary is not the user's words");
        // A reminder block before the user's own words does not hide the request.
        let v = json!([
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>todo list empty</system-reminder>"},
                {"type": "text", "text": "Rename the module."}]},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": [{"type": "text", "text": "<system-reminder>still empty</system-reminder>"}]}
        ]);
        let m = formats::anthropic::read(serde_json::from_value(v).unwrap(), None).unwrap();
        assert_eq!(latest_ask(&m[..], 0), Some((0, AskKind::Request)));
    }

    #[test]
    fn a_marker_of_dropped_messages_is_not_a_request() {
        // The drop keeps a request apart: a marker before it and one after it, then the recent part.
        let v = json!([
            {"role": "user", "content": "[agentcontext: 6 earlier messages (738 tokens) were dropped to fit the context window; the originals are not stored.]"},
            {"role": "user", "content": "Fix the parser."},
            {"role": "user", "content": "[agentcontext: 2 earlier messages (185 tokens) were dropped to fit the context window; the originals are not stored.]"},
            {"role": "assistant", "content": "reading"}
        ]);
        let m = formats::openai_chat::read(serde_json::from_value(v).unwrap()).unwrap();
        assert_eq!(latest_request(&m).map(|(i, _)| i), Some(1));
        assert_eq!(ask_kind(&m[2]), AskKind::Not);
    }
}
