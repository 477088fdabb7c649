"""A reserve of output tokens near the largest integer the core takes is refused like any reserve
larger than the budget (`BudgetError`), on the fast path and the general path alike: it used to
wrap around in the selection's sums, so both paths went on as if it were small (and disagreed)."""

from __future__ import annotations

import pytest

import agentcontext as ac
from agentcontext.errors import BudgetError


def _session(open_call: bool) -> list[dict]:
    def call(i: str) -> dict:
        return {"id": i, "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "ls"}'}}

    msgs: list[dict] = [{"role": "user", "content": "fix the tests"}]
    for i in range(20):
        msgs += [
            {"role": "assistant", "content": "", "tool_calls": [call(f"k{i}")]},
            {"role": "tool", "tool_call_id": f"k{i}", "content": "out " * 50},
        ]
    if open_call:
        msgs.append({"role": "assistant", "content": "", "tool_calls": [call("z1")]})
    return msgs


@pytest.mark.parametrize("open_call", [False, True])
@pytest.mark.parametrize("reserve", [10**7, 2**63, 2**64 - 2, 2**64 - 1])
@pytest.mark.parametrize("fast", [True, False])
def test_a_huge_reserve_is_refused(open_call: bool, reserve: int, fast: bool) -> None:
    msgs = _session(open_call)
    given = msgs if fast else tuple(msgs)  # a tuple takes the general path
    with pytest.raises(BudgetError):
        ac.trim_messages(given, 10**6, reserved_output=reserve)
    with pytest.raises(BudgetError):
        ac.trim_messages(given, 10**6, reserved_output=reserve // 2, safety_margin=reserve - reserve // 2)
