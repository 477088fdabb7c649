//! The non-Python parts of `Conversation` (see `conversation.rs`): format names, locking,
//! building, exporting, and the conversions of results into dicts and lists.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;

use super::conversation::PyConversation;
use super::convert::{read_messages, system_value, to_py, to_py_list};
use super::surgery;
use crate::compact::clear::Cleared;
use crate::compact::clear::budgets::Budgeted;
use crate::compact::handoff::Handoff;
use crate::compact::{self, ClearOptions, Pairing, Protection, surgery as ops};
use crate::conversation::{Conversation, Tally};
use crate::error::Error;
use crate::formats;
use crate::model::{Format, Role};
use crate::tokens::Encoding;
use crate::tokens::classes::ContentClass;

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
    pub(super) fn with<T>(&self, f: impl FnOnce(&Conversation) -> T) -> T {
        f(&self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// The messages as the library's own JSONL values (detached from Python: no objects made).
    pub(crate) fn native(&self) -> Vec<Value> {
        self.with(|c| formats::native::write(c.messages()))
    }

    /// `compact::raw_start` over this conversation as `how` asks (detached): what the three
    /// `_raw_start_*` methods delegate to.
    pub(super) fn raw_start(&self, py: Python<'_>, how: compact::RawStart) -> Option<usize> {
        py.detach(|| {
            self.with(|c| {
                let m = c.messages();
                compact::raw_start_at(
                    c.cut_points(),
                    compact::structure::preamble_len(m),
                    m.len(),
                    &c.totals(),
                    how,
                )
            })
        })
    }

    pub(super) fn wrap(conv: Conversation) -> Self {
        PyConversation {
            inner: Mutex::new(conv),
        }
    }

    /// Read `messages` (one at a time, holding the GIL) and count them (detached).
    pub(super) fn build(
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        format: Option<Format>,
        encoding: Encoding,
        system: Option<Value>,
    ) -> PyResult<Self> {
        let (format, messages) = read_messages(messages, format, system)?;
        let conv = py.detach(move || Conversation::from_messages(format, encoding, messages));
        Ok(Self::wrap(conv))
    }

    pub(super) fn extend_parsed(&self, py: Python<'_>, values: Vec<Value>) -> PyResult<()> {
        py.detach(|| {
            let mut conv = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            conv.extend_values(values)
        })?;
        Ok(())
    }

    pub(super) fn export<'py>(&self, py: Python<'py>, format: Format, request: bool) -> PyResult<Bound<'py, PyList>> {
        let values = py.detach(|| {
            self.with(|c| {
                if request {
                    c.to_request(format)
                } else {
                    c.to_format(format)
                }
            })
        })?;
        to_py_list(py, &values)
    }
}

impl PyConversation {
    /// `Conversation(...)`: from `messages`, or empty (with the system prompt, if given).
    pub(super) fn create(
        py: Python<'_>,
        messages: Option<&Bound<'_, PyAny>>,
        format: &str,
        encoding: &str,
        system: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let format = parse_format(format)?;
        let encoding = Encoding::parse(encoding)?;
        let system = system.map(system_value).transpose()?;
        match messages {
            Some(messages) => Self::build(py, messages, format, encoding, system),
            None if system.is_some() => {
                let (format, messages) = formats::read_any(Vec::new(), format, system)?;
                Ok(Self::wrap(Conversation::from_messages(format, encoding, messages)))
            }
            None => Ok(Self::wrap(Conversation::new(
                format.unwrap_or(Format::OpenAiChat),
                encoding,
            ))),
        }
    }

    /// `Conversation.from_file`.
    pub(super) fn read_file(
        py: Python<'_>,
        path: std::path::PathBuf,
        format: &str,
        encoding: &str,
        max_bytes: usize,
    ) -> PyResult<Self> {
        let format = parse_format(format)?;
        let encoding = Encoding::parse(encoding)?;
        let conv = py.detach(move || -> Result<Conversation, Error> {
            let t = formats::file::read_path(&path, format, max_bytes as u64)?;
            Ok(Conversation::from_messages(t.format, encoding, t.messages))
        })?;
        Ok(Self::wrap(conv))
    }

    /// `Conversation.clear_tool_results`: the cleared copy and its report.
    pub(super) fn clear<'py>(
        &self,
        py: Python<'py>,
        protection: Protection,
        options: &ClearOptions,
    ) -> PyResult<(PyConversation, Bound<'py, PyDict>)> {
        let (before, conv, report) = py.detach(|| {
            self.with(|c| {
                let (conv, report) = ops::clear(c, protection, options);
                (c.total_tokens(), conv, report)
            })
        });
        let after = conv.total_tokens();
        Ok((Self::wrap(conv), surgery::clear_report(py, &report, before, after)?))
    }

    /// `Conversation.to_anthropic_params`.
    pub(super) fn anthropic_params<'py>(&self, py: Python<'py>, request: bool) -> PyResult<Bound<'py, PyDict>> {
        let write = if request {
            Conversation::to_anthropic_request
        } else {
            Conversation::to_anthropic
        };
        let (system, messages) = py.detach(|| self.with(write))?;
        let d = PyDict::new(py);
        if let Some(system) = system {
            d.set_item("system", to_py(py, &system)?)?;
        }
        d.set_item("messages", to_py_list(py, &messages)?)?;
        Ok(d)
    }

    /// `Conversation.class_tokens`.
    pub(super) fn class_tokens_dict<'py>(
        &self,
        py: Python<'py>,
        start: usize,
        encoding: Option<&str>,
        per_message: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let enc = encoding.map(Encoding::parse).transpose()?;
        let totals = py.detach(|| {
            let mut conv = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let enc = enc.unwrap_or(conv.encoding());
            conv.class_tokens(start, enc, per_message)
        });
        let d = PyDict::new(py);
        for class in ContentClass::ALL {
            d.set_item(class.as_str(), totals.text[class.index()])?;
        }
        d.set_item("overhead", totals.overhead)?;
        Ok(d)
    }
}

/// The longest recent suffix of `c` within `max_tokens` less the system messages,
/// `reserved_output` and `safety_margin`, and the tokens that left.
pub(super) fn suffix_within(
    c: &Conversation,
    max_tokens: usize,
    reserved_output: usize,
    safety_margin: usize,
) -> (compact::Suffix, usize) {
    let totals = c.totals();
    let pre = compact::structure::preamble_len(c.messages());
    let system: usize = totals[..pre].iter().sum();
    let available = max_tokens.saturating_sub(system.saturating_add(reserved_output).saturating_add(safety_margin));
    let pairing = Pairing::of(c.messages());
    (
        compact::recent_suffix(c.messages(), &totals, &pairing, available),
        available,
    )
}

/// The ladder's drop of `c` (see `Conversation._keep_plan`): the kept messages and the request
/// kept apart, or None.
pub(super) fn keep_plan(
    c: &Conversation,
    max_tokens: usize,
    reserve: usize,
    request: Option<usize>,
    beside: usize,
) -> Option<(Vec<usize>, Option<usize>)> {
    let how = compact::trim::KeepRequest {
        at: request,
        beside,
        cut: false,
        strict: false,
    };
    let m = c.messages();
    let plan = compact::trim::plan_keep(m, &c.totals(), &Pairing::of(m), (max_tokens, reserve), how, |_| 0);
    plan.ok().map(|p| (p.keep, p.apart))
}

/// The stubbed results of `dedup_reads` as dicts.
pub(super) fn stubbed_list<'py>(py: Python<'py>, stubbed: Vec<Cleared<'static>>) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for s in stubbed {
        let d = PyDict::new(py);
        d.set_item("index", s.index)?;
        d.set_item("tool_use_id", s.tool_use_id)?;
        d.set_item("tool_name", s.tool_name)?;
        list.append(d)?;
    }
    Ok(list)
}

/// The cut results of `truncate_tool_results` as dicts.
pub(super) fn truncated_list(py: Python<'_>, report: Vec<Budgeted>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for r in report {
        let d = PyDict::new(py);
        d.set_item("index", r.index)?;
        d.set_item("tool_use_id", r.tool_use_id)?;
        d.set_item("tool_name", r.tool_name)?;
        d.set_item("chars_before", r.chars_before)?;
        d.set_item("chars_after", r.chars_after)?;
        list.append(d)?;
    }
    Ok(list)
}

pub(super) fn tally_to_dict<'py>(py: Python<'py>, t: &Tally, encoding: Encoding) -> PyResult<Bound<'py, PyDict>> {
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
    d.set_item("by_tool", by_tool_dict(py, t)?)?;
    Ok(d)
}

pub(super) fn by_tool_dict<'py>(py: Python<'py>, t: &Tally) -> PyResult<Bound<'py, PyDict>> {
    let by_tool = PyDict::new(py);
    for (name, tt) in &t.by_tool {
        let e = PyDict::new(py);
        e.set_item("calls", tt.calls)?;
        e.set_item("results", tt.results)?;
        e.set_item("tokens", tt.tokens)?;
        by_tool.set_item(name, e)?;
    }
    Ok(by_tool)
}

/// The handoff's findings as a dict (see `Conversation.handoff`); `texts` false: its tests and
/// decisions empty (the summary's fit reads them from the core, `_HandoffFacts`).
pub(super) fn handoff_dict<'py>(py: Python<'py>, h: &Handoff, texts: bool) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("user_requests", &h.user_requests)?;
    d.set_item("previous_summaries", &h.previous_summaries)?;
    d.set_item("files_read", &h.files_read)?;
    d.set_item("files_modified", &h.files_modified)?;
    let commands = PyList::empty(py);
    for c in &h.commands {
        let e = PyDict::new(py);
        e.set_item("command", &c.command)?;
        e.set_item("outcome", &c.outcome)?;
        e.set_item("ok", c.ok)?;
        e.set_item("index", c.index)?;
        commands.append(e)?;
    }
    d.set_item("commands", commands)?;
    let errors = PyList::empty(py);
    for e in &h.errors {
        let x = PyDict::new(py);
        x.set_item("text", &e.text)?;
        x.set_item("index", e.index)?;
        x.set_item("resolved", e.resolved)?;
        errors.append(x)?;
    }
    d.set_item("errors", errors)?;
    d.set_item("identifiers", &h.identifiers)?;
    d.set_item("paths", &h.paths)?;
    if texts {
        d.set_item("tests", &h.tests)?;
    } else {
        d.set_item("tests", PyList::empty(py))?;
    }
    d.set_item("references", &h.references)?;
    d.set_item("todos", &h.todos)?;
    if texts {
        d.set_item("decisions", &h.decisions)?;
    } else {
        d.set_item("decisions", PyList::empty(py))?;
    }
    d.set_item("last_assistant", &h.last_assistant)?;
    d.set_item("messages", h.messages)?;
    d.set_item("tool_calls", h.tool_calls)?;
    let artifacts = PyList::empty(py);
    for a in &h.artifacts {
        let x = PyDict::new(py);
        x.set_item("path", &a.path)?;
        x.set_item("ops", &a.ops)?;
        x.set_item("last", &a.last)?;
        x.set_item("index", a.index)?;
        artifacts.append(x)?;
    }
    d.set_item("artifacts", artifacts)?;
    d.set_item("constraints", &h.constraints)?;
    d.set_item("plan", &h.plan)?;
    d.set_item("previous_ledger", &h.previous_ledger)?;
    Ok(d)
}

/// `Conversation.concat`: the parts one after the other, when they share format and encoding.
pub(super) fn concat_parts(py: Python<'_>, parts: &[PyRef<'_, PyConversation>]) -> PyResult<PyConversation> {
    let parts: Vec<&PyConversation> = parts.iter().map(|p| &**p).collect();
    // Each part copied under its own lock, one at a time (a part may be passed twice).
    let convs: Vec<Conversation> = py.detach(|| parts.iter().map(|p| p.with(Conversation::clone)).collect());
    let Some(first) = convs.first() else {
        return Err(super::errors::OptionError::new_err(
            "parts is empty: concat needs at least one conversation",
        ));
    };
    if let Some((i, c)) = convs
        .iter()
        .enumerate()
        .find(|(_, c)| c.format() != first.format() || c.encoding() != first.encoding())
    {
        return Err(super::errors::OptionError::new_err(format!(
            "parts[{i}] is {} with {}, parts[0] is {} with {}: concat needs conversations of one format \
                 and one encoding",
            c.format().as_str(),
            c.encoding().as_str(),
            first.format().as_str(),
            first.encoding().as_str()
        )));
    }
    let refs: Vec<&Conversation> = convs.iter().collect();
    Ok(PyConversation::wrap(py.detach(|| Conversation::concat(&refs))))
}

/// Message `index` (negative: from the end) in the library's own form.
pub(super) fn item_value(c: &Conversation, index: isize) -> Result<Value, Error> {
    let len = c.len();
    let signed_len = isize::try_from(len).unwrap_or(isize::MAX);
    let i = if index < 0 {
        index.saturating_add(signed_len)
    } else {
        index
    };
    let i = usize::try_from(i).map_err(|_| Error::IndexOutOfRange {
        index: index.unsigned_abs(),
        len,
    })?;
    Ok(formats::native::write_message(c.get(i)?))
}
