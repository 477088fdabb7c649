//! `agentcontext._core.HandoffScan`: handoffs of several spans of one conversation that start at
//! the same message, from one scan (the core's [`Scan`]).

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::conversation::PyConversation;
use super::conversation_helpers::handoff_dict;
use crate::compact::handoff::{Handoff, Scan, extract, last_assistant_text};
use crate::compact::summary::{Lines, handoff_lines};
use crate::model::Message;

#[pyclass(name = "HandoffScan", module = "agentcontext", frozen)]
pub struct PyHandoffScan {
    conversation: Py<PyConversation>,
    start: usize,
    /// The scan of the process of that id ([`PyHandoffScan::scan`]), shared with the handoff made
    /// ahead on the thread pool ([`PyHandoffScan::_facts_ahead`]).
    scan: Mutex<(u32, Arc<Mutex<Scan>>)>,
    ahead: Mutex<Option<Ahead>>,
}

/// A `_facts` made ahead on the thread pool: of which stop, in which process, and where it is
/// put when made.
struct Ahead {
    stop: usize,
    pid: u32,
    slot: Arc<Slot>,
}

/// Where a handoff made ahead is put (None: the scan no longer knew the span; a panic: what it
/// was), and the signal that it is there.
#[derive(Default)]
struct Slot {
    made: Mutex<Option<std::thread::Result<Option<PyHandoffFacts>>>>,
    ready: Condvar,
}

impl Slot {
    fn put(&self, made: std::thread::Result<Option<PyHandoffFacts>>) {
        *self.made.lock().unwrap_or_else(PoisonError::into_inner) = Some(made);
        self.ready.notify_all();
    }

    fn wait(&self) -> std::thread::Result<Option<PyHandoffFacts>> {
        let mut made = self.made.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(done) = made.take() {
                return done;
            }
            made = self.ready.wait(made).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

#[pymethods]
impl PyHandoffScan {
    #[new]
    #[pyo3(signature = (conversation, start = 0, /))]
    fn new(conversation: Py<PyConversation>, #[pyo3(from_py_with = super::args::count::start)] start: usize) -> Self {
        PyHandoffScan {
            conversation,
            start,
            scan: Mutex::new((std::process::id(), Arc::default())),
            ahead: Mutex::new(None),
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
        let stop = self.stop(stop);
        let ahead = self.ahead.lock().unwrap_or_else(PoisonError::into_inner).take();
        // One made ahead in the parent of a forked child is not made here: no thread here makes it
        // (the child's scan is a new one, see `scan`).
        if let Some(ahead) = ahead.filter(|a| a.stop == stop && a.pid == std::process::id()) {
            // A panic there goes on here, as it would have had the handoff been made here.
            match py.detach(|| ahead.slot.wait()) {
                Ok(Some(made)) => return made,
                Ok(None) => {} // the scan no longer knew the span: made here
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        PyHandoffFacts {
            handoff: self.merged(py, Some(stop), Scan::handoff),
            lines: None,
        }
    }

    /// Start making :meth:`_facts` of `stop` on the core's thread pool, when the scan knows that
    /// span (its ledger fields were merged last: no message need be read), so that it is made
    /// while Python works on; `_facts(stop)` then waits for it. Otherwise nothing.
    #[pyo3(signature = (stop = None, /))]
    fn _facts_ahead(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = super::args::optional_count::stop)] stop: Option<usize>,
    ) {
        let stop = self.stop(stop);
        let Some(len) = stop.checked_sub(self.start).filter(|&len| len > 0) else {
            return;
        };
        let conversation = self.conversation.get();
        let shared = self.scan();
        let last = py.detach(|| {
            let scan = shared.lock().unwrap_or_else(PoisonError::into_inner);
            if !scan.knows(len) {
                return None;
            }
            // The span's last assistant text, read now: the job reads no message.
            let at = scan.last_text(len).map(|i| self.start + i);
            Some(conversation.with(|c| at.map(|i| last_assistant_text(&c.messages()[i]))))
        });
        let Some(last) = last else { return };
        let slot = Arc::new(Slot::default());
        let (scan, done) = (shared, Arc::clone(&slot));
        crate::parallel::spawn(move || {
            let made = std::panic::catch_unwind(AssertUnwindSafe(|| {
                let scan = scan.lock().unwrap_or_else(PoisonError::into_inner);
                scan.known_handoff(len, last).map(|handoff| {
                    let lines = handoff_lines(&handoff);
                    PyHandoffFacts {
                        handoff,
                        lines: Some(lines),
                    }
                })
            }));
            done.put(made);
        });
        *self.ahead.lock().unwrap_or_else(PoisonError::into_inner) = Some(Ahead {
            stop,
            pid: std::process::id(),
            slot,
        });
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
    /// Its tests' and decisions' lines as the summary writes them, when made with it.
    pub(super) lines: Option<Lines>,
}

impl PyHandoffFacts {
    /// The tests' and decisions' lines as the summary writes them (`summary::handoff_lines`).
    pub(super) fn lines(&self) -> std::borrow::Cow<'_, Lines> {
        self.lines.as_ref().map_or_else(
            || std::borrow::Cow::Owned(handoff_lines(&self.handoff)),
            std::borrow::Cow::Borrowed,
        )
    }
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
        let made = (std::mem::take(&mut self.handoff), self.lines.take());
        crate::parallel::spawn(move || drop(made));
    }
}

impl Drop for PyHandoffScan {
    /// The scan of a long span holds a few small allocations per message and per call: they are
    /// freed on the thread pool, after the compaction that used them has returned.
    fn drop(&mut self) {
        let scan = std::mem::take(&mut self.scan);
        crate::parallel::spawn(move || drop(scan));
    }
}

impl PyHandoffScan {
    /// This process's scan. A child of `fork` starts a new one: the parent's may have been held
    /// at the fork by a thread of the parent's pool (a handoff made ahead), which the child does
    /// not have, and would be held for ever there (the child's `handoff` waited for it). A job
    /// in flight at the fork keeps its own reference to the parent's: never freed in the child.
    fn scan(&self) -> Arc<Mutex<Scan>> {
        let pid = std::process::id();
        let mut held = self.scan.lock().unwrap_or_else(PoisonError::into_inner);
        if held.0 != pid {
            *held = (pid, Arc::default());
        }
        Arc::clone(&held.1)
    }

    /// `stop` (None: the conversation's length) within the conversation.
    fn stop(&self, stop: Option<usize>) -> usize {
        self.conversation.get().with(|c| stop.unwrap_or(c.len()).min(c.len()))
    }

    /// `merge` of the scan over the conversation's messages `start:stop`, without the GIL.
    fn merged(&self, py: Python<'_>, stop: Option<usize>, merge: fn(&mut Scan, &[Message]) -> Handoff) -> Handoff {
        let conversation = self.conversation.get();
        let shared = self.scan();
        py.detach(|| {
            conversation.with(|c| {
                let stop = stop.unwrap_or(c.len()).min(c.len());
                if stop <= self.start {
                    return extract(&[]);
                }
                let mut scan = shared.lock().unwrap_or_else(PoisonError::into_inner);
                merge(&mut scan, &c.messages()[self.start..stop])
            })
        })
    }
}
