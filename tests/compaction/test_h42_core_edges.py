"""Two edges of `trim_messages`' selection (found by fuzzing the Agents SDK session over a wrapped
session whose items were popped): a tool call left without a result before the user's next turn
(a run stopped mid-call) no longer holds every message after it together, and a reserve of the
whole budget — even the largest integer the core takes — leaves room for nothing."""

from __future__ import annotations

import pytest

import agentcontext as ac
from agentcontext.errors import BudgetError

LONG = "word " * 300


def _history(abandoned: bool) -> list[dict]:
    call = {"id": "c2", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    out: list[dict] = [{"role": "user", "content": "r0"}]
    if abandoned:
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})
    for r in ("r7", "r9", "r16"):
        out += [{"role": "user", "content": r}, {"role": "assistant", "content": LONG}]
    return out


@pytest.mark.parametrize("encoding", ["o200k_base", "approximate"])
@pytest.mark.parametrize("given", [list, tuple])
def test_an_abandoned_call_is_cut_away_like_any_older_message(encoding: str, given: type) -> None:
    out = ac.trim_messages(given(_history(True)), 900, encoding=encoding)
    assert [m["content"][:3] for m in out] == ["r9", "wor", "r16", "wor"]
    assert out == ac.trim_messages(_history(False), 900, encoding=encoding)
    assert ac.Conversation(out, encoding=encoding).tokens <= 900


def test_a_call_of_the_last_message_still_waits_for_its_result() -> None:
    call = {"id": "c5", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    history = [*_history(False), {"role": "assistant", "content": None, "tool_calls": [call]}]
    out = ac.trim_messages(history, 700)
    assert out[-1]["tool_calls"][0]["id"] == "c5"
    assert out[0]["role"] == "user"


@pytest.mark.parametrize("reserve", [100, 2**64 - 1])
@pytest.mark.parametrize("given", [list, tuple])
def test_a_reserve_of_the_whole_budget_fits_nothing(reserve: int, given: type) -> None:
    messages = given([{"role": "user", "content": "hi there"}])
    with pytest.raises(BudgetError):
        ac.trim_messages(messages, reserve, reserved_output=reserve)
    assert ac.trim_messages(given([]), reserve, reserved_output=reserve) == []


@pytest.mark.parametrize("given", [list, tuple])
def test_system_messages_alone_over_the_budget_are_refused(given: type) -> None:
    # (They were given back whole: 105 tokens for a budget of 20.)
    with pytest.raises(BudgetError, match="system messages"):
        ac.trim_messages(given([{"role": "system", "content": "word " * 100}]), 20)
