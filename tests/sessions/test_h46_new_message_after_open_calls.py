"""A new user message after a reply whose tool calls were not run (the step limit ended the
turn, a permission request was left unanswered, a resumed snapshot ends with them) is sent after
a result for each of those calls saying it was not run. Before, the request held tool calls
without results, which the providers refuse (OpenAI: "An assistant message with 'tool_calls'
must be followed by tool messages"; Anthropic: "tool_use ids were found without tool_result
blocks"), and the pending permission request stayed, asked about calls the model had moved on
from."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentcontext as ac
from agentcontext.providers import ScriptedAnthropicProvider, ScriptedChatProvider, scripted_call
from agentcontext.sessions import Permissions, SnapshotStore

NOT_RUN = "Error: the user sent a new message instead of letting this call run. The call was not run."


def provider(fmt: str, replies: list[object]) -> ScriptedChatProvider | ScriptedAnthropicProvider:
    return ScriptedChatProvider(replies) if fmt == "openai" else ScriptedAnthropicProvider(replies)


def problems(fmt: str, body: dict[str, object]) -> list[object]:
    return ac.Conversation(body["messages"], format=fmt).validate()  # type: ignore[arg-type]


def results(session: ac.Session) -> list[str]:
    return [m["content"] for m in session.conversation.to_jsonl() if m["role"] == "tool"]


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_after_the_step_limit(fmt: str) -> None:
    ran: list[str] = []
    model = provider(fmt, [scripted_call("ls", {}), "second answer"])
    session = ac.Session(model, functions={"ls": lambda a: ran.append("ls") or "a.py"})
    session.run("first", max_steps=1)
    session.run("something else")
    assert problems(fmt, model.requests[-1]) == []
    assert results(session) == [NOT_RUN] and ran == []


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_instead_of_answering_a_permission_request(fmt: str) -> None:
    ran: list[str] = []
    model = provider(fmt, [scripted_call("write", {"path": "a"}), "ok, not writing"])
    session = ac.Session(
        model, functions={"write": lambda a: ran.append("write") or "ok"}, permissions=Permissions(default="ask")
    )
    session.run("write a")
    assert session.pending_permission is not None
    session.run("no, do not write anything")
    assert problems(fmt, model.requests[-1]) == []
    assert results(session) == [NOT_RUN] and ran == [] and session.pending_permission is None


def test_after_a_resumed_snapshot_that_ends_with_calls(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "snap")
    first = ac.Session(ScriptedChatProvider([scripted_call("ls", {})]), snapshots=store, functions={"ls": str})
    first.run("list", max_steps=1)
    model = ScriptedChatProvider(["fine"])
    resumed = ac.Session.resume(store, model, functions={"ls": str})
    resumed.run("never mind")
    assert problems("openai", model.requests[-1]) == []
    assert results(resumed) == [NOT_RUN]


def test_run_without_content_still_runs_them() -> None:
    ran: list[str] = []
    model = ScriptedChatProvider([scripted_call("ls", {}), "done"])
    session = ac.Session(model, functions={"ls": lambda a: ran.append("ls") or "a.py"})
    session.run("first", max_steps=1)
    session.run()
    assert results(session) == ["a.py"] and ran == ["ls"]
