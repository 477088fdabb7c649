"""The OpenAI Agents SDK ``CompactingSession`` took any user item opening with the summary
marker for a note a compaction wrote: a user who typed ``[agentcontext: earlier conversation
compacted ...`` hid every item before it from ``get_items`` (the wrapped session kept them), and
a compaction that kept such a message reused it as its note (the places line appended to the
user's text). A note the session writes now carries a key (``agentcontext_note``) no typed text
can make; the view shows it without the key. A note without the key is read only in the whole
form sessions wrote before (marker first, a places line last)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
)

import agentcontext as ac
from agentcontext.compaction.summarize import SUMMARY_MARKER
from agentcontext.integrations.openai_agents import CompactingSession

TEXT = "The handler reads the request and loads the session. " * 60
TYPED = f"{SUMMARY_MARKER}? I saw this line in an old chat. What does it mean?]"


def _talk(n: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"Request {n}: explain module {n}."},
        {"role": "assistant", "content": f"Module {n}: {TEXT}"},
    ]


class Recording:
    """A session holding the items it is given as they are, and each batch it was given."""

    def __init__(self) -> None:
        self.session_id = "h47"
        self.items: list[Any] = []
        self.batches: list[list[Any]] = []

    async def get_items(self, limit: int | None = None) -> list[Any]:
        return list(self.items)

    async def add_items(self, items: list[Any]) -> None:
        self.batches.append(list(items))
        self.items += items

    async def pop_item(self) -> Any:
        return self.items.pop() if self.items else None

    async def clear_session(self) -> None:
        self.items = []


def test_a_user_message_opening_with_the_marker_hides_nothing() -> None:
    inner = Recording()
    session = CompactingSession(inner, 1_000_000)

    async def go() -> list[Any]:
        await session.add_items(_talk(0))
        await session.add_items([{"role": "user", "content": TYPED}, {"role": "assistant", "content": "A note."}])
        await session.add_items([{"role": "user", "content": f"{TYPED}\n[agentcontext view: -]"}])
        return await session.get_items()

    view = asyncio.run(go())
    assert view == inner.items  # before: the view began at the typed message


@pytest.mark.parametrize("policy", ["codex", "openharness"])
def test_a_compaction_never_takes_a_user_message_for_its_note(policy: str) -> None:
    inner = Recording()
    session = CompactingSession(inner, 3_000, compaction=ac.Compactor(policy))

    async def go() -> list[Any]:
        await session.add_items([{"role": "user", "content": TYPED}, {"role": "assistant", "content": "A note."}])
        for n in range(12):
            await session.add_items(_talk(n))
        return await session.get_items()

    view = asyncio.run(go())
    assert session.compactions >= 1
    notes = [x for x in inner.items if x.get("agentcontext_note") is True]
    assert len(notes) == session.compactions
    # The user's text is never written back with a places line (before: the codex ladder keeps
    # user messages, and the typed one became the note).
    assert all(TYPED not in x["content"] or x["content"] == TYPED for x in inner.items)
    # The view opens with the latest note, shown without its key and its places line; every other
    # item it shows is in the log as it is.
    latest = notes[-1]["content"]
    assert view[0] == {"role": "user", "content": latest[: latest.rindex("\n[agentcontext view:")]}
    assert all(any(x is y for y in inner.items) for x in view[1:])
    assert "Request 11:" in json.dumps(view)


def test_a_kept_earlier_note_is_the_next_note() -> None:
    """The codex ladder keeps the earlier note (a user item) raw; the kept copy (the view's, without
    the key) is the note again: the log holds one marked note per compaction, never a bare copy."""
    inner = Recording()
    session = CompactingSession(inner, 3_000, compaction=ac.Compactor("codex"))

    async def go() -> list[Any]:
        for n in range(12):
            await session.add_items(_talk(n))
        return await session.get_items()

    view = asyncio.run(go())
    assert session.compactions >= 2
    written = [b for b in inner.batches if b[0].get("agentcontext_note") is True]
    assert len(written) == session.compactions
    dropped = [b[0]["content"].partition("\n[agentcontext view:")[0] for b in written]
    assert len(set(dropped)) == 1  # the same note, kept
    assert sum(str(x.get("content")).startswith(SUMMARY_MARKER) for b in written for x in b) == 2 * len(written)
    # Before: the summary a compaction appended after its note was read as a note of the old form
    # (no places line), and the view began there: every request the ladder kept was lost from it.
    assert "Request 0:" in json.dumps(view) and "agentcontext_note" not in json.dumps(view)


def test_a_note_of_the_old_form_is_read_as_before() -> None:
    """A session written before notes carried the key: the note names the items of the view."""
    inner = Recording()
    note = f"{SUMMARY_MARKER}: 2 earlier messages.]\n[agentcontext view: N 1 +1]"
    inner.items = [
        {"role": "user", "content": "Request 0."},
        {"role": "assistant", "content": "Answer 0."},
        {"role": "user", "content": note},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "Request 1."},
    ]
    view = asyncio.run(CompactingSession(inner, 1_000_000).get_items())
    assert [x["content"] for x in view] == [
        f"{SUMMARY_MARKER}: 2 earlier messages.]",
        "Answer 0.",
        "Noted.",
        "Request 1.",
    ]


def test_a_note_without_the_key_or_a_places_line_is_a_message() -> None:
    """The oldest notes (no places line, no key) are not told from a typed message: read as one."""
    inner = Recording()
    inner.items = [*_talk(0), {"role": "user", "content": f"{SUMMARY_MARKER}: 2 earlier messages.]"}]
    view = asyncio.run(CompactingSession(inner, 1_000_000).get_items())
    assert view == inner.items
