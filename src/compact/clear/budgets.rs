//! Tool-result budgets over a conversation: every text result over its tool's budget cut to
//! head + marker + tail (see [`crate::budget::truncate`]).

use std::collections::HashMap;
use std::sync::Arc;

use crate::compact::structure::Pairing;
use crate::model::{Body, Message, ResultContent};

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
/// tail, the marker naming the call id as the recall id when `recall_ids` (the caller keeps the
/// original: a session log, a result store) or else saying the full text is not stored.
/// Results already cut or cleared are left alone. Returns the changed messages and what was cut.
pub fn plan_result_budgets(
    messages: &[Message],
    pairing: &Pairing,
    limit_for: impl Fn(&str) -> usize,
    strategy: crate::budget::Strategy,
    recall_ids: bool,
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
            || text.contains("\n[... ")
                && (text.contains(" omitted; full text: recall(id=")
                    || text.contains(" omitted; the full text is not stored"))
        {
            continue;
        }
        let options = crate::budget::Options {
            retrieval: crate::budget::Retrieval {
                recall_id: recall_ids.then(|| c.id.to_owned()),
                path: None,
                unstored: !recall_ids,
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
