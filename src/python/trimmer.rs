//! `agentcontext._core._Trimmer`: `trim_messages`' fast path (`super::fast`) kept across calls,
//! for an adapter whose list grows call by call (an agent's history sent on every model call).
//!
//! It holds the skeleton of the last list (each message's role, counts and call ids) and reads
//! only the messages after the part of the new list that is the same dicts, by identity: the
//! caller promises not to change in place a dict it passed. Beside each dict it holds the object
//! the caller maps it back to, and for each message the copy it made for its last change with the
//! object the caller made from that copy: a call returns the caller's objects directly, and only
//! what is new (a result cleared for the first time, a cut request) goes back to the caller to be
//! mapped. Selection, clearing and counting are the fast path's, so the kept messages and their
//! contents are exactly what `trim_messages` returns for the same dicts.

use std::sync::{Mutex, TryLockError};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use super::fast::{Held, Pick, Picked, Skeleton, changed, pick, shrunk};
use super::fast_clear::{Change, Cut, KnownResults};
use crate::compact::Protection;
use crate::tokens::Encoding;

/// A change made to a message (see `Change`), its texts held.
enum Changed {
    Result(Py<PyString>),
    Inputs(Vec<(usize, Py<PyString>)>),
}

/// The copy made for a message's change: the change, the copy, and the caller's object for it.
struct Made {
    change: Changed,
    copy: Py<PyDict>,
    object: Option<Py<PyAny>>,
}

impl Made {
    /// Whether `change` is this one's (its texts the same strings).
    fn is(&self, change: &Change<'_>) -> bool {
        match (&self.change, change) {
            (Changed::Result(a), Change::Result(b)) => a.is(b),
            (Changed::Inputs(a), Change::Inputs(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|((i, x), (j, y))| i == j && x.is(y))
            }
            _ => false,
        }
    }

    fn new(change: &Change<'_>, copy: Py<PyDict>) -> Self {
        let change = match change {
            Change::Result(text) => Changed::Result(text.clone().unbind()),
            Change::Inputs(calls) => Changed::Inputs(calls.iter().map(|(k, t)| (*k, t.clone().unbind())).collect()),
        };
        Made {
            change,
            copy,
            object: None,
        }
    }
}

#[derive(Default)]
struct State {
    held: Option<Held>,
    /// The list the last call read (the caller's promise: given again, it only grew).
    list: Option<Py<PyList>>,
    /// Per message held: the caller's object for it.
    objects: Vec<Py<PyAny>>,
    /// Per message held: the copy made for its last change.
    made: Vec<Option<Made>>,
    /// Per message held: what clearing did to its result.
    known: KnownResults,
}

#[pyclass(name = "_Trimmer", module = "agentcontext", frozen)]
pub struct PyTrimmer {
    encoding: Encoding,
    state: Mutex<State>,
}

#[pymethods]
impl PyTrimmer {
    #[new]
    #[pyo3(signature = (*, encoding = "o200k_base"))]
    fn new(#[pyo3(from_py_with = super::args::string::encoding)] encoding: &str) -> PyResult<Self> {
        Ok(PyTrimmer {
            encoding: Encoding::parse(encoding)?,
            state: Mutex::new(State::default()),
        })
    }

    /// `trim_messages(dicts, max_tokens, format="openai", ...)` (the dicts never changed in
    /// place; the list given again only grown, if at all), each kept dict given back as
    /// the object at its place in `objects` when unchanged, or as the object :meth:`remember`
    /// was told for the same change; the rest as the changed copies, their places and the
    /// places of their messages listed beside (`(out, [(position, index), ...])`), but for a dict
    /// that is its own object (its copy is its object: not listed). None when
    /// the fast path does not apply (the caller then calls `trim_messages`), or when another
    /// thread is using this trimmer. With `fresh`, every dict is read again (the caller's dicts
    /// may have changed in place: only the objects are mapped; nothing of the last call is read, nor
    /// of this one kept, and nothing is held for a later call: as `trim_messages` costs).
    #[pyo3(signature = (
        dicts, objects, max_tokens, /, *, clear = true, recent_messages = 12, recent_tools = 3,
        clear_at_least = 0, reserved_output = 0, safety_margin = 0, clear_tool_inputs = false, recall_ids = true,
        fresh = false
    ))]
    #[allow(clippy::too_many_arguments)]
    #[allow(clippy::fn_params_excessive_bools)] // independent switches, each one a caller's keyword option
    fn trim<'py>(
        &self,
        py: Python<'py>,
        dicts: &Bound<'py, PyList>,
        objects: &Bound<'py, PyList>,
        #[pyo3(from_py_with = super::args::count::max_tokens)] max_tokens: usize,
        #[pyo3(from_py_with = super::args::flag::clear)] clear: bool,
        #[pyo3(from_py_with = super::args::count::recent_messages)] recent_messages: usize,
        #[pyo3(from_py_with = super::args::count::recent_tools)] recent_tools: usize,
        #[pyo3(from_py_with = super::args::count::clear_at_least)] clear_at_least: usize,
        #[pyo3(from_py_with = super::args::count::reserved_output)] reserved_output: usize,
        #[pyo3(from_py_with = super::args::count::safety_margin)] safety_margin: usize,
        #[pyo3(from_py_with = super::args::flag::clear_tool_inputs)] clear_tool_inputs: bool,
        #[pyo3(from_py_with = super::args::flag::recall_ids)] recall_ids: bool,
        fresh: bool,
    ) -> PyResult<Option<(Bound<'py, PyList>, Bound<'py, PyList>)>> {
        if dicts.len() != objects.len() {
            return Ok(None);
        }
        let mut state = match self.state.try_lock() {
            Ok(state) => state,
            Err(TryLockError::WouldBlock) => return Ok(None),
            Err(TryLockError::Poisoned(e)) => {
                let mut state = e.into_inner();
                *state = State::default();
                state
            }
        };
        let enc = self.encoding;
        let cut = clear.then_some(Cut {
            protection: Protection {
                recent_messages,
                recent_tools,
            },
            clear_at_least,
            enc,
            inputs: clear_tool_inputs,
            recall_ids,
        });
        let reserve = reserved_output.saturating_add(safety_margin);
        if fresh {
            // Nothing of the last call is read, and nothing of this one kept: `trim_messages`'
            // fast path, each dict that comes back unchanged given as its object.
            *state = State::default();
            drop(state);
            let mut sk = Skeleton::empty(py, dicts.len());
            if sk.extend(dicts, 0, enc, false).is_none() {
                return Ok(None);
            }
            return match pick(&sk, max_tokens, reserve, cut, None)? {
                Pick::General => Ok(None),
                Pick::Whole => Ok(Some((PyList::new(py, objects.iter())?, PyList::empty(py)))),
                Pick::Some(picked) => render_picked(&sk, |i| objects.get_item(i), None, &picked, enc).map(Some),
            };
        }
        let mut sk = match state.held.take() {
            Some(held) => held.bind(py),
            None => Skeleton::empty(py, dicts.len()),
        };
        // The messages the last call read that begin this list (the same dicts): all of them
        // when it is the same list, grown.
        let read = sk.objects().len();
        let same = if state.list.as_ref().is_some_and(|l| l.is(dicts)) && dicts.len() >= read {
            read
        } else {
            dicts
                .iter()
                .zip(sk.objects())
                .take_while(|(d, held)| d.is(*held))
                .count()
        };
        sk.truncate(same);
        state.objects.truncate(same);
        state.made.truncate(same);
        state.known.truncate(same);
        if sk.extend(dicts, same, enc, false).is_none() {
            *state = State::default();
            return Ok(None);
        }
        state.list = Some(dicts.clone().unbind());
        state.objects.extend(objects.iter().skip(same).map(Bound::unbind));
        state.made.resize_with(dicts.len(), || None);
        state.known.resize_with(dicts.len(), || None);
        let picked = pick(&sk, max_tokens, reserve, cut, Some(&mut state.known));
        let out = match picked {
            Err(e) => Err(e),
            Ok(Pick::General) => Ok(None),
            Ok(Pick::Whole) => self.render(py, &sk, &mut state, None).map(Some),
            Ok(Pick::Some(picked)) => self.render(py, &sk, &mut state, Some(picked)).map(Some),
        };
        state.held = Some(sk.unbind());
        out
    }

    /// That `object` stands for `copy`, the changed copy of message `index` the last call gave
    /// back (ignored when that message has no such copy now).
    #[pyo3(signature = (index, copy, object, /))]
    fn remember(&self, index: usize, copy: &Bound<'_, PyAny>, object: &Bound<'_, PyAny>) {
        let Ok(mut state) = self.state.try_lock() else {
            return;
        };
        if let Some(Some(made)) = state.made.get_mut(index) {
            if made.copy.is(copy) {
                made.object = Some(object.clone().unbind());
            }
        }
    }
}

impl PyTrimmer {
    /// The output of `picked` (`None`: the whole list) over `sk`, and what the caller maps.
    fn render<'py>(
        &self,
        py: Python<'py>,
        sk: &Skeleton<'py>,
        state: &mut State,
        picked: Option<Picked<'py>>,
    ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
        let Some(picked) = picked else {
            return Ok((
                PyList::new(py, state.objects.iter().map(|o| o.bind(py)))?,
                PyList::empty(py),
            ));
        };
        let State { objects, made, .. } = state;
        render_picked(
            sk,
            |i| Ok(objects[i].bind(py).clone()),
            Some(made),
            &picked,
            self.encoding,
        )
    }
}

/// The output of `picked` over `sk` and what the caller maps (`[position, index]` of each copy
/// given back for an object that is not its own dict): each kept message that is unchanged given
/// as its object (`object(i)`), the changed ones as copies. With `made`, a copy made for the same
/// change on an earlier call (or the object the caller mapped it to) is given again and a new one
/// is held there; without, nothing is held (a fresh read, as `trim_messages` costs).
fn render_picked<'py>(
    sk: &Skeleton<'py>,
    object: impl Fn(usize) -> PyResult<Bound<'py, PyAny>>,
    mut made: Option<&mut Vec<Option<Made>>>,
    picked: &Picked<'py>,
    enc: Encoding,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
    let py = sk.py();
    let todo = PyList::empty(py);
    let mut out: Vec<Bound<'py, PyAny>> = Vec::with_capacity(picked.keep.len());
    for (pos, &i) in picked.keep.iter().enumerate() {
        let object = object(i)?;
        // A dict that is its own object (a caller's plain dict): its copy is its object too.
        let mapped = !object.is(&sk.objects()[i]);
        let item = match (picked.shrink, &picked.changes[i]) {
            (Some((u, room)), _) if u == i => shrunk(sk, u, room, enc)?.into_any(),
            (_, None) => {
                out.push(object);
                continue;
            }
            (_, Some(change)) => {
                let held = made.as_deref_mut();
                match held.as_ref().and_then(|m| m[i].as_ref()).filter(|m| m.is(change)) {
                    Some(Made {
                        object: Some(object), ..
                    }) => {
                        out.push(object.bind(py).clone());
                        continue;
                    }
                    Some(m) => m.copy.bind(py).clone().into_any(),
                    None => {
                        let copy = changed(&sk.objects()[i], change, false)?;
                        if let Some(held) = held {
                            held[i] = Some(Made::new(change, copy.clone().unbind()));
                        }
                        copy.into_any()
                    }
                }
            }
        };
        if mapped {
            todo.append(PyTuple::new(py, [pos, i])?)?;
        }
        out.push(item);
    }
    Ok((PyList::new(py, out)?, todo))
}

/// The tokens of `dicts` (OpenAI Chat messages) as a `Conversation` of them counts them, read as
/// the fast path reads a list (no conversion; texts through the count memo); None when one is
/// not a plain Chat message with a string content (count it as a `Conversation`).
#[pyfunction]
#[pyo3(signature = (dicts, /, *, encoding = "o200k_base"))]
pub fn _chat_tokens(
    py: Python<'_>,
    dicts: &Bound<'_, PyList>,
    #[pyo3(from_py_with = super::args::string::encoding)] encoding: &str,
) -> PyResult<Option<usize>> {
    let enc = Encoding::parse(encoding)?;
    let mut sk = Skeleton::empty(py, dicts.len());
    Ok(sk.extend(dicts, 0, enc, false).map(|()| sk.tokens()))
}
