//! Module-level functions: counting and whole-list conversion.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use super::conversation_helpers::parse_format;
use super::convert::{read_messages, system_value, to_py, to_py_list, to_values};
use crate::error::Error;
use crate::formats;
use crate::formats::detect::Glance;
use crate::model::Format;
use crate::tokens::{Encoding, heuristic};

/// Texts shorter than this are counted without releasing the GIL (releasing costs more).
const DETACH_MIN_BYTES: usize = 4096;

#[pyfunction]
#[pyo3(signature = (text, /, *, encoding = "o200k_base"))]
pub fn count_tokens(
    py: Python<'_>,
    #[pyo3(from_py_with = super::args::string::text)] text: &str,
    #[pyo3(from_py_with = super::args::string::encoding)] encoding: &str,
) -> PyResult<usize> {
    let enc = Encoding::parse(encoding)?;
    if text.len() < DETACH_MIN_BYTES {
        Ok(enc.count(text))
    } else {
        Ok(py.detach(|| enc.count(text)))
    }
}

#[pyfunction]
#[pyo3(signature = (texts, /, *, encoding = "o200k_base"))]
pub fn count_tokens_batch(
    py: Python<'_>,
    texts: &Bound<'_, PyAny>,
    #[pyo3(from_py_with = super::args::string::encoding)] encoding: &str,
) -> PyResult<Vec<usize>> {
    let enc = Encoding::parse(encoding)?;
    let mut owned: Vec<String> = Vec::new();
    for (i, item) in texts.try_iter()?.enumerate() {
        let item = item?;
        let s = item.cast::<PyString>().map_err(|_| {
            let type_name = item
                .get_type()
                .name()
                .map_or_else(|_| "object".to_owned(), |n| n.to_string());
            super::errors::ArgumentTypeError::new_err(format!("texts[{i}] must be a string, got {type_name}"))
        })?;
        owned.push(
            s.to_str()
                .map_err(|_| Error::InvalidMessage {
                    index: i,
                    reason: "string is not valid Unicode (lone surrogate)".into(),
                })?
                .to_owned(),
        );
    }
    Ok(py.detach(|| {
        let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
        enc.count_many(&refs)
    }))
}

#[pyfunction]
#[pyo3(signature = (text, /, *, target = "o200k_base"))]
pub fn estimate_tokens(
    #[pyo3(from_py_with = super::args::string::text)] text: &str,
    #[pyo3(from_py_with = super::args::string::target)] target: &str,
) -> PyResult<usize> {
    let enc = Encoding::parse(target)?;
    Ok(heuristic::estimate(text, heuristic::Profile::for_encoding(enc)))
}

/// The format of a list of messages, or None when nothing in it tells the formats apart.
#[pyfunction]
#[pyo3(signature = (messages, /))]
pub fn detect_format(py: Python<'_>, messages: &Bound<'_, PyAny>) -> PyResult<Option<&'static str>> {
    let values = to_values(messages)?;
    Ok(py.detach(|| formats::detect::detect(&values)).map(Format::as_str))
}

/// Convert a whole list of messages from one format to another in one call.
#[pyfunction]
#[pyo3(signature = (messages, /, *, to, source = "auto", system = None))]
pub fn convert<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    #[pyo3(from_py_with = super::args::string::to)] to: &str,
    #[pyo3(from_py_with = super::args::string::source)] source: &str,
    system: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let source = parse_format(source)?;
    let Some(target) = parse_format(to)? else {
        return Err(super::errors::OptionError::new_err(
            "to=\"auto\" names no format: pass \"openai\", \"responses\", \"anthropic\" or \"jsonl\"",
        ));
    };
    let system = system.map(system_value).transpose()?;
    let (_, parsed) = read_messages(messages, source, system)?;
    let out = py.detach(
        move || -> Result<(Option<serde_json::Value>, Vec<serde_json::Value>), Error> {
            if target == Format::Anthropic {
                formats::anthropic::write(&parsed)
            } else {
                Ok((None, formats::write(target, &parsed)?))
            }
        },
    )?;
    if target == Format::Anthropic {
        let d = PyDict::new(py);
        if let Some(system) = out.0 {
            d.set_item("system", to_py(py, &system)?)?;
        }
        d.set_item("messages", to_py_list(py, &out.1)?)?;
        return Ok(d.into_any());
    }
    let list: Bound<'py, PyList> = to_py_list(py, &out.1)?;
    Ok(list.into_any())
}

/// The heuristic's regressors for each text (for `benches/calibrate_heuristic.py`).
#[pyfunction]
#[pyo3(signature = (texts, /))]
#[allow(clippy::needless_pass_by_value)] // pyo3 extracts arguments as owned values
pub fn _heuristic_features(texts: Vec<String>) -> Vec<Vec<f64>> {
    texts
        .iter()
        .map(|t| heuristic::Features::of(t).regressors().to_vec())
        .collect()
}

/// A whole list read in a named (or detected) format, and the shape to give it back in.
struct ParsedList {
    format: Format,
    messages: Vec<crate::model::Message>,
    /// `format="anthropic"` or `system=` was given: the result is the request fields
    /// `{"system", "messages"}`. Decided by the arguments, never by detection, so one call always
    /// returns one type (an Anthropic list found by `"auto"` comes back a list).
    request_fields: bool,
}

/// Parse a whole list in a named (or detected) format.
fn parse_list(messages: &Bound<'_, PyAny>, source: &str, system: Option<&Bound<'_, PyAny>>) -> PyResult<ParsedList> {
    let requested = parse_format(source)?;
    let request_fields = requested == Some(Format::Anthropic) || system.is_some();
    let system = system.map(system_value).transpose()?;
    let (format, messages) = read_messages(messages, requested, system)?;
    Ok(ParsedList {
        format,
        messages,
        request_fields,
    })
}

/// Messages out in `format`: a list (for Anthropic, a system prompt first with role `"system"`,
/// as `Conversation.to_format` writes it), or with `request_fields` and Anthropic, `{"system", "messages"}`.
fn export<'py>(
    py: Python<'py>,
    format: Format,
    request_fields: bool,
    messages: &[crate::model::Message],
) -> PyResult<Bound<'py, PyAny>> {
    if format == Format::Anthropic && request_fields {
        let (system, msgs) = py.detach(|| formats::anthropic::write(messages))?;
        let d = PyDict::new(py);
        if let Some(system) = system {
            d.set_item("system", to_py(py, &system)?)?;
        }
        d.set_item("messages", to_py_list(py, &msgs)?)?;
        return Ok(d.into_any());
    }
    let values = py.detach(|| formats::write(format, messages))?;
    Ok(to_py_list(py, &values)?.into_any())
}

/// Protocol violations of a whole list of messages.
#[pyfunction]
#[pyo3(name = "validate", signature = (messages, /, *, format = "auto", system = None))]
pub fn validate_messages<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    #[pyo3(from_py_with = super::args::string::format)] format: &str,
    system: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let parsed = parse_list(messages, format, system)?.messages;
    let found = py.detach(|| crate::compact::validate(&parsed));
    super::surgery::violations(py, found)
}

/// Repair a whole list of messages: `(messages, changes)` in the same format, shaped as `export` says;
/// `leave_open`: the calls an agent's loop still waits on get no result (`RepairOptions::leave_open`).
#[pyfunction]
#[pyo3(name = "repair", signature = (messages, /, *, format = "auto", system = None, leave_open = false))]
pub fn repair_messages<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    #[pyo3(from_py_with = super::args::string::format)] format: &str,
    system: Option<&Bound<'py, PyAny>>,
    #[pyo3(from_py_with = super::args::flag::leave_open)] leave_open: bool,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyList>)> {
    let list = parse_list(messages, format, system)?;
    let options = crate::compact::RepairOptions { leave_open };
    let (fixed, changes) = py.detach(|| crate::compact::repair_with(&list.messages, options));
    Ok((
        export(py, list.format, list.request_fields, &fixed)?,
        super::surgery::changes(py, &changes)?,
    ))
}

/// Fit a whole list of messages into `max_tokens`: clear old tool results, then keep the system
/// messages, the latest user request and the longest recent suffix that fits beside them, after
/// `reserved_output` and `safety_margin` (`crate::compact::trim`); returned in the same format,
/// shaped as `export` says.
#[pyfunction]
#[pyo3(signature = (
    messages, max_tokens, /, *, format = "auto", system = None, encoding = "o200k_base", clear = true,
    recent_messages = 12, recent_tools = 3, clear_at_least = 0, reserved_output = 0, safety_margin = 0,
    clear_tool_inputs = false, recall_ids = true
))]
#[allow(clippy::too_many_arguments)]
pub fn trim_messages<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    #[pyo3(from_py_with = super::args::count::max_tokens)] max_tokens: usize,
    #[pyo3(from_py_with = super::args::string::format)] format: &str,
    system: Option<&Bound<'py, PyAny>>,
    #[pyo3(from_py_with = super::args::string::encoding)] encoding: &str,
    #[pyo3(from_py_with = super::args::flag::clear)] clear: bool,
    #[pyo3(from_py_with = super::args::count::recent_messages)] recent_messages: usize,
    #[pyo3(from_py_with = super::args::count::recent_tools)] recent_tools: usize,
    #[pyo3(from_py_with = super::args::count::clear_at_least)] clear_at_least: usize,
    #[pyo3(from_py_with = super::args::count::reserved_output)] reserved_output: usize,
    #[pyo3(from_py_with = super::args::count::safety_margin)] safety_margin: usize,
    #[pyo3(from_py_with = super::args::flag::clear_tool_inputs)] clear_tool_inputs: bool,
    #[pyo3(from_py_with = super::args::flag::recall_ids)] recall_ids: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let encoding = Encoding::parse(encoding)?;
    let protection = crate::compact::Protection {
        recent_messages,
        recent_tools,
    };
    let reserve = reserved_output.saturating_add(safety_margin);
    // The fast path: a list of plain Chat (or native) dicts is never converted.
    if system.is_none() {
        if let Ok(list) = messages.cast::<PyList>() {
            let requested = parse_format(format)?;
            let guess = requested.or_else(|| formats::detect::chat_or_native(list.iter().map(glance)));
            if let Some(fmt) = guess {
                let cut = clear.then_some(super::fast_clear::Cut {
                    protection,
                    clear_at_least,
                    enc: encoding,
                    inputs: clear_tool_inputs,
                    recall_ids,
                });
                if let Some(out) = super::fast::trim(list, fmt, encoding, max_tokens, reserve, cut)? {
                    return Ok(out.into_any());
                }
            }
        }
    }
    let ParsedList {
        format,
        messages: parsed,
        request_fields,
    } = parse_list(messages, format, system)?;
    let kept = py.detach(move || -> Result<Vec<crate::model::Message>, Error> {
        let conv = crate::conversation::Conversation::from_messages(format, encoding, parsed);
        let options = crate::compact::ClearOptions {
            clear_tool_inputs,
            clear_at_least,
            recall_ids,
            ..crate::compact::ClearOptions::default()
        };
        crate::compact::trim::trim(&conv, max_tokens, reserve, clear.then_some((protection, &options)))
    })?;
    export(py, format, request_fields, &kept)
}

/// The glance of `formats::detect::chat_or_native` at one item of a list.
fn glance(item: Bound<'_, PyAny>) -> Glance {
    let py = item.py();
    let Ok(d) = item.cast_into::<PyDict>() else {
        return Glance::Other;
    };
    if !matches!(d.contains(pyo3::intern!(py, "type")), Ok(false)) {
        return Glance::Other;
    }
    let first_call_nested = match d.get_item(pyo3::intern!(py, "tool_calls")) {
        Err(_) => return Glance::Other,
        Ok(None) => None,
        Ok(Some(calls)) => calls
            .cast::<PyList>()
            .ok()
            .and_then(|calls| calls.iter().next())
            .map(|first| first.get_item(pyo3::intern!(py, "function")).is_ok()),
    };
    Glance::Message { first_call_nested }
}
