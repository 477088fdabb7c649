//! Clearing old tool results (deterministic, no model involved): which results may be cleared
//! ([`Candidates`]), the plan that replaces each by a placeholder and counts what it frees, and
//! its application. The tool call (name and input) always stays; user and assistant text is never
//! rewritten; protected and pinned messages are never touched.
//!
//! The placeholders themselves (describing a call, writing and counting the text, recognising
//! one) are in [`placeholder`]; deduplicating repeated read-only calls in [`dedup`]; cutting
//! results to per-tool budgets in [`budgets`].

pub mod budgets;
pub mod dedup;
pub mod inputs;
pub mod placeholder;
pub mod plan;

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;

use rayon::prelude::*;

use super::select::Protected;
use super::structure::Pairing;
use crate::model::{Block, Body, ContentForm, Extra, Message, ResultContent, Role};
use crate::tokens::{self, Encoding};

pub use budgets::{Budgeted, plan_result_budgets};
pub use dedup::dedup_repeated_calls;
pub use inputs::{input_placeholder, is_cleared_input};
pub use placeholder::{Described, Placeholders, describe_call, is_placeholder, is_placeholder_text, placeholder};
pub use plan::{
    CallInput, Candidates, ClearSource, Placeholder, Planned, RecallIds, clear_result, each_result, plan_results,
    shown_recall_id, shows_recall_id, worth_clearing,
};

/// Options of [`clear_tool_results`].
#[derive(Clone, Debug)]
#[allow(clippy::struct_excessive_bools)] // independent switches, each one a caller's option
pub struct ClearOptions {
    /// Tools whose results are never cleared.
    pub exclude_tools: BTreeSet<String>,
    /// Also replace the inputs (arguments) of old calls, whether or not their results are
    /// cleared (see [`inputs`]).
    pub clear_tool_inputs: bool,
    /// Clear only if at least this many tokens are freed (so the prompt cache is not broken for
    /// little gain); 0 clears whatever there is.
    pub clear_at_least: usize,
    /// Keep thinking blocks of old assistant turns (else they are dropped outside the protected set).
    pub keep_thinking: bool,
    /// Count every placeholder exactly (for a caller that keeps the counts of the new messages,
    /// as `Conversation` does). Otherwise, with cached counts, a placeholder clearly smaller than
    /// its result is given an upper bound instead (see [`Cleared::after_exact`]).
    pub count_placeholders: bool,
    /// Placeholders name the call id as the recall id (`<call id>#arguments` for cleared
    /// arguments; the caller keeps the originals: a session log, a result store, its own
    /// messages). When false they say that the original is not stored.
    pub recall_ids: bool,
}

impl Default for ClearOptions {
    fn default() -> Self {
        ClearOptions {
            exclude_tools: BTreeSet::new(),
            clear_tool_inputs: false,
            clear_at_least: 0,
            keep_thinking: true,
            count_placeholders: false,
            recall_ids: true,
        }
    }
}

/// One cleared result. The id and the tool name are borrowed from the messages the plan was made
/// from ([`Cleared::into_owned`] copies them, for a report that outlives those messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cleared<'a> {
    pub index: usize,
    pub tool_use_id: Cow<'a, str>,
    pub tool_name: Cow<'a, str>,
    pub tokens_before: usize,
    pub tokens_after: usize,
    /// `tokens_after` is the placeholder block's count (what `count_block` gives for it); when
    /// false it is an upper bound, which a caller that recounts the message replaces.
    pub after_exact: bool,
}

impl Cleared<'_> {
    /// This entry with its own copies of the id and the tool name.
    pub fn into_owned(self) -> Cleared<'static> {
        Cleared {
            index: self.index,
            tool_use_id: Cow::Owned(self.tool_use_id.into_owned()),
            tool_name: Cow::Owned(self.tool_name.into_owned()),
            tokens_before: self.tokens_before,
            tokens_after: self.tokens_after,
            after_exact: self.after_exact,
        }
    }
}

/// What a clearing pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClearReport<'a> {
    pub cleared: Vec<Cleared<'a>>,
    /// Messages whose tool-call inputs were cleared (`clear_tool_inputs`).
    pub inputs_cleared: Vec<usize>,
    /// Messages whose old thinking blocks were dropped.
    pub thinking_dropped: Vec<usize>,
    pub tokens_freed: usize,
    /// Set when clearing would have freed less than `clear_at_least` and nothing was changed.
    pub skipped_below_minimum: bool,
}

impl ClearReport<'_> {
    /// This report with its own copies of every id and tool name.
    pub fn into_owned(self) -> ClearReport<'static> {
        ClearReport {
            cleared: self.cleared.into_iter().map(Cleared::into_owned).collect(),
            inputs_cleared: self.inputs_cleared,
            thinking_dropped: self.thinking_dropped,
            tokens_freed: self.tokens_freed,
            skipped_below_minimum: self.skipped_below_minimum,
        }
    }
}

/// The result block `block` with its content replaced by `text` (id, error flag and unknown
/// fields kept).
pub(super) fn with_text(block: &Block, tool_use_id: &str, is_error: Option<bool>, text: String) -> Block {
    Block {
        body: Body::ToolResult {
            tool_use_id: tool_use_id.to_owned(),
            content: ResultContent::Text(text),
            is_error,
        },
        extra: copy_extra(&block.extra),
        item: block.item.clone(),
    }
}

/// A copy of `extra`; an empty map (the usual case) is made rather than cloned, which skips the
/// generic clone of its (empty) table and entries.
fn copy_extra(extra: &Extra) -> Extra {
    if extra.is_empty() { Extra::new() } else { extra.clone() }
}

/// The result block at `at` with its id and error flag, unless it is not a result or was already
/// replaced by a placeholder or a stub, or is a built-in tool's structured output (a Responses
/// `computer_call_output` takes no text in its place: it stays, counted, until its turn is cut).
pub(super) fn live_result(messages: &[Message], at: (usize, usize)) -> Option<(&Block, &str, Option<bool>)> {
    if messages[at.0].form == ContentForm::Value {
        return None;
    }
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
pub fn clear_tool_results<'m>(
    messages: &'m [Message],
    pairing: &Pairing<'m>,
    protected: &Protected,
    enc: Encoding,
    options: &ClearOptions,
) -> (Vec<Message>, ClearReport<'m>) {
    let (changed, report) = plan_clear(messages, pairing, protected, enc, options);
    (apply(messages, changed), report)
}

/// `messages` with the messages at the given positions replaced (positions in increasing order,
/// as the plans give them; any order is accepted). Only the unchanged messages are copied.
pub fn apply(messages: &[Message], mut changed: Vec<(usize, Message)>) -> Vec<Message> {
    if !changed.is_sorted_by_key(|(i, _)| *i) {
        changed.sort_by_key(|(i, _)| *i);
    }
    let mut out = Vec::with_capacity(messages.len());
    let mut changed = changed.into_iter().peekable();
    for (i, m) in messages.iter().enumerate() {
        let mut new = None;
        // A later entry for the same position wins, as assignment in order would have it.
        while let Some((_, m)) = changed.next_if(|(at, _)| *at == i) {
            new = Some(m);
        }
        out.push(new.unwrap_or_else(|| m.clone()));
    }
    debug_assert!(changed.next().is_none(), "a changed position past the end");
    out
}

/// What [`clear_tool_results`] would change, without copying the rest: the new versions of the
/// changed messages (by position) and the report.
pub fn plan_clear<'m>(
    messages: &'m [Message],
    pairing: &Pairing<'m>,
    protected: &Protected,
    enc: Encoding,
    options: &ClearOptions,
) -> (Vec<(usize, Message)>, ClearReport<'m>) {
    plan_clear_counted(messages, None, pairing, protected, enc, options)
}

/// From this many clearable results on, results are counted and placeholders built on all
/// cores when counting is exact (BPE); otherwise the work per result is a few allocations,
/// which one thread does faster than two can share.
const PARALLEL_RESULTS: usize = 256;

/// What replaces a block: a result's new text, or a whole new block.
enum Replacement {
    Text(String),
    Block(Box<Block>),
}

/// [`plan_clear`] reusing cached counts (`counts[i]` of message `i`) for the results it clears,
/// so only the placeholders are counted.
pub fn plan_clear_counted<'m>(
    messages: &'m [Message],
    counts: Option<&[tokens::MessageTokens]>,
    pairing: &Pairing<'m>,
    protected: &Protected,
    enc: Encoding,
    options: &ClearOptions,
) -> (Vec<(usize, Message)>, ClearReport<'m>) {
    let planner = Planner {
        source: Parsed { messages, counts, enc },
        pairing,
        options,
    };
    let candidates: Vec<usize> = Candidates::new(pairing, protected, messages.len(), &options.exclude_tools)
        .iter()
        .map(|(ci, _)| ci)
        .collect();
    let mut report = ClearReport::default();
    // (message, block) → replacement block
    let mut replace: Vec<((usize, usize), Replacement)> = Vec::new();
    let direct = planner.clear_results(&candidates, &mut report, &mut replace);
    report.tokens_freed = report.cleared.iter().map(|c| c.tokens_before - c.tokens_after).sum();
    if options.clear_tool_inputs {
        inputs::clear_inputs(
            &planner.source,
            pairing,
            &candidates,
            options,
            &mut report,
            &mut replace,
        );
    }
    let mut drop_thinking: BTreeSet<usize> = BTreeSet::new();
    if !options.keep_thinking {
        report.tokens_freed += thinking_to_drop(messages, protected, enc, &mut drop_thinking);
    }
    if !worth_clearing(report.tokens_freed, options) {
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
    (rebuild(messages, replace, &drop_thinking, direct), report)
}

/// The recall ids that the result and the arguments of call `ci` show already, if they are
/// placeholders or cut (see [`RecallIds::shown`]).
pub fn shown_in<'a>(messages: &'a [Message], pairing: &'a Pairing<'_>) -> impl Fn(usize) -> Vec<String> + 'a {
    move |ci| {
        let c = &pairing.calls[ci];
        let result = c.result.and_then(|(mi, bi)| shown_by(&messages[mi].blocks[bi].body));
        let arguments = shown_by(&messages[c.at.0].blocks[c.at.1].body);
        result.into_iter().chain(arguments).map(str::to_owned).collect()
    }
}

/// The recall id a tool block shows already: a result's placeholder or cut marker's, or cleared
/// arguments' (see [`shown_recall_id`]); None for any other block.
pub fn shown_by(body: &Body) -> Option<&str> {
    match body {
        Body::ToolResult {
            content: ResultContent::Text(text),
            ..
        } if shows_recall_id(text) => shown_recall_id(text),
        Body::ToolUse { input, .. } if is_cleared_input(input) => match input {
            crate::model::ToolInput::Json(v) => v.get("cleared").and_then(|v| v.as_str()),
            crate::model::ToolInput::Raw(s) | crate::model::ToolInput::Freeform(s) => Some(s.as_str()),
        }
        .and_then(shown_recall_id),
        _ => None,
    }
}

/// Parsed messages with their cached counts (if any), as the plan reads them.
pub struct Parsed<'m, 'p> {
    pub messages: &'m [Message],
    pub counts: Option<&'p [tokens::MessageTokens]>,
    pub enc: Encoding,
}

impl Parsed<'_, '_> {
    /// The cached count of the block at `(message, block)`.
    fn cached(&self, (mi, bi): (usize, usize)) -> Option<usize> {
        self.counts.and_then(|c| c.get(mi)).and_then(|mt| mt.tool(bi))
    }
}

impl<'m> ClearSource<'m> for Parsed<'m, '_> {
    fn live_result_tokens(&self, at: (usize, usize)) -> Option<usize> {
        let (block, _, _) = live_result(self.messages, at)?;
        Some(self.cached(at).unwrap_or_else(|| result_tokens(self.enc, block)))
    }

    fn call_input(&self, _: usize, (mi, bi): (usize, usize)) -> Option<CallInput<'m>> {
        match &self.messages[mi].blocks[bi].body {
            Body::ToolUse { input, .. } => Some(CallInput::of(input)),
            _ => None,
        }
    }

    fn counts_cached(&self) -> bool {
        self.counts.is_some()
    }
}

/// What one clearing pass of parsed messages reads: the messages and their counts, the pairing
/// and the options.
struct Planner<'m, 'p> {
    source: Parsed<'m, 'p>,
    pairing: &'p Pairing<'m>,
    options: &'p ClearOptions,
}

impl<'m> Planner<'m, '_> {
    /// Clear the results of `candidates` (as [`plan::clear_result`] plans each) into the report:
    /// a message whose only block is the result is returned whole (built here, while it is fresh
    /// in the cache; nothing else can change it: thinking and call inputs are in other
    /// messages), other results go to `replace`.
    fn clear_results(
        &self,
        candidates: &[usize],
        report: &mut ClearReport<'m>,
        replace: &mut Vec<((usize, usize), Replacement)>,
    ) -> Vec<(usize, Message)> {
        let (source, pairing, options) = (&self.source, self.pairing, self.options);
        let enc = source.enc;
        let ids = RecallIds::shown(pairing, options.recall_ids, shown_in(source.messages, pairing));
        // Exact counting of placeholders is worth spreading over threads; with cached counts most
        // placeholders are not counted at all (see the bound in `clear_result`), and threads only cost.
        let parallel = enc.is_bpe() && source.counts.is_none() && candidates.len() >= PARALLEL_RESULTS;
        let results: Vec<Planned<'m>> = if parallel {
            crate::parallel::install(|| {
                candidates
                    .par_iter()
                    .with_min_len(PARALLEL_RESULTS / 2)
                    .map_init(Placeholders::default, |placeholders, &ci| {
                        // Written here: a description lives in this thread's `Placeholders`.
                        let id = ids.get(ci);
                        let (cleared, at, p) = plan::clear_result(source, pairing, enc, options, placeholders, ci, id)?;
                        let text = p.into_text(placeholders, cleared.tokens_before, id);
                        Some((cleared, at, Placeholder::Text(text)))
                    })
                    .flatten_iter()
                    .collect()
            })
        } else {
            Vec::new()
        };
        // Written straight into the report and the replacements (serially, with room made for
        // every candidate), without a list of results in between.
        let planned = if parallel { results.len() } else { candidates.len() };
        report.cleared.reserve_exact(planned);
        replace.reserve_exact(planned);
        let mut direct: Vec<(usize, Message)> = Vec::with_capacity(planned);
        // (A planned result made on another thread holds its text already: no id is needed.)
        let mut add = |(cleared, at, p): Planned<'m>, id: &str, placeholders: &Placeholders<'m>| {
            let text = p.into_text(placeholders, cleared.tokens_before, id);
            report.cleared.push(cleared);
            let m = &source.messages[at.0];
            if m.blocks.len() == 1 {
                direct.push((at.0, message_with(m, Arc::new([with_placeholder(&m.blocks[0], text)]))));
            } else {
                replace.push((at, Replacement::Text(text)));
            }
        };
        let mut placeholders = Placeholders::default();
        for r in results {
            add(r, "", &placeholders);
        }
        let serial: &[usize] = if parallel { &[] } else { candidates };
        for &ci in serial {
            let id = ids.get(ci);
            if let Some(r) = plan::clear_result(source, pairing, enc, options, &mut placeholders, ci, id) {
                add(r, id, &placeholders);
            }
        }
        direct
    }
}

/// The unprotected assistant messages with thinking blocks, into `drop`; returns their tokens.
fn thinking_to_drop(messages: &[Message], protected: &Protected, enc: Encoding, drop: &mut BTreeSet<usize>) -> usize {
    let mut freed = 0;
    for (i, m) in messages.iter().enumerate() {
        if m.role == Role::Assistant && !protected.messages.contains(&i) {
            let tokens: usize = m
                .blocks
                .iter()
                .filter(|b| matches!(b.body, Body::Thinking { .. } | Body::RedactedThinking { .. }))
                .map(|b| result_tokens(enc, b))
                .sum();
            if tokens > 0 {
                freed += tokens;
                drop.insert(i);
            }
        }
    }
    freed
}

/// The changed messages, in message order: those with replaced blocks or dropped thinking,
/// rebuilt here, and the `direct` ones built already.
fn rebuild(
    messages: &[Message],
    mut replace: Vec<((usize, usize), Replacement)>,
    drop_thinking: &BTreeSet<usize>,
    mut direct: Vec<(usize, Message)>,
) -> Vec<(usize, Message)> {
    // Results and call inputs never share a position: one sorted list, consumed in order.
    replace.sort_unstable_by_key(|(at, _)| *at);
    let mut touched: Vec<usize> = replace
        .iter()
        .map(|&((mi, _), _)| mi)
        .chain(drop_thinking.iter().copied())
        .collect();
    touched.sort_unstable();
    touched.dedup();
    let mut replace = replace.into_iter().peekable();
    let mut changed: Vec<(usize, Message)> = touched
        .into_iter()
        .map(|mi| {
            let m = &messages[mi];
            let drop = drop_thinking.contains(&mi);
            let mut blocks = Vec::with_capacity(m.blocks.len());
            for (bi, b) in m.blocks.iter().enumerate() {
                if let Some((_, new)) = replace.next_if(|(at, _)| *at == (mi, bi)) {
                    blocks.push(match new {
                        Replacement::Block(block) => *block,
                        Replacement::Text(text) => with_placeholder(b, text),
                    });
                } else if !(drop && matches!(b.body, Body::Thinking { .. } | Body::RedactedThinking { .. })) {
                    blocks.push(b.clone());
                }
            }
            (mi, message_with(m, blocks.into()))
        })
        .collect();
    // Both lists are in message order as a rule; the stable sort only checks that when so.
    if changed.is_empty() {
        changed = direct;
    } else {
        changed.append(&mut direct);
    }
    changed.sort_by_key(|&(mi, _)| mi);
    changed
}

/// `m` with `blocks` as its blocks (role, form, origin and unknown fields kept).
fn message_with(m: &Message, blocks: Arc<[Block]>) -> Message {
    Message {
        role: m.role,
        blocks,
        form: m.form,
        origin: m.origin,
        extra: copy_extra(&m.extra),
    }
}

/// The result block `b` with its content replaced by a placeholder's `text`.
fn with_placeholder(b: &Block, text: String) -> Block {
    match &b.body {
        Body::ToolResult {
            tool_use_id, is_error, ..
        } => with_text(b, tool_use_id, *is_error, text),
        _ => unreachable!("placeholders replace results"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_replaces_by_position_in_any_order() {
        let m = |t: &str| Message::text(Role::User, t);
        let messages = vec![m("a"), m("b"), m("c")];
        let out = apply(&messages, vec![(2, m("x")), (0, m("y")), (2, m("z"))]);
        assert_eq!(out, vec![m("y"), m("b"), m("z")]);
        assert_eq!(apply(&messages, Vec::new()), messages);
    }

    #[test]
    fn reports_borrow_and_copy_the_same_values() {
        let cleared = Cleared {
            index: 3,
            tool_use_id: Cow::Borrowed("call_1"),
            tool_name: Cow::Borrowed("read_file"),
            tokens_before: 120,
            tokens_after: 20,
            after_exact: true,
        };
        let report = ClearReport {
            cleared: vec![cleared.clone()],
            inputs_cleared: vec![1],
            thinking_dropped: vec![2],
            tokens_freed: 100,
            skipped_below_minimum: false,
        };
        let owned = report.clone().into_owned();
        assert_eq!(owned, report);
        assert!(matches!(owned.cleared[0].tool_use_id, Cow::Owned(_)));
        assert!(matches!(owned.cleared[0].tool_name, Cow::Owned(_)));
        assert_eq!(cleared.into_owned().tool_name, "read_file");
    }

    #[test]
    fn copies_extra_fields() {
        assert!(copy_extra(&Extra::new()).is_empty());
        let mut extra = Extra::new();
        extra.insert("cache_control".into(), serde_json::json!({"type": "ephemeral"}));
        extra.insert("a".into(), serde_json::json!(1));
        let copy = copy_extra(&extra);
        assert_eq!(copy, extra);
        assert_eq!(copy.keys().collect::<Vec<_>>(), ["cache_control", "a"]);
    }
}
