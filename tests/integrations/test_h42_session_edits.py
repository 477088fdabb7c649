"""The OpenAI Agents SDK ``CompactingSession`` carries its view's conversion across calls. It
trusted a log read later as the same one grown while it was as long and its last item unchanged:
a log written again with an earlier item edited (cleared and added again: a redaction, or another
worker sharing the session id) or an item changed in place kept the old item's conversion. The
session then counted the old item (sending more than the budget) and compacted it (the old text
written back into the log by the summary). An item the view was read from that is no longer
equal to it now makes the view be read anew."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
)

from agents import SQLiteSession

import agentcontext as ac
from agentcontext.integrations.openai_agents import CompactingSession

TEXT = "The handler reads the request and loads the session. " * 60


def _talk(n: int, extra: str = "") -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"Request {n}: explain module {n}.{extra}"},
        {"role": "assistant", "content": f"Module {n}: {TEXT}"},
    ]


class ListSession:
    """A session holding the items it is given as they are (its get_items gives the same objects)."""

    def __init__(self) -> None:
        self.session_id = "list"
        self.items: list[Any] = []

    async def get_items(self, limit: int | None = None) -> list[Any]:
        return list(self.items)

    async def add_items(self, items: list[Any]) -> None:
        self.items += items

    async def pop_item(self) -> Any:
        return self.items.pop() if self.items else None

    async def clear_session(self) -> None:
        self.items = []


def _tokens(items: list[Any]) -> int:
    return ac.Conversation(items, format="responses").tokens


def test_a_log_written_again_with_an_item_edited_is_counted_as_it_is_now() -> None:
    inner = SQLiteSession("h42-edit-1")
    session = CompactingSession(inner, 8_000)

    async def go() -> tuple[list[Any], list[Any]]:
        await session.add_items(_talk(0) + _talk(1))
        await session.get_items()
        log = await inner.get_items()
        edited = [dict(x) for x in log]
        edited[1]["content"] = "word " * 12_000  # as long a log as before, its last item the same
        await inner.clear_session()
        await inner.add_items(edited)
        other = SQLiteSession("h42-edit-1b")
        await other.add_items(edited)
        return await session.get_items(), await CompactingSession(other, 8_000).get_items()

    got, fresh = asyncio.run(go())
    # Before: the old item's count was carried: 12,000 more tokens than the budget went out.
    assert _tokens(got) <= session.limit
    assert got == fresh


def test_a_redacted_item_is_not_written_back_by_a_compaction() -> None:
    inner = SQLiteSession("h42-edit-2")
    session = CompactingSession(inner, 6_000)

    async def go() -> list[Any]:
        await session.add_items(_talk(0, " My password is hunter2."))
        await session.add_items(_talk(1))
        redacted = [dict(x) for x in await inner.get_items()]
        redacted[0]["content"] = redacted[0]["content"].replace("hunter2", "[redacted]")
        await inner.clear_session()
        await inner.add_items(redacted)
        for n in range(2, 12):
            await session.add_items(_talk(n))
        return await inner.get_items()

    log = asyncio.run(go())
    assert session.compactions >= 1
    # Before: the summary of the compaction made of the old item held the password again.
    assert not [x for x in log if "hunter2" in json.dumps(x)]
    assert not [x for x in asyncio.run(session.get_items()) if "hunter2" in json.dumps(x)]


def test_an_item_changed_in_place_in_the_log_is_counted_as_it_is_now() -> None:
    inner = ListSession()
    session = CompactingSession(inner, 8_000)

    async def go() -> list[Any]:
        await session.add_items(_talk(0) + _talk(1))
        await session.get_items()
        inner.items[2]["content"] = "word " * 12_000
        return await session.get_items()

    got = asyncio.run(go())
    assert _tokens(got) <= session.limit


def test_an_unchanged_log_still_carries_the_view() -> None:
    inner = SQLiteSession("h42-edit-3")
    session = CompactingSession(inner, 1_000_000)

    async def go() -> None:
        for n in range(5):
            await session.add_items(_talk(n))

    asyncio.run(go())
    carried = session._carried
    assert carried is not None and carried.length == 10
    asyncio.run(session.get_items())
    assert session._carried is carried


def _noted(budget: int) -> tuple[ListSession, CompactingSession]:
    """A wrapped session whose compaction note names two items after it, the second of them
    popped (behind the CompactingSession over it, of ``budget``)."""
    inner = ListSession()
    note = "[agentcontext: earlier conversation compacted: a note.]\n[agentcontext view: N 0-1 +2]"
    inner.items = [
        {"role": "user", "content": "Request 0."},
        {"role": "assistant", "content": "Answer 0."},
        {"role": "user", "content": note},
        {"role": "user", "content": "Request 1."},
    ]
    return inner, CompactingSession(inner, budget)


def test_places_a_note_names_past_the_log_are_not_carried() -> None:
    """A compaction's note names the items after it (``+2``); with the last of them popped from
    the wrapped session behind the CompactingSession, the view's places named it still: every
    place after it was one off once the view grew, and a later compaction named the wrong items
    (each kept item by the place of the one before it)."""
    inner, session = _noted(1_000_000)

    async def go() -> None:
        await session.get_items()  # (the view read with the note's second item gone)
        await session.add_items(_talk(2) + _talk(3))

    asyncio.run(go())
    carried = session._carried
    assert carried is not None and len(carried.places) == len(carried.view)
    for place, item in zip(carried.places, carried.view, strict=True):
        assert place is None or inner.items[place] is item


def test_a_compaction_after_a_note_lost_an_item_keeps_the_order() -> None:
    _, session = _noted(3_000)

    async def go() -> list[Any]:
        await session.get_items()
        for n in range(2, 9):
            await session.add_items(_talk(n))
        return await session.get_items()

    view = asyncio.run(go())
    assert session.compactions >= 1
    texts = [json.dumps(x.get("content")) for x in view]
    found = [re.search(r"(Request|Module) (\d+)", t) for t in texts if "[agentcontext" not in t]
    said = [(int(m.group(2)), m.group(1) == "Module") for m in found if m]
    # Before: a later compaction named each kept item by the place of the one before it (an
    # older answer was sent in the place of the newer one, which was lost: a request with no answer).
    assert said == sorted(said)
    assert all(said[k + 1] == (n, True) for k, (n, answer) in enumerate(said) if not answer)
    assert "Request 8:" in json.dumps(view)


def test_the_latest_items_never_begin_with_an_output_whose_call_is_left_out() -> None:
    # (The latest N were cut as they came: the first could be a call's output, its call before
    # them, which a model refuses.)
    inner = ListSession()
    session = CompactingSession(inner, 1_000_000)
    calls = [
        {"type": "function_call", "call_id": f"c{i}", "name": "read", "arguments": '{"path": "a.py"}'} for i in range(2)
    ]
    outputs = [{"type": "function_call_output", "call_id": f"c{i}", "output": f"out {i}"} for i in range(2)]
    inner.items = [{"role": "user", "content": "Read them."}, calls[0], calls[1], outputs[0], outputs[1]]

    async def go(limit: int) -> list[Any]:
        return await session.get_items(limit=limit)

    assert asyncio.run(go(2)) == []  # both outputs, their calls before them
    assert asyncio.run(go(3)) == [calls[1], outputs[1]]
    assert asyncio.run(go(4)) == [calls[0], calls[1], outputs[0], outputs[1]]
    assert asyncio.run(go(9)) == inner.items
    assert asyncio.run(go(0)) == []
