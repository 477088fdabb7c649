"""LiteLLM's ``fit_messages`` keeps the conversion of each message that is not a plain dict. A
Mapping of another class (``collections.UserDict``, a dict subclass) was told unchanged by its
``content``, ``tool_calls`` and size alone, while its conversion copies every key: its ``role``
or ``tool_call_id`` set anew in place kept the old conversion, so a message made a system message
was dropped as a user message and a result re-pointed at another call was paired with the old
one. Every key and value of such a Mapping now tells it unchanged."""

from __future__ import annotations

import copy
from collections import UserDict
from collections.abc import Callable
from typing import Any

import pytest

from agentcontext.errors import AgentContextError
from agentcontext.integrations.litellm import fit_messages

BIG = "word " * 2_000


class Message(dict):  # type: ignore[type-arg]
    """A dict subclass, as some clients' message types are."""


def _history(kind: Callable[[dict[str, Any]], Any]) -> list[Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    return [
        kind({"role": "system", "content": "You review code."}),
        kind({"role": "user", "content": "Read it. " + BIG}),
        kind({"role": "assistant", "content": None, "tool_calls": [call]}),
        kind({"role": "tool", "tool_call_id": "c1", "content": "result " * 50}),
        kind({"role": "assistant", "content": "Read."}),
        kind({"role": "user", "content": "And now?"}),
    ]


def _as_sent(out: Any) -> Any:
    return [dict(m) for m in out] if isinstance(out, list) else out


def _fit(messages: list[Any], budget: int) -> Any:
    try:
        return _as_sent(fit_messages(messages, budget))
    except AgentContextError as exc:
        return type(exc).__name__


def _make_system(h: list[Any]) -> None:
    h[1]["role"] = "system"


def _repoint(h: list[Any]) -> None:
    h[3]["tool_call_id"] = "c9"  # (now answers no call: the fit drops it as an orphan)


@pytest.mark.parametrize("kind", [UserDict, Message])
@pytest.mark.parametrize("edit", [_make_system, _repoint])
@pytest.mark.parametrize("calls_before", [1, 2])
def test_a_mapping_changed_in_place_is_fitted_as_it_is_now(
    kind: Callable[[dict[str, Any]], Any], edit: Callable[[list[Any]], None], calls_before: int
) -> None:
    history = _history(kind)
    for _ in range(calls_before):
        fit_messages(history, 1_500)
    edit(history)
    assert _fit(history, 1_500) == _fit(copy.deepcopy(history), 1_500)
