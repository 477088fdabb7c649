//! The whole-list fast path for frameworks that pass every message each turn.
//!
//! For OpenAI Chat and native messages whose contents are plain strings, `trim_messages` never
//! converts the list: it reads only roles, call ids, tool names and string lengths from the
//! Python objects into a skeleton, runs the same pairing, protection and suffix selection as the
//! general path on it, and returns a list of the caller's own message objects (new dicts only for
//! cleared results and arguments, `fast_clear`). Anything else falls back to the general path,
//! which also reports errors.

use std::cell::Cell;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::compact::request::AskKind;
use crate::compact::structure::{Pairing, Shape, ToolBlock};
use crate::compact::{
    self,
    clear::{CallInput, ClearSource, inputs::INPUT_PLACEHOLDER_OPEN, is_placeholder_text, shows_recall_id},
    validate::Checked,
};
use crate::model::{Format, Role};
use crate::tokens::{Encoding, MESSAGE_OVERHEAD, TOOL_BLOCK_OVERHEAD};

use super::fast_clear::{Change, Cut, KnownResults, with_inputs};

/// The texts whose counts the skeleton needs, counted together with the GIL released (through
/// the count memo: a list that grew by one message costs one count); `Approximate` needs only a
/// string's length and is counted on the spot.
struct Pending<'py> {
    enc: Encoding,
    texts: Vec<Bound<'py, PyString>>,
    /// For each text: its message and whether it is the message's content (else a call's name or
    /// arguments).
    slots: Vec<(usize, bool)>,
}

impl<'py> Pending<'py> {
    /// The tokens of `s` (of `len` characters) now (`Approximate`), or 0 and remembered for
    /// [`Pending::count`]; `None` when `s` is not valid text (a lone surrogate: the general
    /// path refuses it, as every other path does, though an approximate count never reads it).
    fn add(&mut self, s: &Bound<'py, PyString>, len: usize, message: usize, content: bool) -> Option<usize> {
        if self.enc == Encoding::Approximate {
            s.to_str().ok()?;
            return Some(Encoding::approximate(len));
        }
        Some(self.add_read(s, len, message, content))
    }

    /// [`Pending::add`] of a text already read (valid): no second read to tell it is.
    fn add_read(&mut self, s: &Bound<'py, PyString>, len: usize, message: usize, content: bool) -> usize {
        if self.enc == Encoding::Approximate {
            return Encoding::approximate(len);
        }
        self.texts.push(s.clone());
        self.slots.push((message, content));
        0
    }

    /// Count the remembered texts into `messages`.
    fn count(self, py: Python<'_>, messages: &mut [Skel]) -> Option<()> {
        let strs = self
            .texts
            .iter()
            .map(|s| s.to_str().ok())
            .collect::<Option<Vec<&str>>>()?;
        let enc = self.enc;
        let counts = py.detach(|| enc.count_many_cached(&strs));
        for (&(mi, content), n) in self.slots.iter().zip(counts) {
            let m = &mut messages[mi];
            m.tokens += n;
            if content {
                m.text_tokens += n;
                if m.role == Role::Tool {
                    m.result_tokens += n;
                }
            }
        }
        Some(())
    }
}

/// What the selection needs of one message.
pub(super) struct Skel {
    role: Role,
    pub(super) tokens: usize,
    /// Tokens of its tool result (tool messages).
    pub(super) result_tokens: usize,
    /// Tokens of its string content.
    text_tokens: usize,
    /// No content and no tool calls. (A string of whitespace is read as text, not looked into:
    /// that would read every string, and costs the fast path several percent. Either path
    /// returns such a list alike; only the objects differ, the caller's own here.)
    empty: bool,
    /// What it is to the search for the latest ask (from its role and text).
    ask: AskKind,
    /// For a tool message: its call id (in `Skeleton::ids`).
    result_id: Option<usize>,
    /// For a tool message: its content is a placeholder of an earlier clearing (looked at while
    /// the message is read, its string still in the cache).
    pub(super) placeholder: bool,
}

impl Shape for [Skel] {
    fn message_count(&self) -> usize {
        self.len()
    }

    fn role_at(&self, i: usize) -> Role {
        self[i].role
    }

    fn results_only_at(&self, i: usize) -> bool {
        // A tool message is its result; other messages have their content first.
        self[i].role == Role::Tool
    }

    fn ask_at(&self, i: usize) -> AskKind {
        self[i].ask
    }
}

impl Shape for Skeleton<'_> {
    fn message_count(&self) -> usize {
        self.messages.message_count()
    }

    fn role_at(&self, i: usize) -> Role {
        self.messages.role_at(i)
    }

    fn results_only_at(&self, i: usize) -> bool {
        self.messages.results_only_at(i)
    }

    fn ask_at(&self, i: usize) -> AskKind {
        self.messages.ask_at(i)
    }
}

/// The skeleton judged by the core's validation rules (`compact::validate`).
impl Checked for Skeleton<'_> {
    fn results_in_next_user(&self, _: usize) -> bool {
        false
    }

    fn is_empty_at(&self, i: usize) -> bool {
        self.messages[i].empty
    }

    fn not_results_before(&self, _: usize, b: usize) -> bool {
        // A tool message's result is its only block.
        b > 0
    }

    fn thinking_out_of_order(&self, _: usize) -> bool {
        // String contents carry no thinking blocks.
        false
    }

    fn result_id(&self, (m, _): (usize, usize)) -> Option<String> {
        Some(self.id(self.messages[m].result_id?).to_owned())
    }
}

/// A tool call or result of the skeleton: where it is and its strings (indices into `ids`).
struct Tool {
    at: (usize, usize),
    id: usize,
    /// For a call: its name (in `ids`) and its arguments (in `args`).
    call: Option<(usize, usize)>,
}

pub(super) struct Skeleton<'py> {
    py: Python<'py>,
    pub(super) messages: Vec<Skel>,
    objects: Vec<Bound<'py, PyDict>>,
    tools: Vec<Tool>,
    /// Call ids and tool names.
    ids: Vec<Bound<'py, PyString>>,
    /// Their texts (read once: a kept skeleton does not read its strings again), one after the
    /// other, and where each ends.
    id_text: String,
    id_ends: Vec<usize>,
    /// Arguments texts, read only for the calls whose results are cleared; one per call, in
    /// call order.
    args: Vec<Bound<'py, PyString>>,
    /// Each call's place in `tools`, in call order.
    calls: Vec<usize>,
    /// Per message, the lengths of `tools`, `ids`, `args` and `calls` before it (to truncate).
    starts: Vec<[usize; 4]>,
}

/// A [`Skeleton`] kept between calls (its Python objects owned; see `super::trimmer`).
pub(super) struct Held {
    messages: Vec<Skel>,
    objects: Vec<Py<PyDict>>,
    tools: Vec<Tool>,
    ids: Vec<Py<PyString>>,
    id_text: String,
    id_ends: Vec<usize>,
    args: Vec<Py<PyString>>,
    calls: Vec<usize>,
    starts: Vec<[usize; 4]>,
}

impl Held {
    /// The skeleton again, bound to `py`.
    pub(super) fn bind(self, py: Python<'_>) -> Skeleton<'_> {
        Skeleton {
            py,
            messages: self.messages,
            objects: self.objects.into_iter().map(|o| o.into_bound(py)).collect(),
            tools: self.tools,
            ids: self.ids.into_iter().map(|o| o.into_bound(py)).collect(),
            id_text: self.id_text,
            id_ends: self.id_ends,
            args: self.args.into_iter().map(|o| o.into_bound(py)).collect(),
            calls: self.calls,
            starts: self.starts,
        }
    }
}

impl<'py> Skeleton<'py> {
    /// An empty skeleton (room for `n` messages).
    pub(super) fn empty(py: Python<'py>, n: usize) -> Self {
        Skeleton {
            py,
            messages: Vec::with_capacity(n),
            objects: Vec::with_capacity(n),
            tools: Vec::with_capacity(n),
            ids: Vec::with_capacity(n + n / 2),
            id_text: String::new(),
            id_ends: Vec::with_capacity(n + n / 2),
            args: Vec::with_capacity(n / 2),
            calls: Vec::with_capacity(n / 2),
            starts: Vec::with_capacity(n),
        }
    }

    /// The skeleton to keep between calls.
    pub(super) fn unbind(self) -> Held {
        Held {
            messages: self.messages,
            objects: self.objects.into_iter().map(Bound::unbind).collect(),
            tools: self.tools,
            ids: self.ids.into_iter().map(Bound::unbind).collect(),
            id_text: self.id_text,
            id_ends: self.id_ends,
            args: self.args.into_iter().map(Bound::unbind).collect(),
            calls: self.calls,
            starts: self.starts,
        }
    }

    /// The tokens of the messages read.
    pub(super) fn tokens(&self) -> usize {
        self.messages.iter().map(|m| m.tokens).sum()
    }

    /// The message objects read, in order.
    pub(super) fn objects(&self) -> &[Bound<'py, PyDict>] {
        &self.objects
    }

    /// Only the first `k` messages kept.
    pub(super) fn truncate(&mut self, k: usize) {
        let Some(&[tools, ids, args, calls]) = self.starts.get(k) else {
            return;
        };
        self.messages.truncate(k);
        self.objects.truncate(k);
        self.starts.truncate(k);
        self.tools.truncate(tools);
        self.ids.truncate(ids);
        self.id_ends.truncate(ids);
        self.id_text.truncate(self.id_ends.last().copied().unwrap_or(0));
        self.args.truncate(args);
        self.calls.truncate(calls);
    }

    pub(super) fn py(&self) -> Python<'py> {
        self.py
    }

    /// The text of id (or name) `k`.
    fn id(&self, k: usize) -> &str {
        let start = if k == 0 { 0 } else { self.id_ends[k - 1] };
        &self.id_text[start..self.id_ends[k]]
    }

    /// Add an id (or name); `None` when its text cannot be read.
    fn push_id(&mut self, id: Bound<'py, PyString>) -> Option<()> {
        self.id_text.push_str(id.to_str().ok()?);
        self.id_ends.push(self.id_text.len());
        self.ids.push(id);
        Some(())
    }

    /// The tool name, arguments and id of call `call` (in call order: the pairing's).
    pub(super) fn call_strings(
        &self,
        call: usize,
    ) -> (&Bound<'py, PyString>, &Bound<'py, PyString>, &Bound<'py, PyString>) {
        let t = &self.tools[self.calls[call]];
        let (name, args) = t.call.unwrap_or((t.id, 0));
        (&self.ids[name], &self.args[args], &self.ids[t.id])
    }
}

/// Read the skeleton, or `None` when the list is not plain Chat/native with string contents.
fn skeleton<'py>(list: &Bound<'py, PyList>, enc: Encoding, native: bool) -> Option<Skeleton<'py>> {
    let mut sk = Skeleton::empty(list.py(), list.len());
    sk.extend(list, 0, enc, native)?;
    Some(sk)
}

impl<'py> Skeleton<'py> {
    /// Read the messages of `list` from `from` on onto the skeleton (which holds the ones before);
    /// `None` when one is not plain Chat/native with a string content (the skeleton then holds
    /// some of them: truncate it).
    pub(super) fn extend(&mut self, list: &Bound<'py, PyList>, from: usize, enc: Encoding, native: bool) -> Option<()> {
        let py = list.py();
        let (k_role, k_content, k_calls, k_call_id) = (
            intern!(py, "role"),
            intern!(py, "content"),
            intern!(py, "tool_calls"),
            intern!(py, "tool_call_id"),
        );
        let n = list.len().saturating_sub(from);
        let sk = self;
        let mut pending = Pending {
            enc,
            texts: Vec::with_capacity(if enc == Encoding::Approximate { 0 } else { 2 * n }),
            slots: Vec::with_capacity(if enc == Encoding::Approximate { 0 } else { 2 * n }),
        };
        for mi in from..list.len() {
            let item = list.get_item(mi).ok()?;
            sk.starts
                .push([sk.tools.len(), sk.ids.len(), sk.args.len(), sk.calls.len()]);
            let d = item.cast_into::<PyDict>().ok()?;
            let role = role_of(&d.get_item(k_role).ok()??)?;
            let content = d.get_item(k_content).ok()?;
            let mut ask = AskKind::Not;
            let mut placeholder = false;
            let (text_tokens, empty) = match &content {
                None => (0, true),
                Some(c) if c.is_none() => (0, true),
                Some(c) => {
                    let s = c.cast::<PyString>().ok()?;
                    // Read once: whether it is valid text (see `Pending::add`) and what it begins with.
                    let text = s.to_str().ok()?;
                    if role == Role::User {
                        let marked = d.contains(intern!(py, "compaction")).ok()?;
                        ask = compact::request::ask_kind_of_text(text, marked);
                    } else if role == Role::Tool {
                        // Placeholders of an earlier trim stay as they are, as on the general path.
                        placeholder = is_placeholder_text(text);
                    }
                    let len = s.len().ok()?;
                    (pending.add_read(s, len, mi, true), len == 0)
                }
            };
            let mut m = Skel {
                role,
                tokens: MESSAGE_OVERHEAD + text_tokens,
                result_tokens: 0,
                text_tokens,
                empty,
                ask,
                result_id: None,
                placeholder,
            };
            if role == Role::Tool {
                let id = d.get_item(k_call_id).ok()??.cast_into::<PyString>().ok()?;
                m.tokens += TOOL_BLOCK_OVERHEAD;
                m.result_tokens = TOOL_BLOCK_OVERHEAD + text_tokens;
                m.empty = false;
                m.result_id = Some(sk.ids.len());
                sk.tools.push(Tool {
                    at: (mi, 0),
                    id: sk.ids.len(),
                    call: None,
                });
                sk.push_id(id)?;
            } else if let Some(calls) = d.get_item(k_calls).ok()? {
                if !calls.is_none() {
                    read_calls(&calls, native, mi, &mut m, sk, &mut pending)?;
                }
            }
            sk.messages.push(m);
            sk.objects.push(d);
        }
        pending.count(py, &mut sk.messages)?;
        Some(())
    }
}

/// The role of a message from its `role` value: by identity when it is the interned name (as
/// literals in Python code are, and what most frameworks pass), else by its text.
fn role_of(value: &Bound<'_, PyAny>) -> Option<Role> {
    let py = value.py();
    let interned = [
        (intern!(py, "tool"), Role::Tool),
        (intern!(py, "assistant"), Role::Assistant),
        (intern!(py, "user"), Role::User),
        (intern!(py, "system"), Role::System),
    ];
    if let Some((_, role)) = interned.iter().find(|(name, _)| value.is(name)) {
        return Some(*role);
    }
    Role::parse(value.cast::<PyString>().ok()?.to_str().ok()?)
}

/// Read message `mi`'s tool calls (Chat: `{id, function: {name, arguments}}`; native:
/// `{id, name, arguments}`) into `m`, `sk` and `pending`; `None` when one is not plain.
fn read_calls<'py>(
    calls: &Bound<'py, PyAny>,
    native: bool,
    mi: usize,
    m: &mut Skel,
    sk: &mut Skeleton<'py>,
    pending: &mut Pending<'py>,
) -> Option<()> {
    let py = calls.py();
    let (k_id, k_function, k_name, k_args) = (
        intern!(py, "id"),
        intern!(py, "function"),
        intern!(py, "name"),
        intern!(py, "arguments"),
    );
    for (k, call) in calls.cast::<PyList>().ok()?.iter().enumerate() {
        let call = call.cast_into::<PyDict>().ok()?;
        let id = call.get_item(k_id).ok()??.cast_into::<PyString>().ok()?;
        let holder = if native {
            call
        } else {
            call.get_item(k_function).ok()??.cast_into::<PyDict>().ok()?
        };
        let name = holder.get_item(k_name).ok()??.cast_into::<PyString>().ok()?;
        let args = holder.get_item(k_args).ok()??.cast_into::<PyString>().ok()?;
        let (name_len, args_len) = (name.len().ok()?, args.len().ok()?);
        // (The name is read as an id below: an invalid one ends the fast path there.)
        m.tokens += TOOL_BLOCK_OVERHEAD
            + pending.add_read(&name, name_len, mi, false)
            + pending.add(&args, args_len, mi, false)?;
        m.empty = false;
        sk.calls.push(sk.tools.len());
        sk.tools.push(Tool {
            at: (mi, k + 1),
            id: sk.ids.len(),
            call: Some((sk.ids.len() + 1, sk.args.len())),
        });
        sk.push_id(id)?;
        sk.push_id(name)?;
        sk.args.push(args);
    }
    Some(())
}

/// What the selection can work on without conversion: a list the core's validation finds
/// nothing wrong with (every call answered once, in the tool messages right after it, no orphan
/// or duplicate result, no empty message) but reused ids, which are allowed: each result pairs
/// with the latest call of its id, as on the general path; and but calls of the last message
/// that is not a tool result left unanswered (an agent's list as it stands between the model's
/// calls and their results: the general path keeps them and selects by the same pairing).
fn is_valid(sk: &Skeleton<'_>, pairing: &Pairing<'_>) -> bool {
    let open = sk.messages.iter().rposition(|m| m.role != Role::Tool);
    compact::validate_with(sk, pairing).iter().all(|v| match v.kind {
        compact::ViolationKind::DuplicateId => true,
        compact::ViolationKind::MissingResult => Some(v.index) == open,
        _ => false,
    })
}

/// Whether a tool result of `sk` is a placeholder or a cut marker, or a call's arguments look
/// cleared: texts that show a recall id.
fn shows_recall_ids(sk: &Skeleton<'_>) -> bool {
    let py = sk.py();
    sk.messages.iter().any(|m| m.placeholder)
        || sk.objects.iter().zip(&sk.messages).any(|(d, m)| {
            m.role == Role::Tool
                && d.get_item(intern!(py, "content")).ok().flatten().is_some_and(|c| {
                    c.cast::<PyString>()
                        .ok()
                        .and_then(|s| s.to_str().ok().map(shows_recall_id))
                        .unwrap_or(false)
                })
        })
        || sk
            .args
            .iter()
            .any(|a| a.to_str().is_ok_and(|t| t.contains(INPUT_PLACEHOLDER_OPEN)))
}

/// The skeleton as the core's clearing plan reads it (`compact::clear::plan`): results and
/// arguments texts are read only for the calls the plan looks at.
pub(super) struct Source<'a, 'py> {
    sk: &'a Skeleton<'py>,
    /// Set when an arguments text cannot be read (the general path then reports it).
    unreadable: Cell<bool>,
}

impl<'a, 'py> Source<'a, 'py> {
    pub(super) fn new(sk: &'a Skeleton<'py>) -> Self {
        Source {
            sk,
            unreadable: Cell::new(false),
        }
    }

    /// Whether an arguments text could not be read.
    pub(super) fn unreadable(&self) -> bool {
        self.unreadable.get()
    }
}

impl<'a> ClearSource<'a> for Source<'a, '_> {
    fn live_result_tokens(&self, (m, _): (usize, usize)) -> Option<usize> {
        let m = &self.sk.messages[m];
        (!m.placeholder).then_some(m.result_tokens)
    }

    fn call_input(&self, call: usize, _: (usize, usize)) -> Option<CallInput<'a>> {
        // One arguments text per call, in call order.
        let sk: &'a Skeleton<'_> = self.sk;
        let args = sk.args[call].to_str().ok();
        self.unreadable.set(self.unreadable.get() || args.is_none());
        args.map(CallInput::Arguments)
    }

    fn counts_cached(&self) -> bool {
        true
    }
}

/// What the selection keeps of a list that does not fit whole: the kept messages in order, what
/// clearing changed in each message, and the request cut to fit (its index and the tokens the
/// whole message may take).
pub(super) struct Picked<'py> {
    pub(super) keep: Vec<usize>,
    pub(super) shrink: Option<(usize, usize)>,
    pub(super) changes: Vec<Option<Change<'py>>>,
}

/// What the selection makes of a skeleton.
pub(super) enum Pick<'py> {
    /// Not for the fast path: the general path decides (and reports errors).
    General,
    /// All of it, unchanged: it fits.
    Whole,
    Some(Picked<'py>),
}

/// The selection over the skeleton, clearing as `clear` says (none when `None`).
pub(super) fn pick<'py>(
    sk: &Skeleton<'py>,
    max_tokens: usize,
    reserve: usize,
    clear: Option<Cut>,
    known: Option<&mut KnownResults>,
) -> PyResult<Pick<'py>> {
    let pairing = Pairing::from_blocks(sk.tools.iter().map(|t| ToolBlock {
        at: t.at,
        id: sk.id(t.id),
        name: t.call.map(|(name, _)| sk.id(name)),
    }));
    if !is_valid(sk, &pairing) {
        // Invalid input is not for the fast path: the general path repairs it first.
        return Ok(Pick::General);
    }
    if !pairing.reused_ids.is_empty() && shows_recall_ids(sk) {
        // Calls reuse an id and texts name recall ids already: the general path reads those
        // names, which no new placeholder may take (`compact::clear::RecallIds::shown`).
        return Ok(Pick::General);
    }
    let original: Vec<usize> = sk.messages.iter().map(|m| m.tokens).collect();
    let total: usize = original.iter().sum();
    if compact::trim::fits(total, reserve, max_tokens) {
        return Ok(Pick::Whole);
    }
    let mut tokens = original;
    let changes = match clear {
        Some(cut) => {
            let Some(changes) = cut.clear(sk, &pairing, &mut tokens, known) else {
                return Ok(Pick::General);
            };
            changes
        }
        None => (0..sk.messages.len()).map(|_| None).collect(),
    };
    let plan = compact::trim::plan(&sk.messages[..], &tokens, &pairing, max_tokens, reserve, |i| {
        overhead(sk, i)
    })?;
    Ok(Pick::Some(Picked {
        keep: plan.keep,
        shrink: plan.shrink,
        changes,
    }))
}

/// A request's tokens other than its text (it is a string content: the message overhead).
fn overhead(sk: &Skeleton<'_>, i: usize) -> usize {
    sk.messages[i].tokens - sk.messages[i].text_tokens
}

/// A copy of message `d` with `change` made.
pub(super) fn changed<'py>(d: &Bound<'py, PyDict>, change: &Change<'py>, native: bool) -> PyResult<Bound<'py, PyDict>> {
    match change {
        Change::Result(text) => {
            let copy = d.copy()?;
            copy.set_item(intern!(d.py(), "content"), text)?;
            Ok(copy)
        }
        Change::Inputs(calls) => with_inputs(d, calls, native),
    }
}

/// A copy of the request `u` cut to take at most `room` tokens with its overhead.
pub(super) fn shrunk<'py>(sk: &Skeleton<'py>, u: usize, room: usize, enc: Encoding) -> PyResult<Bound<'py, PyDict>> {
    let py = sk.py();
    let content = sk.objects[u]
        .get_item(intern!(py, "content"))?
        .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err("content"))?;
    let text = content.cast::<PyString>()?.to_str()?;
    let cut = compact::trim::cut_request(text, room - overhead(sk, u), enc)?;
    let copy = sk.objects[u].copy()?;
    copy.set_item(intern!(py, "content"), cut)?;
    Ok(copy)
}

/// `trim_messages` over the skeleton, clearing as `clear` says (none when `None`); `None` means
/// "use the general path".
pub(crate) fn trim<'py>(
    list: &Bound<'py, PyList>,
    format: Format,
    enc: Encoding,
    max_tokens: usize,
    reserve: usize,
    clear: Option<Cut>,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let native = match format {
        Format::OpenAiChat => false,
        Format::Native => true,
        _ => return Ok(None),
    };
    let Some(sk) = skeleton(list, enc, native) else {
        return Ok(None);
    };
    let py = list.py();
    let picked = match pick(&sk, max_tokens, reserve, clear, None)? {
        Pick::General => return Ok(None),
        Pick::Whole => return Ok(Some(PyList::new(py, &sk.objects)?)),
        Pick::Some(picked) => picked,
    };
    let mut out = Vec::with_capacity(picked.keep.len());
    for &i in &picked.keep {
        out.push(match (picked.shrink, &picked.changes[i]) {
            (Some((u, room)), _) if u == i => shrunk(&sk, u, room, enc)?.into_any(),
            (_, None) => sk.objects[i].clone().into_any(),
            (_, Some(change)) => changed(&sk.objects[i], change, native)?.into_any(),
        });
    }
    Ok(Some(PyList::new(py, out)?))
}
