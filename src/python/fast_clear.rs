//! The fast path's clearing (`fast::trim`): old tool results and, with `clear_tool_inputs`, old
//! calls' arguments, over the skeleton of the caller's dicts. Every decision is the core's — the
//! candidates ([`Candidates`]), each result's placeholder and count ([`clear_result`]), each
//! input's placeholder ([`input_placeholder`]) and the `clear_at_least` rollback — so the fast
//! path returns what the general path does.
//!
//! A framework passes the same messages on every call, and the same old results are cleared each
//! time: the placeholder string of a cleared result is kept across calls in a process-wide memo,
//! by the identity of the strings it is made from (the tool name, the call's arguments and id, all
//! held by the memo so that no other string can take their address) and the result's tokens (the
//! only thing of the result a placeholder reads). A hit skips describing the call, counting and
//! writing the placeholder and making its Python string. So is a result that stays because its
//! placeholder is not smaller (else described again on every call), and what clearing does to a
//! call's arguments, by the same strings. The last call's lookups are kept in order too: the next
//! call over the same or a longer list compares each key with the one at its place before it
//! looks in the table (a lookup at a random place, cold after the caller's own work).

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard, PoisonError};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use super::fast::{Skeleton, Source};
use crate::compact::clear::{
    Candidates, ClearOptions, Placeholders, RecallIds, clear_result, input_placeholder, is_cleared_input,
    worth_clearing,
};
use crate::compact::structure::{FastMap, Pairing};
use crate::compact::{self, Protection};
use crate::model::{Block, Body, ToolInput};
use crate::tokens::{self, Encoding};

/// A placeholder's identity: the strings it describes (by address) and the result's tokens.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    enc: Encoding,
    name: usize,
    args: usize,
    id: usize,
    before: usize,
    /// Whether the placeholder names the call id to recall the original by (`recall_ids`).
    stored: bool,
}

/// A placeholder made by an earlier call: its text and tokens (`None` when it was not smaller
/// than the result, which then stays), and the strings of its key (held, so that their addresses
/// stay theirs).
struct Made {
    _held: [Py<PyString>; 3],
    text: Option<Py<PyString>>,
    after: usize,
}

/// A lookup of the last call, in its order: the key, the placeholder (none when the text stays)
/// and the tokens after it (results) or freed by it (arguments).
type Hint = (Key, Option<Py<PyString>>, usize);

/// Write `hint` at place `at` of `order` (over the last call's lookup there, or after them all)
/// and move past it.
fn put(order: &mut Vec<Hint>, at: &mut usize, hint: Hint) {
    match order.get_mut(*at) {
        Some(slot) => *slot = hint,
        None => order.push(hint),
    }
    *at += 1;
}

/// What clearing does to a call's arguments: the placeholder (the new `arguments` text) and the
/// tokens it frees, or `None` when they stay (already a placeholder, or not made smaller).
type InputPlan = Option<(Py<PyString>, usize)>;

#[derive(Default)]
pub(crate) struct Memo {
    made: FastMap<Key, Made>,
    /// The placeholders of the last call's cleared results, in the order it looked them up (the
    /// same as `made`'s, whose entries hold their keys' strings): the next call over the same
    /// messages, or over more of them, finds each at its place, read in order instead of one
    /// table lookup each at a random place (cold after a caller's own work).
    last: Vec<Hint>,
    /// The same of the calls whose arguments the last call looked at (`clear_tool_inputs`):
    /// each call's new arguments and the tokens they free.
    last_inputs: Vec<Hint>,
    /// How often the memo started again: a call's order of lookups is kept only when the memo
    /// did not start again during it.
    resets: u64,
    /// Each call's [`InputPlan`] (`Key::before` 0), with the strings of its key.
    inputs: FastMap<Key, ([Py<PyString>; 3], InputPlan)>,
    /// Bytes of the arguments texts held.
    bytes: usize,
}

impl Memo {
    /// Room for an entry holding `size` bytes of arguments: past the bounds, the memo starts again.
    fn room(&mut self, size: usize) {
        if self.made.len() + self.inputs.len() >= MEMO_ENTRIES || self.bytes + size > MEMO_BYTES {
            *self = Memo {
                resets: self.resets + 1,
                ..Memo::default()
            };
        }
        self.bytes += size;
    }
}

/// What clearing does to the arguments `args` of call `id` to `name` (as
/// `compact::clear::inputs` plans it): the new arguments text and the tokens freed.
/// `recall` is the recall id the placeholder names (empty: none).
fn input_plan(id: &str, name: &str, args: &str, enc: Encoding, recall: &str) -> Option<(String, usize)> {
    let input = ToolInput::Raw(args.to_owned());
    if is_cleared_input(&input) {
        return None;
    }
    let block = |input| {
        Block::new(Body::ToolUse {
            id: id.to_owned(),
            name: name.to_owned(),
            input,
        })
    };
    let original = block(input);
    let was = tokens::count_block(enc, &original);
    let Body::ToolUse { input, .. } = &original.body else {
        return None;
    };
    let new = input_placeholder(name, input, was, recall);
    let arguments = new.to_arguments();
    let now = tokens::count_block(enc, &block(new));
    (now < was).then_some((arguments, was - now))
}

/// The placeholder of the result of call `ci` naming the recall id `id`, as [`clear_result`] plans
/// it, and its tokens (`None` when the result stays); [`Unreadable`] when a text cannot be read.
fn fresh<'a>(
    source: &Source<'a, '_>,
    pairing: &Pairing<'a>,
    enc: Encoding,
    options: &ClearOptions,
    placeholders: &mut Placeholders<'a>,
    (ci, id): (usize, &str),
) -> Result<Option<(String, usize)>, Unreadable> {
    match clear_result(source, pairing, enc, options, placeholders, ci, id) {
        Some((c, _, p)) => Ok(Some((p.into_text(placeholders, c.tokens_before, id), c.tokens_after))),
        None if source.unreadable() => Err(Unreadable),
        None => Ok(None),
    }
}

/// Past this many placeholders, or arguments of this many bytes held, the memo starts again.
const MEMO_ENTRIES: usize = 16_384;
const MEMO_BYTES: usize = 16 << 20;

static MEMO: Mutex<Option<Memo>> = Mutex::new(None);

/// The placeholder memo, locked, when free now (before a fork: `super::fork`).
pub(crate) fn try_hold() -> Option<MutexGuard<'static, Option<Memo>>> {
    crate::fork::try_lock(&MEMO)
}

/// Empty the placeholder memo (with the token-count memo: `token_cache_clear`).
pub(crate) fn forget() {
    *MEMO.lock().unwrap_or_else(PoisonError::into_inner) = None;
}

/// A text of the list could not be read (the general path then reports it).
struct Unreadable;

/// What clearing did to one tool result on a kept trimmer's last call (`super::trimmer`): its
/// key, and its placeholder with the tokens after (`None`: the result stayed). A later call finds
/// it by the message's place, without the process-wide memo.
pub(super) struct Known {
    key: Key,
    made: Option<(Py<PyString>, usize)>,
}

/// Per message, what clearing did to its result on a kept trimmer's last call.
pub(super) type KnownResults = Vec<Option<Known>>;

/// What clearing changes in one message: a result's new content, or the new arguments of some of
/// its calls (by position in `tool_calls`).
pub(super) enum Change<'py> {
    Result(Bound<'py, PyString>),
    Inputs(Vec<(usize, Bound<'py, PyString>)>),
}

/// The clearing options of the fast path.
pub(super) struct Cut {
    pub(super) protection: Protection,
    pub(super) clear_at_least: usize,
    pub(super) enc: Encoding,
    pub(super) inputs: bool,
    /// Whether placeholders name the call id the original is recalled by (else they say that it
    /// is not stored: `ClearOptions::recall_ids`).
    pub(super) recall_ids: bool,
}

impl Cut {
    /// Clear as the core's plan says, into `tokens`; by message, what changed. `None` when a
    /// text cannot be read (the general path then reports it).
    pub(super) fn clear<'a, 'py>(
        &self,
        sk: &'a Skeleton<'py>,
        pairing: &Pairing<'a>,
        tokens: &mut [usize],
        known: Option<&mut KnownResults>,
    ) -> Option<Vec<Option<Change<'py>>>> {
        let n = sk.messages.len();
        let (recent_messages, recent_tools) = (self.protection.recent_messages, self.protection.recent_tools);
        let protected = compact::select::protected_n(n, pairing, recent_messages, recent_tools, &BTreeSet::new());
        let options = ClearOptions {
            clear_at_least: self.clear_at_least,
            clear_tool_inputs: self.inputs,
            recall_ids: self.recall_ids,
            // Every placeholder is counted: the counts of the kept messages are the plan's.
            count_placeholders: true,
            ..ClearOptions::default()
        };
        let candidates: Vec<(usize, (usize, usize))> = Candidates::new(pairing, &protected, n, &options.exclude_tools)
            .iter()
            .collect();
        let mut changes: Vec<Option<Change<'py>>> = (0..n).map(|_| None).collect();
        let mut freed = self.results(sk, pairing, &options, &candidates, tokens, &mut changes, known)?;
        if self.inputs {
            freed += self.call_inputs(sk, pairing, &options, &candidates, tokens, &mut changes)?;
        }
        if !worth_clearing(freed, &options) {
            for (i, c) in changes.iter_mut().enumerate() {
                if c.take().is_some() {
                    tokens[i] = sk.messages[i].tokens;
                }
            }
        }
        Some(changes)
    }

    /// The results of `candidates` cleared (each as [`clear_result`] plans it, through `known`
    /// and the memo); the tokens freed.
    #[allow(clippy::too_many_arguments)]
    fn results<'a, 'py>(
        &self,
        sk: &'a Skeleton<'py>,
        pairing: &Pairing<'a>,
        options: &ClearOptions,
        candidates: &[(usize, (usize, usize))],
        tokens: &mut [usize],
        changes: &mut [Option<Change<'py>>],
        mut known: Option<&mut KnownResults>,
    ) -> Option<usize> {
        let source = Source::new(sk);
        let mut placeholders = Placeholders::default();
        let mut guard = MEMO.lock().unwrap_or_else(PoisonError::into_inner);
        let memo = guard.get_or_insert_with(Memo::default);
        // A stateless call reads the last stateless call's lookups in order (a trimmer keeps each
        // result's own in `known`, and leaves them be).
        let ordered = known.is_none();
        // This call's lookups are written over the last call's as they come (`put`): a call over
        // the same list as the last one finds each at its place and writes nothing.
        let mut order = if ordered {
            std::mem::take(&mut memo.last)
        } else {
            Vec::new()
        };
        let mut at_order = 0;
        let resets = memo.resets;
        let mut freed = 0;
        let py = sk.py();
        let ids = RecallIds::new(pairing, options.recall_ids);
        let make = |placeholders: &mut Placeholders<'a>, ci| {
            fresh(&source, pairing, self.enc, options, placeholders, (ci, ids.get(ci)))
        };
        for &(ci, at) in candidates {
            let m = &sk.messages[at.0];
            if m.placeholder {
                continue;
            }
            let (name, args, id) = sk.call_strings(ci);
            let key = Key {
                enc: self.enc,
                name: name.as_ptr() as usize,
                args: args.as_ptr() as usize,
                id: id.as_ptr() as usize,
                before: m.result_tokens,
                stored: self.recall_ids,
            };
            let slot = known.as_deref_mut().and_then(|k| k.get_mut(at.0));
            let made = match slot {
                // A reused call id: the placeholder names the call's place among those of its id,
                // which the key does not hold; made afresh, and not remembered.
                _ if ids.renamed(ci) => make(&mut placeholders, ci)
                    .ok()?
                    .map(|(text, after)| (PyString::new(py, &text), after)),
                Some(Some(k)) if k.key == key => k.made.as_ref().map(|(text, after)| (text.bind(py).clone(), *after)),
                slot => {
                    // (Not after the memo started again: the strings of those keys are no longer held.)
                    let hint = order
                        .get(at_order)
                        .filter(|(k, _, _)| ordered && *k == key && memo.resets == resets);
                    let made = match hint {
                        Some((_, text, after)) => {
                            at_order += 1;
                            text.as_ref().map(|text| (text.bind(py).clone(), *after))
                        }
                        None => Self::placeholder(memo, key, (name, args, id), || make(&mut placeholders, ci))
                            .ok()
                            .inspect(|made| {
                                if ordered {
                                    let text = made.as_ref().map(|(text, _)| text.clone().unbind());
                                    put(&mut order, &mut at_order, (key, text, made.as_ref().map_or(0, |m| m.1)));
                                }
                            })?,
                    };
                    if let Some(slot) = slot {
                        let held = made.as_ref().map(|(text, after)| (text.clone().unbind(), *after));
                        *slot = Some(Known { key, made: held });
                    }
                    made
                }
            };
            let Some((text, after)) = made else {
                continue;
            };
            freed += m.result_tokens - after;
            tokens[at.0] -= m.result_tokens - after;
            changes[at.0] = Some(Change::Result(text));
        }
        if ordered && memo.resets == resets {
            order.truncate(at_order);
            memo.last = order;
        }
        Some(freed)
    }

    /// The placeholder of the result whose key is `key` (its call's strings `strings`) and its
    /// tokens, from the memo or made by `make` (the text and tokens after; `None` when the result
    /// stays) and remembered; `Ok(None)` when the result stays, [`Unreadable`] when `make` could
    /// not read a text (nothing remembered: the general path reports it).
    fn placeholder<'py>(
        memo: &mut Memo,
        key: Key,
        (name, args, id): (&Bound<'py, PyString>, &Bound<'py, PyString>, &Bound<'py, PyString>),
        make: impl FnOnce() -> Result<Option<(String, usize)>, Unreadable>,
    ) -> Result<Option<(Bound<'py, PyString>, usize)>, Unreadable> {
        let py = name.py();
        if let Some(made) = memo.made.get(&key) {
            return Ok(made.text.as_ref().map(|text| (text.bind(py).clone(), made.after)));
        }
        // A result whose placeholder is not smaller (a function of the key alone) is remembered
        // too, so that the next call does not describe the call again.
        let made = make()?.map(|(text, after)| (PyString::new(py, &text), after));
        memo.room(args.len().unwrap_or(0));
        let held = [name.clone().unbind(), args.clone().unbind(), id.clone().unbind()];
        let (text, after) = match &made {
            Some((text, after)) => (Some(text.clone().unbind()), *after),
            None => (None, 0),
        };
        memo.made.insert(
            key,
            Made {
                _held: held,
                text,
                after,
            },
        );
        Ok(made)
    }

    /// The arguments of `candidates` cleared, as the general path's `clear_tool_inputs` does
    /// (`compact::clear::inputs`): each not yet a placeholder whose placeholder makes its block
    /// smaller; the tokens freed.
    fn call_inputs<'a, 'py>(
        &self,
        sk: &'a Skeleton<'py>,
        pairing: &Pairing<'a>,
        options: &ClearOptions,
        candidates: &[(usize, (usize, usize))],
        tokens: &mut [usize],
        changes: &mut [Option<Change<'py>>],
    ) -> Option<usize> {
        let py = sk.py();
        let mut guard = MEMO.lock().unwrap_or_else(PoisonError::into_inner);
        let memo = guard.get_or_insert_with(Memo::default);
        let (last, resets) = (std::mem::take(&mut memo.last_inputs), memo.resets);
        let mut order = Vec::with_capacity(last.len().max(candidates.len()));
        let mut freed = 0;
        let ids = RecallIds::new(pairing, options.recall_ids);
        for &(ci, _) in candidates {
            let c = &pairing.calls[ci];
            let (name, args, id) = sk.call_strings(ci);
            if ids.renamed(ci) {
                // A reused call id: made afresh, not remembered (see `results`).
                let Some((text, saved)) = input_plan(c.id, c.name, args.to_str().ok()?, self.enc, ids.get(ci)) else {
                    continue;
                };
                freed += saved;
                tokens[c.at.0] -= saved;
                let arguments = PyString::new(py, &text);
                match &mut changes[c.at.0] {
                    Some(Change::Inputs(calls)) => calls.push((c.at.1 - 1, arguments)),
                    slot => *slot = Some(Change::Inputs(vec![(c.at.1 - 1, arguments)])),
                }
                continue;
            }
            let key = Key {
                enc: self.enc,
                name: name.as_ptr() as usize,
                args: args.as_ptr() as usize,
                id: id.as_ptr() as usize,
                before: 0,
                stored: self.recall_ids,
            };
            let hint = last
                .get(order.len())
                .filter(|(k, _, _)| *k == key && memo.resets == resets)
                .map(|(_, text, saved)| text.as_ref().map(|t| (t, *saved)));
            let plan = if let Some(plan) = hint.or_else(|| {
                memo.inputs
                    .get(&key)
                    .map(|(_, plan)| plan.as_ref().map(|(t, s)| (t, *s)))
            }) {
                let plan = plan.map(|(text, saved)| (text.clone_ref(py), saved));
                order.push((
                    key,
                    plan.as_ref().map(|(t, _)| t.clone_ref(py)),
                    plan.as_ref().map_or(0, |p| p.1),
                ));
                plan
            } else {
                let plan = input_plan(c.id, c.name, args.to_str().ok()?, self.enc, ids.get(ci))
                    .map(|(text, saved)| (PyString::new(py, &text).unbind(), saved));
                memo.room(args.len().unwrap_or(0));
                let held = [name.clone().unbind(), args.clone().unbind(), id.clone().unbind()];
                let kept = plan.as_ref().map(|(text, saved)| (text.clone_ref(py), *saved));
                memo.inputs.insert(key, (held, kept));
                order.push((
                    key,
                    plan.as_ref().map(|(t, _)| t.clone_ref(py)),
                    plan.as_ref().map_or(0, |p| p.1),
                ));
                plan
            };
            let Some((arguments, saved)) = plan else {
                continue;
            };
            freed += saved;
            tokens[c.at.0] -= saved;
            // A call's block follows its message's content: call k of `tool_calls` is block k + 1.
            let k = c.at.1 - 1;
            let arguments = arguments.into_bound(py);
            match &mut changes[c.at.0] {
                Some(Change::Inputs(calls)) => calls.push((k, arguments)),
                slot => *slot = Some(Change::Inputs(vec![(k, arguments)])),
            }
        }
        if memo.resets == resets {
            memo.last_inputs = order;
        }
        Some(freed)
    }
}

/// A copy of the assistant message `d` with the arguments of its calls at the positions in
/// `calls` replaced (each changed call and its `function` copied; the others are the caller's).
pub(super) fn with_inputs<'py>(
    d: &Bound<'py, PyDict>,
    calls: &[(usize, Bound<'py, PyString>)],
    native: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let py = d.py();
    let (k_calls, k_function, k_args) = (
        intern!(py, "tool_calls"),
        intern!(py, "function"),
        intern!(py, "arguments"),
    );
    let list = d
        .get_item(k_calls)?
        .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err("tool_calls"))?
        .cast_into::<PyList>()?;
    let mut out = Vec::with_capacity(list.len());
    for (k, call) in list.iter().enumerate() {
        let Some((_, arguments)) = calls.iter().find(|(at, _)| *at == k) else {
            out.push(call);
            continue;
        };
        let copy = call.cast::<PyDict>()?.copy()?;
        if native {
            copy.set_item(k_args, arguments)?;
        } else {
            let function = copy
                .get_item(k_function)?
                .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err("function"))?
                .cast_into::<PyDict>()?
                .copy()?;
            function.set_item(k_args, arguments)?;
            copy.set_item(k_function, function)?;
        }
        out.push(copy.into_any());
    }
    let copy = d.copy()?;
    copy.set_item(k_calls, PyList::new(py, out)?)?;
    Ok(copy)
}
