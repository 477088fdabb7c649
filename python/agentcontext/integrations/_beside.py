"""What the model receives beside the message list (instructions, tool definitions), counted for
every adapter: one counter of tool definitions (:func:`tool_tokens`) for all of them (LangChain
and LangGraph give it their tools' schemas, Pydantic AI, the OpenAI Agents SDK and LiteLLM the
texts of :func:`tool_text`), and the instructions of those that fit only the list."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

from agentcontext.types import Encoding

#: Texts counted lately, by (encoding, text): instructions and tool schemas recur every call.
_COUNTED: dict[tuple[str, str], int] = {}
_LOCK = threading.Lock()
_MAX_COUNTED = 512

T = TypeVar("T")


def tool_text(name: str, description: str | None, parameters: Any) -> str:
    """The text a tool definition is counted as: its OpenAI function schema as JSON (as the
    LangChain adapters count theirs)."""
    function: dict[str, Any] = {"name": name, "description": description or "", "parameters": parameters or {}}
    return json.dumps({"type": "function", "function": function}, ensure_ascii=False, default=str)


def _count(text: str, encoding: Encoding, system: bool) -> int:
    key = (encoding if not system else f"{encoding}/system", text)
    held = _COUNTED.get(key)
    if held is not None:
        return held
    from agentcontext._core import Conversation, count_tokens

    if system:
        n = Conversation([{"role": "system", "content": text}], format="openai", encoding=encoding).tokens
    else:
        n = count_tokens(text, encoding=encoding)
    with _LOCK:
        if len(_COUNTED) >= _MAX_COUNTED:
            _COUNTED.clear()
        _COUNTED[key] = n
    return n


def tool_tokens(
    tools: Iterable[T],
    encoding: Encoding,
    text: Callable[[T], str],
    *,
    memo: dict[Any, tuple[Any, int]] | None = None,
    key: Callable[[T], Hashable | None] | None = None,
) -> int:
    """The tokens of the tool definitions ``tools`` as the model receives them: each one's
    ``text(tool)`` (its OpenAI function schema as JSON), a text counted once per encoding across
    calls. With a ``memo``, a tool met before is not made into text again: it is recognised by
    ``key(tool)`` (a LangChain tool by its class, name, description and arguments schema), or by
    identity where there is no key (None)."""
    total = 0
    for t in tools:
        if memo is None:
            total += _count(text(t), encoding, False)
            continue
        k = key(t) if key is not None else None
        held = memo.get(id(t) if k is None else k)
        if held is not None and (k is not None or held[0] is t):
            total += held[1]
            continue
        n = _count(text(t), encoding, False)
        memo[id(t) if k is None else k] = (t, n)
        total += n
    return total


def beside_tokens(instructions: str | None, tools: Iterable[str], encoding: Encoding) -> int:
    """The tokens of ``instructions`` (sent as a system message, counted as one) and of the tool
    definitions ``tools`` (from :func:`tool_text`)."""
    total = _count(instructions, encoding, True) if instructions else 0
    return total + tool_tokens(tools, encoding, str)


def text_of_type(memo: dict[Any, str | None], output_type: Any, make: Callable[[Any], str | None]) -> str | None:
    """The text ``make(output_type)`` counts a structured output's schema as (None: nothing sent
    apart), kept in ``memo`` per type (at most 256, then forgotten; made on every call for a type
    that is not hashable); None for plain text output (``None`` or ``str``) without asking."""
    if output_type is None or output_type is str:
        return None
    held: str | bool | None = False
    with contextlib.suppress(TypeError):  # (not hashable: made each call)
        held = memo.get(output_type, False)
    if not isinstance(held, bool):
        return held
    text = make(output_type)
    with contextlib.suppress(TypeError):
        if len(memo) >= 256:
            memo.clear()
        memo[output_type] = text
    return text
