//! Python bindings: the only module that touches pyo3. Everything here converts at the edge and
//! calls the core with the GIL released for anything that takes time.

mod args;
mod budget;
mod cache;
mod compact;
mod conversation;
mod conversation_helpers;
mod convert;
mod errors;
mod fast;
mod fast_clear;
mod fork;
mod functions;
mod handoff;
mod memory;
mod prints;
mod surgery;
mod trimmer;

#[pyo3::pymodule(gil_used = false)]
mod _core {
    #[pymodule_export]
    use super::budget::{
        PyPage, PyTruncation, important_tail, json_path, json_preview, page_chars, page_text, read_page, truncate,
    };
    #[pymodule_export]
    use super::cache::{token_cache_clear, token_cache_info};
    #[pymodule_export]
    use super::compact::{_equal_shares, _fit_summary, _give_way};
    #[pymodule_export]
    use super::conversation::PyConversation;
    #[pymodule_export]
    use super::fork::{_fork_prepare, _fork_release};
    #[pymodule_export]
    use super::functions::{
        _heuristic_features, convert, count_tokens, count_tokens_batch, detect_format, estimate_tokens,
        repair_messages, trim_messages, validate_messages,
    };
    #[pymodule_export]
    use super::handoff::{PyHandoffFacts, PyHandoffScan};
    #[pymodule_export]
    use super::memory::{PyMemoryIndex, check_memory_record, search_log, search_messages};
    #[pymodule_export]
    use super::prints::{_any_field, _plain_dicts, PyFields, PyHeld, PyPrints};
    #[pymodule_export]
    use super::trimmer::{_chat_tokens, PyTrimmer};

    #[pymodule_init]
    fn init(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
        use pyo3::types::{PyDictMethods, PyModuleMethods};
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        m.add("MESSAGE_OVERHEAD", crate::tokens::MESSAGE_OVERHEAD)?;
        m.add("TOOL_BLOCK_OVERHEAD", crate::tokens::TOOL_BLOCK_OVERHEAD)?;
        m.add("MAX_IMAGE_TOKENS", crate::tokens::image::MAX_IMAGE_TOKENS)?;
        m.add("MEMORY_MAX_RECORD_BYTES", crate::memory::MAX_RECORD_BYTES)?;
        m.add(
            "_SUMMARY_SECTIONS",
            pyo3::types::PyTuple::new(m.py(), crate::compact::summary::SECTIONS)?,
        )?;
        m.add("_SUMMARY_LATEST_CUT", crate::compact::summary::LATEST_CUT)?;
        {
            use crate::compact::summary::fit as f;
            let py = m.py();
            let shares = pyo3::types::PyDict::new(py);
            for (name, value) in [
                ("LATEST_SHARE", f::LATEST_SHARE),
                ("USERS_SHARE", f::USERS_SHARE),
                ("CARRIED_SHARE", f::CARRIED_SHARE),
                ("FILES_SHARE", f::FILES_SHARE),
            ] {
                shares.set_item(name, value)?;
            }
            m.add("_SUMMARY_SHARES", shares)?;
            let sizes = pyo3::types::PyDict::new(py);
            for (name, value) in [
                ("LATEST_MIN_TOKENS", f::LATEST_MIN_TOKENS),
                ("FILES_MIN_TOKENS", f::FILES_MIN_TOKENS),
                ("USER_LINE_CHARS", f::USER_LINE_CHARS),
                ("USER_LINE_MIN_CHARS", f::USER_LINE_MIN_CHARS),
                ("USER_OPENING_CHARS", f::USER_OPENING_CHARS),
                ("REQUEST_SLACK", f::REQUEST_SLACK),
            ] {
                sizes.set_item(name, value)?;
            }
            m.add("_SUMMARY_SIZES", sizes)?;
        }
        super::fork::register(m)?;
        Ok(())
    }
}
