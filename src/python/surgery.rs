//! Bindings for conversation surgery: results as plain dicts, new conversations as new objects.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::compact::{self, ClearReport, Suffix};

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
