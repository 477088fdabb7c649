//! `agentcontext.Conversation`: a frozen pyclass around the core [`Conversation`], locked inside
//! detached sections so many threads can append and count at once.

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::conversation_helpers::{
    by_tool_dict, concat_parts, handoff_dict, item_value, keep_plan, parse_format, stubbed_list, suffix_within,
    tally_to_dict, truncated_list,
};
use super::convert::{read_messages, to_py, to_py_list, to_value};
use super::surgery;
use crate::compact::{self, ClearOptions, Pairing, Protection, surgery as ops};
use crate::conversation::Conversation;
use crate::model::{Format, Role};
use crate::tokens::Encoding;

#[pyclass(name = "Conversation", module = "agentcontext", frozen)]
pub struct PyConversation {
    pub(super) inner: Mutex<Conversation>,
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
        Self::create(py, messages, format, encoding, system)
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
        Self::read_file(py, path, format, encoding, max_bytes)
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
        let value = self.with(|c| item_value(c, index))?;
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
        self.anthropic_params(py, request)
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
        self.clear(py, protection, &options)
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
        let list = stubbed_list(py, stubbed)?;
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
        let (s, available) = py.detach(|| self.with(|c| suffix_within(c, max_tokens, reserved_output, safety_margin)));
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
        let list = truncated_list(py, report)?;
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

    /// Where the raw recent tail starts (`compact::RawStart::AtLeast`): the latest cut point
    /// keeping at least `keep_messages` messages and `keep_tokens` tokens raw.
    #[pyo3(name = "_raw_start_at_least")]
    #[pyo3(signature = (*, keep_messages = 0, keep_tokens = 0))]
    fn raw_start_at_least(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = super::args::count::keep_messages)] keep_messages: usize,
        #[pyo3(from_py_with = super::args::count::keep_tokens)] keep_tokens: usize,
    ) -> Option<usize> {
        let how = compact::RawStart::AtLeast {
            messages: keep_messages,
            tokens: keep_tokens,
        };
        self.raw_start(py, how)
    }

    /// Where the raw recent tail starts (`compact::RawStart::Fits`): the earliest cut point
    /// whose tail fits `room` tokens (the length when none does).
    #[pyo3(name = "_raw_start_fits")]
    fn raw_start_fits(&self, py: Python<'_>, room: i64) -> Option<usize> {
        self.raw_start(py, compact::RawStart::Fits { room })
    }

    /// Where the raw recent tail starts (`compact::RawStart::Steps`): the first step of the
    /// schedule `first`, `first + step`, ... whose tail fits `room` tokens (None when none does).
    #[pyo3(name = "_raw_start_steps")]
    fn raw_start_steps(&self, py: Python<'_>, room: i64, first: f64, step: f64) -> PyResult<Option<usize>> {
        if !(first.is_finite() && step > 0.0 && step.is_finite()) {
            return Err(super::errors::OptionError::new_err(
                "steps must be (first, step) with a finite first and a finite positive step",
            ));
        }
        Ok(self.raw_start(py, compact::RawStart::Steps { first, step, room }))
    }

    /// Message indices where history may be cut: starts of groups and rounds that do not
    /// separate a tool call from its result.
    #[pyo3(name = "_cut_points")]
    fn cut_points(&self, py: Python<'_>) -> Vec<usize> {
        py.detach(|| self.with(|c| c.cut_points().to_vec()))
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
        handoff_dict(py, &h, true)
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
        concat_parts(py, &parts)
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
        py.detach(|| self.with(|c| keep_plan(c, max_tokens, reserve, request, beside)))
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
        self.class_tokens_dict(py, start, encoding.as_deref(), per_message)
    }
}
