"""The compacting middleware's carried working set reads again, on each call, the fields of the
history's messages it sends in some form (as they are, or a copy it cut or cleared, which keeps the
message's id): the ones its last compaction summarized are held by identity alone (replaced or
removed, the history is read anew; edited in place, nothing sent changes). And a call's resume
tells the carried part unchanged and holds the history's new messages in the same pass
(``_core._Prints.extend``)."""

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


def _not_sent(agent: Agent) -> list[BaseMessage]:
    """The history's messages the carry holds that its working set no longer sends in any form
    (summarized by its last compaction: neither held nor of an id a carried message has)."""
    _, _, base, since, _, sources = agent.mw._carry._held["h0"]
    ids = {m.id for m in base}
    return [m for m in agent.messages[sources.start : since] if m.id not in ids]


@pytest.mark.parametrize("encoding", ["approximate", "o200k_base"])
def test_a_message_no_longer_sent_as_it_is_edited_in_place_keeps_the_carry(encoding: str) -> None:
    agent = compacted(encoding)
    old = next(m for m in _not_sent(agent) if isinstance(m, ToolMessage))
    old.content = "EDITED " + "word " * 3000
    agent.messages = [*agent.messages, HumanMessage("Go on.", id="h1")]
    view = agent.mw._view(agent.request())
    assert view.body is not None  # resumed: nothing it sends changed
    sent = agent.call()
    assert not any(str(m.content).startswith("EDITED") for m in sent)
    assert sent_tokens(agent, sent) <= agent.mw.limit


def test_a_message_no_longer_sent_replaced_by_id_is_read_anew() -> None:
    agent = compacted()
    old = next(m for m in _not_sent(agent) if isinstance(m, AIMessage) and m.id)
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


@pytest.mark.parametrize("encoding", ["approximate", "o200k_base"])
def test_a_secret_taken_out_of_a_cut_result_in_place_is_not_sent_again(encoding: str) -> None:
    """A copy the compaction cut keeps its result's head: an edit in place of that result (a
    secret taken out) has the history read anew, so the secret is not sent from the carry."""
    agent = compacted(encoding)
    secret = "API_KEY=sk-test-0123456789abcdef"
    call = {"id": "c99", "name": "read_file", "args": {"path": "env.txt"}}
    agent.messages = [
        *agent.messages,
        AIMessage("Reading the env.", id="a99", tool_calls=[call]),
        ToolMessage(secret + "\n" + "noise line of the file\n" * 3000, tool_call_id="c99", id="t99"),
    ]
    sent = agent.call()
    assert any(secret in str(m.content) for m in sent)  # the cut copy shows the head
    assert not any(m is agent.messages[-1] for m in sent)  # (a copy: the result was cut)
    agent.messages[-1].content = str(agent.messages[-1].content).replace(secret, "API_KEY=[redacted]")
    agent.messages = [*agent.messages, HumanMessage("Go on.", id="h1")]
    sent = agent.call()
    assert not any(secret in str(m.content) for m in sent)
    assert sent_tokens(agent, sent) <= agent.mw.limit


def test_threads_sharing_a_thread_key_each_send_their_own_within_the_budget() -> None:
    """Four threads, one middleware, each its own history under the same first message id (the
    carry's key): every call sends its own messages, within the budget, whichever thread's carry
    it finds (the core's prints are taken, extended and kept by each in turn)."""
    import sys
    from concurrent.futures import ThreadPoolExecutor

    one = Agent()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)

    def run(k: int) -> None:
        agent = Agent()
        agent.mw = one.mw
        for i in range(12):
            sent = agent.step(100 * k + i)
            assert sent_tokens(agent, sent) <= agent.mw.limit
            assert sent[-1] is agent.messages[-1] or sent[-1].id == agent.messages[-1].id
            assert not any(f"# f{100 * j}" in str(m.content) for m in sent for j in range(4) if j != k)

    try:
        with ThreadPoolExecutor(4) as pool:
            for done in [pool.submit(run, k) for k in range(4)]:
                done.result()
    finally:
        sys.setswitchinterval(interval)


def _paired_objects(sent: list[BaseMessage]) -> bool:
    """Every call answered by the tool messages right after it, every result after its call (the
    calls of the last message may wait): checked here, not by the library."""
    waiting: set[str] = set()
    for m in sent:
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in waiting:
                return False
            waiting.discard(m.tool_call_id)
            continue
        if waiting:
            return False
        waiting = {c["id"] for c in m.tool_calls} if isinstance(m, AIMessage) else set()
    return True


def test_new_messages_after_the_carry_are_checked_for_pairs() -> None:
    """The carried part was sent paired; the history's new messages are read for pairs from the
    calls it leaves open: a result answering no call is repaired, the result of a call the carried
    part ends with is not."""
    agent = compacted()
    agent.messages = [
        *agent.messages,
        AIMessage("Reading more.", id="a50", tool_calls=[{"id": "c50", "name": "read_file", "args": {"path": "g.py"}}]),
    ]
    sent = agent.call()
    assert sent[-1].id == "a50" and _paired_objects(sent)  # (its call waits for its result)
    agent.messages = [*agent.messages, ToolMessage("g.py: fine", tool_call_id="c50", id="t50")]
    request = agent.request()
    view = agent.mw._view(request)
    assert view.body is not None and view.new == 1
    assert not agent.mw._over(view)
    fitted, _ = agent.mw._compile(request, view, False)
    assert fitted.messages is view.body  # paired: sent as it is, not through the fit
    sent = list(fitted.messages)
    assert sent[-1] is agent.messages[-1] and _paired_objects(sent)
    agent.messages = [*agent.messages, ToolMessage("a stray result", tool_call_id="c99", id="t99")]
    sent = agent.call()
    assert _paired_objects(sent)
    assert "a stray result" in str(sent[-1].content) and not isinstance(sent[-1], ToolMessage)
