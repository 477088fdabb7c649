//! The ladder's share arithmetic (`compact::fill`) and the offline summary's fit
//! (`compact::summary`): converts and delegates.

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;

use super::handoff::PyHandoffFacts;
use crate::compact;
use crate::compact::summary::{FitInput, Fitted};
use crate::tokens::Encoding;

/// Equal shares of `total` tokens over texts of `sizes` tokens, smallest first (a text under
/// its share stays whole); see `compact::fill::equal_shares`.
#[pyfunction]
#[pyo3(signature = (sizes, total, /))]
#[allow(clippy::needless_pass_by_value)] // pyo3 extracts arguments as owned values
pub fn _equal_shares(sizes: Vec<usize>, total: i64) -> Vec<usize> {
    compact::equal_shares(&sizes, total)
}

/// `shares` with the largest cut text (share under its size) giving up `over` tokens; None
/// when nothing is cut or it would keep less than one token. See `compact::fill::give_way`.
#[pyfunction]
#[pyo3(signature = (shares, sizes, over, /))]
#[allow(clippy::needless_pass_by_value)] // pyo3 extracts arguments as owned values
pub fn _give_way(mut shares: Vec<usize>, sizes: Vec<usize>, over: usize) -> Option<Vec<usize>> {
    compact::give_way(&mut shares, &sizes, over).then_some(shares)
}

/// The offline summary's fit (`compact::summary::fit`): the summary and its tokens, or, when it
/// is still over `cap` with its first sections only, the text and None (the caller cuts it).
/// `sections`: the lines of each section in `SECTIONS` order; `constraints`: which user message
/// lines constrain the work; `facts`: the handoff whose tests and decisions come before the
/// lines given of those sections (`summary::facts`); `latest_cut`: `latest` is cut already.
#[pyfunction]
#[pyo3(signature = (
    latest, sections, cap, /, *, encoding, request_room, recall_id, held, constraints, facts = None, latest_cut = false
))]
#[allow(clippy::needless_pass_by_value, clippy::too_many_arguments)] // pyo3 extracts arguments as owned values
pub fn _fit_summary(
    py: Python<'_>,
    latest: Option<PyBackedStr>,
    sections: Vec<Vec<PyBackedStr>>,
    cap: i64,
    #[pyo3(from_py_with = super::args::string::encoding)] encoding: &str,
    request_room: i64,
    recall_id: Option<PyBackedStr>,
    held: Option<PyBackedStr>,
    constraints: Vec<bool>,
    facts: Option<PyRef<'_, PyHandoffFacts>>,
    latest_cut: bool,
) -> PyResult<(String, Option<usize>)> {
    let enc = Encoding::parse(encoding)?;
    let mut lines: Vec<Vec<&str>> = sections
        .iter()
        .map(|lines| lines.iter().map(|l| &**l).collect())
        .collect();
    // The handoff's long sections, written here and merged before the lines given (the previous
    // summary's).
    let written = facts.as_deref().map(PyHandoffFacts::lines);
    for (section, new) in written.iter().flat_map(|lines| lines.iter()) {
        if let Some(given) = lines.get_mut(*section) {
            let old = std::mem::take(given);
            *given = compact::summary::merged(new, &old);
        }
    }
    let input = FitInput {
        latest: latest.as_deref(),
        latest_cut,
        sections: lines,
        constraints,
        request_room,
        recall_id: recall_id.as_deref(),
        held: held.as_deref(),
    };
    let fitted = py.detach(|| compact::summary::fit(&input, cap, enc))?;
    Ok(match fitted {
        Fitted::Fits(text, tokens) => (text, Some(tokens)),
        Fitted::Over(text) => (text, None),
    })
}
