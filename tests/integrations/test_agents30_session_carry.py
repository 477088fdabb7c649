"""The OpenAI Agents SDK ``CompactingSession`` converts each item once: the items it reads back
from its store are new objects on every call (an identity memo misses them), so it carries its
view's conversion across calls by place in the log and converts only what was appended since.
Counted by the calls to the item converter, never by timings."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
)

from agents import SQLiteSession

import agentcontext as ac
from agentcontext.integrations import openai_agents
from agentcontext.integrations.openai_agents import CompactingSession
from tests.integration_support import BIG_RESULT


def _round(n: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"Request {n}: read module {n}."},
        {"type": "function_call", "call_id": f"c{n}", "name": "read_file", "arguments": f'{{"n": {n}}}'},
        {"type": "function_call_output", "call_id": f"c{n}", "output": f"# m{n}.py\n{BIG_RESULT}"},
        {"role": "assistant", "content": f"Module {n} reviewed."},
    ]


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the items converted (every conversion of an item goes through ``_item``)."""
    seen = [0]
    original = openai_agents._item

    def counting(item: Any, index: int) -> dict[str, Any]:
        seen[0] += 1
        return original(item, index)

    monkeypatch.setattr(openai_agents, "_item", counting)
    return seen


def test_each_add_items_converts_only_the_items_it_adds(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _counting(monkeypatch)
    session = CompactingSession(SQLiteSession("carry-1"), 1_000_000)
    per_call: list[int] = []

    async def go() -> list[Any]:
        for n in range(30):
            before = seen[0]
            await session.add_items(_round(n))
            per_call.append(seen[0] - before)
        before = seen[0]
        items = await session.get_items()
        per_call.append(seen[0] - before)
        return items

    items = asyncio.run(go())
    assert len(items) == 120 and session.compactions == 0
    # Before: call n converted all 4(n + 1) items since the last compaction (1,860 in all).
    assert per_call == [4] * 30 + [0]


def test_with_compactions_the_calls_between_them_convert_only_their_items(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _counting(monkeypatch)
    session = CompactingSession(
        SQLiteSession("carry-2"), ac.Budget(20_000, clear=False, recent_tools=1, recent_messages=2)
    )
    per_call: list[tuple[int, int]] = []

    async def go() -> None:
        for n in range(24):
            before, done = seen[0], session.compactions
            await session.add_items(_round(n))
            per_call.append((seen[0] - before, session.compactions - done))

    asyncio.run(go())
    assert session.compactions >= 3
    # A call right after a compaction reads the compacted view anew (a few items); every other
    # call converts its own four items only, however long the log grew.
    after = [n for k, (n, _) in enumerate(per_call) if k and per_call[k - 1][1] == 0 and per_call[k][1] == 0]
    assert len(after) >= 12 and set(after) == {4}
    assert max(n for n, _ in per_call) < 40


def test_a_log_changed_under_it_is_read_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    inner = SQLiteSession("carry-3")
    session = CompactingSession(inner, 1_000_000)

    async def go() -> tuple[list[Any], list[Any]]:
        await session.add_items(_round(0))
        await inner.add_items(_round(1))  # another writer, in between
        await session.add_items(_round(2))
        await session.pop_item()
        return await session.get_items(), await inner.get_items()

    view, log = asyncio.run(go())
    assert view == log and len(view) == 11
    carried = ac.Conversation(view, format="responses")
    assert carried.tokens == ac.Conversation(list(log), format="responses").tokens


def test_get_items_over_the_budget_converts_only_the_new_items(monkeypatch: pytest.MonkeyPatch) -> None:
    # Cutting and clearing results is enough here: nothing is appended, get_items fits on reading.
    seen = _counting(monkeypatch)
    inner = SQLiteSession("carry-4")
    session = CompactingSession(inner, 12_000)
    per_call: list[int] = []

    async def go() -> list[Any]:
        items: list[Any] = []
        for n in range(20):
            await session.add_items(_round(n))
            before = seen[0]
            items = await session.get_items()
            per_call.append(seen[0] - before)
        return items

    items = asyncio.run(go())
    assert session.compactions == 0 and ac.Conversation(items, format="responses").tokens <= 12_000
    # Under the budget nothing is fitted; the first call over it converts every item, each later
    # call only the round added since (before: every item, on every call).
    first = next(k for k, n in enumerate(per_call) if n)
    assert 2 <= first < 15 and per_call[first] == 4 * (first + 1)
    assert set(per_call[first + 1 :]) == {4}
    # Every item the fit left as it is, is the one read from the store this call (not a held one).
    log = asyncio.run(inner.get_items())
    assert all(x == log[i] for i, x in enumerate(items) if x.get("type") != "function_call_output")
