"""Permission decisions of one model reply are made call by call, by place, not by call id: the
model writes the ids, and two calls of one reply may share one."""

from __future__ import annotations

from typing import Any

import pytest

from agentcontext.sessions.loop import Session
from agentcontext.sessions.permissions import Permissions, Rule
from tests.llm_server import LLMServer, Reply
from tests.sessions.test_sessions import chat

pytest.importorskip("openai", reason="the openai SDK is a test extra: pip install -e '.[test]'")


def _session(server: LLMServer, ran: list[Any]) -> Session:
    return Session(
        chat(server),
        functions={"rm": lambda a: ran.append(a) or "removed", "read": lambda a: ran.append(a) or "contents"},
        permissions=Permissions([Rule("rm", "deny", arguments=r"-rf"), Rule("rm", "ask"), Rule("read", "allow")]),
    )


def test_a_denied_call_sharing_an_allowed_calls_id_is_not_run(server: LLMServer) -> None:
    """The decisions were a dict by call id: a denied call followed by an allowed one with the
    same id took the allowed one's decision, and ran with no question asked."""
    ran: list[Any] = []
    session = _session(server, ran)
    server.enqueue(
        Reply(
            tool_calls=[
                {"name": "rm", "arguments": {"args": "-rf /"}, "id": "c1"},
                {"name": "read", "arguments": {"path": "a.txt"}, "id": "c1"},
            ]
        )
    )
    server.enqueue(Reply(content="done"))
    session.run("tidy up")
    assert ran == [{"path": "a.txt"}]
    results = [m["content"] for m in server.last.body["messages"] if m["role"] == "tool"]
    assert results[0] == "Error: the session's permission settings do not allow calls to 'rm'. The call was not run."


def test_the_users_yes_to_one_call_does_not_run_a_denied_twin(server: LLMServer) -> None:
    """The user allowed the call that was asked (``rm a.txt``, id c1); a call the settings deny
    with the same id in the same reply (``rm -rf /``) ran with it."""
    ran: list[Any] = []
    session = _session(server, ran)
    server.enqueue(
        Reply(
            tool_calls=[
                {"name": "rm", "arguments": {"args": "a.txt"}, "id": "c1"},
                {"name": "rm", "arguments": {"args": "-rf /"}, "id": "c1"},
            ]
        )
    )
    session.run("tidy up")
    assert session.pending_permission is not None
    assert [c.arguments for c in session.pending_permission.calls] == ['{"args": "a.txt"}']
    session.answer("c1", allow=True)
    server.enqueue(Reply(content="done"))
    session.run()
    assert ran == [{"args": "a.txt"}]


def test_a_no_stands_when_another_answer_grants_the_tool(server: LLMServer) -> None:
    """An "always allow" given to one call does not overturn the user's no to another call of
    that tool in the same request."""
    ran: list[Any] = []
    session = _session(server, ran)
    server.enqueue(
        Reply(
            tool_calls=[
                {"name": "rm", "arguments": {"args": "a.txt"}, "id": "c1"},
                {"name": "rm", "arguments": {"args": "b.txt"}, "id": "c2"},
            ]
        )
    )
    session.run("tidy up")
    session.answer("c1", allow=False)
    session.answer("c2", allow=True, always=True)
    server.enqueue(Reply(content="done"))
    session.run()
    assert ran == [{"args": "b.txt"}]


def test_an_answered_anthropic_call_runs_on_resume() -> None:
    """The calls run after the user's answer are read back from the conversation, where an
    Anthropic call's arguments are written without spaces (the reply's were ``json.dumps``'s): an
    answer tied to the argument text would never apply, and the request would be asked forever."""
    from agentcontext.providers import AnthropicProvider
    from tests.llm_server import Recorded

    def script(request: Recorded) -> Reply:
        last = request.body["messages"][-1]
        done = isinstance(last["content"], list) and any(b.get("type") == "tool_result" for b in last["content"])
        if done:
            return Reply(text="done")
        return Reply(tool_calls=[{"name": "rm", "arguments": {"args": "a.txt", "n": [1, 2]}, "id": "t1"}])

    ran: list[Any] = []
    with LLMServer(default=script) as server:
        provider = AnthropicProvider(
            "claude-test", base_url=server.url, api_key="k", max_retries=0, context_window=100_000
        )
        session = Session(
            provider, functions={"rm": lambda a: ran.append(a) or "removed"}, permissions=Permissions(default="ask")
        )
        session.run("tidy up")
        assert session.pending_permission is not None
        session.answer("t1", allow=True)
        assert session.run().text == "done"
    assert ran == [{"args": "a.txt", "n": [1, 2]}] and session.pending_permission is None
