//! Module-level functions: counting and whole-list conversion.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use super::conversation::parse_format;
use super::convert::{to_py, to_py_list, to_value, to_values};
use crate::error::Error;
use crate::formats;
use crate::model::Format;
use crate::tokens::{Encoding, heuristic};

/// Texts shorter than this are counted without releasing the GIL (releasing costs more).
const DETACH_MIN_BYTES: usize = 4096;

#[pyfunction]
#[pyo3(signature = (text, /, *, encoding = "o200k_base"))]
pub fn count_tokens(py: Python<'_>, text: &str, encoding: &str) -> PyResult<usize> {
    let enc = Encoding::parse(encoding)?;
    if text.len() < DETACH_MIN_BYTES {
        Ok(enc.count(text))
    } else {
        Ok(py.detach(|| enc.count(text)))
    }
}

#[pyfunction]
#[pyo3(signature = (texts, /, *, encoding = "o200k_base"))]
pub fn count_tokens_batch(py: Python<'_>, texts: &Bound<'_, PyAny>, encoding: &str) -> PyResult<Vec<usize>> {
    let enc = Encoding::parse(encoding)?;
    let mut owned: Vec<String> = Vec::new();
    for (i, item) in texts.try_iter()?.enumerate() {
        let item = item?;
        let s = item
            .cast::<PyString>()
            .map_err(|_| pyo3::exceptions::PyTypeError::new_err(format!("texts[{i}] is not a string")))?;
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
pub fn estimate_tokens(text: &str, target: &str) -> PyResult<usize> {
    let enc = Encoding::parse(target)?;
    Ok(heuristic::estimate(text, heuristic::Profile::for_encoding(enc)))
}

/// The format of a list of messages, or None when nothing in it tells the formats apart.
#[pyfunction]
#[pyo3(signature = (messages, /))]
pub fn detect_format(messages: &Bound<'_, PyAny>) -> PyResult<Option<&'static str>> {
    let values = to_values(messages)?;
    Ok(formats::detect::detect(&values).map(Format::as_str))
}

/// Convert a whole list of messages from one format to another in one call.
#[pyfunction]
#[pyo3(signature = (messages, /, *, to, source = "auto", system = None))]
pub fn convert<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    to: &str,
    source: &str,
    system: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let source = parse_format(source)?;
    let Some(target) = parse_format(to)? else {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "`to` must name a format, not \"auto\"",
        ));
    };
    let values = to_values(messages)?;
    let system = system.map(|s| to_value(s, 0)).transpose()?;
    let out = py.detach(
        move || -> Result<(Option<serde_json::Value>, Vec<serde_json::Value>), Error> {
            let source = source
                .or_else(|| system.as_ref().map(|_| Format::Anthropic))
                .or_else(|| formats::detect::detect(&values))
                .unwrap_or(Format::OpenAiChat);
            let parsed = match source {
                Format::Anthropic => formats::anthropic::read(values, system)?,
                other => formats::read(other, values)?,
            };
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
