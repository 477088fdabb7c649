//! The one plan of which tool results clearing replaces and what each frees, generic over where
//! the messages come from ([`ClearSource`]): parsed messages (`Conversation`, `trim_messages`'s
//! general path) and the binding's skeleton of a list of plain Chat dicts (its fast path) read
//! the same few things and share every decision — the candidates, skipping placeholders, the
//! placeholder and its count, and the `clear_at_least` rollback.

use std::borrow::Cow;

use super::{Candidates, ClearOptions, Cleared, Described, Placeholders};
use crate::compact::select::Protected;
use crate::compact::structure::Pairing;
use crate::model::ToolInput;
use crate::tokens::{self, Encoding};

/// A call's input, as its placeholder describes it.
#[derive(Clone, Copy, Debug)]
pub enum CallInput<'m> {
    /// An `arguments` text (Chat, Responses, native): described once per distinct call.
    Arguments(&'m str),
    /// Any other input (a JSON value, a freeform text).
    Input(&'m ToolInput),
}

impl<'m> CallInput<'m> {
    /// The input of a parsed call.
    pub fn of(input: &'m ToolInput) -> Self {
        match input {
            ToolInput::Raw(args) => CallInput::Arguments(args),
            other => CallInput::Input(other),
        }
    }
}

/// What the clearing plan reads of a list of messages.
pub trait ClearSource<'m> {
    /// The tokens of the result block at `(message, block)`, or `None` when there is no result
    /// there or it is already a placeholder (or a dedup stub).
    fn live_result_tokens(&self, at: (usize, usize)) -> Option<usize>;

    /// The input of call `call` of the pairing, whose block is at `at`; `None` when there is none.
    fn call_input(&self, call: usize, at: (usize, usize)) -> Option<CallInput<'m>>;

    /// Whether the result tokens are cached counts: then, unless
    /// [`ClearOptions::count_placeholders`], a placeholder clearly smaller than its result is
    /// given an upper bound instead of a count (see [`Cleared::after_exact`]).
    fn counts_cached(&self) -> bool;
}

/// A planned placeholder: the description of a call with an `arguments` text (in the
/// [`Placeholders`] it was planned with; written when wanted), or the whole text.
#[derive(Clone, Debug)]
pub enum Placeholder {
    Described(Described),
    Text(String),
}

impl Placeholder {
    /// The text, given the result's tokens and the recall id.
    pub fn into_text(self, placeholders: &Placeholders<'_>, tokens: usize, id: &str) -> String {
        match self {
            Placeholder::Described(d) => {
                let mut text = String::new();
                placeholders.write_new(d, tokens, id, &mut text);
                text
            }
            Placeholder::Text(text) => text,
        }
    }

    /// The text appended to `out`.
    pub fn write(&self, placeholders: &Placeholders<'_>, tokens: usize, id: &str, out: &mut String) {
        match self {
            Placeholder::Described(d) => placeholders.write(*d, tokens, id, out),
            Placeholder::Text(text) => out.push_str(text),
        }
    }
}

/// One result to clear: the report entry, where the block is and its placeholder.
pub type Planned<'m> = (Cleared<'m>, (usize, usize), Placeholder);

/// The recall id a placeholder names for the call `id` (none unless `recall_ids`).
pub fn recall_id<'a>(options: &ClearOptions, id: &'a str) -> &'a str {
    if options.recall_ids { id } else { "" }
}

/// The result of call `ci` cleared, if it is live and its placeholder is smaller.
pub fn clear_result<'m, S: ClearSource<'m> + ?Sized>(
    source: &S,
    pairing: &Pairing<'m>,
    enc: Encoding,
    options: &ClearOptions,
    placeholders: &mut Placeholders<'m>,
    ci: usize,
) -> Option<Planned<'m>> {
    let c = &pairing.calls[ci];
    let id = recall_id(options, c.id);
    let at = c.result?;
    let before = source.live_result_tokens(at)?;
    let placeholder = match source.call_input(ci, c.at)? {
        CallInput::Arguments(args) => Placeholder::Described(placeholders.describe_arguments(c.name, args)),
        CallInput::Input(input) => Placeholder::Text(placeholders.placeholder(c.name, input, before, id)),
    };
    // With cached counts, unless every placeholder is asked for: when the result is clearly
    // larger than any count of its placeholder, the placeholder is not counted here and the
    // report holds that bound (a caller that keeps counts fills in the exact figure). A
    // byte-level BPE token covers at least one byte (and chars / 4 is below the byte count);
    // the heuristic is allowed two tokens a byte.
    let bytes = match &placeholder {
        Placeholder::Described(d) => Placeholders::bytes(*d, before, id),
        Placeholder::Text(text) => text.len(),
    };
    let per_byte = if matches!(enc, Encoding::Heuristic) { 2 } else { 1 };
    let bound = tokens::TOOL_BLOCK_OVERHEAD + per_byte * bytes;
    let bounded = source.counts_cached() && before > bound && !options.count_placeholders;
    let after = if bounded {
        bound
    } else {
        // What `count_block` gives for a result whose content is the placeholder.
        tokens::TOOL_BLOCK_OVERHEAD
            + match &placeholder {
                Placeholder::Described(d) => placeholders.count(*d, before, id, enc),
                Placeholder::Text(text) => enc.count(text),
            }
    };
    (after < before).then(|| {
        let cleared = Cleared {
            index: at.0,
            tool_use_id: Cow::Borrowed(c.id),
            tool_name: Cow::Borrowed(c.name),
            tokens_before: before,
            tokens_after: after,
            after_exact: !bounded,
        };
        (cleared, at, placeholder)
    })
}

/// Whether freeing `freed` tokens is worth a change under `options` (`clear_at_least`).
pub fn worth_clearing(freed: usize, options: &ClearOptions) -> bool {
    freed > 0 && freed >= options.clear_at_least
}

/// The results clearing replaces, in call order, and the tokens that frees: every candidate
/// ([`Candidates`]: completed, outside `protected`, tool not excluded) whose result is live and
/// larger than its placeholder. Nothing when that frees less than `clear_at_least`.
pub fn plan_results<'m, S: ClearSource<'m> + ?Sized>(
    source: &S,
    messages: usize,
    pairing: &Pairing<'m>,
    protected: &Protected,
    enc: Encoding,
    options: &ClearOptions,
    placeholders: &mut Placeholders<'m>,
) -> (Vec<Planned<'m>>, usize) {
    let planned: Vec<Planned<'m>> = Candidates::new(pairing, protected, messages, &options.exclude_tools)
        .iter()
        .filter_map(|(ci, _)| clear_result(source, pairing, enc, options, placeholders, ci))
        .collect();
    let freed = planned.iter().map(|(c, _, _)| c.tokens_before - c.tokens_after).sum();
    if worth_clearing(freed, options) {
        (planned, freed)
    } else {
        (Vec::new(), 0)
    }
}
