//! Bindings for project memory (the index of a memory directory) and conversation search over a
//! session log. Converts arguments and results; the work is in `crate::memory` and `crate::search`.

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::conversation::PyConversation;
use crate::memory::{MemoryIndex, Record, RenderLimits};
use crate::search::Query;
use crate::search::log::{self, SearchOptions};

fn record_dict<'py>(py: Python<'py>, r: &Record, body: bool) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &r.name)?;
    d.set_item("type", r.kind.name())?;
    d.set_item("description", &r.description)?;
    d.set_item("updated", r.updated.as_deref())?;
    d.set_item("file", &r.file)?;
    d.set_item("bytes", r.bytes)?;
    if body {
        d.set_item("body", &r.body)?;
    }
    Ok(d)
}

/// The index of one memory directory, refreshed incrementally.
#[pyclass(name = "MemoryIndex", module = "agentcontext", frozen)]
pub struct PyMemoryIndex {
    inner: Mutex<MemoryIndex>,
    directory: PathBuf,
}

impl PyMemoryIndex {
    /// The index, locked. Only ever taken with the GIL released (inside `py.detach`) and never
    /// held across re-attaching, so a thread waiting for it never holds the GIL that the holder
    /// needs.
    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryIndex> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[pymethods]
impl PyMemoryIndex {
    #[new]
    #[pyo3(signature = (directory, /))]
    fn new(#[pyo3(from_py_with = super::args::directory)] directory: PathBuf) -> Self {
        PyMemoryIndex {
            inner: Mutex::new(MemoryIndex::new(directory.clone())),
            directory,
        }
    }

    #[getter]
    fn directory(&self) -> PathBuf {
        self.directory.clone()
    }

    fn refresh<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let stats = py.detach(|| self.lock().refresh())?;
        let d = PyDict::new(py);
        d.set_item("files", stats.files)?;
        d.set_item("read", stats.read)?;
        d.set_item("reused", stats.reused)?;
        d.set_item("removed", stats.removed)?;
        Ok(d)
    }

    #[pyo3(signature = (*, max_lines = 200, max_bytes = 25_000))]
    fn render(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = super::args::positive::max_lines)] max_lines: usize,
        #[pyo3(from_py_with = super::args::positive::max_bytes)] max_bytes: usize,
    ) -> PyResult<String> {
        let limits = RenderLimits { max_lines, max_bytes };
        Ok(py.detach(|| self.lock().render(limits))?)
    }

    fn records<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let records: Vec<Record> = py.detach(|| self.lock().records().cloned().collect());
        records.iter().map(|r| record_dict(py, r, false)).collect()
    }

    #[pyo3(signature = (name, /))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = super::args::string::name)] name: &str,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let record = py.detach(|| self.lock().get(name).cloned());
        record.map(|r| record_dict(py, &r, true)).transpose()
    }

    fn problems(&self, py: Python<'_>) -> Vec<(String, String)> {
        py.detach(|| self.lock().problems().into_iter().map(|p| (p.file, p.reason)).collect())
    }

    #[pyo3(signature = (query, /, *, regex = false, limit = 10, snippet_chars = 240))]
    fn search<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = super::args::string::query)] query: &str,
        regex: bool,
        #[pyo3(from_py_with = super::args::positive::limit)] limit: usize,
        #[pyo3(from_py_with = super::args::positive::snippet_chars)] snippet_chars: usize,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let q = Query::parse(query, regex)?;
        let found = py.detach(|| {
            self.lock()
                .search(&q, limit)
                .into_iter()
                .map(|(r, s)| (r.clone(), s, crate::search::snippets(&q, &r.body, snippet_chars, 1)))
                .collect::<Vec<_>>()
        });
        found
            .into_iter()
            .map(|(r, s, snippets)| {
                let d = record_dict(py, &r, false)?;
                d.set_item("score", s.score)?;
                d.set_item("matches", s.matches)?;
                d.set_item("snippets", snippets)?;
                Ok(d)
            })
            .collect()
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        py.detach(|| self.lock().len())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let records = py.detach(|| self.lock().len());
        format!(
            "MemoryIndex({:?}, records={records})",
            self.directory.display().to_string()
        )
    }
}

/// Why `text` is not a valid record file named `file`, or None when it is.
#[pyfunction]
#[pyo3(signature = (file, text, /))]
pub fn check_memory_record(
    #[pyo3(from_py_with = super::args::string::file)] file: &str,
    #[pyo3(from_py_with = super::args::string::text)] text: &str,
) -> Option<String> {
    crate::memory::record::parse(file, text, text.len() as u64).err()
}

/// Search the originals of a session log (see `agentcontext.conversation_search`).
#[pyfunction]
#[pyo3(signature = (path, query, /, *, regex = false, limit = 10, snippet_chars = 240, snippets = 2, max_bytes = 1_073_741_824))]
#[allow(clippy::needless_pass_by_value, clippy::too_many_arguments)] // pyo3 extracts owned arguments
pub fn search_log<'py>(
    py: Python<'py>,
    #[pyo3(from_py_with = super::args::path)] path: PathBuf,
    #[pyo3(from_py_with = super::args::string::query)] query: &str,
    regex: bool,
    #[pyo3(from_py_with = super::args::positive::limit)] limit: usize,
    #[pyo3(from_py_with = super::args::positive::snippet_chars)] snippet_chars: usize,
    #[pyo3(from_py_with = super::args::positive::snippets)] snippets: usize,
    #[pyo3(from_py_with = super::args::positive::max_bytes)] max_bytes: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let options = SearchOptions {
        limit,
        snippet_chars,
        snippets,
    };
    let q = Query::parse(query, regex)?;
    let found = py.detach(|| log::search_log(&path, &q, options, max_bytes as u64))?;
    found_dict(py, &found)
}

/// Search the messages of a conversation as `search_log` searches a log's (`line` is None).
#[pyfunction]
#[pyo3(signature = (conversation, query, /, *, regex = false, limit = 10, snippet_chars = 240, snippets = 2))]
#[allow(clippy::needless_pass_by_value)] // pyo3 extracts owned arguments
pub fn search_messages<'py>(
    py: Python<'py>,
    conversation: &Bound<'py, PyConversation>,
    #[pyo3(from_py_with = super::args::string::query)] query: &str,
    regex: bool,
    #[pyo3(from_py_with = super::args::positive::limit)] limit: usize,
    #[pyo3(from_py_with = super::args::positive::snippet_chars)] snippet_chars: usize,
    #[pyo3(from_py_with = super::args::positive::snippets)] snippets: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let options = SearchOptions {
        limit,
        snippet_chars,
        snippets,
    };
    let q = Query::parse(query, regex)?;
    let conv = conversation.get();
    let found = py.detach(|| {
        let mut found = log::search_messages(&conv.native(), &q, options);
        conv.with(|c| log::name_message_hits(c.messages(), &mut found.hits));
        found
    });
    found_dict(py, &found)
}

fn found_dict<'py>(py: Python<'py>, found: &log::LogSearch) -> PyResult<Bound<'py, PyDict>> {
    let hits = found
        .hits
        .iter()
        .map(|h| {
            let d = PyDict::new(py);
            d.set_item("message", h.message)?;
            d.set_item("line", h.line)?;
            d.set_item("role", &h.role)?;
            d.set_item("recall_id", h.recall_id.as_deref())?;
            d.set_item("score", h.score)?;
            d.set_item("matches", h.matches)?;
            d.set_item("snippets", &h.snippets)?;
            Ok(d)
        })
        .collect::<PyResult<Vec<_>>>()?;
    let out = PyDict::new(py);
    out.set_item("messages", found.messages)?;
    out.set_item("matched", found.matched)?;
    out.set_item("skipped", found.skipped)?;
    out.set_item("hits", hits)?;
    Ok(out)
}
