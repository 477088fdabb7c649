//! Clearing old tool results (deterministic, no model involved) and deduplicating repeated
//! read-only calls. The tool call (name and input) always stays; user and assistant text is never
//! rewritten; protected and pinned messages are never touched.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::select::Protected;
use super::structure::Pairing;
use crate::model::{Block, Body, Message, ResultContent, Role, ToolInput};
use crate::tokens::{self, Encoding};

/// Options of [`clear_tool_results`].
#[derive(Clone, Debug)]
pub struct ClearOptions {
    /// Tools whose results are never cleared.
    pub exclude_tools: BTreeSet<String>,
    /// Also replace the inputs of cleared calls.
    pub clear_tool_inputs: bool,
    /// Clear only if at least this many tokens are freed (so the prompt cache is not broken for
    /// little gain); 0 clears whatever there is.
    pub clear_at_least: usize,
    /// Keep thinking blocks of old assistant turns (else they are dropped outside the protected set).
    pub keep_thinking: bool,
}

impl Default for ClearOptions {
    fn default() -> Self {
        ClearOptions {
            exclude_tools: BTreeSet::new(),
            clear_tool_inputs: false,
            clear_at_least: 0,
            keep_thinking: true,
        }
    }
}

/// One cleared result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cleared {
    pub index: usize,
    pub tool_use_id: String,
    pub tool_name: String,
    pub tokens_before: usize,
    pub tokens_after: usize,
}

/// What a clearing pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClearReport {
    pub cleared: Vec<Cleared>,
    /// Messages whose tool-call inputs were cleared (`clear_tool_inputs`).
    pub inputs_cleared: Vec<usize>,
    /// Messages whose old thinking blocks were dropped.
    pub thinking_dropped: Vec<usize>,
    pub tokens_freed: usize,
    /// Set when clearing would have freed less than `clear_at_least` and nothing was changed.
    pub skipped_below_minimum: bool,
}

/// A short rendering of a call: `read_file(path=src/app.py)`, at most about 100 characters.
pub fn describe_call(name: &str, input: &ToolInput) -> String {
    const VALUE_CHARS: usize = 60;
    const TOTAL_CHARS: usize = 100;
    let args = match input {
        ToolInput::Freeform(s) => shorten(s, VALUE_CHARS),
        other => match other.to_object() {
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) => shorten(s, VALUE_CHARS),
                        other => shorten(&other.to_string(), VALUE_CHARS),
                    };
                    format!("{k}={v}")
                })
                .collect::<Vec<_>>()
                .join(", "),
            other => shorten(&other.to_string(), VALUE_CHARS),
        },
    };
    shorten(&format!("{name}({args})"), TOTAL_CHARS)
}

fn shorten(s: &str, max: usize) -> String {
    let one_line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// The placeholder that replaces a cleared result.
pub fn placeholder(name: &str, input: &ToolInput, tokens: usize, id: &str) -> String {
    format!(
        "[cleared: result of {}, {} tokens; recall id {id}]",
        describe_call(name, input),
        group_digits(tokens)
    )
}

fn group_digits(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The result block `block` with its content replaced by `text` (id, error flag and unknown
/// fields kept).
fn with_text(block: &Block, tool_use_id: &str, is_error: Option<bool>, text: String) -> Block {
    Block {
        body: Body::ToolResult {
            tool_use_id: tool_use_id.to_owned(),
            content: ResultContent::Text(text),
            is_error,
        },
        extra: block.extra.clone(),
        item: block.item.clone(),
    }
}

/// The result block at `at` with its id and error flag, unless it is not a result or was already
/// replaced by a placeholder or a stub.
fn live_result(messages: &[Message], at: (usize, usize)) -> Option<(&Block, &str, Option<bool>)> {
    let block = &messages[at.0].blocks[at.1];
    match &block.body {
        Body::ToolResult {
            tool_use_id,
            content,
            is_error,
        } if !is_placeholder(content) => Some((block, tool_use_id.as_str(), *is_error)),
        _ => None,
    }
}

fn result_tokens(enc: Encoding, b: &Block) -> usize {
    tokens::count_block(enc, b)
}

/// Clear every completed, paired tool result outside `protected`: its content becomes a
/// placeholder naming the call, its size and a recall id (the call id). Returns the new messages
/// (only changed messages differ) and a report. Nothing changes when fewer than
/// `clear_at_least` tokens would be freed.
pub fn clear_tool_results(
    messages: &[Message],
    pairing: &Pairing,
    protected: &Protected,
    enc: Encoding,
    options: &ClearOptions,
) -> (Vec<Message>, ClearReport) {
    let (changed, report) = plan_clear(messages, pairing, protected, enc, options);
    (apply(messages, changed), report)
}

/// `messages` with the messages at the given positions replaced.
pub fn apply(messages: &[Message], changed: Vec<(usize, Message)>) -> Vec<Message> {
    let mut out = messages.to_vec();
    for (i, m) in changed {
        out[i] = m;
    }
    out
}

/// What [`clear_tool_results`] would change, without copying the rest: the new versions of the
/// changed messages (by position) and the report.
pub fn plan_clear(
    messages: &[Message],
    pairing: &Pairing,
    protected: &Protected,
    enc: Encoding,
    options: &ClearOptions,
) -> (Vec<(usize, Message)>, ClearReport) {
    plan_clear_counted(messages, None, pairing, protected, enc, options)
}

/// [`plan_clear`] reusing cached counts (`counts[i]` of message `i`) for the results it clears,
/// so only the placeholders are counted.
pub fn plan_clear_counted(
    messages: &[Message],
    counts: Option<&[tokens::MessageTokens]>,
    pairing: &Pairing,
    protected: &Protected,
    enc: Encoding,
    options: &ClearOptions,
) -> (Vec<(usize, Message)>, ClearReport) {
    let cached = |mi: usize, id: &str, side: tokens::ToolSide| {
        counts.and_then(|c| c.get(mi)).and_then(|mt| {
            mt.tools
                .iter()
                .find(|(tid, _, s)| tid == id && *s == side)
                .map(|(_, n, _)| *n)
        })
    };
    let mut report = ClearReport::default();
    // (message, block) → replacement block
    let mut replace: HashMap<(usize, usize), Block> = HashMap::new();
    let mut inputs: HashMap<(usize, usize), Block> = HashMap::new();
    for (ci, c) in pairing.calls.iter().enumerate() {
        let Some(at) = c.result else { continue };
        if protected.calls.contains(&ci)
            || protected.messages.contains(&at.0)
            || protected.messages.contains(&c.at.0)
            || options.exclude_tools.contains(c.name)
        {
            continue;
        }
        let Some((block, tool_use_id, is_error)) = live_result(messages, at) else {
            continue;
        };
        let Body::ToolUse { input, .. } = &messages[c.at.0].blocks[c.at.1].body else {
            continue;
        };
        let before = cached(at.0, tool_use_id, tokens::ToolSide::Result).unwrap_or_else(|| result_tokens(enc, block));
        let text = placeholder(c.name, input, before, c.id);
        // With cached counts the caller recounts changed messages anyway: when the result is
        // clearly larger than any count of its placeholder (at most 2 tokens a byte), the
        // placeholder is not counted here and the report holds that bound until the caller
        // fills in the exact figure.
        let bound = tokens::TOOL_BLOCK_OVERHEAD + 2 * text.len();
        let new = with_text(block, tool_use_id, is_error, text);
        let after = if counts.is_some() && before > bound {
            bound
        } else {
            result_tokens(enc, &new)
        };
        if after < before {
            report.tokens_freed += before - after;
            report.cleared.push(Cleared {
                index: at.0,
                tool_use_id: c.id.to_owned(),
                tool_name: c.name.to_owned(),
                tokens_before: before,
                tokens_after: after,
            });
            replace.insert(at, new);
        }
        if options.clear_tool_inputs {
            let call_block = &messages[c.at.0].blocks[c.at.1];
            if let Body::ToolUse { id, name, input } = &call_block.body {
                let summary = format!("[input cleared: {} chars]", input.as_text().chars().count());
                let mut obj = serde_json::Map::new();
                obj.insert("cleared".into(), Value::String(summary));
                let cleared = Block {
                    body: Body::ToolUse {
                        id: id.clone(),
                        name: name.clone(),
                        input: ToolInput::Json(Value::Object(obj)),
                    },
                    extra: call_block.extra.clone(),
                    item: call_block.item.clone(),
                };
                let was = cached(c.at.0, id, tokens::ToolSide::Call).unwrap_or_else(|| result_tokens(enc, call_block));
                let now = result_tokens(enc, &cleared);
                if now < was {
                    report.tokens_freed += was - now;
                    report.inputs_cleared.push(c.at.0);
                    inputs.insert(c.at, cleared);
                }
            }
        }
    }
    let mut drop_thinking: BTreeSet<usize> = BTreeSet::new();
    if !options.keep_thinking {
        for (i, m) in messages.iter().enumerate() {
            if m.role == Role::Assistant && !protected.messages.contains(&i) {
                let freed: usize = m
                    .blocks
                    .iter()
                    .filter(|b| matches!(b.body, Body::Thinking { .. } | Body::RedactedThinking { .. }))
                    .map(|b| result_tokens(enc, b))
                    .sum();
                if freed > 0 {
                    report.tokens_freed += freed;
                    drop_thinking.insert(i);
                }
            }
        }
    }
    if report.tokens_freed < options.clear_at_least || report.tokens_freed == 0 {
        let skipped = report.tokens_freed > 0;
        return (
            Vec::new(),
            ClearReport {
                skipped_below_minimum: skipped,
                ..ClearReport::default()
            },
        );
    }
    report.thinking_dropped = drop_thinking.iter().copied().collect();
    let touched: BTreeSet<usize> = replace
        .keys()
        .chain(inputs.keys())
        .map(|&(mi, _)| mi)
        .chain(drop_thinking.iter().copied())
        .collect();
    let changed = touched
        .into_iter()
        .map(|mi| {
            let m = &messages[mi];
            let blocks: Vec<Block> = m
                .blocks
                .iter()
                .enumerate()
                .filter(|(_, b)| {
                    !(drop_thinking.contains(&mi)
                        && matches!(b.body, Body::Thinking { .. } | Body::RedactedThinking { .. }))
                })
                .map(|(bi, b)| {
                    replace
                        .get(&(mi, bi))
                        .or_else(|| inputs.get(&(mi, bi)))
                        .cloned()
                        .unwrap_or_else(|| b.clone())
                })
                .collect();
            (
                mi,
                Message {
                    role: m.role,
                    blocks: blocks.into(),
                    form: m.form,
                    origin: m.origin,
                    extra: m.extra.clone(),
                },
            )
        })
        .collect();
    (changed, report)
}

/// Whether a result was already cleared or deduplicated by this module.
pub fn is_placeholder(content: &ResultContent) -> bool {
    matches!(content, ResultContent::Text(t) if t.starts_with("[cleared: result of ") || t.starts_with("[superseded: "))
}

/// Replace the results of earlier calls to the same read-only tool with the same input by a
/// short stub pointing to the latest one. Protected messages are left alone.
pub fn dedup_repeated_calls(
    messages: &[Message],
    pairing: &Pairing,
    protected: &Protected,
    read_only: &BTreeSet<String>,
) -> (Vec<Message>, Vec<Cleared>) {
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
            "[superseded: {} was called again later (call {}); its latest result is the current one]",
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
            tool_use_id: c.id.to_owned(),
            tool_name: c.name.to_owned(),
            tokens_before: before,
            tokens_after: after,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_calls_briefly() {
        let input = ToolInput::Raw(r#"{"path": "src/app.py", "limit": 200}"#.into());
        assert_eq!(
            describe_call("read_file", &input),
            "read_file(path=src/app.py, limit=200)"
        );
        let long = ToolInput::Raw(format!(r#"{{"command": "{}"}}"#, "x".repeat(500)));
        assert!(describe_call("bash", &long).chars().count() <= 100);
        assert_eq!(
            placeholder("bash", &ToolInput::Freeform("ls -la".into()), 12_345, "c1"),
            "[cleared: result of bash(ls -la), 12,345 tokens; recall id c1]"
        );
    }
}

/// One tool result cut to its budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budgeted {
    pub index: usize,
    pub tool_use_id: String,
    pub tool_name: String,
    pub chars_before: usize,
    pub chars_after: usize,
}

/// Cut every text tool result over its budget (`limit_for(tool name)` chars) to head + marker +
/// tail, the marker naming the call id as the recall id (the original stays in the session log).
/// Results already cut or cleared are left alone. Returns the changed messages and what was cut.
pub fn plan_result_budgets(
    messages: &[Message],
    pairing: &Pairing,
    limit_for: impl Fn(&str) -> usize,
    strategy: crate::budget::Strategy,
) -> (Vec<(usize, Message)>, Vec<Budgeted>) {
    let mut changed: HashMap<usize, Message> = HashMap::new();
    let mut report = Vec::new();
    for c in &pairing.calls {
        let Some(at) = c.result else { continue };
        let limit = limit_for(c.name);
        let Body::ToolResult {
            content: ResultContent::Text(text),
            ..
        } = &messages[at.0].blocks[at.1].body
        else {
            continue;
        };
        if text.len() <= limit
            || text.chars().count() <= limit
            || text.contains("\n[... ") && text.contains(" omitted; full text: recall(id=")
        {
            continue;
        }
        let options = crate::budget::Options {
            retrieval: crate::budget::Retrieval {
                recall_id: Some(c.id.to_owned()),
                path: None,
            },
            count_omitted_tokens: false,
        };
        let Ok(cut) = crate::budget::truncate(text, limit, crate::budget::Unit::Chars, strategy, &options) else {
            continue;
        };
        if !cut.truncated {
            continue;
        }
        report.push(Budgeted {
            index: at.0,
            tool_use_id: c.id.to_owned(),
            tool_name: c.name.to_owned(),
            chars_before: cut.original.chars,
            chars_after: cut.text.chars().count(),
        });
        let message = changed.entry(at.0).or_insert_with(|| messages[at.0].clone());
        if let Body::ToolResult { content, .. } = &mut Arc::make_mut(&mut message.blocks)[at.1].body {
            *content = ResultContent::Text(cut.text);
        }
    }
    let mut changed: Vec<(usize, Message)> = changed.into_iter().collect();
    changed.sort_by_key(|(i, _)| *i);
    (changed, report)
}
