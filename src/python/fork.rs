//! `os.register_at_fork` hooks: the core's locks (`crate::fork`) and the placeholder memo's,
//! taken before a fork and let go after it, in the parent and in the child.

use std::cell::RefCell;
use std::sync::MutexGuard;

use pyo3::prelude::*;

use super::fast_clear::{self, Memo};

thread_local! {
    /// The guards taken by [`_fork_prepare`] on this thread (the one that forks).
    static HELD: RefCell<Option<(crate::fork::Quiet, MutexGuard<'static, Option<Memo>>)>> = const { RefCell::new(None) };
}

/// Internal (`os.register_at_fork(before=...)`): wait until no other thread is inside the core's
/// shared state and hold it until [`_fork_release`].
#[pyfunction]
pub fn _fork_prepare(py: Python<'_>) {
    py.detach(|| {
        // The memo first: a thread holding it counts (and so takes the others).
        let memo = fast_clear::hold();
        let quiet = crate::fork::quiesce();
        HELD.with(|held| *held.borrow_mut() = Some((quiet, memo)));
    });
}

/// Internal (`after_in_parent` and `after_in_child`): let go what [`_fork_prepare`] took.
#[pyfunction]
pub fn _fork_release() {
    drop(HELD.with(|held| held.borrow_mut().take()));
}

/// Register the hooks with `os.register_at_fork` (where the platform forks).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let os = m.py().import("os")?;
    if !os.hasattr("register_at_fork")? {
        return Ok(());
    }
    let kwargs = pyo3::types::PyDict::new(m.py());
    let release = m.getattr("_fork_release")?;
    kwargs.set_item("before", m.getattr("_fork_prepare")?)?;
    kwargs.set_item("after_in_parent", &release)?;
    kwargs.set_item("after_in_child", &release)?;
    os.call_method("register_at_fork", (), Some(&kwargs))?;
    Ok(())
}
