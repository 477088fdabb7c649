//! `agentcontext._core._Prints`: fingerprints of a list of Python objects (each object, its class
//! and some of its attributes, by identity), to tell in one pass that a list still begins with the
//! same objects, none of them changed in place — what an adapter checks before reusing the
//! conversions of the last call's messages. A dict's "attributes" are its items. The attributes
//! kept are named per class, or per object (an adapter whose conversion reads some keys of one
//! kind of dict and others of another names each dict's own).

use std::collections::HashMap;
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

/// An attribute as kept: its name, its value and, for a list, its length then.
struct Attr {
    name: Py<PyString>,
    value: Py<PyAny>,
    len: Option<usize>,
}

#[derive(Default)]
struct Held {
    objects: Vec<Py<PyAny>>,
    /// Per object, its class, or None for an object kept by identity alone (its class and
    /// attributes not read: `keep` was given None for its names).
    types: Vec<Option<Py<PyAny>>>,
    attrs: Vec<Attr>,
    /// Per object, where its attributes end in `attrs`.
    ends: Vec<usize>,
}

#[pyclass(name = "_Prints", module = "agentcontext", frozen)]
pub struct PyPrints {
    held: Mutex<Held>,
}

#[pymethods]
impl PyPrints {
    #[new]
    fn new() -> Self {
        PyPrints {
            held: Mutex::new(Held::default()),
        }
    }

    /// How many objects are kept.
    fn __len__(&self) -> usize {
        self.held.lock().map_or(0, |h| h.objects.len())
    }

    /// Whether `objects` begins with the kept objects (by identity), each of the same class, each
    /// kept attribute the same object or an equal one, each kept list as long as it was (of an
    /// object kept by identity alone, only its identity).
    #[pyo3(signature = (objects, /))]
    fn same(&self, objects: &Bound<'_, PyList>) -> bool {
        self.held.try_lock().is_ok_and(|held| held.holds(objects))
    }

    /// As [`same`](Self::same), and when they are the same, the objects after the kept ones kept
    /// too (each one's class and the attributes `names[class]` names, as [`keep`](Self::keep)
    /// does): one pass for a list that only grew.
    #[pyo3(signature = (objects, names, /))]
    fn extend(&self, objects: &Bound<'_, PyList>, names: &Bound<'_, PyDict>) -> PyResult<bool> {
        let Ok(mut held) = self.held.try_lock() else {
            return Ok(false);
        };
        if !held.holds(objects) {
            return Ok(false);
        }
        let start = held.objects.len();
        for obj in objects.iter().skip(start) {
            let own = names.get_item(obj.get_type())?;
            held.push(obj, own.as_ref())?;
        }
        Ok(true)
    }

    /// Keep the prints of `objects`, the first `start` of them kept already if they are the kept
    /// ones (the others dropped): each one's class and the attributes `names[class]` names (a
    /// tuple of names; of a dict, its items of those keys, None for a missing one). `names` may
    /// instead be a list of such tuples, one per object from `start` on (each object's own), where
    /// None keeps an object by identity alone.
    #[pyo3(signature = (objects, start, names, /))]
    fn keep(&self, objects: &Bound<'_, PyList>, start: usize, names: &Bound<'_, PyAny>) -> PyResult<()> {
        let by_class = names.cast::<PyDict>().ok();
        let by_object = names.cast::<PyList>().ok();
        if by_class.is_none() && by_object.is_none() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "names must be a dict of classes to tuples of names, or a list of tuples of names",
            ));
        }
        let mut held = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // (Only the kept objects that begin `objects`: the prints always describe its prefix.)
        let same = held
            .objects
            .iter()
            .zip(objects.iter())
            .take_while(|(h, o)| o.is(*h))
            .count();
        if let Some(list) = &by_object {
            // (Each object's names are given from `start` on: the ones before must be kept.)
            if start > same || start + list.len() != objects.len() {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "names must name the attributes of every object from start on, the ones before kept already",
                ));
            }
        }
        let start = start.min(same);
        let attrs_end = if start == 0 { 0 } else { held.ends[start - 1] };
        held.objects.truncate(start);
        held.types.truncate(start);
        held.ends.truncate(start);
        held.attrs.truncate(attrs_end);
        for (k, obj) in objects.iter().enumerate().skip(start) {
            let own = match (&by_class, &by_object) {
                (Some(d), _) => d.get_item(obj.get_type())?,
                (None, Some(list)) => Some(list.get_item(k - start)?),
                (None, None) => None,
            };
            match own {
                Some(own) if own.is_none() => held.push_identity(obj),
                own => held.push(obj, own.as_ref())?,
            }
        }
        Ok(())
    }
}

impl Held {
    /// Whether `objects` begins with the kept objects, unchanged (see [`PyPrints::same`]).
    fn holds(&self, objects: &Bound<'_, PyList>) -> bool {
        if objects.len() < self.objects.len() {
            return false;
        }
        let py = objects.py();
        let mut start = 0;
        for (obj, ((kept, kind), &end)) in objects.iter().zip(self.objects.iter().zip(&self.types).zip(&self.ends)) {
            if !obj.is(kept) {
                return false;
            }
            // (An object kept by identity alone: its class and attributes are not read.)
            let Some(kind) = kind else {
                start = end;
                continue;
            };
            if !obj.get_type().is(kind) {
                return false;
            }
            for attr in &self.attrs[start..end] {
                let Ok(value) = read(&obj, attr.name.bind(py)) else {
                    return false;
                };
                if !value.is(&attr.value) && !value.eq(&attr.value).unwrap_or(false) {
                    return false;
                }
                if let Some(n) = attr.len {
                    if value.cast_exact::<PyList>().map_or(true, |l| l.len() != n) {
                        return false;
                    }
                }
            }
            start = end;
        }
        true
    }

    /// Keep `obj` by identity alone.
    fn push_identity(&mut self, obj: Bound<'_, PyAny>) {
        self.ends.push(self.attrs.len());
        self.types.push(None);
        self.objects.push(obj.unbind());
    }

    /// Keep `obj`, its class and the attributes `names` names (a tuple; None: none).
    fn push(&mut self, obj: Bound<'_, PyAny>, names: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        if let Some(names) = names {
            for name in names.cast::<PyTuple>()?.iter() {
                let name = name.cast_into::<PyString>()?;
                let value = read(&obj, &name)?;
                let len = value.cast_exact::<PyList>().ok().map(PyListMethods::len);
                self.attrs.push(Attr {
                    name: name.unbind(),
                    value: value.unbind(),
                    len,
                });
            }
        }
        self.ends.push(self.attrs.len());
        self.types.push(Some(obj.get_type().into_any().unbind()));
        self.objects.push(obj.unbind());
        Ok(())
    }
}

/// The fields of one object as a [`PyHeld`] keeps them: a dict's items, or an object's
/// attributes (its `__dict__`'s items, then its `__pydantic_extra__`'s when that is a non-empty
/// dict), keys and values one after the other.
struct Part {
    obj: Py<PyAny>,
    items: bool,
    fields: Vec<Py<PyAny>>,
}

/// What a [`PyHeld`] keeps: the object, its own fields if they are kept, and, when it
/// holds a group (a list or tuple attribute: a turn's items, a request's parts), that group as it
/// was and each member's fields.
struct Snapshot {
    obj: Py<PyAny>,
    own: Option<Part>,
    group: Option<(Py<PyString>, Py<PyAny>, Vec<Part>)>,
}

/// `agentcontext._core._Fields`: what the copies of some objects were made of (each a
/// [`PyHeld`]), each object at its place in a list (the copies the kept trimmer gives back by
/// itself), told unchanged in one pass (a `_Held.same()` per copy from Python costs a call each).
#[pyclass(name = "_Fields", module = "agentcontext", frozen)]
pub struct PyFields {
    held: Mutex<HashMap<usize, Py<PyHeld>>>,
}

#[pymethods]
impl PyFields {
    #[new]
    fn new() -> Self {
        PyFields {
            held: Mutex::new(HashMap::new()),
        }
    }

    fn __len__(&self) -> usize {
        self.held.lock().map_or(0, |h| h.len())
    }

    /// Keep `held` (what a copy of its object was made of) for the object at `index`, replacing
    /// what was kept there.
    #[pyo3(signature = (index, held, /))]
    fn add(&self, index: usize, held: Py<PyHeld>) {
        let mut kept = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.insert(index, held);
    }

    /// Forget what is kept at `index`.
    #[pyo3(signature = (index, /))]
    fn discard(&self, index: usize) {
        if let Ok(mut held) = self.held.lock() {
            held.remove(&index);
        }
    }

    fn clear(&self) {
        if let Ok(mut held) = self.held.lock() {
            held.clear();
        }
    }

    /// Whether every kept object still at its place in `objects` holds the fields kept (the
    /// same objects, in the same order); the ones no longer there are forgotten. False too when
    /// another thread holds the fields meanwhile (as for a change: the caller starts over).
    #[pyo3(signature = (objects, /))]
    fn current(&self, objects: &Bound<'_, PyList>) -> bool {
        let Ok(mut held) = self.held.try_lock() else {
            return false;
        };
        let n = objects.len();
        held.retain(|&i, kept| i < n && objects.get_item(i).is_ok_and(|o| o.is(&kept.get().kept.obj)));
        held.values().all(|kept| holds(objects.py(), &kept.get().kept))
    }
}

/// `agentcontext._core._Held`: every field of one object, by identity, told unchanged later
/// (what a copy made of the object was made from).
#[pyclass(name = "_Held", module = "agentcontext", frozen)]
pub struct PyHeld {
    kept: Snapshot,
}

#[pymethods]
impl PyHeld {
    /// The fields of `obj`: `own`, how its own fields are read (`"items"`: a dict of the class
    /// `dict` itself; `"attrs"`: an object's `__dict__` and non-empty `__pydantic_extra__`; None:
    /// not kept, only the object itself); `group`, the name of an attribute holding a list or tuple
    /// whose members' fields are kept too (each a dict's items or an object's attributes, by its
    /// class). None when a field is not there to read that way.
    #[staticmethod]
    #[pyo3(signature = (obj, own, group=None, /))]
    fn of(obj: &Bound<'_, PyAny>, own: Option<&str>, group: Option<&Bound<'_, PyString>>) -> Option<PyHeld> {
        snapshot(obj, own, group).map(|kept| PyHeld { kept })
    }

    /// Whether the object holds the fields kept (the same objects, in the same order).
    fn same(&self, py: Python<'_>) -> bool {
        holds(py, &self.kept)
    }
}

/// Whether the object of `kept` holds its fields as they were kept.
fn holds(py: Python<'_>, kept: &Snapshot) -> bool {
    let obj = kept.obj.bind(py);
    // (The members read in place: no list of them made on every call.)
    let member = |o: Bound<'_, PyAny>, part: &Part| o.is(&part.obj) && holds_fields(&o, part);
    kept.own.as_ref().is_none_or(|part| holds_fields(obj, part))
        && kept.group.as_ref().is_none_or(|(name, was, parts)| {
            obj.getattr(name.bind(py)).is_ok_and(|now| {
                now.is(was)
                    && if let Ok(list) = now.cast_exact::<PyList>() {
                        list.len() == parts.len() && list.iter().zip(parts).all(|(o, p)| member(o, p))
                    } else if let Ok(tuple) = now.cast_exact::<PyTuple>() {
                        tuple.len() == parts.len() && tuple.iter().zip(parts).all(|(o, p)| member(o, p))
                    } else {
                        false
                    }
            })
        })
}

/// What [`PyHeld::of`] keeps of `obj`; None when a field is not there to read as asked.
fn snapshot(obj: &Bound<'_, PyAny>, own: Option<&str>, group: Option<&Bound<'_, PyString>>) -> Option<Snapshot> {
    let own = match own {
        None => None,
        Some("items") => Some(part(obj, true)?),
        Some("attrs") => Some(part(obj, false)?),
        Some(_) => return None,
    };
    let group = match group {
        None => None,
        Some(name) => {
            let held = obj.getattr(name).ok()?;
            let parts = members(&held)?
                .iter()
                .map(|m| part(m, m.is_exact_instance_of::<PyDict>()))
                .collect::<Option<Vec<Part>>>()?;
            Some((name.clone().unbind(), held.unbind(), parts))
        }
    };
    Some(Snapshot {
        obj: obj.clone().unbind(),
        own,
        group,
    })
}

/// The members of a group: a list's or a tuple's items (None for anything else).
fn members<'py>(group: &Bound<'py, PyAny>) -> Option<Vec<Bound<'py, PyAny>>> {
    if let Ok(list) = group.cast_exact::<PyList>() {
        return Some(list.iter().collect());
    }
    group.cast_exact::<PyTuple>().ok().map(|t| t.iter().collect())
}

/// The fields of `obj` as a [`Part`] (`items`: a dict's items, else an object's attributes).
fn part(obj: &Bound<'_, PyAny>, items: bool) -> Option<Part> {
    let fields = read_fields(obj, items)?;
    Some(Part {
        obj: obj.clone().unbind(),
        items,
        fields: fields.into_iter().map(Bound::unbind).collect(),
    })
}

/// Whether `obj` holds the fields `kept` holds, as [`read_fields`] reads them (without reading
/// them into a list).
fn holds_fields(obj: &Bound<'_, PyAny>, kept: &Part) -> bool {
    let mut at = 0;
    let mut same = |d: &Bound<'_, PyDict>| {
        if at + 2 * d.len() > kept.fields.len() {
            return false;
        }
        for (k, v) in d.iter() {
            if !k.is(&kept.fields[at]) || !v.is(&kept.fields[at + 1]) {
                return false;
            }
            at += 2;
        }
        true
    };
    if kept.items {
        return obj.cast_exact::<PyDict>().is_ok_and(&mut same) && at == kept.fields.len();
    }
    let Ok(attrs) = obj.getattr(pyo3::intern!(obj.py(), "__dict__")) else {
        return false;
    };
    let Ok(attrs) = attrs.cast_exact::<PyDict>() else {
        return false;
    };
    if !same(attrs) {
        return false;
    }
    if let Ok(extra) = obj.getattr(pyo3::intern!(obj.py(), "__pydantic_extra__"))
        && let Ok(extra) = extra.cast_exact::<PyDict>()
        && !same(extra)
    {
        return false;
    }
    at == kept.fields.len()
}

/// The fields a [`Part`] keeps of `obj`, keys and values one after the other; None when it has
/// none to read that way.
fn read_fields<'py>(obj: &Bound<'py, PyAny>, items: bool) -> Option<Vec<Bound<'py, PyAny>>> {
    let mut out = Vec::new();
    let mut push = |d: &Bound<'py, PyDict>| {
        for (k, v) in d.iter() {
            out.push(k);
            out.push(v);
        }
    };
    if items {
        push(obj.cast_exact::<PyDict>().ok()?);
        return Some(out);
    }
    let attrs = obj.getattr(pyo3::intern!(obj.py(), "__dict__")).ok()?;
    let attrs = attrs.cast_exact::<PyDict>().ok()?;
    push(attrs);
    if let Ok(extra) = obj.getattr(pyo3::intern!(obj.py(), "__pydantic_extra__"))
        && let Ok(extra) = extra.cast_exact::<PyDict>()
    {
        push(extra);
    }
    Some(out)
}

/// Whether every one of `objects` is a plain dict (of the class `dict` itself): a list an adapter
/// can give the core as it is.
#[pyfunction]
#[pyo3(signature = (objects, /))]
pub fn _plain_dicts(objects: &Bound<'_, PyList>) -> bool {
    objects.iter().all(|o| o.is_exact_instance_of::<PyDict>())
}

/// Whether any of `objects` holds a true value under `name`: a plain dict's item of that name, or
/// another object's own attribute (its `__dict__`'s item, then its `__pydantic_extra__`'s): the
/// field is never looked up as an attribute (a pydantic model's `__getattr__` raises for a name it
/// lacks, which costs a microsecond an object). A value whose truth cannot be told counts as true.
#[pyfunction]
#[pyo3(signature = (objects, name, /))]
pub fn _any_field(objects: &Bound<'_, PyList>, name: &Bound<'_, PyString>) -> bool {
    let py = objects.py();
    objects.iter().any(|o| {
        if let Ok(d) = o.cast_exact::<PyDict>() {
            return true_item(d, name);
        }
        [pyo3::intern!(py, "__dict__"), pyo3::intern!(py, "__pydantic_extra__")]
            .into_iter()
            .any(|attr| {
                o.getattr(attr)
                    .is_ok_and(|d| d.cast_exact::<PyDict>().is_ok_and(|d| true_item(d, name)))
            })
    })
}

/// Whether `d` holds a true value under `name` (one whose truth cannot be told counts as true).
fn true_item(d: &Bound<'_, PyDict>, name: &Bound<'_, PyString>) -> bool {
    d.get_item(name)
        .ok()
        .flatten()
        .is_some_and(|v| !v.is_none() && v.is_truthy().unwrap_or(true))
}

/// Attribute `name` of `obj`; of a dict, its item `name` (None when it has none).
fn read<'py>(obj: &Bound<'py, PyAny>, name: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyAny>> {
    match obj.cast_exact::<PyDict>() {
        Ok(d) => Ok(d
            .get_item(name)?
            .unwrap_or_else(|| obj.py().None().into_bound(obj.py()))),
        Err(_) => obj.getattr(name),
    }
}
