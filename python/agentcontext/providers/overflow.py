"""Prompt too long: any provider's (or OpenAI-compatible server's) overflow error, or its error
body, as one :class:`~agentcontext.errors.ContextOverflowError` (:func:`classify_overflow`)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from agentcontext.errors import ContextOverflowError, mask_credentials
from agentcontext.types import JsonDict

__all__ = ["classify_overflow"]

_INT = r"(\d[\d,]*)"


def _num(text: str | None) -> int | None:
    return int(text.replace(",", "")) if text else None


#: (pattern, index of the tokens group or 0, index of the limit group or 0), tried in order on
#: the error message. Wordings of Anthropic, OpenAI, Azure OpenAI, vLLM, llama.cpp, Ollama,
#: Text Generation Inference, Mistral, Gemini's OpenAI-compatible endpoint, Bedrock, Groq and
#: OpenRouter.
_OVERFLOW_PATTERNS: tuple[tuple[re.Pattern[str], int, int], ...] = tuple(
    (re.compile(p, re.IGNORECASE), t, lim)
    for p, t, lim in (
        (rf"prompt is too long:\s*{_INT}\s*tokens\s*>\s*{_INT}", 1, 2),
        (rf"maximum context length is {_INT} tokens.*?\({_INT} in the messages", 2, 1),
        (rf"maximum context length is {_INT} tokens.*?(?:resulted in|requested) {_INT} tokens", 2, 1),
        (rf"maximum context length is {_INT}", 0, 1),
        (rf"input token count \({_INT}\) exceeds the maximum number of tokens allowed \({_INT}\)", 1, 2),
        (rf"prompt contains {_INT} tokens.*?too large for model with {_INT}", 1, 2),
        (rf"must be <= {_INT}\. Given: {_INT} `inputs` tokens", 2, 1),
        (rf"request \({_INT} tokens\) exceeds the available context size \({_INT} tokens\)", 1, 2),
        (rf"context length is only {_INT} tokens.*?{_INT} (?:input|requested)", 2, 1),
        (r"prompt is too long", 0, 0),
        (r"exceeds? the (?:available )?context (?:window|size|length)", 0, 0),
        (r"context[_ ]length[_ ]exceeded", 0, 0),
        (r"input (?:is|length) too long", 0, 0),
        (r"too many (?:input )?tokens", 0, 0),
        (r"reduce the length of the (?:messages|input|prompt)", 0, 0),
        (r"exceeds? (?:the )?max(?:imum)? (?:context|input|prompt) (?:length|tokens|size)", 0, 0),
    )
)

_OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error", "string_above_max_length"})


def _error_fields(error: Any) -> tuple[int | None, str, str | None, JsonDict]:
    """Status code, message, error code and body of an SDK error (anthropic or openai), an
    ``httpx``-style response error, or a plain dict body."""
    body: Any = error if isinstance(error, Mapping) else getattr(error, "body", None)
    status = getattr(error, "status_code", None)
    if status is None and isinstance(body, Mapping):
        status = body.get("status") if isinstance(body.get("status"), int) else None
    if not isinstance(body, Mapping):
        response = getattr(error, "response", None)
        try:
            body = response.json() if response is not None else {}
        except Exception:  # noqa: BLE001 - a body that is not JSON just has no fields
            body = {}
    body = dict(body) if isinstance(body, Mapping) else {}
    inner = body.get("error", body)
    if isinstance(inner, str):
        inner = {"message": inner}
    if not isinstance(inner, Mapping):
        inner = {}
    message = inner.get("message") or body.get("message") or body.get("detail") or ""
    if not isinstance(message, str):
        message = json.dumps(message)
    if not message and not isinstance(error, Mapping):
        message = str(error)
    code = inner.get("code") or inner.get("type")
    return status, message, code if isinstance(code, str) else None, body


def classify_overflow(error: BaseException | Mapping[str, Any], *, provider: str = "") -> ContextOverflowError | None:
    """A :class:`ContextOverflowError` when ``error`` (an SDK exception, or an error body as a
    dict) says the prompt is longer than the context window; None for every other error.

    Recognized: Anthropic ``prompt is too long: N tokens > M maximum``; OpenAI
    ``context_length_exceeded`` ("maximum context length is M tokens. However, your messages
    resulted in N tokens", "Your input exceeds the context window of this model"); and the
    wordings of OpenAI-compatible servers (vLLM, llama.cpp, Ollama, TGI, Mistral, Gemini, Groq,
    OpenRouter, Bedrock). A 413 status counts as an overflow too. Token numbers are taken from
    the message, or from llama.cpp's ``n_prompt_tokens``/``n_ctx`` fields.
    """
    if isinstance(error, ContextOverflowError):
        return error
    status, message, code, body = _error_fields(error)
    inner = body.get("error") if isinstance(body.get("error"), Mapping) else body
    tokens = limit = None
    matched = code in _OVERFLOW_CODES or status == 413
    for pattern, t, lim in _OVERFLOW_PATTERNS:
        found = pattern.search(message)
        if found:
            matched = True
            tokens = _num(found.group(t)) if t else None
            limit = _num(found.group(lim)) if lim else None
            break
    if not matched:
        return None
    if isinstance(inner, Mapping):
        tokens = tokens if tokens is not None else _int_or_none(inner.get("n_prompt_tokens"))
        limit = limit if limit is not None else _int_or_none(inner.get("n_ctx"))
    name = provider or type(error).__module__.split(".")[0]
    # (A server may echo the request's credentials in its error: masked.)
    text = mask_credentials(message) or "the prompt is longer than the model's context window"
    return ContextOverflowError(
        f"{name}: {text}" if name else text, provider=name, tokens=tokens, limit=limit, status_code=status
    )


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
