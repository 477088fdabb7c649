//! `agentcontext.Conversation`: a frozen pyclass around the core [`Conversation`], locked inside
//! detached sections so many threads can append and count at once.

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;

use super::convert::{to_py, to_py_list, to_value, to_values};
use crate::conversation::{Conversation, Tally};
use crate::error::Error;
use crate::formats;
use crate::model::{Format, Role};
use crate::tokens::Encoding;

#[pyclass(name = "Conversation", module = "agentcontext", frozen)]
pub struct PyConversation {
    inner: Mutex<Conversation>,
}

pub(crate) fn parse_format(name: &str) -> Result<Option<Format>, Error> {
    if name == "auto" {
        return Ok(None);
    }
    Format::parse(name).map(Some).ok_or_else(|| Error::UnknownOption {
        what: "format",
        value: name.to_owned(),
        expected: "\"auto\", \"openai\", \"responses\", \"anthropic\", \"jsonl\"",
    })
}

impl PyConversation {
    fn with<T>(&self, f: impl FnOnce(&Conversation) -> T) -> T {
        f(&self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    fn wrap(conv: Conversation) -> Self {
        PyConversation {
            inner: Mutex::new(conv),
        }
    }

    fn build(
        py: Python<'_>,
        values: Vec<Value>,
        format: Option<Format>,
        encoding: Encoding,
        system: Option<Value>,
    ) -> PyResult<Self> {
        let conv = py.detach(move || -> Result<Conversation, Error> {
            let format = format
                .or_else(|| system.as_ref().map(|_| Format::Anthropic))
                .or_else(|| formats::detect::detect(&values))
                .unwrap_or(Format::OpenAiChat);
            let messages = match format {
                Format::Anthropic => formats::anthropic::read(values, system)?,
                other => formats::read(other, values)?,
            };
            Ok(Conversation::from_messages(format, encoding, messages))
        })?;
        Ok(Self::wrap(conv))
    }
}

fn tally_to_dict<'py>(py: Python<'py>, t: &Tally, encoding: Encoding) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("encoding", encoding.as_str())?;
    d.set_item("tokens", t.total)?;
    d.set_item("tool_calls", t.tool_calls)?;
    let by_role = PyDict::new(py);
    let messages_by_role = PyDict::new(py);
    for r in Role::ALL {
        by_role.set_item(r.as_str(), t.by_role[r.index()])?;
        messages_by_role.set_item(r.as_str(), t.messages_by_role[r.index()])?;
    }
    d.set_item("by_role", by_role)?;
    d.set_item("messages_by_role", messages_by_role)?;
    let by_tool = PyDict::new(py);
    for (name, tt) in &t.by_tool {
        let e = PyDict::new(py);
        e.set_item("calls", tt.calls)?;
        e.set_item("results", tt.results)?;
        e.set_item("tokens", tt.tokens)?;
        by_tool.set_item(name, e)?;
    }
    d.set_item("by_tool", by_tool)?;
    Ok(d)
}

#[pymethods]
impl PyConversation {
    #[new]
    #[pyo3(signature = (messages = None, /, *, format = "auto", encoding = "o200k_base", system = None))]
    fn py_new(
        py: Python<'_>,
        messages: Option<&Bound<'_, PyAny>>,
        format: &str,
        encoding: &str,
        system: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let format = parse_format(format)?;
        let encoding = Encoding::parse(encoding)?;
        let values = messages.map(to_values).transpose()?.unwrap_or_default();
        let system = system.map(|s| to_value(s, 0)).transpose()?;
        if values.is_empty() && system.is_none() {
            return Ok(Self::wrap(Conversation::new(
                format.unwrap_or(Format::OpenAiChat),
                encoding,
            )));
        }
        Self::build(py, values, format, encoding, system)
    }

    /// Read a transcript file.
    #[staticmethod]
    #[pyo3(signature = (path, /, *, format = "auto", encoding = "o200k_base"))]
    fn from_file(py: Python<'_>, path: PathBuf, format: &str, encoding: &str) -> PyResult<Self> {
        let format = parse_format(format)?;
        let encoding = Encoding::parse(encoding)?;
        let conv = py.detach(move || -> Result<Conversation, Error> {
            let t = formats::file::read_path(&path, format)?;
            Ok(Conversation::from_messages(t.format, encoding, t.messages))
        })?;
        Ok(Self::wrap(conv))
    }

    /// Append one message in the conversation's format.
    #[pyo3(signature = (message, /))]
    fn append(&self, py: Python<'_>, message: &Bound<'_, PyAny>) -> PyResult<()> {
        let value = to_value(message, 0)?;
        self.extend_parsed(py, vec![value])
    }

    /// Append messages in the conversation's format.
    #[pyo3(signature = (messages, /))]
    fn extend(&self, py: Python<'_>, messages: &Bound<'_, PyAny>) -> PyResult<()> {
        let values = to_values(messages)?;
        self.extend_parsed(py, values)
    }

    #[getter]
    fn format(&self) -> &'static str {
        self.with(|c| c.format().as_str())
    }

    #[getter]
    fn encoding(&self) -> &'static str {
        self.with(|c| c.encoding().as_str())
    }

    /// Total tokens (cached; O(1)).
    #[getter]
    fn tokens(&self) -> usize {
        self.with(Conversation::total_tokens)
    }

    #[getter]
    fn tool_calls(&self) -> usize {
        self.with(|c| c.tally().tool_calls)
    }

    fn __len__(&self) -> usize {
        self.with(Conversation::len)
    }

    fn __repr__(&self) -> String {
        self.with(|c| {
            format!(
                "Conversation({} messages, {} tokens, format={:?}, encoding={:?})",
                c.len(),
                c.total_tokens(),
                c.format().as_str(),
                c.encoding().as_str()
            )
        })
    }

    /// One message, in the library's own (JSONL) form.
    fn __getitem__<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyAny>> {
        let value = self.with(|c| -> Result<Value, Error> {
            let len = c.len();
            let signed_len = isize::try_from(len).unwrap_or(isize::MAX);
            let i = if index < 0 { index + signed_len } else { index };
            let i = usize::try_from(i).map_err(|_| Error::IndexOutOfRange {
                index: index.unsigned_abs(),
                len,
            })?;
            Ok(formats::native::write_message(c.get(i)?))
        })?;
        to_py(py, &value)
    }

    /// Tokens of each message, overhead included.
    fn message_tokens(&self) -> Vec<usize> {
        self.with(|c| c.counts().iter().map(|m| m.total).collect())
    }

    /// Tokens per role (tool results count as "tool" in every format).
    fn tokens_by_role<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let t = self.with(|c| c.tally().by_role);
        let d = PyDict::new(py);
        for r in Role::ALL {
            d.set_item(r.as_str(), t[r.index()])?;
        }
        Ok(d)
    }

    /// Calls, results and tokens per tool name.
    fn tokens_by_tool<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (t, enc) = self.with(|c| (c.tally().clone(), c.encoding()));
        let d = tally_to_dict(py, &t, enc)?;
        Ok(d.get_item("by_tool")?.expect("set above").cast_into::<PyDict>()?)
    }

    /// All totals as a dict, under this conversation's encoding or another one.
    #[pyo3(signature = (encoding = None))]
    fn stats<'py>(&self, py: Python<'py>, encoding: Option<&str>) -> PyResult<Bound<'py, PyDict>> {
        let enc = encoding.map(Encoding::parse).transpose()?;
        let (t, enc) = py.detach(|| {
            self.with(|c| {
                let enc = enc.unwrap_or(c.encoding());
                (c.tally_with(enc), enc)
            })
        });
        let d = tally_to_dict(py, &t, enc)?;
        d.set_item("messages", self.__len__())?;
        Ok(d)
    }

    /// OpenAI Chat Completions messages.
    fn to_openai<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.export(py, Format::OpenAiChat)
    }

    /// OpenAI Responses input items.
    fn to_responses<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.export(py, Format::Responses)
    }

    /// The library's own JSONL messages (one dict per message).
    fn to_jsonl<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.export(py, Format::Native)
    }

    /// An Anthropic request fragment: `{"system": ..., "messages": [...]}` (`system` only when
    /// the conversation has one), ready for `client.messages.create(**conv.to_anthropic(), ...)`.
    fn to_anthropic<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (system, messages) = py.detach(|| self.with(Conversation::to_anthropic))?;
        let d = PyDict::new(py);
        if let Some(system) = system {
            d.set_item("system", to_py(py, &system)?)?;
        }
        d.set_item("messages", to_py_list(py, &messages)?)?;
        Ok(d)
    }

    /// Messages in any format by name (`"openai"`, `"responses"`, `"anthropic"`, `"jsonl"`).
    /// For `"anthropic"` a leading system prompt is the first element, with role `"system"`.
    #[pyo3(signature = (format, /))]
    fn to_format<'py>(&self, py: Python<'py>, format: &str) -> PyResult<Bound<'py, PyList>> {
        let format = parse_format(format)?.unwrap_or(self.with(Conversation::format));
        self.export(py, format)
    }
}

impl PyConversation {
    fn extend_parsed(&self, py: Python<'_>, values: Vec<Value>) -> PyResult<()> {
        py.detach(|| {
            let mut conv = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            conv.extend_values(values)
        })?;
        Ok(())
    }

    fn export<'py>(&self, py: Python<'py>, format: Format) -> PyResult<Bound<'py, PyList>> {
        let values = py.detach(|| self.with(|c| c.to_format(format)))?;
        to_py_list(py, &values)
    }
}
