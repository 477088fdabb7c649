"""One adapter used from several threads at once. The Agents SDK's ``fit_items`` (one memo for the
process) and one ``input_filter`` keep the last call's items told unchanged by the core: a call
that resumed from them kept on from its own items after another thread's call had kept its own
list meanwhile, and the core refused with a bare ValueError ("names must name the attributes of
every object from start on"), about one run in two of eight threads. Each call now keeps from the
start when another call kept the memo since it took it."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
)

import agentcontext as ac
from agentcontext.integrations.openai_agents import _Fitter, fit_items

BUDGET = ac.Budget(2_500, recent_tools=1, recent_messages=2, clear_tool_inputs=True)


def result(k: int, i: int) -> str:
    return f"[{k}] result {i} " + f"word{k} " * 300


def history(k: int, n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": f"[{k}] go"}]
    for i in range(n):
        arguments = json.dumps({"k": k, "body": "y" * 800})
        out += [
            {"type": "function_call", "call_id": f"c{k}_{i}", "name": "f", "arguments": arguments},
            {"type": "function_call_output", "call_id": f"c{k}_{i}", "output": result(k, i)},
        ]
    return out


def check(out: list[dict[str, Any]], k: int) -> None:
    text = json.dumps(out)
    assert f"[{k}] go" in text
    assert not any(f"[{j}]" in text for j in range(8) if j != k)
    assert ac.Conversation(out, format="responses").tokens <= BUDGET.max_tokens


def test_a_call_resuming_while_another_keeps_its_own_list() -> None:
    fitter = _Fitter()
    turns = fitter.turns
    mine, theirs = history(0, 4), history(1, 4)
    fitter.fit(mine, BUDGET, None, [])
    group = turns._group
    interleaved = []

    def group_after_another_call(items: Any, start: int, before: int) -> Any:
        # Another thread's call, between this call's taking the memo and its keeping it.
        if start > 0 and not interleaved:
            interleaved.append(fitter.fit(theirs, BUDGET, None, []))
        return group(items, start, before)

    turns._group = group_after_another_call  # type: ignore[method-assign]
    grown = mine + history(0, 5)[-2:]
    check(fitter.fit(grown, BUDGET, None, []), 0)
    assert interleaved
    check(interleaved[0], 1)
    turns._group = group  # type: ignore[method-assign]
    # Both lists go on from where they are.
    check(fitter.fit(grown + history(0, 6)[-2:], BUDGET, None, []), 0)
    check(fitter.fit(theirs + history(1, 5)[-2:], BUDGET, None, []), 1)


@pytest.fixture
def switch_often() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def test_fit_items_from_eight_threads_at_once(switch_often: None) -> None:
    def work(k: int) -> int:
        items = history(k, 3)
        for n in range(3, 16):
            items = items + history(k, n + 1)[-2:]
            check(fit_items(items, BUDGET), k)
        return k

    with ThreadPoolExecutor(8) as pool:
        assert sorted(pool.map(work, range(8))) == list(range(8))
