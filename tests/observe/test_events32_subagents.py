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
    # Each agent call is a tool call of the session that made it, done when its subagent is.
    assert tools == [("a1/g1", "read_file", "r1", "ran"), ("a1", "agent", "g1", "ran"), (None, "agent", "a1", "ran")]


def test_a_raising_callback_does_not_stop_the_children(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[Event] = []

    def broken(event: Event) -> None:
        seen.append(event)
        raise RuntimeError("the UI broke")

    with caplog.at_level(logging.WARNING, logger="agentcontext.observe"):
        session = _nested(broken)
    assert session.conversation.to_openai()[-1]["content"] == "all done"
    assert session.subagents is not None and [r.error for r in session.subagents.results] == [None]
    assert len(seen) == len([r for r in caplog.records if r.name == "agentcontext.observe"]) == 9


def test_for_agent_prefixes_a_deeper_name_and_keeps_the_rest() -> None:
    got: list[Event] = []
    event = CompactionStarted("fit", 10, 2, 5, "litellm")
    assert for_agent(None, "c1") is None
    for_agent(for_agent(got.append, "c1"), "c2")(event)  # type: ignore[misc]
    (tagged,) = got
    assert tagged.agent == "c1/c2" and (tagged.kind, tagged.tokens, tagged.policy) == ("fit", 10, "litellm")


def test_parallel_agent_calls_are_tool_calls_traced_under_the_turn(spans: Any) -> None:
    """Two agent calls of one reply run on pool threads: each is its own ``ToolCallDone`` and its
    own ``execute_tool agent`` span, nested under the turn's span (the context is carried over)."""
    from agentcontext.providers import Reply

    calls = [scripted_call("agent", {"description": d, "prompt": f"do {d}"}, id=d) for d in ("p1", "p2")]
    events: list[Event] = []
    session = ac.Session(
        ScriptedChatProvider([Reply(tool_calls=calls), "done", "done", "both done"]),
        subagents=SubagentPolicy(max_parallel=2),
        on_event=events.append,
    )
    session.run("Do both.")
    done = sorted((e.agent, e.name, e.call_id, e.outcome) for e in events if isinstance(e, ToolCallDone))
    assert done == [(None, "agent", "p1", "ran"), (None, "agent", "p2", "ran")]
    finished = spans.get_finished_spans()
    (turn,) = [s for s in finished if s.name == "invoke_agent agentcontext" and s.parent is None]
    tools = [s for s in finished if s.name == "execute_tool agent"]
    assert sorted(s.attributes["gen_ai.tool.call.id"] for s in tools) == ["p1", "p2"]
    assert all(s.parent is not None and s.parent.span_id == turn.context.span_id for s in tools)
    # The children's own turns, run on the pool's threads, nest under the parent's turn too.
    children = [s for s in finished if s.name == "invoke_agent agentcontext" and s.parent is not None]
    assert len(children) == 2 and all(s.parent.span_id == turn.context.span_id for s in children)
