//! Numeric arguments checked at the edge. pyo3 turns `-1` for a `usize` into `OverflowError`
//! ("can't convert negative int to unsigned") and `None` into `TypeError`, neither naming the
//! argument; here every such value is an `OptionError` that names the argument and the value.
//!
//! Each checked argument has an extractor named after it, generated below, used as
//! `#[pyo3(from_py_with = args::count::limit)] limit: usize` — signatures and defaults stay as
//! they are.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt};

use super::errors::{ArgumentTypeError, OptionError};

/// The value as the message shows it (a long repr is cut).
fn shown(obj: &Bound<'_, PyAny>) -> String {
    let repr = obj
        .repr()
        .map_or_else(|_| "<unprintable>".to_owned(), |r| r.to_string());
    if repr.chars().count() > 60 {
        let head: String = repr.chars().take(57).collect();
        format!("{head}...")
    } else {
        repr
    }
}

/// The value with its type, unless the value says it (`None`, `True`).
fn typed(obj: &Bound<'_, PyAny>) -> String {
    if obj.is_none() || obj.is_instance_of::<PyBool>() {
        return shown(obj);
    }
    let type_name = obj
        .get_type()
        .name()
        .map_or_else(|_| "object".to_owned(), |n| n.to_string());
    format!("{type_name} {}", shown(obj))
}

/// An integer argument from 0 (or 1 when `min` is 1) to `usize::MAX`.
fn integer(obj: &Bound<'_, PyAny>, name: &str, min: usize) -> PyResult<usize> {
    let what = if min == 0 {
        "a non-negative integer"
    } else {
        "a positive integer"
    };
    let is_int = obj.is_instance_of::<PyInt>() || (!obj.is_instance_of::<PyFloat>() && obj.hasattr("__index__")?);
    if !is_int || obj.is_instance_of::<PyBool>() {
        return Err(ArgumentTypeError::new_err(format!(
            "{name} must be {what}, got {}",
            typed(obj)
        )));
    }
    match obj.extract::<usize>() {
        Ok(v) if v >= min => Ok(v),
        Ok(_) => Err(OptionError::new_err(format!(
            "{name} must be {what}, got {}",
            shown(obj)
        ))),
        Err(_) if obj.lt(0)? => Err(OptionError::new_err(format!(
            "{name} must be {what}, got {}",
            shown(obj)
        ))),
        Err(_) => Err(OptionError::new_err(format!(
            "{name} is too large: {} (the largest accepted is {})",
            shown(obj),
            usize::MAX
        ))),
    }
}

/// A share between 0 and 1 (a float or an int; not NaN).
pub(crate) fn share(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<f64> {
    let value = if obj.is_instance_of::<PyBool>() {
        None
    } else if obj.is_instance_of::<PyFloat>() || obj.is_instance_of::<PyInt>() {
        obj.extract::<f64>().ok()
    } else {
        None
    };
    match value {
        Some(v) if (0.0..=1.0).contains(&v) => Ok(v),
        Some(_) => Err(OptionError::new_err(format!(
            "{name} must be between 0 and 1, got {}",
            shown(obj)
        ))),
        None => Err(ArgumentTypeError::new_err(format!(
            "{name} must be a number between 0 and 1, got {}",
            typed(obj)
        ))),
    }
}

/// Generates one extractor per argument name in a module of its kind.
macro_rules! extractors {
    ($kind:ident -> $out:ty, |$obj:ident, $name:ident| $body:expr; $($arg:ident),+ $(,)?) => {
        pub(crate) mod $kind {
            #![allow(clippy::unnecessary_wraps)]
            use pyo3::prelude::*;
            fn check($obj: &Bound<'_, PyAny>, $name: &str) -> PyResult<$out> {
                $body
            }
            $(
                pub(crate) fn $arg(obj: &Bound<'_, PyAny>) -> PyResult<$out> {
                    check(obj, stringify!($arg))
                }
            )+
        }
    };
}

extractors!(count -> usize, |obj, name| super::integer(obj, name, 0);
    max_size, max_chars, max_tokens, reserved_output, safety_margin, recent_messages, recent_tools,
    clear_at_least, index, start, keep_messages, keep_tokens, reserve, beside);
extractors!(positive -> usize, |obj, name| super::integer(obj, name, 1);
    parts, max_lines, max_bytes, line_max_chars, limit, snippet_chars, snippets, offset, lines, max_chars);
extractors!(optional_count -> Option<usize>, |obj, name| if obj.is_none() {
        Ok(None)
    } else {
        super::integer(obj, name, 0).map(Some)
    };
    stop, offset, lines, token_gate, byte_gate, capacity, char_offset, request);
extractors!(fraction -> f64, |obj, name| super::share(obj, name); head_share);

/// A switch: `True` or `False` only (pyo3's `bool` conversion raises a bare `TypeError` that
/// names no argument; a truthy string or 1 is refused, not guessed, as `_checks.flag` does).
pub(crate) fn switch(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<bool> {
    match obj.cast::<PyBool>() {
        Ok(b) => Ok(b.is_true()),
        Err(_) => Err(ArgumentTypeError::new_err(format!(
            "{name} must be True or False, got {}",
            typed(obj)
        ))),
    }
}

extractors!(flag -> bool, |obj, name| super::switch(obj, name); clear, clear_tool_inputs, recall_ids, leave_open);

/// `per_tool`: tool name → a non-negative limit, each value checked as `per_tool['name']`.
pub(crate) fn per_tool(obj: &Bound<'_, PyAny>) -> PyResult<Option<std::collections::HashMap<String, usize>>> {
    if obj.is_none() {
        return Ok(None);
    }
    let Ok(dict) = obj.cast::<pyo3::types::PyDict>() else {
        return Err(ArgumentTypeError::new_err(format!(
            "per_tool must be a dict of tool name to limit, got {}",
            typed(obj)
        )));
    };
    let mut out = std::collections::HashMap::with_capacity(dict.len());
    for (key, value) in dict.iter() {
        let Ok(name) = key.extract::<String>() else {
            return Err(ArgumentTypeError::new_err(format!(
                "per_tool keys must be tool names (str), got {}",
                shown(&key)
            )));
        };
        let limit = integer(&value, &format!("per_tool[{}]", shown(&key)), 0)?;
        out.insert(name, limit);
    }
    Ok(Some(out))
}

/// A `str` argument, borrowed: anything else is an `ArgumentTypeError` naming the argument.
fn string<'a>(obj: &'a Bound<'_, PyAny>, name: &str) -> PyResult<&'a str> {
    match obj.cast::<pyo3::types::PyString>() {
        // A lone surrogate cannot be UTF-8: refused naming the argument (it was a bare
        // UnicodeEncodeError), as one in a message is.
        Ok(s) => s.to_str().map_err(|_| {
            OptionError::new_err(format!(
                "{name} is not valid Unicode: it holds a lone surrogate (encode it with errors='replace' first)"
            ))
        }),
        Err(_) => Err(ArgumentTypeError::new_err(format!(
            "{name} must be a string, got {}",
            typed(obj)
        ))),
    }
}

/// Generates one `str` extractor per argument name.
macro_rules! string_extractors {
    ($($arg:ident),+ $(,)?) => {
        pub(crate) mod string {
            use pyo3::prelude::*;
            $(
                pub(crate) fn $arg<'a>(obj: &'a Bound<'_, PyAny>) -> PyResult<&'a str> {
                    super::string(obj, stringify!($arg))
                }
            )+
        }
    };
}

string_extractors!(
    text, encoding, format, strategy, unit, target, source, to, name, path, query, file, pieces
);

extractors!(optional_string -> Option<String>, |obj, name| if obj.is_none() {
        Ok(None)
    } else {
        super::string(obj, name).map(|s| Some(s.to_owned()))
    };
    recall_id, path, encoding);

/// A list (any sequence but a `str`) of `str`, each checked as `name[i]`.
fn strings(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<String>> {
    let not_a_list = || ArgumentTypeError::new_err(format!("{name} must be a list of strings, got {}", typed(obj)));
    if obj.is_instance_of::<pyo3::types::PyString>() {
        return Err(not_a_list());
    }
    let items: Vec<Bound<'_, PyAny>> = obj.extract().map_err(|_| not_a_list())?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| string(item, &format!("{name}[{i}]")).map(str::to_owned))
        .collect()
}

extractors!(string_list -> Vec<String>, |obj, name| super::strings(obj, name); exclude_tools, read_only_tools);

/// A file path argument: a `str` or an `os.PathLike` (as `open` takes), anything else an
/// `ArgumentTypeError` naming the argument (pyo3's own conversion raises a bare `TypeError`). A
/// `str` (or a path object's `str`) that is no file name — a lone surrogate outside
/// surrogateescape's range — is an `OptionError` saying so (pyo3 raised a bare `UnicodeEncodeError`).
fn file_path(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<std::path::PathBuf> {
    obj.extract::<std::path::PathBuf>().map_err(|_| {
        let fspath = obj
            .py()
            .import("os")
            .and_then(|os| os.getattr("fspath"))
            .and_then(|fspath| fspath.call1((obj,)));
        match fspath {
            Ok(text) if text.is_instance_of::<pyo3::types::PyString>() => OptionError::new_err(format!(
                "{name} is not a valid file name: it holds a lone surrogate, got {}",
                shown(obj)
            )),
            _ => ArgumentTypeError::new_err(format!("{name} must be a str or an os.PathLike, got {}", typed(obj))),
        }
    })
}

pub(crate) fn path(obj: &Bound<'_, PyAny>) -> PyResult<std::path::PathBuf> {
    file_path(obj, "path")
}

pub(crate) fn directory(obj: &Bound<'_, PyAny>) -> PyResult<std::path::PathBuf> {
    file_path(obj, "directory")
}

/// A message position for `conv[index]`: any int (negative counts from the end; one outside the
/// `isize` range is a `MessageIndexError`), anything else an `ArgumentTypeError`.
pub(crate) fn position(obj: &Bound<'_, PyAny>) -> PyResult<isize> {
    let is_int = obj.is_instance_of::<PyInt>() || (!obj.is_instance_of::<PyFloat>() && obj.hasattr("__index__")?);
    if !is_int || obj.is_instance_of::<PyBool>() {
        return Err(ArgumentTypeError::new_err(format!(
            "index must be an integer, got {}",
            typed(obj)
        )));
    }
    obj.extract::<isize>().map_err(|_| {
        super::errors::MessageIndexError::new_err(format!(
            "message index {} out of range (beyond the 64-bit range)",
            shown(obj)
        ))
    })
}
