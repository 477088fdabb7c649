//! `agentcontext.Conversation`: a frozen pyclass around the core [`Conversation`], locked inside
//! detached sections so many threads can append and count at once.

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;

use super::convert::{read_messages, system_value, to_py, to_py_list, to_value};
use super::surgery;
use crate::compact::{self, ClearOptions, Pairing};
use crate::compact::{Protection, surgery as ops};
use crate::conversation::{Conversation, Tally};
use crate::error::Error;
use crate::formats;
use crate::model::{Format, Role};
use crate::tokens::Encoding;
use crate::tokens::classes::ContentClass;

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

    /// The messages as the library's own JSONL values (detached from Python: no objects made).
    pub(crate) fn native(&self) -> Vec<Value> {
        self.with(|c| formats::native::write(c.messages()))
    }

    fn wrap(conv: Conversation) -> Self {
        PyConversation {
            inner: Mutex::new(conv),
        }
    }

    /// Read `messages` (one at a time, holding the GIL) and count them (detached).
    fn build(
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
    d.set_item("by_tool", by_tool_dict(py, t)?)?;
    Ok(d)
}

fn by_tool_dict<'py>(py: Python<'py>, t: &Tally) -> PyResult<Bound<'py, PyDict>> {
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

#[pymethods]
impl PyConversation {
    #[new]
    #[pyo3(signature = (messages = None, /, *, format = "auto", encoding = "o200k_base", system = None))]
    fn py_new(
        py: Python<'_>,
        messages: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = super::args::string::format)] format: &str,
        #[pyo3(from_py_with = super::args::string::encoding)] encoding: &str,
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

    /// Read a transcript file.
    // max_bytes: formats::file::DEFAULT_MAX_BYTES, written out so the signature Python sees shows it.
    #[staticmethod]
    #[pyo3(signature = (path, /, *, format = "auto", encoding = "o200k_base", max_bytes = 1_073_741_824))]
    fn from_file(
        py: Python<'_>,
        #[pyo3(from_py_with = super::args::path)] path: PathBuf,
        #[pyo3(from_py_with = super::args::string::format)] format: &str,
        #[pyo3(from_py_with = super::args::string::encoding)] encoding: &str,
        #[pyo3(from_py_with = super::args::positive::max_bytes)] max_bytes: usize,
    ) -> PyResult<Self> {
        let format = parse_format(format)?;
        let encoding = Encoding::parse(encoding)?;
        let conv = py.detach(move || -> Result<Conversation, Error> {
            let t = formats::file::read_path(&path, format, max_bytes as u64)?;
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
        let format = self.with(Conversation::format);
        let (_, messages) = read_messages(messages, Some(format), None)?;
        py.detach(|| {
            let mut conv = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            conv.extend(messages);
        });
        Ok(())
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
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = super::args::position)] index: isize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let value = self.with(|c| -> Result<Value, Error> {
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
        })?;
        to_py(py, &value)
    }

    /// Tokens of each message, overhead included.
    fn message_tokens(&self, py: Python<'_>) -> Vec<usize> {
        py.detach(|| self.with(Conversation::totals))
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
        self.with(|c| by_tool_dict(py, c.tally()))
    }

    /// All totals as a dict, under this conversation's encoding or another one.
    #[pyo3(signature = (encoding = None))]
    #[allow(clippy::needless_pass_by_value)] // pyo3 extracts owned arguments
    fn stats<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = super::args::optional_string::encoding)] encoding: Option<String>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let enc = encoding.as_deref().map(Encoding::parse).transpose()?;
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
    #[pyo3(signature = (*, request = false))]
    fn to_openai<'py>(&self, py: Python<'py>, request: bool) -> PyResult<Bound<'py, PyList>> {
        self.export(py, Format::OpenAiChat, request)
    }

    /// OpenAI Responses input items.
    #[pyo3(signature = (*, request = false))]
    fn to_responses<'py>(&self, py: Python<'py>, request: bool) -> PyResult<Bound<'py, PyList>> {
        self.export(py, Format::Responses, request)
    }

    /// The library's own JSONL messages (one dict per message).
    fn to_jsonl<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.export(py, Format::Native, false)
    }

    /// An Anthropic request fragment: `{"system": ..., "messages": [...]}` (`system` only when
    /// the conversation has one), ready for `client.messages.create(**conv.to_anthropic_params(), ...)`.
    #[pyo3(signature = (*, request = false))]
    fn to_anthropic_params<'py>(&self, py: Python<'py>, request: bool) -> PyResult<Bound<'py, PyDict>> {
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

    /// Protocol violations, as dicts `{kind, index, id, detail}` (empty when valid).
    fn validate<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let found = py.detach(|| self.with(|c| compact::validate(c.messages())));
        surgery::violations(py, found)
    }

    /// A repaired copy and the list of changes (`{kind, index, id}`); a valid conversation comes
    /// back equal, with no changes.
    fn repair<'py>(&self, py: Python<'py>) -> PyResult<(PyConversation, Bound<'py, PyList>)> {
        let (conv, changes) = py.detach(|| {
            self.with(|c| {
                let (messages, changes) = compact::repair(c.messages());
                let same = changes.is_empty();
                (c.derive(messages, |_| same), changes)
            })
        });
        Ok((Self::wrap(conv), surgery::changes(py, &changes)?))
    }

    /// Interaction groups after the system messages, as `(start, end)` message ranges.
    fn groups(&self, py: Python<'_>) -> Vec<(usize, usize)> {
        py.detach(|| {
            self.with(|c| {
                compact::groups(c.messages())
                    .into_iter()
                    .map(|r| (r.start, r.end))
                    .collect()
            })
        })
    }

    /// API rounds (an assistant message and the tool results after it), as `(start, end)`.
    fn rounds(&self, py: Python<'_>) -> Vec<(usize, usize)> {
        py.detach(|| {
            self.with(|c| {
                compact::rounds(c.messages())
                    .into_iter()
                    .map(|r| (r.start, r.end))
                    .collect()
            })
        })
    }

    /// Indices of the protected messages: the last `recent_messages`, the messages of the last
    /// `recent_tools` completed tool interactions, and the pinned ones.
    #[pyo3(signature = (*, recent_messages = 12, recent_tools = 3))]
    fn protected(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = super::args::count::recent_messages)] recent_messages: usize,
        #[pyo3(from_py_with = super::args::count::recent_tools)] recent_tools: usize,
    ) -> Vec<usize> {
        py.detach(|| {
            self.with(|c| {
                let pairing = Pairing::of(c.messages());
                compact::protected(c.messages(), &pairing, recent_messages, recent_tools, c.pinned())
                    .messages
                    .into_iter()
                    .collect()
            })
        })
    }

    /// Pin a message (never cleared or summarized, always rendered), or unpin it.
    #[pyo3(signature = (index, /, *, pinned = true))]
    fn pin(&self, #[pyo3(from_py_with = super::args::count::index)] index: usize, pinned: bool) -> PyResult<()> {
        let mut conv = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(conv.set_pinned(index, pinned)?)
    }

    #[getter]
    fn pinned(&self) -> Vec<usize> {
        self.with(|c| c.pinned().iter().copied().collect())
    }

    /// A copy with old tool results cleared, and a report.
    #[pyo3(signature = (
        *, recent_messages = 12, recent_tools = 3, exclude_tools = Vec::new(), clear_tool_inputs = false,
        clear_at_least = 0, keep_thinking = true, recall_ids = true
    ))]
    #[allow(clippy::too_many_arguments)]
    fn clear_tool_results<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = super::args::count::recent_messages)] recent_messages: usize,
        #[pyo3(from_py_with = super::args::count::recent_tools)] recent_tools: usize,
        #[pyo3(from_py_with = super::args::string_list::exclude_tools)] exclude_tools: Vec<String>,
        clear_tool_inputs: bool,
        #[pyo3(from_py_with = super::args::count::clear_at_least)] clear_at_least: usize,
        keep_thinking: bool,
        recall_ids: bool,
    ) -> PyResult<(PyConversation, Bound<'py, PyDict>)> {
        let options = ClearOptions {
            exclude_tools: exclude_tools.into_iter().collect(),
            clear_tool_inputs,
            clear_at_least,
            keep_thinking,
            count_placeholders: false,
            recall_ids,
        };
        let protection = Protection {
            recent_messages,
            recent_tools,
        };
        let (before, conv, report) = py.detach(|| {
            self.with(|c| {
                let (conv, report) = ops::clear(c, protection, &options);
                (c.total_tokens(), conv, report)
            })
        });
        let after = conv.total_tokens();
        Ok((Self::wrap(conv), surgery::clear_report(py, &report, before, after)?))
    }

    /// The most `clear_tool_results` with these options could free (cached counts; nothing is
    /// built): the tokens of every clearable result.
    #[pyo3(signature = (*, recent_messages = 12, recent_tools = 3, exclude_tools = Vec::new()))]
    fn clearable_tokens(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = super::args::count::recent_messages)] recent_messages: usize,
        #[pyo3(from_py_with = super::args::count::recent_tools)] recent_tools: usize,
        #[pyo3(from_py_with = super::args::string_list::exclude_tools)] exclude_tools: Vec<String>,
    ) -> usize {
        let exclude = exclude_tools.into_iter().collect();
        let protection = Protection {
            recent_messages,
            recent_tools,
        };
        py.detach(|| self.with(|c| ops::clearable_tokens(c, protection, &exclude)))
    }

    /// A copy where earlier results of repeated read-only calls (same tool, same input) are
    /// stubs pointing to the latest one, and the list of stubbed results.
    #[pyo3(signature = (read_only_tools, /, *, recent_messages = 12))]
    fn dedup_reads<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = super::args::string_list::read_only_tools)] read_only_tools: Vec<String>,
        #[pyo3(from_py_with = super::args::count::recent_messages)] recent_messages: usize,
    ) -> PyResult<(PyConversation, Bound<'py, PyList>)> {
        let tools = read_only_tools.into_iter().collect();
        let protection = Protection {
            recent_messages,
            recent_tools: 0,
        };
        let (conv, stubbed) = py.detach(|| self.with(|c| ops::dedup(c, &tools, protection)));
        let list = PyList::empty(py);
        for s in stubbed {
            let d = PyDict::new(py);
            d.set_item("index", s.index)?;
            d.set_item("tool_use_id", s.tool_use_id)?;
            d.set_item("tool_name", s.tool_name)?;
            list.append(d)?;
        }
        Ok((Self::wrap(conv), list))
    }

    /// The longest recent suffix that fits `max_tokens` once the system messages,
    /// `reserved_output` and `safety_margin` are taken off; a dict with `start`, `tokens`,
    /// `available`, `boundary` (`group`, `round` or `none`), `fits` and `overflow`.
    #[pyo3(signature = (max_tokens, /, *, reserved_output = 0, safety_margin = 0))]
    fn recent_suffix<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = super::args::count::max_tokens)] max_tokens: usize,
        #[pyo3(from_py_with = super::args::count::reserved_output)] reserved_output: usize,
        #[pyo3(from_py_with = super::args::count::safety_margin)] safety_margin: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (s, available) = py.detach(|| {
            self.with(|c| {
                let totals = c.totals();
                let pre = compact::structure::preamble_len(c.messages());
                let system: usize = totals[..pre].iter().sum();
                let available =
                    max_tokens.saturating_sub(system.saturating_add(reserved_output).saturating_add(safety_margin));
                let pairing = Pairing::of(c.messages());
                (
                    compact::recent_suffix(c.messages(), &totals, &pairing, available),
                    available,
                )
            })
        });
        surgery::suffix(py, &s, available)
    }

    /// History split into at most `parts` ranges of about equal token share, at safe boundaries.
    #[pyo3(signature = (parts, /))]
    fn split(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = super::args::positive::parts)] parts: usize,
    ) -> Vec<(usize, usize)> {
        py.detach(|| {
            self.with(|c| {
                let pairing = Pairing::of(c.messages());
                compact::split_by_share(c.messages(), &c.totals(), &pairing, parts)
                    .into_iter()
                    .map(|r| (r.start, r.end))
                    .collect()
            })
        })
    }

    /// A new conversation of messages `start..stop` (counts reused).
    #[pyo3(signature = (start, stop = None, /))]
    fn slice(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = super::args::count::start)] start: usize,
        #[pyo3(from_py_with = super::args::optional_count::stop)] stop: Option<usize>,
    ) -> PyConversation {
        Self::wrap(py.detach(|| {
            self.with(|c| {
                let stop = stop.unwrap_or(c.len()).min(c.len());
                Conversation::from_counted(c, start.min(stop), stop)
            })
        }))
    }

    /// A copy where every text tool result over its budget is cut to head + marker + tail (the
    /// marker names the call id, by which the original can be recalled, or with `recall_ids=False` says
    /// the full text is not stored), and what was cut.
    #[pyo3(signature = (max_chars, /, *, per_tool = None, strategy = "auto", head_share = 0.5, recall_ids = true))]
    fn truncate_tool_results<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = super::args::count::max_chars)] max_chars: usize,
        #[pyo3(from_py_with = super::args::per_tool)] per_tool: Option<std::collections::HashMap<String, usize>>,
        #[pyo3(from_py_with = super::args::string::strategy)] strategy: &str,
        #[pyo3(from_py_with = super::args::fraction::head_share)] head_share: f64,
        recall_ids: bool,
    ) -> PyResult<(PyConversation, Bound<'py, PyList>)> {
        let strategy = super::budget::parse_strategy(strategy, head_share)?;
        let per_tool = per_tool.unwrap_or_default();
        let limit = |name: &str| per_tool.get(name).copied().unwrap_or(max_chars);
        let (conv, report) =
            py.detach(|| self.with(|c| compact::surgery::truncate_results(c, limit, strategy, recall_ids)));
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
        Ok((Self::wrap(conv), list))
    }

    /// How many text tool results are over their budget (`per_tool` overrides by tool name):
    /// what `truncate_tool_results` would cut.
    #[pyo3(signature = (max_chars, /, *, per_tool = None))]
    fn tool_results_over(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = super::args::count::max_chars)] max_chars: usize,
        #[pyo3(from_py_with = super::args::per_tool)] per_tool: Option<std::collections::HashMap<String, usize>>,
    ) -> usize {
        let per_tool = per_tool.unwrap_or_default();
        py.detach(|| self.with(|c| compact::clear::budgets::results_over(c.messages(), max_chars, &per_tool)))
    }

    /// Number of leading system and developer messages (the system prompt).
    #[getter]
    fn preamble(&self) -> usize {
        self.with(|c| compact::structure::preamble_len(c.messages()))
    }

    /// Where the raw recent tail starts (see `compact::fill::raw_start`): by default the latest
    /// cut point keeping at least `keep_messages` messages and `keep_tokens` tokens raw; with
    /// `room`, the earliest whose tail fits `room` tokens (the length when none does); with `room`
    /// and `steps` (`first`, `step`), the first step of that schedule whose tail fits (None when
    /// none does).
    #[pyo3(name = "_recent_start")]
    #[pyo3(signature = (*, keep_messages = 0, keep_tokens = 0, room = None, steps = None))]
    fn recent_start(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = super::args::count::keep_messages)] keep_messages: usize,
        #[pyo3(from_py_with = super::args::count::keep_tokens)] keep_tokens: usize,
        room: Option<i64>,
        steps: Option<(f64, f64)>,
    ) -> PyResult<Option<usize>> {
        let how = match (room, steps) {
            (None, None) => compact::RawStart::AtLeast {
                messages: keep_messages,
                tokens: keep_tokens,
            },
            (Some(_), _) if keep_messages > 0 || keep_tokens > 0 => {
                return Err(super::errors::OptionError::new_err(
                    "room is not given with keep_messages or keep_tokens: the tail fits one or keeps the others",
                ));
            }
            (Some(room), None) => compact::RawStart::Fits { room },
            (Some(room), Some((first, step))) if first.is_finite() && step > 0.0 && step.is_finite() => {
                compact::RawStart::Steps { first, step, room }
            }
            (Some(_), Some(_)) => {
                return Err(super::errors::OptionError::new_err(
                    "steps must be (first, step) with a finite first and a finite positive step",
                ));
            }
            (None, Some(_)) => return Err(super::errors::OptionError::new_err("steps needs a room")),
        };
        Ok(py.detach(|| {
            self.with(|c| {
                let m = c.messages();
                compact::raw_start(m, &c.totals(), &Pairing::of(m), how)
            })
        }))
    }

    /// Message indices where history may be cut: starts of groups and rounds that do not
    /// separate a tool call from its result.
    #[pyo3(name = "_cut_points")]
    fn cut_points(&self, py: Python<'_>) -> Vec<usize> {
        py.detach(|| self.with(|c| compact::select::cut_points(c.messages(), &Pairing::of(c.messages()))))
    }

    /// Each message in the conversation's format, as the list of dicts it is written as (one
    /// dict, or several for a Responses assistant turn or an Anthropic message carrying tool
    /// results next to text when written to another format).
    #[pyo3(name = "_export_each")]
    fn export_each<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let per_message = py.detach(|| {
            self.with(|c| {
                c.messages()
                    .iter()
                    .map(|m| crate::formats::write(c.format(), std::slice::from_ref(m)))
                    .collect::<Result<Vec<_>, _>>()
            })
        })?;
        let list = PyList::empty(py);
        for values in &per_message {
            list.append(to_py_list(py, values)?)?;
        }
        Ok(list)
    }

    /// What the offline summarizer needs from this history (see `agentcontext.summarize`).
    #[pyo3(signature = (start = 0, stop = None, /))]
    fn handoff<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = super::args::count::start)] start: usize,
        #[pyo3(from_py_with = super::args::optional_count::stop)] stop: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let h = py.detach(|| {
            self.with(|c| {
                let stop = stop.unwrap_or(c.len()).min(c.len());
                compact::handoff::extract(&c.messages()[start.min(stop)..stop])
            })
        });
        let d = PyDict::new(py);
        d.set_item("user_requests", h.user_requests)?;
        d.set_item("previous_summaries", h.previous_summaries)?;
        d.set_item("files_read", h.files_read)?;
        d.set_item("files_modified", h.files_modified)?;
        let commands = PyList::empty(py);
        for c in h.commands {
            let e = PyDict::new(py);
            e.set_item("command", c.command)?;
            e.set_item("outcome", c.outcome)?;
            e.set_item("ok", c.ok)?;
            e.set_item("index", c.index)?;
            commands.append(e)?;
        }
        d.set_item("commands", commands)?;
        let errors = PyList::empty(py);
        for e in h.errors {
            let x = PyDict::new(py);
            x.set_item("text", e.text)?;
            x.set_item("index", e.index)?;
            x.set_item("resolved", e.resolved)?;
            errors.append(x)?;
        }
        d.set_item("errors", errors)?;
        d.set_item("identifiers", h.identifiers)?;
        d.set_item("paths", h.paths)?;
        d.set_item("tests", h.tests)?;
        d.set_item("references", h.references)?;
        d.set_item("todos", h.todos)?;
        d.set_item("decisions", h.decisions)?;
        d.set_item("last_assistant", h.last_assistant)?;
        d.set_item("messages", h.messages)?;
        d.set_item("tool_calls", h.tool_calls)?;
        Ok(d)
    }

    /// The latest real user request of messages `start:stop`: `(index, text)`, or None.
    #[pyo3(name = "_latest_request")]
    #[pyo3(signature = (start = 0, stop = None, /))]
    fn latest_request(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = super::args::count::start)] start: usize,
        #[pyo3(from_py_with = super::args::optional_count::stop)] stop: Option<usize>,
    ) -> Option<(usize, String)> {
        py.detach(|| {
            self.with(|c| {
                let stop = stop.unwrap_or(c.len()).min(c.len());
                let from = start.min(stop);
                compact::request::latest_request(&c.messages()[from..stop]).map(|(i, text)| (from + i, text))
            })
        })
    }

    /// Texts of the summary messages in this history (written by this library or a well-known
    /// harness), oldest first.
    #[pyo3(name = "_summaries")]
    #[pyo3(signature = (start = 0, stop = None, /))]
    fn summaries(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = super::args::count::start)] start: usize,
        #[pyo3(from_py_with = super::args::optional_count::stop)] stop: Option<usize>,
    ) -> Vec<String> {
        py.detach(|| {
            self.with(|c| {
                let stop = stop.unwrap_or(c.len()).min(c.len());
                c.messages()[start.min(stop)..stop]
                    .iter()
                    .filter(|m| compact::request::is_summary(m))
                    .map(crate::model::Message::joined_text)
                    .collect()
            })
        })
    }

    /// The conversations one after the other (same format and encoding), counts reused.
    #[staticmethod]
    #[pyo3(signature = (parts, /))]
    #[allow(clippy::needless_pass_by_value)] // pyo3 extracts arguments as owned values
    fn concat(py: Python<'_>, parts: Vec<PyRef<'_, PyConversation>>) -> PyResult<PyConversation> {
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
        Ok(Self::wrap(py.detach(|| Conversation::concat(&refs))))
    }

    /// Messages in any format by name (`"openai"`, `"responses"`, `"anthropic"`, `"jsonl"`).
    /// For `"anthropic"` a leading system prompt is the first element, with role `"system"`.
    #[pyo3(signature = (format, /, *, request = false))]
    fn to_format<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = super::args::string::format)] format: &str,
        request: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let format = parse_format(format)?.unwrap_or(self.with(Conversation::format));
        self.export(py, format, request)
    }

    /// A new conversation with messages `start..stop` (`stop=None`: to the end) replaced by
    /// `messages`, given in `format` (`"jsonl"`, the library's own, by default; `"auto"`: detected)
    /// and read as a conversation in this one's format would hold them.
    /// Untouched messages keep their counts and pins; this conversation is not changed.
    #[pyo3(signature = (start, stop, messages, /, *, format = "jsonl"))]
    fn replace(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = super::args::count::start)] start: usize,
        #[pyo3(from_py_with = super::args::optional_count::stop)] stop: Option<usize>,
        messages: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = super::args::string::format)] format: &str,
    ) -> PyResult<PyConversation> {
        let given = parse_format(format)?;
        let values = super::convert::to_values(messages)?;
        let conv = py.detach(|| self.with(|c| c.replace(start, stop.unwrap_or(c.len()), values, given)))?;
        Ok(Self::wrap(conv))
    }

    /// The ladder's drop (see `compact::trim::plan_keep`): the messages kept within `max_tokens`
    /// less `reserve` — the preamble, message `request` when the longest suffix that fits leaves
    /// it out (kept whole beside `beside` more tokens, even inside a tool interaction) and the
    /// longest suffix that fits beside it — with the request kept apart (or None); None when the
    /// last round, or the request and the last round after it, do not fit.
    #[pyo3(name = "_keep_plan")]
    #[pyo3(signature = (max_tokens, /, *, reserve = 0, request = None, beside = 0))]
    fn keep_plan(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = super::args::count::max_tokens)] max_tokens: usize,
        #[pyo3(from_py_with = super::args::count::reserve)] reserve: usize,
        #[pyo3(from_py_with = super::args::optional_count::request)] request: Option<usize>,
        #[pyo3(from_py_with = super::args::count::beside)] beside: usize,
    ) -> Option<(Vec<usize>, Option<usize>)> {
        let how = compact::trim::KeepRequest {
            at: request,
            beside,
            cut: false,
            strict: false,
        };
        py.detach(|| {
            self.with(|c| {
                let m = c.messages();
                let plan = compact::trim::plan_keep(m, &c.totals(), &Pairing::of(m), (max_tokens, reserve), how, |_| 0);
                plan.ok().map(|p| (p.keep, p.apart))
            })
        })
    }

    /// Estimated tokens of messages `start..` per content class (`prose`, `code`, `json`, `cjk`)
    /// and `overhead`, in `encoding` (default: the conversation's; texts counted exactly with a
    /// BPE encoding, by the heuristic otherwise). Overhead (the messages' tokens beyond their
    /// texts, at least 0 over the range or, with `per_message`, for each message) only under the
    /// conversation's encoding. Kept per message: a call counts only messages not seen before.
    #[pyo3(signature = (start = 0, /, *, encoding = None, per_message = false))]
    #[allow(clippy::needless_pass_by_value)] // pyo3 extracts owned arguments
    fn class_tokens<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = super::args::count::start)] start: usize,
        #[pyo3(from_py_with = super::args::optional_string::encoding)] encoding: Option<String>,
        per_message: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let enc = encoding.as_deref().map(Encoding::parse).transpose()?;
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

impl PyConversation {
    fn extend_parsed(&self, py: Python<'_>, values: Vec<Value>) -> PyResult<()> {
        py.detach(|| {
            let mut conv = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            conv.extend_values(values)
        })?;
        Ok(())
    }

    fn export<'py>(&self, py: Python<'py>, format: Format, request: bool) -> PyResult<Bound<'py, PyList>> {
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
