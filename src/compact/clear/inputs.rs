//! Clearing old tool-call *arguments* (`clear_tool_inputs`), beside clearing old results.
//!
//! Some agents put most of a session into the arguments of their calls, not the results: a
//! `write` or `edit` call carries a whole file, the result says "wrote 3,210 bytes". Clearing the
//! results alone leaves those arguments in every later request. Here the arguments of every old
//! call — a completed pair outside the protected set (the newest `recent_tools` calls and the
//! recent messages), whose tool is not excluded: the same [`Candidates`] as results — are
//! replaced by a short placeholder, whether or not the call's result is cleared in the same pass
//! (or was cleared by an earlier one):
//!
//! ```text
//! {"cleared": "[cleared: arguments of write(path=src/app.py, content=import os…), 1,234 tokens; recall id call_1#arguments]"}
//! ```
//!
//! The call keeps its id and its name, so every pair stays valid; a JSON input stays a JSON
//! object (the placeholder is one), a free-form input (Codex `apply_patch`) becomes the text.
//! An input that is already a placeholder, or that its placeholder would not shrink, is left.

use serde_json::Value;

use super::placeholder::describe_call;
use super::{ClearOptions, ClearReport, Parsed, RecallIds, Replacement, result_tokens};
use crate::compact::structure::Pairing;
use crate::model::{Block, Body, ToolInput};

/// How the text of an input placeholder opens.
pub const INPUT_PLACEHOLDER_OPEN: &str = "[cleared: arguments of ";

/// What follows the call id in the recall id of a call's cleared arguments (`call_1#arguments`):
/// no provider's call id holds a `#` and a store's ids (`r-` and hex digits) none either, so the
/// name is neither the id of a result nor of a stored text.
pub const ARGUMENTS_SUFFIX: &str = "#arguments";

/// The key of the one-member object that replaces a cleared JSON input.
pub const INPUT_PLACEHOLDER_KEY: &str = "cleared";

/// The most characters of the call's description in an input placeholder (shorter than a
/// result's: here the description stands for the arguments themselves, and every cleared call
/// carries one).
const DESCRIPTION_CHARS: usize = 60;

/// An input placeholder's text is about 60 characters of description and a short tail; a raw
/// input longer than this is not one (so recognising one never scans a large input).
const MAX_PLACEHOLDER_BYTES: usize = 1024;

/// The text of the placeholder for the arguments of call `id` to `name`, which were `tokens`
/// tokens: the call described in one line, its size, and where the original is (the call id;
/// an empty `id` says that the original is not stored).
pub fn input_placeholder_text(name: &str, input: &ToolInput, tokens: usize, id: &str) -> String {
    let mut out = String::with_capacity(160);
    out.push_str(INPUT_PLACEHOLDER_OPEN);
    push_description(&mut out, &describe_call(name, input));
    out.push_str(", ");
    out.push_str(&grouped(tokens));
    if id.is_empty() {
        out.push_str(" tokens; not stored]");
    } else {
        out.push_str(" tokens; recall id ");
        out.push_str(id);
        out.push_str(ARGUMENTS_SUFFIX);
        out.push(']');
    }
    out
}

/// The input that replaces `input`: `{"cleared": text}` for JSON inputs (valid JSON in every
/// format, an object where a format requires one), the text itself for free-form input.
pub fn input_placeholder(name: &str, input: &ToolInput, tokens: usize, id: &str) -> ToolInput {
    let text = input_placeholder_text(name, input, tokens, id);
    match input {
        ToolInput::Freeform(_) => ToolInput::Freeform(text),
        ToolInput::Raw(_) | ToolInput::Json(_) => {
            let mut obj = serde_json::Map::with_capacity(1);
            obj.insert(INPUT_PLACEHOLDER_KEY.to_owned(), Value::String(text));
            ToolInput::Json(Box::new(Value::Object(obj)))
        }
    }
}

/// Whether `input` is a placeholder of this module (also after a round trip through a format
/// that keeps arguments as text, however that text is spaced).
pub fn is_cleared_input(input: &ToolInput) -> bool {
    match input {
        ToolInput::Json(v) => is_placeholder_value(v),
        ToolInput::Freeform(s) => s.starts_with(INPUT_PLACEHOLDER_OPEN),
        ToolInput::Raw(s) => {
            s.len() <= MAX_PLACEHOLDER_BYTES
                && s.contains(INPUT_PLACEHOLDER_OPEN)
                && serde_json::from_str::<Value>(s).is_ok_and(|v| is_placeholder_value(&v))
        }
    }
}

fn is_placeholder_value(v: &Value) -> bool {
    v.as_object().is_some_and(|o| {
        o.len() == 1
            && o.get(INPUT_PLACEHOLDER_KEY)
                .and_then(Value::as_str)
                .is_some_and(|s| s.starts_with(INPUT_PLACEHOLDER_OPEN))
    })
}

/// `description` (`name(key=value, ...)`) appended to `out`, cut to [`DESCRIPTION_CHARS`]
/// characters and closed with `…)` when longer.
fn push_description(out: &mut String, description: &str) {
    match description.char_indices().nth(DESCRIPTION_CHARS - 2) {
        Some((cut, _)) if description.chars().count() > DESCRIPTION_CHARS => {
            out.push_str(description[..cut].trim_end_matches('…'));
            out.push_str("…)");
        }
        _ => out.push_str(description),
    }
}

/// `n` with thousands separated by commas.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Replace the arguments of the calls `candidates` (indices into `pairing.calls`, as
/// [`Candidates`](super::Candidates) gives them) by placeholders, into the report and the
/// replacements: every call whose input is not a placeholder yet and whose block its
/// placeholder makes smaller.
pub(super) fn clear_inputs<'m>(
    source: &Parsed<'m, '_>,
    pairing: &Pairing<'m>,
    candidates: &[usize],
    options: &ClearOptions,
    report: &mut ClearReport<'m>,
    replace: &mut Vec<((usize, usize), Replacement)>,
) {
    let enc = source.enc;
    let ids = RecallIds::shown(pairing, options.recall_ids, super::shown_in(source.messages, pairing));
    for &ci in candidates {
        let c = &pairing.calls[ci];
        let block = &source.messages[c.at.0].blocks[c.at.1];
        let Body::ToolUse { id, name, input } = &block.body else {
            continue;
        };
        if is_cleared_input(input) {
            continue;
        }
        let was = source.cached(c.at).unwrap_or_else(|| result_tokens(enc, block));
        let cleared = Block {
            body: Body::ToolUse {
                id: id.clone(),
                name: name.clone(),
                input: input_placeholder(name, input, was, ids.get(ci)),
            },
            extra: block.extra.clone(),
            item: block.item.clone(),
        };
        let now = result_tokens(enc, &cleared);
        if now < was {
            report.tokens_freed += was - now;
            report.inputs_cleared.push(c.at.0);
            replace.push((c.at, Replacement::Block(Box::new(cleared))));
        }
    }
}

#[cfg(test)]
#[path = "inputs_tests.rs"]
mod tests;
