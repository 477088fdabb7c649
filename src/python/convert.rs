//! Python objects ⇄ `serde_json::Value`, written by hand for speed: one type check per object,
//! strings copied once, and a depth limit so hostile input cannot exhaust the stack.

use super::errors::ArgumentTypeError;
use std::fmt::Write as _;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyMapping, PySequence, PyString, PyTuple};
use serde_json::{Map, Number, Value};

use crate::error::Error;
use crate::formats;
use crate::model::{Format, Message};

/// Deepest nesting accepted in a message (serde_json's own parser stops at 128 too).
pub const MAX_DEPTH: usize = 128;

/// Convert one Python object (a message or item) into a JSON value; failures name `index`, then
/// the reason, then where in the message it is (`content[0].text`).
pub fn to_value(obj: &Bound<'_, PyAny>, index: usize) -> Result<Value, Error> {
    convert(obj, 0).map_err(|fault| Error::InvalidMessage {
        index,
        reason: fault.describe(),
    })
}

/// Why a value is not JSON data, and the path to it (innermost step first, as it unwinds).
struct Fault {
    reason: String,
    path: Vec<Step>,
}

enum Step {
    Key(String),
    Item(usize),
}

impl Fault {
    fn new(reason: String) -> Self {
        Fault {
            reason,
            path: Vec::new(),
        }
    }

    fn at(mut self, step: Step) -> Self {
        self.path.push(step);
        self
    }

    /// `reason (at a.b[2])`; a path of more than 8 steps shows its first 4 and last 3.
    fn describe(&self) -> String {
        if self.path.is_empty() {
            return self.reason.clone();
        }
        let steps: Vec<&Step> = self.path.iter().rev().collect();
        let render = |steps: &[&Step], first: bool| {
            let mut out = String::new();
            for (i, step) in steps.iter().enumerate() {
                match step {
                    Step::Key(k) if first && i == 0 => out.push_str(k),
                    Step::Key(k) => {
                        out.push('.');
                        out.push_str(k);
                    }
                    Step::Item(n) => {
                        let _ = write!(out, "[{n}]");
                    }
                }
            }
            out
        };
        let at = if steps.len() > 8 {
            format!(
                "{} ...{} more... {}",
                render(&steps[..4], true),
                steps.len() - 7,
                render(&steps[steps.len() - 3..], false)
            )
        } else {
            render(&steps, true)
        };
        format!("{} (at {at})", self.reason)
    }
}

fn convert(obj: &Bound<'_, PyAny>, depth: usize) -> Result<Value, Fault> {
    if let Ok(s) = obj.cast::<PyString>() {
        return py_str(s).map(Value::String).map_err(Fault::new);
    }
    if depth >= MAX_DEPTH {
        return Err(Fault::new(format!("nested deeper than {MAX_DEPTH} levels")));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = Map::with_capacity(d.len());
        for (k, v) in d.iter() {
            let Ok(key) = k.cast::<PyString>() else {
                return Err(Fault::new(format!("dict keys must be strings, got {}", type_name(&k))));
            };
            let key = py_str(key).map_err(Fault::new)?;
            match convert(&v, depth + 1) {
                Ok(value) => {
                    map.insert(key, value);
                }
                Err(fault) => return Err(fault.at(Step::Key(key))),
            }
        }
        return Ok(Value::Object(map));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        let mut out = Vec::with_capacity(l.len());
        for (i, v) in l.iter().enumerate() {
            out.push(convert(&v, depth + 1).map_err(|f| f.at(Step::Item(i)))?);
        }
        return Ok(Value::Array(out));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(i) = obj.cast::<PyInt>() {
        if let Ok(v) = i.extract::<i64>() {
            return Ok(Value::Number(v.into()));
        }
        if let Ok(v) = i.extract::<u64>() {
            return Ok(Value::Number(v.into()));
        }
        let repr = i.repr().map_or_else(|_| String::new(), |r| r.to_string());
        let shown: String = repr.chars().take(60).collect();
        return Err(Fault::new(format!("integer {shown} is out of the 64-bit range")));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| Fault::new(format!("{} is not a JSON number", f.value())));
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        let mut out = Vec::with_capacity(t.len());
        for (i, v) in t.iter().enumerate() {
            out.push(convert(&v, depth + 1).map_err(|f| f.at(Step::Item(i)))?);
        }
        return Ok(Value::Array(out));
    }
    convert_object(obj, depth)
}

/// An object that is not JSON data itself (see [`convert`]) at `depth`.
fn convert_object(obj: &Bound<'_, PyAny>, depth: usize) -> Result<Value, Fault> {
    // Message objects of SDKs and frameworks: any other mapping is read as its items, a pydantic
    // model (LiteLLM's and the OpenAI SDK's messages) as its JSON-mode dump without unset values.
    // A framework's own message classes have another shape (a LangChain message dumps to
    // `{"type": "human", ...}`): those are refused with the adapter to use.
    if adapter_hint(obj).is_some() {
        return Err(Fault::new(format!(
            "{} is not JSON data{}",
            type_name(obj),
            hint(obj, depth)
        )));
    }
    if let Ok(mapping) = obj.cast::<PyMapping>() {
        let dict = PyDict::new(obj.py());
        let items = mapping
            .items()
            .map_err(|e| Fault::new(format!("{} could not be read as a mapping: {e}", type_name(obj))))?;
        for item in items.iter() {
            let (k, v) = item
                .extract::<(Bound<'_, PyAny>, Bound<'_, PyAny>)>()
                .map_err(|e| Fault::new(format!("{} could not be read as a mapping: {e}", type_name(obj))))?;
            dict.set_item(k, v)
                .map_err(|e| Fault::new(format!("{} could not be read as a mapping: {e}", type_name(obj))))?;
        }
        return convert(dict.as_any(), depth);
    }
    if !obj.is_instance_of::<pyo3::types::PyType>() {
        if let Ok(dump) = obj.getattr(pyo3::intern!(obj.py(), "model_dump")) {
            let kwargs = PyDict::new(obj.py());
            let dumped = kwargs
                .set_item("mode", "json")
                .and_then(|()| kwargs.set_item("exclude_none", true))
                .and_then(|()| dump.call((), Some(&kwargs)))
                .map_err(|e| Fault::new(format!("{}.model_dump() failed: {e}", type_name(obj))))?;
            if dumped.is_instance_of::<PyDict>() {
                return convert(&dumped, depth);
            }
        }
    }
    Err(Fault::new(format!(
        "{} is not JSON data{}",
        type_name(obj),
        hint(obj, depth)
    )))
}

/// What to do with an object the library cannot read: the adapter of the framework it comes from,
/// or (for a message itself) the shapes that are read.
fn hint(obj: &Bound<'_, PyAny>, depth: usize) -> &'static str {
    match adapter_hint(obj) {
        Some(hint) => hint,
        None if depth == 0 => {
            "; a message is a dict, another Mapping or a pydantic model (model_dump); framework messages: \
             see agentcontext.integrations"
        }
        None => "",
    }
}

/// The adapter for an object of a framework that has one (from its class's module).
fn adapter_hint(obj: &Bound<'_, PyAny>) -> Option<&'static str> {
    let module = obj
        .get_type()
        .module()
        .map_or_else(|_| String::new(), |m| m.to_string());
    let root = module.split('.').next().unwrap_or_default();
    Some(match root {
        "langchain_core" | "langchain" | "langgraph" => {
            "; LangChain messages: use agentcontext.integrations.langchain (fit_messages, AgentContextMiddleware) \
             or agentcontext.integrations.langgraph, or langchain_core.messages.convert_to_openai_messages"
        }
        "pydantic_ai" => {
            "; Pydantic AI messages: use agentcontext.integrations.pydantic_ai (fit_messages, history_processor), \
             or pydantic_ai.messages.ModelMessagesTypeAdapter.dump_python(messages, mode='json')"
        }
        "agents" => {
            "; OpenAI Agents SDK: use agentcontext.integrations.openai_agents (input_filter, CompactingSession)"
        }
        _ => return None,
    })
}

fn py_str(s: &Bound<'_, PyString>) -> Result<String, String> {
    s.to_str()
        .map(str::to_owned)
        .map_err(|_| "string is not valid Unicode (lone surrogate)".to_owned())
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "object".to_owned(), |n| format!("{n}"))
}

/// The `ArgumentTypeError` (an `OptionError` and a `TypeError`) for a `messages` argument that is not a list (or iterable) of messages.
fn not_a_list(obj: &Bound<'_, PyAny>) -> PyErr {
    let repr = obj.repr().map_or_else(|_| String::new(), |r| r.to_string());
    let shown: String = repr.chars().take(60).collect();
    ArgumentTypeError::new_err(format!(
        "messages must be a list of messages, got {} {shown}{}",
        type_name(obj),
        if repr.chars().count() > 60 { "..." } else { "" }
    ))
}

/// The `system` argument as a JSON value: a string, or a list, tuple or other iterable of system
/// blocks (an iterator or generator is drained first); anything else is converted as it is (a
/// mapping or model, refused further on when it is not a system prompt).
pub fn system_value(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    let as_it_is = obj.is_instance_of::<PyString>()
        || obj.is_instance_of::<PyList>()
        || obj.is_instance_of::<PyTuple>()
        || obj.is_instance_of::<PyDict>()
        || obj.is_instance_of::<PyBytes>()
        || obj.cast::<PyMapping>().is_ok()
        || obj.hasattr(pyo3::intern!(obj.py(), "model_dump")).unwrap_or(false);
    if !as_it_is {
        if let Ok(iter) = obj.try_iter() {
            return Ok(to_value(drain(iter)?.as_any(), 0)?);
        }
    }
    Ok(to_value(obj, 0)?)
}

/// The items of an iterator, taken into a list (its exceptions passed on).
fn drain(iter: Bound<'_, pyo3::types::PyIterator>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(iter.py());
    for item in iter {
        list.append(item?)?;
    }
    Ok(list)
}

/// The items of a list or tuple (or any iterable) of messages as JSON values.
pub fn to_values(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Value>> {
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyDict>() {
        return Err(not_a_list(obj));
    }
    if let Ok(list) = obj.cast::<PyList>() {
        let mut out = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            out.push(to_value(&item, i)?);
        }
        return Ok(out);
    }
    let iter = obj.try_iter().map_err(|_| not_a_list(obj))?;
    let mut out = Vec::new();
    for (i, item) in iter.enumerate() {
        out.push(to_value(&item?, i)?);
    }
    Ok(out)
}

/// Read a list or tuple (or any iterable) of messages in `format`, or in the format detected from
/// them ([`formats::read_stream`]): each message is converted and read before the next, so the
/// converted values are never all held at once. The items are taken once (an iterable is drained
/// into a list, and a list is copied so that a reader that starts over sees the same items).
pub fn read_messages(
    obj: &Bound<'_, PyAny>,
    format: Option<Format>,
    system: Option<Value>,
) -> PyResult<(Format, Vec<Message>)> {
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyDict>() {
        return Err(not_a_list(obj));
    }
    let items: Bound<'_, PyAny> = if obj.is_instance_of::<PyTuple>() {
        obj.clone()
    } else if let Ok(list) = obj.cast::<PyList>() {
        list.as_sequence().to_list()?.into_any()
    } else {
        drain(obj.try_iter().map_err(|_| not_a_list(obj))?)?.into_any()
    };
    let items = items.cast::<PySequence>().map_err(|_| not_a_list(obj))?;
    let n = items.len()?;
    formats::read_stream(format, Format::OpenAiChat, system, |each| {
        for i in 0..n {
            if each(to_value(&items.get_item(i)?, i)?).is_break() {
                break;
            }
        }
        Ok::<(), PyErr>(())
    })
}

/// A JSON value as Python objects (dict, list, str, int, float, bool, None).
pub fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, item) in map {
                dict.set_item(k, to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// A list of JSON values as a Python list.
pub fn to_py_list<'py>(py: Python<'py>, values: &[Value]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for v in values {
        list.append(to_py(py, v)?)?;
    }
    Ok(list)
}
