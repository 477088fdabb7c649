"""The compiler inside Session, through the real SDK clients against the loopback server: it
compiles before every model call (tool loops included), plan mode refuses a forged hidden call in
both strategies, the goal's judges continue or stop the agent, reminders reach the next request
only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcontext.compiler import (
    CommandExited,
    Compiler,
    EvidenceJudge,
    Goal,
    LLMJudge,
    Registry,
    Reminder,
    WorkingSet,
)
from agentcontext.errors import OptionError
from agentcontext.providers import AnthropicProvider, OpenAIChatProvider, OpenAIResponsesProvider
from agentcontext.sessions.loop import Session
from tests.llm_server import LLMServer, Recorded, Reply

pytest.importorskip("anthropic", reason="the anthropic SDK is a test extra: pip install -e '.[test]'")
pytest.importorskip("openai", reason="the openai SDK is a test extra: pip install -e '.[test]'")

KINDS = ["anthropic", "openai", "responses"]


@pytest.fixture
def providers() -> Iterator[list[Any]]:
    opened: list[Any] = []
    yield opened
    for provider in opened:
        provider.close()


def make(kind: str, server: LLMServer, opened: list[Any], window: int = 200_000) -> Any:
    common: dict[str, Any] = {"api_key": "test-key", "max_retries": 0, "context_window": window}
    provider: Any
    if kind == "anthropic":
        provider = AnthropicProvider("claude-test", base_url=server.url, **common)
    elif kind == "openai":
        provider = OpenAIChatProvider("gpt-test", base_url=server.url + "/v1", **common)
    else:
        provider = OpenAIResponsesProvider("gpt-test", base_url=server.url + "/v1", **common)
    opened.append(provider)
    return provider


def system_of(request: Recorded) -> str:
    body = request.body
    if request.endpoint == "anthropic":
        system = body.get("system")
        return system if isinstance(system, str) else "".join(b["text"] for b in system or [])
    if request.endpoint == "responses":
        return str(body.get("instructions") or "")
    return next((m["content"] for m in body["messages"] if m["role"] == "system"), "")


def tool_names(request: Recorded) -> list[str]:
    out = []
    for t in request.body.get("tools") or []:
        out.append(t["function"]["name"] if "function" in t else t["name"])
    return out


def texts_of(request: Recorded) -> str:
    return json.dumps(request.body.get("messages") or request.body.get("input"))


def registry(ran: list[str]) -> Registry:
    reg = Registry()
    reg.tool("read_file", "Read a file.", lambda a: ran.append("read_file") or "contents", read_only=True)
    reg.tool("write_file", "Write a file.", lambda a: ran.append("write_file") or "written")
    reg.tool("bash", "Run a command.", lambda a: ran.append("bash") or "exit code: 0")
    return reg


def test_session_system_string_still_works(providers: list[Any]) -> None:
    with LLMServer() as server:
        session = Session(make("anthropic", server, providers), system="Be brief.")
        server.enqueue(Reply("hi"))
        assert session.run("hello").text == "hi"
        assert system_of(server.requests[0]) == "Be brief." and session.compiled is None
    with pytest.raises(OptionError, match="compiler must be"):
        Session(make("anthropic", server, providers), compiler="plan")  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", KINDS)
def test_compiles_before_every_call_inside_tool_loops(kind: str, providers: list[Any], tmp_path: Path) -> None:
    ran: list[str] = []
    (tmp_path / "AGENTS.md").write_text("Run make check before committing.\n")
    ws = WorkingSet.load(tmp_path, registry=registry(ran), git=False)
    compiler = Compiler(ws, reminders=[Reminder("tool", "You wrote a file: run the checks.", tool="write_file")])
    with LLMServer() as server:
        session = Session(make(kind, server, providers), compiler=compiler, system="You are terse.")
        server.enqueue(
            Reply("", tool_calls=[{"name": "write_file", "arguments": {"path": "a"}}]),
            Reply("", tool_calls=[{"name": "read_file", "arguments": {"path": "a"}}]),
            Reply("done"),
        )
        assert session.run("Write a.").text == "done"
        requests = list(server.requests)
    assert ran == ["write_file", "read_file"]
    assert len(compiler.requests) == 3 == len(requests)
    for r in requests:
        system = system_of(r)
        assert system.startswith("You are terse.\n") and "Run make check before committing." in system
        assert tool_names(r) == ["read_file", "write_file", "bash"]
    # The reminder fired by the write reaches the next request only, and is not in the history.
    assert "You wrote a file" not in texts_of(requests[0])
    assert "You wrote a file: run the checks." in texts_of(requests[1])
    assert "You wrote a file" not in texts_of(requests[2])
    assert "You wrote a file" not in json.dumps(session.conversation.to_jsonl())
    # Every request has its tokens per source; the history grows with the tool loop.
    totals = [c.tokens["history_total"] for c in compiler.requests]
    assert totals[0] < totals[1] < totals[2]
    assert compiler.requests[1].tokens["pending_results"] > 0
    # Nothing in the prompt changed: each request's prefix is the whole previous request's history.
    replay = compiler.replay()
    assert replay.prefix_tokens[2] >= replay.request_tokens[1] - compiler.requests[1].tokens["reminders"]


@pytest.mark.parametrize("hiding", ["filter", "deny"])
@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_plan_mode_refuses_forged_hidden_call(kind: str, hiding: str, providers: list[Any]) -> None:
    ran: list[str] = []
    compiler = Compiler(WorkingSet(registry=registry(ran)), mode="plan", hiding=hiding)
    with LLMServer() as server:
        session = Session(make(kind, server, providers), compiler=compiler)
        # The model calls tools it was not shown (filter) or told not to use (deny).
        server.enqueue(
            Reply("", tool_calls=[{"name": "bash", "arguments": {"command": "rm -rf /"}}]),
            Reply("", tool_calls=[{"name": "write_file", "arguments": {"path": "x"}}]),
            Reply("", tool_calls=[{"name": "read_file", "arguments": {"path": "x"}}]),
            Reply("plan ready"),
        )
        assert session.run("Plan it.").text == "plan ready"
        requests = list(server.requests)
    assert ran == ["read_file"]
    shown = tool_names(requests[0])
    assert shown == (["read_file"] if hiding == "filter" else ["read_file", "write_file", "bash"])
    refused = [e["tool"] for e in compiler.events if e["event"] == "tool_refused"]
    assert refused == ["bash", "write_file"]
    history = json.dumps(session.conversation.to_jsonl())
    assert "Error: tool 'bash' is not available in plan mode: plan mode allows only read-only tools" in history
    assert "Error: tool 'write_file' is not available in plan mode" in history


@pytest.mark.parametrize("kind", KINDS)
def test_goal_continues_until_the_evidence_judge_is_satisfied(kind: str, providers: list[Any]) -> None:
    outputs = iter(["2 failed\nexit code: 1", "all passed\nexit code: 0"])
    reg = Registry()
    reg.tool("bash", "Run a command.", lambda a: next(outputs))
    goal = Goal("`pytest` exits 0", EvidenceJudge(CommandExited("pytest")), max_continuations=3)
    compiler = Compiler(WorkingSet(registry=reg, goal=goal))
    with LLMServer() as server:
        session = Session(make(kind, server, providers), compiler=compiler)
        server.enqueue(
            Reply("", tool_calls=[{"name": "bash", "arguments": {"command": "pytest -q"}}]),
            Reply("I think it is fine."),  # natural end, evidence says exit 1: continue
            Reply("", tool_calls=[{"name": "bash", "arguments": {"command": "pytest -q"}}]),
            Reply("Fixed."),  # natural end, exit 0: met
        )
        assert session.run("Make the tests pass.").text == "Fixed."
        requests = list(server.requests)
    assert len(requests) == 4
    assert "# Goal\n\n`pytest` exits 0" in system_of(requests[0])
    assert "The goal is not met yet: the last run of `pytest` exited 1, not 0" in texts_of(requests[2])
    assert goal.status == "met" and goal.continuations == 1
    assert [e["event"] for e in compiler.events if e["event"].startswith("goal")] == [
        "goal_verdict",
        "goal_continued",
        "goal_verdict",
        "goal_met",
    ]
    # Once met, the goal leaves the system prompt of later requests.
    assert "# Goal" not in compiler.compile(session.conversation).system


def test_goal_continuation_limit_and_no_judge_in_plan(providers: list[Any]) -> None:
    goal = Goal("NOTES.md says done", EvidenceJudge(CommandExited("never-run")), max_continuations=2)
    compiler = Compiler(WorkingSet(goal=goal))
    with LLMServer() as server:
        session = Session(make("openai", server, providers), compiler=compiler)
        server.enqueue(Reply("a"), Reply("b"), Reply("c"), Reply("d"))
        assert session.run("go").text == "c"
        assert len(server.requests) == 3
    assert goal.status == "limit" and goal.continuations == 2
    assert compiler.events[-1] == {"event": "goal_limit", "continuations": 2}
    planned = Goal("x", EvidenceJudge(CommandExited("never-run")))
    in_plan = Compiler(WorkingSet(goal=planned), mode="plan")
    with LLMServer() as server:
        session = Session(make("openai", server, providers), compiler=in_plan)
        server.enqueue(Reply("planned"))
        assert session.run("plan").text == "planned"
        assert len(server.requests) == 1 and "# Goal" in system_of(server.requests[0])
    assert planned.verdicts == [] and planned.status == "active"


@pytest.mark.parametrize("kind", KINDS)
def test_llm_judge_has_no_tools_and_a_small_working_set(kind: str, providers: list[Any]) -> None:
    reg = Registry()
    reg.tool("bash", "Run a command.", lambda a: "exit code: 0")
    with LLMServer() as server:
        judge_provider = make(kind, server, providers)
        goal = Goal("the build passes", LLMJudge(judge_provider, messages=4), max_continuations=2)
        compiler = Compiler(WorkingSet(registry=reg, goal=goal))
        session = Session(make(kind, server, providers), compiler=compiler)
        session.add_user("EARLY SECRET THAT THE JUDGE MUST NOT SEE " + "x " * 500)
        server.enqueue(Reply("noted"))
        session.send()
        server.enqueue(
            Reply("", tool_calls=[{"name": "bash", "arguments": {"command": "make"}}]),
            Reply("Built."),
            Reply("NOT MET: no test run shown"),  # the judge
            Reply("", tool_calls=[{"name": "bash", "arguments": {"command": "make test"}}]),
            Reply("Tested."),
            Reply("MET"),  # the judge
        )
        assert session.run("Build it.").text == "Tested."
        requests = list(server.requests)
    judge_calls = [requests[3], requests[6]]
    for r in judge_calls:
        assert not r.body.get("tools")
        assert "You check whether an agent met a goal" in system_of(r)
        body = texts_of(r)
        assert "Goal:\\nthe build passes" in body and "EARLY SECRET" not in body
    assert "[assistant called bash]" in texts_of(judge_calls[1])
    assert "The goal is not met yet: no test run shown" in texts_of(requests[4])
    assert goal.status == "met"


def test_plan_refuses_functions_without_metadata_but_not_recall(providers: list[Any]) -> None:
    ran: list[str] = []
    compiler = Compiler(WorkingSet(registry=registry(ran)), mode="plan", hiding="deny")
    with LLMServer() as server:
        session = Session(
            make("openai", server, providers),
            compiler=compiler,
            functions={"deploy": lambda a: ran.append("deploy") or "deployed"},
        )
        server.enqueue(
            Reply("", tool_calls=[{"name": "deploy", "arguments": {}}]),
            Reply("", tool_calls=[{"name": "recall", "arguments": {"id": "r-missing"}}]),
            Reply("ok"),
        )
        assert session.run("Plan.").text == "ok"
    assert ran == []
    history = json.dumps(session.conversation.to_jsonl())
    assert "Error: tool 'deploy' is not available in plan mode: it has no metadata in the registry" in history
    assert [e["tool"] for e in compiler.events if e["event"] == "tool_refused"] == ["deploy"]
    compiler.set_mode("default")
    assert compiler.execute("deploy", "{}", session.functions) == "deployed"
