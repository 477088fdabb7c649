//! `agentcontext._core._Prints`: fingerprints of a list of Python objects (each object, its class
//! and some of its attributes, by identity), to tell in one pass that a list still begins with the
//! same objects, none of them changed in place — what an adapter checks before reusing the
//! conversions of the last call's messages. A dict's "attributes" are its items. The attributes
//! kept are named per class, or per object (an adapter whose conversion reads some keys of one
//! kind of dict and others of another names each dict's own).

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
    types: Vec<Py<PyAny>>,
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
    /// kept attribute the same object or an equal one, each kept list as long as it was.
    #[pyo3(signature = (objects, /))]
    fn same(&self, objects: &Bound<'_, PyList>) -> bool {
        let Ok(held) = self.held.try_lock() else {
            return false;
        };
        if objects.len() < held.objects.len() {
            return false;
        }
        let mut start = 0;
        for (((obj, kept), kind), &end) in objects.iter().zip(&held.objects).zip(&held.types).zip(&held.ends) {
            if !obj.is(kept) || !obj.get_type().is(kind) {
                return false;
            }
            for attr in &held.attrs[start..end] {
                let Ok(value) = read(&obj, attr.name.bind(objects.py())) else {
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

    /// Keep the prints of `objects`, the first `start` of them kept already if they are the kept
    /// ones (the others dropped): each one's class and the attributes `names[class]` names (a
    /// tuple of names; of a dict, its items of those keys, None for a missing one). `names` may
    /// instead be a list of such tuples, one per object from `start` on (each object's own).
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
            let kind = obj.get_type();
            let own = match (&by_class, &by_object) {
                (Some(d), _) => d.get_item(&kind)?,
                (None, Some(list)) => Some(list.get_item(k - start)?),
                (None, None) => None,
            };
            if let Some(names) = own {
                for name in names.cast::<PyTuple>()?.iter() {
                    let name = name.cast_into::<PyString>()?;
                    let value = read(&obj, &name)?;
                    let len = value.cast_exact::<PyList>().ok().map(PyListMethods::len);
                    held.attrs.push(Attr {
                        name: name.unbind(),
                        value: value.unbind(),
                        len,
                    });
                }
            }
            let end = held.attrs.len();
            held.ends.push(end);
            held.types.push(kind.into_any().unbind());
            held.objects.push(obj.unbind());
        }
        Ok(())
    }
}

/// Whether every one of `objects` is a plain dict (of the class `dict` itself): a list an adapter
/// can give the core as it is.
#[pyfunction]
#[pyo3(signature = (objects, /))]
pub fn _plain_dicts(objects: &Bound<'_, PyList>) -> bool {
    objects.iter().all(|o| o.is_exact_instance_of::<PyDict>())
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
