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
    let ids = super::RecallIds::shown(pairing, recall_ids, super::shown_in(messages, pairing));
    for (ci, c) in pairing.calls.iter().enumerate() {
        let Some(at) = c.result else { continue };
        let limit = limit_for(c.name);
        let Body::ToolResult {
            content: ResultContent::Text(text),
            ..
        } = &messages[at.0].blocks[at.1].body
        else {
            continue;
        };
        if !is_over(text, limit)
            || text.contains("\n[... ")
                && (text.contains(super::plan::CUT_OMITTED_RECALL)
                    || text.contains(" omitted; the full text is not stored"))
        {
            continue;
        }
        let options = crate::budget::Options {
            retrieval: crate::budget::Retrieval {
                recall_id: Some(ids.get(ci)).filter(|id| !id.is_empty()).map(str::to_owned),
                path: None,
                unstored: ids.get(ci).is_empty(),
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

/// Whether a result's `text` is over a budget of `limit` characters (its byte length, which
/// bounds the characters, is checked first).
pub fn is_over(text: &str, limit: usize) -> bool {
    text.len() > limit && text.chars().count() > limit
}

/// How many text tool results are over their budget: `per_tool` by tool name, `max_chars` for
/// the other tools (what [`plan_result_budgets`] looks at, whether or not it was cut already).
/// Without a per-tool budget every text result counts, paired with a call or not; with one, the
/// results of the calls.
pub fn results_over<H: std::hash::BuildHasher>(
    messages: &[Message],
    max_chars: usize,
    per_tool: &HashMap<String, usize, H>,
) -> usize {
    let over = |content: &ResultContent, limit: usize| matches!(content, ResultContent::Text(t) if is_over(t, limit));
    if per_tool.is_empty() {
        // One budget for all: no need to know which tool a result belongs to.
        return messages
            .iter()
            .flat_map(|m| m.tool_results().map(|(_, content, _)| content))
            .filter(|content| over(content, max_chars))
            .count();
    }
    let pairing = Pairing::of(messages);
    pairing
        .calls
        .iter()
        .filter(|call| {
            call.result.is_some_and(|at| match &messages[at.0].blocks[at.1].body {
                Body::ToolResult { content, .. } => {
                    over(content, per_tool.get(call.name).copied().unwrap_or(max_chars))
                }
                _ => false,
            })
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::Strategy;
    use crate::compact::testing::{chat, xorshift};
    use serde_json::{Value, json};

    /// A request, then one round per (tool, result text), and an orphan result of `orphan`.
    fn history(results: &[(&str, String)], orphan: &str) -> Vec<Message> {
        let mut v = vec![json!({"role": "user", "content": "go"})];
        for (k, (tool, text)) in results.iter().enumerate() {
            let id = format!("c{k}");
            v.push(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": tool, "arguments": "{}"}}]}));
            v.push(json!({"role": "tool", "tool_call_id": id, "content": text}));
        }
        v.push(json!({"role": "tool", "tool_call_id": "orphan", "content": orphan}));
        chat(Value::Array(v))
    }

    #[test]
    fn counts_results_over_their_budgets() {
        let messages = history(
            &[
                ("read", "x".repeat(50)),
                ("bash", "é".repeat(30)),
                ("read", "y".repeat(10)),
            ],
            &"z".repeat(40),
        );
        let none = HashMap::new();
        // "é" is 2 bytes: 60 bytes but 30 characters, within 30.
        assert_eq!(results_over(&messages, 30, &none), 2);
        assert_eq!(results_over(&messages, 29, &none), 3);
        assert_eq!(results_over(&messages, 5, &none), 4);
        // Per tool: only results paired with a call count.
        let per_tool = HashMap::from([("bash".to_owned(), 10)]);
        assert_eq!(results_over(&messages, 30, &per_tool), 2);
        assert_eq!(results_over(&messages, 100, &per_tool), 1);
    }

    #[test]
    fn only_results_over_their_budget_are_cut_and_only_once() {
        // Generated results: only results over their budget are cut, and a second pass cuts
        // nothing although the count of results over the budget may stay.
        let mut rng = xorshift(0x00b0_d6e7_5eed_0001);
        let tools = ["read", "bash", "grep"];
        for _ in 0..60 {
            let results: Vec<(&str, String)> = (0..(rng() % 8))
                .map(|_| {
                    let line = if rng() % 2 == 0 {
                        "line of output\n"
                    } else {
                        "ligne été\n"
                    };
                    (tools[rng() as usize % 3], line.repeat(rng() as usize % 60))
                })
                .collect();
            let messages = history(&results, "");
            let max = 100 + rng() as usize % 300;
            let per_tool = HashMap::from([("bash".to_owned(), 50 + rng() as usize % 100)]);
            let limit = |name: &str| per_tool.get(name).copied().unwrap_or(max);
            let pairing = Pairing::of(&messages);
            let (changed, report) =
                plan_result_budgets(&messages, &pairing, limit, Strategy::HeadTail { head_share: 0.5 }, true);
            // Only results over their budget are cut (one a marker would not shorten is not).
            assert!(report.len() <= results_over(&messages, max, &per_tool));
            assert_eq!(changed.len(), report.len());
            for r in &report {
                assert!(r.chars_before > limit(&r.tool_name));
                assert!(r.chars_after < r.chars_before);
            }
            let after = super::super::apply(&messages, changed);
            let pairing = Pairing::of(&after);
            let (again, _) = plan_result_budgets(&after, &pairing, limit, Strategy::HeadTail { head_share: 0.5 }, true);
            assert!(again.is_empty());
        }
    }

    #[test]
    fn a_result_is_taken_for_cut_by_the_markers_own_words_only() {
        // The test of "already cut" is the marker's recall words as `crate::budget::marker`
        // writes them, after the amount omitted (with or without tokens).
        let size = crate::budget::Size {
            bytes: 99,
            chars: 99,
            lines: 3,
        };
        let retrieval = crate::budget::Retrieval {
            recall_id: Some("c0".to_owned()),
            ..Default::default()
        };
        for tokens in [None, Some(7)] {
            let mark = crate::budget::marker(size, tokens, &retrieval);
            assert!(mark.contains(super::super::plan::CUT_OMITTED_RECALL), "{mark}");
        }
        assert!(super::super::plan::CUT_OMITTED_RECALL.ends_with(super::super::plan::CUT_RECALL));
        // A result that quotes the recall words without a marker's "omitted" before them (a log
        // of an earlier session, say) is still cut when over its budget: the plain
        // `CUT_RECALL` would take it for cut already and leave it whole.
        let quoted = format!(
            "{}\n[... see below\nhint; full text: recall(id=\"x\") here\n",
            "line\n".repeat(60)
        );
        assert!(quoted.contains(super::super::plan::CUT_RECALL));
        let messages = history(&[("read", quoted)], "");
        let pairing = Pairing::of(&messages);
        let (changed, report) = plan_result_budgets(
            &messages,
            &pairing,
            |_| 100,
            Strategy::HeadTail { head_share: 0.5 },
            true,
        );
        assert_eq!((changed.len(), report.len()), (1, 1));
    }
}
