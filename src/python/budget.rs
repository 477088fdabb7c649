//! Bindings for budgets: truncation, tail importance, JSON previews and file paging.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::budget::chars;
use crate::budget::paging::{self, ReadLimits};
use crate::budget::{self, Options, Retrieval, Strategy, Unit, json_preview as preview, tail};
use crate::error::Error;
use crate::tokens::Encoding;

/// The result of `truncate`.
#[pyclass(name = "Truncation", module = "agentcontext", frozen, get_all)]
pub struct PyTruncation {
    text: String,
    truncated: bool,
    kept: &'static str,
    tail_rule: Option<&'static str>,
    head_chars: usize,
    tail_chars: usize,
    original_chars: usize,
    original_bytes: usize,
    original_lines: usize,
    omitted_chars: usize,
    omitted_bytes: usize,
    omitted_lines: usize,
    omitted_tokens: Option<usize>,
}

#[pymethods]
impl PyTruncation {
    fn __repr__(&self) -> String {
        format!(
            "Truncation(truncated={}, kept={:?}, omitted_lines={}, omitted_chars={})",
            if self.truncated { "True" } else { "False" },
            self.kept,
            self.omitted_lines,
            self.omitted_chars
        )
    }

    fn __str__(&self) -> &str {
        &self.text
    }
}

pub(crate) fn parse_unit(unit: &str, encoding: &str) -> Result<Unit, Error> {
    Ok(match unit {
        "chars" => Unit::Chars,
        "bytes" => Unit::Bytes,
        "lines" => Unit::Lines,
        "tokens" => Unit::Tokens(Encoding::parse(encoding)?),
        other => {
            return Err(Error::UnknownOption {
                what: "unit",
                value: other.to_owned(),
                expected: "\"chars\", \"bytes\", \"lines\", \"tokens\"",
            });
        }
    })
}

/// `head_share` was checked (between 0 and 1) by `args::fraction::head_share`.
pub(crate) fn parse_strategy(strategy: &str, head_share: f64) -> PyResult<Strategy> {
    Ok(match strategy {
        "head" => Strategy::Head,
        "tail" => Strategy::Tail,
        "head_tail" => Strategy::HeadTail { head_share },
        "auto" => Strategy::Auto { head_share },
        other => {
            return Err(Error::UnknownOption {
                what: "strategy",
                value: other.to_owned(),
                expected: "\"auto\", \"head\", \"tail\", \"head_tail\"",
            }
            .into());
        }
    })
}

#[pyfunction]
#[pyo3(signature = (
    text, max_size, /, *, unit = "chars", strategy = "auto", head_share = 0.5, encoding = "o200k_base",
    recall_id = None, path = None, count_omitted_tokens = false, not_stored = false, exact = false
))]
#[allow(clippy::too_many_arguments)]
pub fn truncate(
    py: Python<'_>,
    #[pyo3(from_py_with = super::args::string::text)] text: &str,
    #[pyo3(from_py_with = super::args::count::max_size)] max_size: usize,
    #[pyo3(from_py_with = super::args::string::unit)] unit: &str,
    #[pyo3(from_py_with = super::args::string::strategy)] strategy: &str,
    #[pyo3(from_py_with = super::args::fraction::head_share)] head_share: f64,
    #[pyo3(from_py_with = super::args::string::encoding)] encoding: &str,
    #[pyo3(from_py_with = super::args::optional_string::recall_id)] recall_id: Option<String>,
    #[pyo3(from_py_with = super::args::optional_string::path)] path: Option<String>,
    count_omitted_tokens: bool,
    not_stored: bool,
    exact: bool,
) -> PyResult<PyTruncation> {
    let unit = parse_unit(unit, encoding)?;
    let strategy = parse_strategy(strategy, head_share)?;
    let options = Options {
        retrieval: Retrieval {
            recall_id,
            path,
            unstored: not_stored,
        },
        count_omitted_tokens,
    };
    let r = py.detach(|| match unit {
        Unit::Tokens(encoding) if exact => budget::fit::truncate_exact(text, max_size, encoding, strategy, &options),
        _ if exact => Err(Error::InvalidArgument {
            what: "exact",
            reason: format!("True needs unit=\"tokens\", not \"{}\"", unit.name()),
        }),
        _ => budget::truncate(text, max_size, unit, strategy, &options),
    })?;
    let head_chars = budget::count::text_counts(&text.as_bytes()[..r.head_bytes]).chars;
    let tail_chars = budget::count::text_counts(&text.as_bytes()[text.len() - r.tail_bytes..]).chars;
    Ok(PyTruncation {
        truncated: r.truncated,
        kept: r.kept.as_str(),
        tail_rule: r.tail_rule,
        head_chars,
        tail_chars,
        original_chars: r.original.chars,
        original_bytes: r.original.bytes,
        original_lines: r.original.lines,
        omitted_chars: r.omitted.chars,
        omitted_bytes: r.omitted.bytes,
        omitted_lines: r.omitted.lines,
        omitted_tokens: r.omitted_tokens,
        text: r.text,
    })
}

/// The tail-importance rule that fires on `text`, or None.
#[pyfunction]
#[pyo3(signature = (text, /))]
pub fn important_tail(#[pyo3(from_py_with = super::args::string::text)] text: &str) -> Option<&'static str> {
    tail::important_tail(text)
}

/// A structural preview of a JSON payload, or None when `text` is not a JSON object or array.
#[pyfunction]
#[pyo3(signature = (text, /, *, max_chars = 2000))]
pub fn json_preview(
    py: Python<'_>,
    #[pyo3(from_py_with = super::args::string::text)] text: &str,
    #[pyo3(from_py_with = super::args::count::max_chars)] max_chars: usize,
) -> Option<String> {
    py.detach(|| preview::json_preview(text, max_chars))
}

/// The value at a JSON path (`$`, `.key`, `['key']`, `[n]`, `[-n]`, `[*]`) in a JSON text.
#[pyfunction]
#[pyo3(signature = (text, path, /))]
pub fn json_path(
    py: Python<'_>,
    #[pyo3(from_py_with = super::args::string::text)] text: &str,
    #[pyo3(from_py_with = super::args::string::path)] path: &str,
) -> PyResult<String> {
    Ok(py.detach(|| budget::json_path::query(text, path))?)
}

/// One page of a file.
#[pyclass(name = "Page", module = "agentcontext", frozen, get_all)]
pub struct PyPage {
    text: String,
    start_line: usize,
    end_line: usize,
    total_lines: Option<usize>,
    file_bytes: u64,
    long_lines_cut: usize,
    more: bool,
    content_hash: String,
}

#[pymethods]
impl PyPage {
    fn __repr__(&self) -> String {
        format!(
            "Page(lines {}-{} of {}, more={})",
            self.start_line,
            self.end_line,
            self.total_lines.map_or_else(|| "unknown".to_owned(), |n| n.to_string()),
            if self.more { "True" } else { "False" }
        )
    }

    fn __str__(&self) -> &str {
        &self.text
    }
}

impl From<paging::Page> for PyPage {
    fn from(p: paging::Page) -> Self {
        PyPage {
            text: p.text,
            start_line: p.start_line,
            end_line: p.end_line,
            total_lines: p.total_lines,
            file_bytes: p.file_bytes,
            long_lines_cut: p.long_lines_cut,
            more: p.more,
            content_hash: format!("{:016x}", p.content_hash),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn limits(
    max_lines: usize,
    max_bytes: usize,
    line_max_chars: usize,
    byte_gate: Option<usize>,
    token_gate: Option<usize>,
    encoding: &str,
    line_numbers: bool,
) -> PyResult<ReadLimits> {
    let encoding = Encoding::parse(encoding)?;
    Ok(ReadLimits {
        max_lines,
        max_bytes,
        line_max_chars,
        byte_gate: byte_gate.map(|g| u64::try_from(g).unwrap_or(u64::MAX)),
        token_gate: token_gate.map(|g| (encoding, g)),
        line_numbers,
        ..ReadLimits::default()
    })
}

/// Read one page of a file (see `agentcontext.read_page` in the stub for the rules).
#[pyfunction]
#[pyo3(signature = (
    path, /, offset = None, lines = None, *, max_lines = 2000, max_bytes = 51200, line_max_chars = 2000,
    byte_gate = Some(262_144), token_gate = Some(25_000), encoding = "o200k_base", line_numbers = true
), text_signature = "(path, /, offset=None, lines=None, *, max_lines=2000, max_bytes=51200, line_max_chars=2000, \
    byte_gate=262144, token_gate=25000, encoding='o200k_base', line_numbers=True)")]
#[allow(clippy::too_many_arguments, clippy::needless_pass_by_value)] // pyo3 extracts owned arguments
pub fn read_page(
    py: Python<'_>,
    #[pyo3(from_py_with = super::args::path)] path: PathBuf,
    #[pyo3(from_py_with = super::args::optional_count::offset)] offset: Option<usize>,
    #[pyo3(from_py_with = super::args::optional_count::lines)] lines: Option<usize>,
    #[pyo3(from_py_with = super::args::positive::max_lines)] max_lines: usize,
    #[pyo3(from_py_with = super::args::positive::max_bytes)] max_bytes: usize,
    #[pyo3(from_py_with = super::args::positive::line_max_chars)] line_max_chars: usize,
    #[pyo3(from_py_with = super::args::optional_count::byte_gate)] byte_gate: Option<usize>,
    #[pyo3(from_py_with = super::args::optional_count::token_gate)] token_gate: Option<usize>,
    #[pyo3(from_py_with = super::args::string::encoding)] encoding: &str,
    line_numbers: bool,
) -> PyResult<PyPage> {
    let limits = limits(
        max_lines,
        max_bytes,
        line_max_chars,
        byte_gate,
        token_gate,
        encoding,
        line_numbers,
    )?;
    let page = py.detach(|| paging::read_page(&path, offset, lines, &limits))?;
    Ok(page.into())
}

/// Page text already in memory with the same rules as `read_page` (no byte gate).
#[pyfunction]
#[pyo3(signature = (
    text, /, offset = None, lines = None, *, name = "text", max_lines = 2000, max_bytes = 51200,
    line_max_chars = 2000, token_gate = None, encoding = "o200k_base", line_numbers = false
))]
#[allow(clippy::too_many_arguments)]
pub fn page_text(
    py: Python<'_>,
    #[pyo3(from_py_with = super::args::string::text)] text: &str,
    #[pyo3(from_py_with = super::args::optional_count::offset)] offset: Option<usize>,
    #[pyo3(from_py_with = super::args::optional_count::lines)] lines: Option<usize>,
    #[pyo3(from_py_with = super::args::string::name)] name: &str,
    #[pyo3(from_py_with = super::args::positive::max_lines)] max_lines: usize,
    #[pyo3(from_py_with = super::args::positive::max_bytes)] max_bytes: usize,
    #[pyo3(from_py_with = super::args::positive::line_max_chars)] line_max_chars: usize,
    #[pyo3(from_py_with = super::args::optional_count::token_gate)] token_gate: Option<usize>,
    #[pyo3(from_py_with = super::args::string::encoding)] encoding: &str,
    line_numbers: bool,
) -> PyResult<PyPage> {
    let limits = limits(
        max_lines,
        max_bytes,
        line_max_chars,
        None,
        token_gate,
        encoding,
        line_numbers,
    )?;
    let page = py
        .detach(|| paging::page_bytes(text.as_bytes(), name, offset, lines, &limits, false))
        .map_err(|(kind, message)| Error::FileRead {
            path: name.to_owned(),
            kind,
            message,
        })?;
    Ok(page.into())
}

/// One page of a text given whole or in pieces (consumed once, in order; only the page is held),
/// by lines or by characters: `(text, start, end, total_chars, start_line, end_line, total_lines,
/// hint)`, offsets in characters. The pager of the `recall` tool.
#[pyfunction]
#[pyo3(signature = (pieces, /, offset = 1, lines = 500, *, char_offset = None, max_chars = 20_000))]
#[allow(clippy::type_complexity)] // the tuple Python unpacks into a RecallPage
pub fn page_chars(
    pieces: &Bound<'_, PyAny>,
    #[pyo3(from_py_with = super::args::positive::offset)] offset: usize,
    #[pyo3(from_py_with = super::args::positive::lines)] lines: usize,
    #[pyo3(from_py_with = super::args::optional_count::char_offset)] char_offset: Option<usize>,
    #[pyo3(from_py_with = super::args::positive::max_chars)] max_chars: usize,
) -> PyResult<(String, usize, usize, usize, usize, usize, usize, Option<String>)> {
    let mut pager = chars::Pager::new(chars::Request {
        offset,
        lines,
        char_offset,
        max_chars,
    });
    // A piece that is not text (a lone surrogate, another type) is an error naming `pieces`, as
    // every other text argument's is (it was a bare UnicodeEncodeError or TypeError).
    if pieces.cast::<PyString>().is_ok() {
        pager.push(super::args::string::pieces(pieces)?);
    } else {
        let iter = pieces
            .try_iter()
            .map_err(|_| super::errors::ArgumentTypeError::new_err("pieces must be a str or an iterable of str"))?;
        for piece in iter {
            let piece = piece?;
            pager.push(super::args::string::pieces(&piece)?);
        }
    }
    let p = pager
        .finish()
        .map_err(|e| super::errors::OptionError::new_err(e.to_string()))?;
    Ok((
        p.text,
        p.start,
        p.end,
        p.total_chars,
        p.start_line,
        p.end_line,
        p.total_lines,
        p.hint,
    ))
}
