//! The token-count memo (`crate::tokens::cache`): its report and its reset.

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// What the process's token-count memo holds: entries, capacity (entries at most), bytes of its
/// tables, hits and misses since the process started.
#[pyfunction]
pub fn token_cache_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let s = crate::tokens::cache::global().stats();
    let out = PyDict::new(py);
    out.set_item("entries", s.entries)?;
    out.set_item("capacity", s.capacity)?;
    out.set_item("bytes", s.bytes)?;
    out.set_item("hits", s.hits)?;
    out.set_item("misses", s.misses)?;
    Ok(out)
}

/// Empty the memo (and the fast path's memo of placeholders, which holds strings); `capacity`
/// (entries, 0 turns memoizing off) replaces the current one.
#[pyfunction]
#[pyo3(signature = (*, capacity = None))]
pub fn token_cache_clear(#[pyo3(from_py_with = super::args::optional_count::capacity)] capacity: Option<usize>) {
    let cache = crate::tokens::cache::global();
    cache.reset(capacity.unwrap_or_else(|| cache.stats().capacity));
    super::fast_clear::forget();
}
