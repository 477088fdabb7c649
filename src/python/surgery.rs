//! Bindings for conversation surgery: results as plain dicts, new conversations as new objects.

use std::collections::BTreeSet;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::compact::{self, ClearOptions, ClearReport, Pairing, Suffix};
use crate::conversation::Conversation;

pub(crate) fn violations(py: Python<'_>, found: Vec<compact::Violation>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for v in found {
        let d = PyDict::new(py);
        d.set_item("kind", v.kind.as_str())?;
        d.set_item("index", v.index)?;
        d.set_item("id", v.id)?;
        d.set_item("detail", v.detail)?;
        list.append(d)?;
    }
    Ok(list)
}

pub(crate) fn changes<'py>(py: Python<'py>, changes: &[compact::Change]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for c in changes {
        let d = PyDict::new(py);
        d.set_item("kind", c.kind.as_str())?;
        d.set_item("index", c.index)?;
        d.set_item("id", c.id.as_deref())?;
        list.append(d)?;
    }
    Ok(list)
}

pub(crate) fn clear_report<'py>(
    py: Python<'py>,
    r: &ClearReport,
    before: usize,
    after: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let cleared = PyList::empty(py);
    for c in &r.cleared {
        let e = PyDict::new(py);
        e.set_item("index", c.index)?;
        e.set_item("tool_use_id", &c.tool_use_id)?;
        e.set_item("tool_name", &c.tool_name)?;
        e.set_item("tokens_before", c.tokens_before)?;
        e.set_item("tokens_after", c.tokens_after)?;
        cleared.append(e)?;
    }
    d.set_item("cleared", cleared)?;
    d.set_item("thinking_dropped", r.thinking_dropped.clone())?;
    d.set_item("inputs_cleared", r.inputs_cleared.clone())?;
    d.set_item("tokens_freed", r.tokens_freed)?;
    d.set_item("skipped_below_minimum", r.skipped_below_minimum)?;
    d.set_item("tokens_before", before)?;
    d.set_item("tokens_after", after)?;
    Ok(d)
}

pub(crate) fn suffix<'py>(py: Python<'py>, s: &Suffix, available: usize) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("start", s.start)?;
    d.set_item("tokens", s.tokens)?;
    d.set_item("available", available)?;
    d.set_item("boundary", s.boundary.as_str())?;
    d.set_item("fits", s.overflow.is_none())?;
    d.set_item("overflow", s.overflow.as_ref().map(|r| (r.start, r.end)))?;
    d.set_item("preamble", s.preamble)?;
    Ok(d)
}

/// Options of the protected set.
#[derive(Clone, Copy)]
pub(crate) struct Protection {
    pub recent_messages: usize,
    pub recent_tools: usize,
}

impl Protection {
    /// The pairing of `conv` and its protected set under these options (pins included).
    fn of(self, conv: &Conversation) -> (Pairing<'_>, compact::Protected) {
        let pairing = Pairing::of(conv.messages());
        let protected = compact::protected(
            conv.messages(),
            &pairing,
            self.recent_messages,
            self.recent_tools,
            conv.pinned(),
        );
        (pairing, protected)
    }
}

/// Clear old tool results of `conv`; returns the new conversation and the report.
pub(crate) fn clear(
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
    let (plan, report) = compact::plan_clear_counted(
        messages,
        Some(conv.counts()),
        &pairing,
        &protected,
        conv.encoding(),
        &options,
    );
    let out = compact::clear::apply(messages, plan);
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
    let known: std::collections::HashMap<usize, usize> = report
        .cleared
        .iter()
        .filter(|c| c.after_exact && out[c.index].blocks.len() == 1)
        .map(|c| (c.index, c.tokens_after))
        .collect();
    let new = conv.derive_known(
        out,
        |i| !changed.contains(&i),
        // (Nothing else changes such a message: call inputs and thinking are in other messages.)
        |i| known.get(&i).map(|&n| crate::tokens::MessageTokens::single_result(n)),
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
        .position(|b| matches!(&b.body, crate::model::Body::ToolResult { tool_use_id, .. } if tool_use_id == id))?;
    conv.counts()[index].tool(block)
}

/// Replace earlier results of repeated read-only calls by stubs.
pub(crate) fn dedup(
    conv: &Conversation,
    read_only: &BTreeSet<String>,
    protection: Protection,
) -> (Conversation, Vec<compact::clear::Cleared<'static>>) {
    let messages = conv.messages();
    let pairing = Pairing::of(messages);
    let protected = compact::protected(messages, &pairing, protection.recent_messages, 0, conv.pinned());
    let (out, stubbed) = compact::dedup_repeated_calls(messages, &pairing, &protected, read_only);
    let changed: BTreeSet<usize> = stubbed.iter().map(|c| c.index).collect();
    let stubbed = stubbed.into_iter().map(compact::clear::Cleared::into_owned).collect();
    (conv.derive(out, |i| !changed.contains(&i)), stubbed)
}

/// The most clearing could free: the cached tokens of every completed result outside the
/// protected set that is not excluded and not already a placeholder.
pub(crate) fn clearable_tokens(conv: &Conversation, protection: Protection, exclude: &BTreeSet<String>) -> usize {
    let messages = conv.messages();
    let (pairing, protected) = protection.of(conv);
    let counts = conv.counts();
    let (protected_messages, protected_calls) = protected.flags(messages.len(), pairing.calls.len());
    pairing
        .calls
        .iter()
        .enumerate()
        .filter_map(|(ci, c)| {
            let at = c.result?;
            if protected_calls[ci] || protected_messages[at.0] || protected_messages[c.at.0] || exclude.contains(c.name)
            {
                return None;
            }
            let crate::model::Body::ToolResult { content, .. } = &messages[at.0].blocks[at.1].body else {
                return None;
            };
            if compact::clear::is_placeholder(content) {
                return None;
            }
            counts[at.0].tool(at.1)
        })
        .sum()
}
