//! Surgery on a [`Conversation`]: the protected set under options, clearing with the new
//! conversation's counts reused and the changed messages recounted, dedup of repeated read-only
//! calls, and the most clearing could free — what `Conversation.clear_tool_results`,
//! `dedup_reads`, `clearable_tokens` and `trim_messages` run.

use std::collections::{BTreeSet, HashMap};

use super::clear::{self, Budgeted, ClearOptions, ClearReport, Cleared};
use super::select::{self, Protected};
use super::structure::Pairing;
use crate::budget::Strategy;
use crate::conversation::Conversation;
use crate::model::Body;
use crate::tokens::MessageTokens;

/// Options of the protected set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Protection {
    pub recent_messages: usize,
    pub recent_tools: usize,
}

impl Protection {
    /// The pairing of `conv` and its protected set under these options (pins included).
    pub fn of(self, conv: &Conversation) -> (Pairing<'_>, Protected) {
        let pairing = Pairing::of(conv.messages());
        let protected = select::protected(
            conv.messages(),
            &pairing,
            self.recent_messages,
            self.recent_tools,
            conv.pinned(),
        );
        (pairing, protected)
    }
}

/// Clear old tool results of `conv`; returns the new conversation and the report, whose figures
/// are exact: the changed messages are recounted.
pub fn clear(
    conv: &Conversation,
    protection: Protection,
    options: &ClearOptions,
) -> (Conversation, ClearReport<'static>) {
    let messages = conv.messages();
    let (pairing, protected) = protection.of(conv);
    // The new conversation keeps the counts: each placeholder is counted once, here.
    let options = ClearOptions {
        count_placeholders: true,
        ..options.clone()
    };
    let (plan, report) = clear::plan_clear_counted(
        messages,
        Some(conv.counts()),
        &pairing,
        &protected,
        conv.encoding(),
        &options,
    );
    let out = clear::apply(messages, plan);
    // The report borrows ids and names from `conv`; it is handed back with copies of them.
    let mut report = report.into_owned();
    let changed: BTreeSet<usize> = report
        .cleared
        .iter()
        .map(|c| c.index)
        .chain(report.thinking_dropped.iter().copied())
        .chain(report.inputs_cleared.iter().copied())
        .collect();
    // A message whose only block is a result the plan counted exactly is not counted again.
    let known: HashMap<usize, usize> = report
        .cleared
        .iter()
        .filter(|c| c.after_exact && out[c.index].blocks.len() == 1)
        .map(|c| (c.index, c.tokens_after))
        .collect();
    let new = conv.derive_known(
        out,
        |i| !changed.contains(&i),
        // (Nothing else changes such a message: call inputs and thinking are in other messages.)
        |i| known.get(&i).map(|&n| MessageTokens::single_result(n)),
    );
    // Exact figures from the recount of the changed messages.
    for c in &mut report.cleared {
        if let Some(n) = result_count(&new, c.index, &c.tool_use_id) {
            c.tokens_after = n;
        }
    }
    if !changed.is_empty() {
        report.tokens_freed = conv.total_tokens().saturating_sub(new.total_tokens());
    }
    (new, report)
}

/// The cached tokens of the result for `id` in message `index` of `conv`.
fn result_count(conv: &Conversation, index: usize, id: &str) -> Option<usize> {
    let block = conv.messages()[index]
        .blocks
        .iter()
        .position(|b| matches!(&b.body, Body::ToolResult { tool_use_id, .. } if tool_use_id == id))?;
    conv.counts()[index].tool(block)
}

/// Replace earlier results of repeated read-only calls by stubs; only `recent_messages` of the
/// protection counts (a repeated call is what dedup is for, however recent).
pub fn dedup(
    conv: &Conversation,
    read_only: &BTreeSet<String>,
    protection: Protection,
) -> (Conversation, Vec<Cleared<'static>>) {
    let messages = conv.messages();
    let pairing = Pairing::of(messages);
    let protected = select::protected(messages, &pairing, protection.recent_messages, 0, conv.pinned());
    let (out, stubbed) = clear::dedup_repeated_calls(messages, &pairing, &protected, read_only);
    let changed: BTreeSet<usize> = stubbed.iter().map(|c| c.index).collect();
    let stubbed = stubbed.into_iter().map(Cleared::into_owned).collect();
    (conv.derive(out, |i| !changed.contains(&i)), stubbed)
}

/// Cut every text tool result of `conv` over its budget (`limit_for(tool name)` characters) to
/// head + marker + tail (see [`clear::plan_result_budgets`]); returns the new conversation (the
/// unchanged messages keep their counts) and what was cut.
pub fn truncate_results(
    conv: &Conversation,
    limit_for: impl Fn(&str) -> usize,
    strategy: Strategy,
    recall_ids: bool,
) -> (Conversation, Vec<Budgeted>) {
    let messages = conv.messages();
    let pairing = Pairing::of(messages);
    let (changed, report) = clear::plan_result_budgets(messages, &pairing, limit_for, strategy, recall_ids);
    let touched: BTreeSet<usize> = changed.iter().map(|(i, _)| *i).collect();
    let out = clear::apply(messages, changed);
    (conv.derive(out, |i| !touched.contains(&i)), report)
}

/// The most clearing could free: the cached tokens of every completed result outside the
/// protected set that is not excluded and not already a placeholder.
pub fn clearable_tokens(conv: &Conversation, protection: Protection, exclude: &BTreeSet<String>) -> usize {
    let messages = conv.messages();
    let (pairing, protected) = protection.of(conv);
    let counts = conv.counts();
    clear::Candidates::new(&pairing, &protected, messages.len(), exclude)
        .iter()
        .filter_map(|(_, at)| {
            let Body::ToolResult { content, .. } = &messages[at.0].blocks[at.1].body else {
                return None;
            };
            if clear::is_placeholder(content) {
                return None;
            }
            counts[at.0].tool(at.1)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::testing::chat;
    use crate::model::Format;
    use crate::tokens::Encoding;
    use serde_json::json;

    /// A request, then `n` rounds of a `read_file` call with a long result each.
    fn agent(n: usize) -> Conversation {
        let mut v = vec![json!({"role": "user", "content": "fix the bug"})];
        for i in 0..n {
            let id = format!("c{i}");
            v.push(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"a.py\"}"}}
            ]}));
            v.push(json!({"role": "tool", "tool_call_id": id, "content": "line of code\n".repeat(50)}));
        }
        Conversation::from_messages(Format::OpenAiChat, Encoding::O200k, chat(serde_json::Value::Array(v)))
    }

    #[test]
    fn clearing_reports_what_a_fresh_count_finds() {
        let conv = agent(6);
        let protection = Protection {
            recent_messages: 2,
            recent_tools: 1,
        };
        let none = BTreeSet::new();
        let clearable = clearable_tokens(&conv, protection, &none);
        let (new, report) = clear(&conv, protection, &ClearOptions::default());
        // Every round but the protected last one is cleared.
        assert_eq!(report.cleared.len(), 5);
        let fresh = Conversation::from_messages(Format::OpenAiChat, Encoding::O200k, new.messages().to_vec());
        assert_eq!(new.total_tokens(), fresh.total_tokens());
        assert_eq!(report.tokens_freed, conv.total_tokens() - fresh.total_tokens());
        assert!(report.tokens_freed < clearable);
        // Placeholders are not clearable again.
        assert_eq!(clearable_tokens(&new, protection, &none), 0);
        let excluded = clearable_tokens(&conv, protection, &BTreeSet::from(["read_file".to_owned()]));
        assert_eq!(excluded, 0);
    }

    #[test]
    fn truncation_cuts_long_results_and_recounts_only_those() {
        let conv = agent(3);
        let long = "line of code\n".len() * 50;
        let (same, none) = truncate_results(&conv, |_| long, Strategy::Head, true);
        assert!(none.is_empty());
        assert_eq!(same.messages(), conv.messages());
        let (new, report) = truncate_results(&conv, |_| 100, Strategy::HeadTail { head_share: 0.5 }, true);
        assert_eq!(report.iter().map(|r| r.index).collect::<Vec<_>>(), [2, 4, 6]);
        assert!(report.iter().all(|r| r.chars_before == long && r.chars_after < long));
        let fresh = Conversation::from_messages(Format::OpenAiChat, Encoding::O200k, new.messages().to_vec());
        assert_eq!(new.counts(), fresh.counts());
        assert!(new.total_tokens() < conv.total_tokens());
        // A result already cut is left alone.
        let (again, second) = truncate_results(&new, |_| 100, Strategy::HeadTail { head_share: 0.5 }, true);
        assert!(second.is_empty());
        assert_eq!(again.messages(), new.messages());
    }

    #[test]
    fn dedup_stubs_all_but_the_latest_read() {
        let conv = agent(4);
        let tools = BTreeSet::from(["read_file".to_owned()]);
        let protection = Protection {
            recent_messages: 0,
            recent_tools: 3,
        };
        let (new, stubbed) = dedup(&conv, &tools, protection);
        assert_eq!(stubbed.iter().map(|c| c.index).collect::<Vec<_>>(), [2, 4, 6]);
        assert!(new.total_tokens() < conv.total_tokens());
    }
}
