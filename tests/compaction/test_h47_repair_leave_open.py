"""``ac.repair`` did not take the core's ``leave_open`` option (``RepairOptions::leave_open``, used
by the adapters' request repair): a caller repairing the history of a loop still waiting on its
tools had the calls answered with an interrupted result."""

from __future__ import annotations

from typing import Any

import pytest

import agentcontext as ac
from agentcontext.errors import ArgumentTypeError


def _call(*ids: str) -> dict[str, Any]:
    calls = [{"id": i, "type": "function", "function": {"name": "bash", "arguments": "{}"}} for i in ids]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def _waiting() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "run both"},
        _call("a", "b"),
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
    ]


def test_leave_open_leaves_the_waiting_calls_without_a_result() -> None:
    fixed, changes = ac.repair(_waiting(), leave_open=True)
    assert fixed == ac.repair(_waiting(), leave_open=False)[0][:3] and changes == []
    default, changes = ac.repair(_waiting())
    assert [c["kind"] for c in changes] == ["synthesized_result"] and len(default) == 4


def test_leave_open_repairs_everything_else() -> None:
    messages = [
        {"role": "tool", "tool_call_id": "x", "content": "orphan"},  # no call: a user message
        {"role": "user", "content": "go"},
        _call("c"),
        {"role": "user", "content": "stop"},  # the call was interrupted
        _call("d"),
    ]
    fixed, changes = ac.repair(messages, leave_open=True)
    assert sorted(c["kind"] for c in changes) == ["orphan_to_user", "synthesized_result"]
    assert [v["kind"] for v in ac.validate(fixed)] == ["missing_result"]  # d's, left open
    assert fixed[-1]["tool_calls"][0]["id"] == "d"


def test_leave_open_of_an_anthropic_request() -> None:
    request: dict[str, Any] = {"system": "s", "messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]}]}  # fmt: skip
    fixed, changes = ac.repair(request["messages"], format="anthropic", system="s", leave_open=True)
    assert changes == [] and fixed["messages"] == request["messages"]


@pytest.mark.parametrize("bad", [1, "yes", None])
def test_leave_open_is_true_or_false(bad: object) -> None:
    with pytest.raises(ArgumentTypeError, match="leave_open must be True or False"):
        ac.repair(_waiting(), leave_open=bad)  # type: ignore[call-overload]
