"""Issue #29: a subagent reports to its parent's ``on_event``, each of its events naming the
``agent`` tool call that started it (``/``-joined down the nesting); the parent's own events name
none. A callback that raises does not stop the children."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.observe import CompactionStarted, Event, ModelCall, ToolCallDone
from agentcontext.observe.emit import for_agent
from agentcontext.providers import ScriptedChatProvider, scripted_call
from agentcontext.sessions import SubagentPolicy


def _nested(on_event: Any) -> ac.Session:
    """A root whose child (call ``a1``) starts a grandchild (call ``g1``) that reads a file."""
    script = [
        scripted_call("agent", {"description": "child", "prompt": "review the module"}, id="a1"),
        scripted_call("agent", {"description": "grandchild", "prompt": "read the file"}, id="g1"),
        scripted_call("read_file", {"path": "m.py"}, id="r1"),
        "the file is fine",
        "the module is fine",
        "all done",
    ]
    session = ac.Session(
        ScriptedChatProvider(script),
        functions={"read_file": lambda args: "print('hi')"},
        subagents=SubagentPolicy(max_depth=2),
        on_event=on_event,
    )
    session.run("Review the code base.")
    return session


def test_each_event_names_the_subagent_that_made_it() -> None:
    events: list[Event] = []
    session = _nested(events.append)
    assert session.conversation.to_openai()[-1]["content"] == "all done"
    calls = [(e.agent, e.messages) for e in events if isinstance(e, ModelCall)]
    # Root, child, grandchild twice (the read, then the answer), child, root: in the order made.
    assert [a for a, _ in calls] == [None, "a1", "a1/g1", "a1/g1", "a1", None]
    tools = [(e.agent, e.name, e.call_id, e.outcome) for e in events if isinstance(e, ToolCallDone)]
    assert tools == [("a1/g1", "read_file", "r1", "ran")]  # (the agent calls are not tool events)


def test_a_raising_callback_does_not_stop_the_children(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[Event] = []

    def broken(event: Event) -> None:
        seen.append(event)
        raise RuntimeError("the UI broke")

    with caplog.at_level(logging.WARNING, logger="agentcontext.observe"):
        session = _nested(broken)
    assert session.conversation.to_openai()[-1]["content"] == "all done"
    assert session.subagents is not None and [r.error for r in session.subagents.results] == [None]
    assert len(seen) == len([r for r in caplog.records if r.name == "agentcontext.observe"]) == 7


def test_for_agent_prefixes_a_deeper_name_and_keeps_the_rest() -> None:
    got: list[Event] = []
    event = CompactionStarted("fit", 10, 2, 5, "litellm")
    assert for_agent(None, "c1") is None
    for_agent(for_agent(got.append, "c1"), "c2")(event)  # type: ignore[misc]
    (tagged,) = got
    assert tagged.agent == "c1/c2" and (tagged.kind, tagged.tokens, tagged.policy) == ("fit", 10, "litellm")
