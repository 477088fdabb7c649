//! `os.register_at_fork` hooks: the core's locks (`crate::fork`) and the placeholder memo's,
//! taken before a fork and let go after it, in the parent and in the child.

use std::cell::RefCell;
use std::sync::MutexGuard;
use std::time::Duration;

use pyo3::prelude::*;

use super::fast_clear::{self, Memo};

thread_local! {
    /// The guards taken by [`_fork_prepare`] on this thread (the one that forks).
    static HELD: RefCell<Option<(crate::fork::Quiet, MutexGuard<'static, Option<Memo>>)>> = const { RefCell::new(None) };
}

/// Internal (`os.register_at_fork(before=...)`): wait until no other thread is inside the core's
/// shared state and hold it until [`_fork_release`]. Each lock is only tried, with the GIL held;
/// when one is busy, all are let go and so is the GIL for a moment, then all are tried again: a
/// thread holding one of them may be waiting for the GIL (the placeholder memo and the count
/// memo's report are taken with it), and one waiting for the GIL may hold one.
#[pyfunction]
pub fn _fork_prepare(py: Python<'_>) {
    let mut pause = Duration::from_micros(20);
    loop {
        if let Some(memo) = fast_clear::try_hold() {
            if let Some(quiet) = crate::fork::try_quiesce() {
                HELD.with(|held| *held.borrow_mut() = Some((quiet, memo)));
                return;
            }
        }
        py.detach(|| std::thread::sleep(pause));
        pause = (pause * 2).min(Duration::from_millis(2));
    }
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
