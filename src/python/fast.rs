//! The whole-list fast path for frameworks that pass every message each turn.
//!
//! For OpenAI Chat and native messages whose contents are plain strings, `trim_messages` never
//! converts the list: it reads only roles, call ids, tool names and string lengths from the
//! Python objects into a skeleton, runs the same pairing, protection and suffix selection as the
//! general path on it, and returns a list of the caller's own message objects (new dicts only for
//! cleared results). Anything else falls back to the general path, which also reports errors.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::compact::{self, Pairing};
use crate::model::{Block, Body, ContentForm, Extra, Format, Message, ResultContent, Role, ToolInput};
use crate::tokens::{Encoding, MESSAGE_OVERHEAD, TOOL_BLOCK_OVERHEAD};

use super::surgery::Protection;

/// Tokens of a Python string under `enc`; `Approximate` needs only its length.
fn tokens_of(s: &Bound<'_, PyString>, enc: Encoding) -> Option<usize> {
    if enc == Encoding::Approximate {
        return Some(Encoding::approximate(s.len().ok()?));
    }
    Some(enc.count(s.to_str().ok()?))
}

struct Skeleton<'py> {
    messages: Vec<Message>,
    tokens: Vec<usize>,
    /// Per message: tokens of its tool result (for tool messages).
    result_tokens: Vec<usize>,
    objects: Vec<Bound<'py, PyDict>>,
}

/// Read the skeleton, or `None` when the list is not plain Chat/native with string contents.
fn skeleton<'py>(list: &Bound<'py, PyList>, enc: Encoding, native: bool) -> Option<Skeleton<'py>> {
    let py = list.py();
    let (k_role, k_content, k_calls, k_call_id) = (
        intern!(py, "role"),
        intern!(py, "content"),
        intern!(py, "tool_calls"),
        intern!(py, "tool_call_id"),
    );
    let (k_id, k_function, k_name, k_args) = (
        intern!(py, "id"),
        intern!(py, "function"),
        intern!(py, "name"),
        intern!(py, "arguments"),
    );
    let origin = if native { Format::Native } else { Format::OpenAiChat };
    let n = list.len();
    let mut sk = Skeleton {
        messages: Vec::with_capacity(n),
        tokens: Vec::with_capacity(n),
        result_tokens: Vec::with_capacity(n),
        objects: Vec::with_capacity(n),
    };
    for item in list.iter() {
        let d = item.cast_into::<PyDict>().ok()?;
        let role_obj = d.get_item(k_role).ok()??;
        let role = Role::parse(role_obj.cast::<PyString>().ok()?.to_str().ok()?)?;
        let content = d.get_item(k_content).ok()?;
        let (text_tokens, empty) = match &content {
            None => (0, true),
            Some(c) if c.is_none() => (0, true),
            Some(c) => {
                let s = c.cast::<PyString>().ok()?;
                (tokens_of(s, enc)?, s.len().ok()? == 0)
            }
        };
        let mut tokens = MESSAGE_OVERHEAD + text_tokens;
        let mut blocks = Vec::new();
        let mut result_tokens = 0;
        if role == Role::Tool {
            let id = d.get_item(k_call_id).ok()??;
            let id = id.cast::<PyString>().ok()?.to_str().ok()?.to_owned();
            tokens += TOOL_BLOCK_OVERHEAD;
            result_tokens = TOOL_BLOCK_OVERHEAD + text_tokens;
            blocks.push(Block::new(Body::ToolResult {
                tool_use_id: id,
                content: ResultContent::Text(String::new()),
                is_error: None,
            }));
        } else {
            blocks.push(Block::new(Body::Text {
                text: if empty { String::new() } else { "x".into() },
            }));
            if let Some(calls) = d.get_item(k_calls).ok()? {
                if !calls.is_none() {
                    for call in calls.cast::<PyList>().ok()?.iter() {
                        let call = call.cast_into::<PyDict>().ok()?;
                        let id = call.get_item(k_id).ok()??.cast_into::<PyString>().ok()?;
                        let holder = if native {
                            call.clone()
                        } else {
                            call.get_item(k_function).ok()??.cast_into::<PyDict>().ok()?
                        };
                        let name = holder.get_item(k_name).ok()??.cast_into::<PyString>().ok()?;
                        let args = holder.get_item(k_args).ok()??.cast_into::<PyString>().ok()?;
                        tokens += TOOL_BLOCK_OVERHEAD + tokens_of(&name, enc)? + tokens_of(&args, enc)?;
                        blocks.push(Block::new(Body::ToolUse {
                            id: id.to_str().ok()?.to_owned(),
                            name: name.to_str().ok()?.to_owned(),
                            input: ToolInput::Raw(String::new()),
                        }));
                    }
                }
            }
        }
        sk.messages.push(Message {
            role,
            blocks: blocks.into(),
            form: ContentForm::String,
            origin,
            extra: Extra::new(),
        });
        sk.tokens.push(tokens);
        sk.result_tokens.push(result_tokens);
        sk.objects.push(d);
    }
    Some(sk)
}

/// The arguments text of call `block` of the message at `index` (read only for cleared calls).
fn arguments(sk: &Skeleton<'_>, index: usize, block: usize, native: bool) -> Option<String> {
    let py = sk.objects[index].py();
    let calls = sk.objects[index].get_item(intern!(py, "tool_calls")).ok()??;
    let call = calls.cast::<PyList>().ok()?.get_item(block - 1).ok()?;
    let holder = if native {
        call
    } else {
        call.get_item(intern!(py, "function")).ok()?
    };
    Some(
        holder
            .get_item(intern!(py, "arguments"))
            .ok()?
            .cast::<PyString>()
            .ok()?
            .to_str()
            .ok()?
            .to_owned(),
    )
}

/// `trim_messages` over the skeleton; `None` means "use the general path".
#[allow(clippy::too_many_arguments)]
pub(crate) fn trim<'py>(
    list: &Bound<'py, PyList>,
    format: Format,
    enc: Encoding,
    max_tokens: usize,
    clear: bool,
    protection: Protection,
    clear_at_least: usize,
    reserve: usize,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let native = match format {
        Format::OpenAiChat => false,
        Format::Native => true,
        _ => return Ok(None),
    };
    let Some(sk) = skeleton(list, enc, native) else {
        return Ok(None);
    };
    let pairing = Pairing::of(&sk.messages);
    if !compact::validate_with(&sk.messages, &pairing).is_empty() {
        // Invalid input is repaired by nobody here: the general path reports it faithfully.
        return Ok(None);
    }
    let py = list.py();
    let total: usize = sk.tokens.iter().sum();
    if total + reserve <= max_tokens {
        return Ok(Some(PyList::new(py, &sk.objects)?));
    }
    let mut tokens = sk.tokens.clone();
    // Message index → placeholder text for cleared results.
    let mut cleared: Vec<Option<String>> = vec![None; sk.messages.len()];
    if clear {
        let protected = compact::protected(
            &sk.messages,
            &pairing,
            protection.recent_messages,
            protection.recent_tools,
            &std::collections::BTreeSet::new(),
        );
        let mut freed = 0;
        for (ci, c) in pairing.calls.iter().enumerate() {
            let Some(at) = c.result else { continue };
            if protected.calls.contains(&ci)
                || protected.messages.contains(&at.0)
                || protected.messages.contains(&c.at.0)
            {
                continue;
            }
            let Some(args) = arguments(&sk, c.at.0, c.at.1, native) else {
                return Ok(None);
            };
            let before = sk.result_tokens[at.0];
            let text = compact::clear::placeholder(c.name, &ToolInput::Raw(args), before, c.id);
            let after = TOOL_BLOCK_OVERHEAD + enc.count(&text);
            if after < before {
                freed += before - after;
                tokens[at.0] -= before - after;
                cleared[at.0] = Some(text);
            }
        }
        if freed < clear_at_least {
            tokens.clone_from(&sk.tokens);
            cleared.fill(None);
        }
    }
    let render = |i: usize| -> PyResult<Bound<'py, PyAny>> {
        let d = &sk.objects[i];
        match &cleared[i] {
            None => Ok(d.clone().into_any()),
            Some(text) => {
                let copy = d.copy()?;
                copy.set_item(intern!(py, "content"), text)?;
                Ok(copy.into_any())
            }
        }
    };
    let total: usize = tokens.iter().sum();
    let indices: Vec<usize> = if total + reserve <= max_tokens {
        (0..sk.messages.len()).collect()
    } else {
        let pre = compact::structure::preamble_len(&sk.messages);
        let system: usize = tokens[..pre].iter().sum();
        let available = max_tokens.saturating_sub(system + reserve);
        let suffix = compact::recent_suffix(&sk.messages, &tokens, &pairing, available);
        if let Some(overflow) = suffix.overflow {
            let needed = system + reserve + tokens[overflow].iter().sum::<usize>();
            return Err(crate::error::Error::BudgetTooSmall {
                limit: max_tokens,
                unit: "tokens",
                needed,
            }
            .into());
        }
        (0..pre).chain(suffix.start..sk.messages.len()).collect()
    };
    let out = PyList::empty(py);
    for i in indices {
        out.append(render(i)?)?;
    }
    Ok(Some(out))
}
