"""A copy the kept trimmer gives back by itself (an old tool result cleared) whose object, or which
itself, was set anew in place while its message was left out of the window (a call with a smaller
budget) is made again when a later call keeps that message: never given back stale."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agentcontext.integrations._converted import Converted
from tests.integrations.test_h41_rebuilt_fields import _lc_history as _history


def _c0(messages: list[Any]) -> list[Any]:
    return [m for m in messages if getattr(m, "tool_call_id", None) == "c0"]


WIDE, NARROW = 4_000, 1_200


def _copy_then_left_out(messages: list[Any], cache: Converted) -> Any:
    from agentcontext.integrations.langchain import fit_messages

    fit_messages(messages, WIDE, cache=cache)
    [copied] = _c0(fit_messages(messages, WIDE, cache=cache))  # given back by the trimmer itself
    assert copied is not messages[3] and copied.content != messages[3].content
    assert not _c0(fit_messages(messages, NARROW, cache=cache))  # left out of this call
    return copied


@pytest.mark.parametrize(("field", "value"), [("name", "read_renamed"), ("artifact", {"n": "new"}), ("id", "m-1")])
def test_an_object_set_anew_while_its_copy_was_left_out(field: str, value: Any) -> None:
    pytest.importorskip("langchain_core")
    from agentcontext.integrations.langchain import converted, fit_messages

    cache = converted()
    messages = _history(10)
    _copy_then_left_out(messages, cache)
    setattr(messages[3], field, value)
    again = fit_messages(messages, WIDE, cache=cache)
    [now] = _c0(again)
    assert getattr(now, field) == value
    fresh = fit_messages(copy.deepcopy(messages), WIDE)
    assert [m.model_dump() for m in again] == [m.model_dump() for m in fresh]


def test_a_copy_set_anew_while_it_was_left_out() -> None:
    pytest.importorskip("langchain_core")
    from agentcontext.integrations.langchain import converted, fit_messages

    cache = converted()
    messages = _history(10)
    copied = _copy_then_left_out(messages, cache)
    placeholder = copied.content
    copied.content = "edited by whoever was given the copy"
    again = fit_messages(messages, WIDE, cache=cache)
    [now] = _c0(again)
    assert now.content == placeholder
    fresh = fit_messages(copy.deepcopy(messages), WIDE)
    assert [m.model_dump() for m in again] == [m.model_dump() for m in fresh]


def test_the_middleware_follows_a_field_set_anew_out_of_the_window() -> None:
    """Through the LangChain middleware's own cache, budgets alternating."""
    pytest.importorskip("langchain")
    from agentcontext.integrations.langchain import AgentContextMiddleware, fit_messages

    wide, narrow = AgentContextMiddleware(WIDE), AgentContextMiddleware(NARROW)
    narrow._converted = wide._converted  # one cache, two budgets
    messages = _history(10)

    class Request:
        def __init__(self, msgs: list[Any]) -> None:
            self.messages, self.system_message, self.tools, self.state = msgs, None, [], {}

        def override(self, **kw: Any) -> Any:
            return kw["messages"]

    for m in (wide, wide, narrow):
        m.compile_request(Request(messages))  # type: ignore[arg-type]
    messages[3].artifact = {"n": "new"}
    sent, _ = wide.compile_request(Request(messages))  # type: ignore[arg-type]
    [now] = _c0(sent)
    assert now.artifact == {"n": "new"}
    assert [m.model_dump() for m in sent] == [m.model_dump() for m in fit_messages(copy.deepcopy(messages), WIDE)]
