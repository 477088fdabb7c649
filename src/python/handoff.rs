//! `agentcontext._core.HandoffScan`: handoffs of several spans of one conversation that start at
//! the same message, from one scan (the core's [`Scan`]).

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::conversation::PyConversation;
use super::conversation_helpers::handoff_dict;
use crate::compact::handoff::{Handoff, Scan, extract};
use crate::model::Message;

#[pyclass(name = "HandoffScan", module = "agentcontext", frozen)]
pub struct PyHandoffScan {
    conversation: Py<PyConversation>,
    start: usize,
    scan: Mutex<Scan>,
}

#[pymethods]
impl PyHandoffScan {
    #[new]
    #[pyo3(signature = (conversation, start = 0, /))]
    fn new(conversation: Py<PyConversation>, #[pyo3(from_py_with = super::args::count::start)] start: usize) -> Self {
        PyHandoffScan {
            conversation,
            start,
            scan: Mutex::new(Scan::default()),
        }
    }

    /// `conversation.handoff(start, stop)`, the messages seen before not scanned again.
    #[pyo3(signature = (stop = None, /))]
    fn handoff<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = super::args::optional_count::stop)] stop: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let h = self.merged(py, stop, Scan::handoff);
        handoff_dict(py, &h, true)
    }

    /// :meth:`handoff` kept in the core (`_HandoffFacts`), for the offline summary, which reads
    /// its long lists (tests, decisions) in the core's fit and the rest as a dict.
    #[pyo3(signature = (stop = None, /))]
    fn _facts(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = super::args::optional_count::stop)] stop: Option<usize>,
    ) -> PyHandoffFacts {
        PyHandoffFacts {
            handoff: self.merged(py, stop, Scan::handoff),
        }
    }

    /// :meth:`handoff` with only the fields a task ledger reads (the others empty): the user
    /// requests, constraints, previous ledger, files read and modified, commands, errors,
    /// artifacts, plan and the counts. The messages are scanned all the same, for a later
    /// :meth:`handoff`.
    #[pyo3(signature = (stop = None, /))]
    fn ledger_handoff<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = super::args::optional_count::stop)] stop: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let h = self.merged(py, stop, Scan::ledger_handoff);
        handoff_dict(py, &h, true)
    }
}

/// Internal. A handoff (`HandoffScan._facts`) held in the core: the offline summary's fit
/// (`_fit_summary(..., facts=)`) writes its tests' and decisions' lines there, and only the lines
/// the summary keeps become Python strings.
#[pyclass(name = "_HandoffFacts", module = "agentcontext._core", frozen)]
pub struct PyHandoffFacts {
    pub(super) handoff: Handoff,
}

#[pymethods]
impl PyHandoffFacts {
    /// The handoff as `HandoffScan.handoff` gives it; `texts=False`: with its tests and
    /// decisions empty (the summary's fit reads them from here).
    #[pyo3(signature = (*, texts = true))]
    fn handoff<'py>(&self, py: Python<'py>, texts: bool) -> PyResult<Bound<'py, PyDict>> {
        handoff_dict(py, &self.handoff, texts)
    }
}

impl Drop for PyHandoffFacts {
    /// A long span's handoff holds thousands of small strings: freed on the thread pool.
    fn drop(&mut self) {
        let h = std::mem::take(&mut self.handoff);
        crate::parallel::spawn(move || drop(h));
    }
}

impl Drop for PyHandoffScan {
    /// The scan of a long span holds a few small allocations per message and per call: they are
    /// freed on the thread pool, after the compaction that used them has returned.
    fn drop(&mut self) {
        let scan = std::mem::take(self.scan.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner));
        crate::parallel::spawn(move || drop(scan));
    }
}

impl PyHandoffScan {
    /// `merge` of the scan over the conversation's messages `start:stop`, without the GIL.
    fn merged(&self, py: Python<'_>, stop: Option<usize>, merge: fn(&mut Scan, &[Message]) -> Handoff) -> Handoff {
        let conversation = self.conversation.get();
        py.detach(|| {
            conversation.with(|c| {
                let stop = stop.unwrap_or(c.len()).min(c.len());
                if stop <= self.start {
                    return extract(&[]);
                }
                let mut scan = self.scan.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                merge(&mut scan, &c.messages()[self.start..stop])
            })
        })
    }
}
