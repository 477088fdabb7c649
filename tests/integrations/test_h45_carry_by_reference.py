"""The compacting middleware's carried working set reads again, on each call, only the history's
messages it sends as they are (by reference): the ones a compaction summarized, dropped or sent as
a copy are held by identity alone (replaced or removed, the history is read anew; edited in place,
nothing sent changes). And a call's resume tells the carried part unchanged and holds the history's
new messages in the same pass (``_core._Prints.extend``)."""

from __future__ import annotations

from typing import Any

import pytest

from agentcontext import _core

pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from .test_h42_carry_edits import Agent, compacted
from .test_h42_carry_in_place import sent_tokens


class Box:
    def __init__(self, text: str) -> None:
        self.text = text


def test_prints_keep_an_object_by_identity_alone_where_its_names_are_none() -> None:
    held = _core._Prints()
    objects: list[Any] = [Box("a"), Box("b")]
    held.keep(objects, 0, [None, ("text",)])
    objects[0].text = "changed"  # kept by identity alone: not read
    assert held.same(objects)
    objects[1].text = "changed"
    assert not held.same(objects)
    objects[1].text = "b"
    assert not held.same([Box("a"), objects[1]])  # another object at the first place


def test_prints_extend_holds_what_follows_only_when_the_kept_ones_hold() -> None:
    held = _core._Prints()
    names = {Box: ("text",)}
    objects: list[Any] = [Box("a")]
    held.keep(objects, 0, names)
    grown = [*objects, Box("b")]
    assert held.extend(grown, names)
    assert len(held) == 2
    grown[1].text = "changed"  # the new one is held with its fields
    assert not held.same(grown)
    grown[1].text = "b"
    other = [Box("a"), Box("c")]
    assert not held.extend(other, names)
    assert len(held) == 2  # nothing added by a list that does not begin with the kept ones


def _dropped(agent: Agent) -> list[BaseMessage]:
    """The history's messages after the kept summary that the carried working set no longer
    sends as they are."""
    sent = {id(m) for m in agent.carried()}
    start = agent.stored["messages"] if agent.stored else 0
    return [m for m in agent.messages[start:] if id(m) not in sent]


@pytest.mark.parametrize("encoding", ["approximate", "o200k_base"])
def test_a_message_no_longer_sent_as_it_is_edited_in_place_keeps_the_carry(encoding: str) -> None:
    agent = compacted(encoding)
    old = next(m for m in _dropped(agent) if isinstance(m, ToolMessage))
    old.content = "EDITED " + "word " * 3000
    agent.messages = [*agent.messages, HumanMessage("Go on.", id="h1")]
    view = agent.mw._view(agent.request())
    assert view.body is not None  # resumed: nothing it sends changed
    sent = agent.call()
    assert not any(str(m.content).startswith("EDITED") for m in sent)
    assert sent_tokens(agent, sent) <= agent.mw.limit


def test_a_message_no_longer_sent_replaced_by_id_is_read_anew() -> None:
    agent = compacted()
    old = next(m for m in _dropped(agent) if isinstance(m, AIMessage) and m.id)
    agent.replace(AIMessage("A new answer.", id=old.id, tool_calls=old.tool_calls))
    agent.messages = [*agent.messages, HumanMessage("Go on.", id="h1")]
    view = agent.mw._view(agent.request())
    assert view.body is None  # another object at its place: the history is read anew
    sent = agent.call()
    assert sent_tokens(agent, sent) <= agent.mw.limit


@pytest.mark.parametrize("encoding", ["approximate", "o200k_base"])
def test_a_message_sent_as_it_is_edited_in_place_is_read_anew(encoding: str) -> None:
    agent = compacted(encoding)
    kept = [m for m in agent.carried() if any(m is s for s in agent.messages)]
    target = kept[0]
    target.content = "EDITED " + "word " * 3000
    agent.messages = [*agent.messages, HumanMessage("Go on.", id="h1")]
    view = agent.mw._view(agent.request())
    assert view.body is None
    sent = agent.call()
    assert sent_tokens(agent, sent) <= agent.mw.limit


def test_a_new_message_is_held_from_the_call_that_read_it() -> None:
    agent = compacted()
    agent.messages = [*agent.messages, HumanMessage("Go on.", id="h1")]
    agent.call()
    agent.messages[-1].content = "EDITED " + "word " * 3000
    agent.messages = [*agent.messages, AIMessage("On it.", id="a1")]
    view = agent.mw._view(agent.request())
    assert view.body is None
    sent = agent.call()
    assert sent_tokens(agent, sent) <= agent.mw.limit
