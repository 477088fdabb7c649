"""What the model receives beside the message list (instructions, tool definitions), counted for
the adapters that fit only the list: Pydantic AI, the OpenAI Agents SDK, LiteLLM."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from typing import Any

from agentcontext.types import Encoding

#: Texts counted lately, by (encoding, text): instructions and tool schemas recur every call.
_COUNTED: dict[tuple[str, str], int] = {}
_LOCK = threading.Lock()
_MAX_COUNTED = 512


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


def beside_tokens(instructions: str | None, tools: Iterable[str], encoding: Encoding) -> int:
    """The tokens of ``instructions`` (sent as a system message, counted as one) and of the tool
    definitions ``tools`` (from :func:`tool_text`)."""
    total = _count(instructions, encoding, True) if instructions else 0
    return total + sum(_count(t, encoding, False) for t in tools)
