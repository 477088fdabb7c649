"""Sessions that survive the process (snapshots, resume, clear, permissions) and subagents that
cannot flood their parent — through the real SDK clients against the loopback server."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcontext.compiler.compile import Compiler, WorkingSet
from agentcontext.compiler.registry import Registry
from agentcontext.errors import ArgumentTypeError, BudgetError, OptionError, SnapshotError
from agentcontext.providers import AnthropicProvider, OpenAIChatProvider, ToolCall
from agentcontext.sessions import SnapshotStore
from agentcontext.sessions.log import SessionLog
from agentcontext.sessions.loop import Session
from agentcontext.sessions.permissions import Arguments, Permissions, Rule
from agentcontext.sessions.subagents import FILTERED, SubagentPolicy, workspace
from tests import support
from tests.llm_server import HTTPError, LLMServer, Recorded, Reply

pytest.importorskip("openai", reason="the openai SDK is a test extra: pip install -e '.[test]'")
pytest.importorskip("anthropic", reason="the anthropic SDK is a test extra: pip install -e '.[test]'")

ROOT = support.ROOT


def chat(server: LLMServer, window: int = 100_000) -> OpenAIChatProvider:
    return OpenAIChatProvider(
        "gpt-test", base_url=server.url + "/v1", api_key="test-key", max_retries=0, context_window=window
    )


def texts(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def first_user(request: Recorded) -> str:
    return next(texts(m) for m in request.body["messages"] if m["role"] == "user")


def echo(request: Recorded) -> Reply:
    """Deterministic: answer the last user text."""
    last = [m for m in request.body["messages"] if m["role"] == "user"][-1]
    return Reply(text=f"answer to {texts(last)}")


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer(default=echo) as s:
        yield s


# -- snapshots at the end of every outer turn ------------------------------------------------------


def test_every_outer_turn_is_saved_with_its_reason(server: LLMServer, tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "snap")
    session = Session(chat(server), system="be brief", snapshots=store, functions={"ls": lambda _a: "a.py"})
    session.run("first")
    current = store.current()
    assert current is not None and (current.turn, current.reason) == (1, "reply")
    assert current.conversation.to_openai() == session.conversation.to_openai()
    server.enqueue(Reply(tool_calls=[{"name": "ls", "arguments": {}}]))
    session.run("second", max_steps=1)  # the model asked for a tool; the step limit ends the turn
    current = store.current()
    assert current is not None and (current.turn, current.reason) == (2, "turn_limit")
    assert current.control["unanswered_tools"] == ["ls"]
    assert [i.turn for i in store.history()] == [2, 1]


RESUMING = textwrap.dedent(
    """
    import sys, time
    from agentcontext.sessions.loop import Session
    from agentcontext.providers import OpenAIChatProvider
    from agentcontext.sessions import SnapshotStore

    url, directory = sys.argv[1], sys.argv[2]
    provider = OpenAIChatProvider("gpt-test", base_url=url + "/v1", api_key="k", max_retries=0, context_window=100000)
    session = Session(provider, system="be brief", snapshots=SnapshotStore(directory))
    session.run("one")
    session.run("two")
    print("saved", flush=True)
    time.sleep(600)
    """
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), str(ROOT), env.get("PYTHONPATH", "")])
    return env


@pytest.mark.skipif(sys.platform == "win32", reason="kill -9 is POSIX")
def test_kill_9_then_resume_sends_what_the_uninterrupted_run_sends(server: LLMServer, tmp_path: Path) -> None:
    directory = tmp_path / "snap"
    proc = subprocess.Popen(
        [sys.executable, "-c", RESUMING, server.url, str(directory)], stdout=subprocess.PIPE, text=True, env=_env()
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "saved"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    resumed = Session.resume(SnapshotStore(directory), chat(server), system="be brief")
    assert resumed.resume_notes == []
    assert resumed.turn == 2
    resumed.run("three")
    after_resume = server.last.body

    uninterrupted = Session(chat(server), system="be brief")
    for text in ("one", "two", "three"):
        uninterrupted.run(text)
    assert after_resume == server.last.body


def test_clear_then_resume_is_empty(server: LLMServer, tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "snap")
    session = Session(chat(server), snapshots=store)
    session.run("a secret plan")
    session.clear()
    assert len(session.conversation) == 0
    resumed = Session.resume(store, chat(server))
    assert len(resumed.conversation) == 0
    resumed.run("hello again")
    sent = json.dumps(server.last.body["messages"])
    assert "secret" not in sent
    assert [m["role"] for m in server.last.body["messages"]] == ["user"]


def test_resume_needs_a_snapshot(server: LLMServer, tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="no snapshot to resume"):
        Session.resume(SnapshotStore(tmp_path / "empty"), chat(server))
    with pytest.raises(OptionError, match="snapshots must be a SnapshotStore"):
        Session.resume(str(tmp_path), chat(server))  # type: ignore[arg-type]


def test_a_resumed_call_to_a_tool_that_is_gone_gets_an_error(server: LLMServer, tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "snap")
    session = Session(chat(server), snapshots=store, functions={"old_tool": lambda _a: "x"})
    server.enqueue(Reply(tool_calls=[{"name": "old_tool", "arguments": {}, "id": "call_1"}]))
    session.run("use it", max_steps=1)
    resumed = Session.resume(store, chat(server), functions={"new_tool": lambda _a: "y"})
    assert any("'old_tool'" in n and "no longer exists" in n for n in resumed.resume_notes)
    resumed.run()  # goes on with the unanswered call
    tool_messages = [m for m in server.last.body["messages"] if m["role"] == "tool"]
    assert tool_messages == [{"role": "tool", "tool_call_id": "call_1", "content": "Error: no tool named 'old_tool'"}]


# -- permissions --------------------------------------------------------------------------------


def test_a_call_that_asks_pauses_before_anything_runs(server: LLMServer, tmp_path: Path) -> None:
    ran: list[str] = []
    store = SnapshotStore(tmp_path / "snap")
    session = Session(
        chat(server),
        snapshots=store,
        functions={
            "read": lambda _a: ran.append("read") or "contents",
            "write": lambda _a: ran.append("write") or "ok",
        },
        permissions=Permissions([Rule("read", "allow")], default="ask"),
    )
    server.enqueue(
        Reply(
            tool_calls=[{"name": "read", "arguments": {}, "id": "r1"}, {"name": "write", "arguments": {}, "id": "w1"}]
        )
    )
    session.run("edit the file")
    assert ran == []  # not even the allowed call of that reply ran
    assert session.pending_permission is not None
    assert [c.id for c in session.pending_permission.calls] == ["w1"]
    current = store.current()
    assert current is not None and current.reason == "permission"
    with pytest.raises(OptionError, match="waiting for an answer: write"):
        session.run()
    session.answer("w1", allow=True, always=True)
    session.run()
    assert ran == ["read", "write"]
    assert session.pending_permission is None
    assert session.permissions is not None and session.permissions.granted == {"write"}
    server.enqueue(Reply(tool_calls=[{"name": "write", "arguments": {}, "id": "w2"}]))
    session.run("again")  # granted: no question this time
    assert ran == ["read", "write", "write"]


def test_a_denied_call_gets_an_error_result(server: LLMServer) -> None:
    session = Session(
        chat(server),
        functions={"rm": lambda _a: pytest.fail("must not run")},
        permissions=Permissions([Rule("rm", "deny", arguments=r"-rf"), Rule("rm", "ask")]),
    )
    server.enqueue(Reply(tool_calls=[{"name": "rm", "arguments": {"args": "-rf /"}, "id": "x1"}]))
    session.run("clean up")
    results = [m["content"] for m in server.last.body["messages"] if m["role"] == "tool"]
    assert results == ["Error: the session's permission settings do not allow calls to 'rm'. The call was not run."]
    server.enqueue(Reply(tool_calls=[{"name": "rm", "arguments": {"args": "a.txt"}, "id": "x2"}]))
    session.run("just the one file")
    session.answer(allow=False)
    session.run()
    results = [m["content"] for m in server.last.body["messages"] if m["role"] == "tool"]
    assert results[-1] == "Error: the user did not allow this call to 'rm'. The call was not run."
    with pytest.raises(OptionError, match="no permission request is pending"):
        session.answer(allow=True)


def test_a_pending_request_is_asked_again_and_grants_follow_the_rule(server: LLMServer, tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "snap")
    permissions = Permissions(default="ask")
    permissions.grant("deploy")
    permissions.grant("format")
    session = Session(chat(server), snapshots=store, permissions=permissions, functions={"push": lambda _a: "pushed"})
    server.enqueue(Reply(tool_calls=[{"name": "push", "arguments": {}, "id": "p1"}]))
    session.run("ship it")
    assert session.pending_permission is not None

    # Now: deploy is denied outright, format allowed anyway; push still asks.
    current = Permissions([Rule("deploy", "deny"), Rule("format", "allow")], default="ask")
    resumed = Session.resume(store, chat(server), permissions=current, functions={"push": lambda _a: "pushed"})
    assert current.granted == set()
    assert any("'deploy'" in n and "deny" in n for n in resumed.resume_notes)
    assert any("'format'" in n and "allow it anyway" in n for n in resumed.resume_notes)
    assert resumed.pending_permission is not None  # asked again
    assert [c.id for c in resumed.pending_permission.calls] == ["p1"]
    resumed.answer(allow=True)
    resumed.run()
    assert [m["content"] for m in server.last.body["messages"] if m["role"] == "tool"] == ["pushed"]

    # Under settings that would ask for it, a grant comes back.
    store2 = SnapshotStore(tmp_path / "snap2")
    granted = Permissions(default="ask")
    granted.grant("push")
    Session(chat(server), snapshots=store2, permissions=granted).run("hi")
    again = Permissions(default="ask")
    Session.resume(store2, chat(server), permissions=again)
    assert again.granted == {"push"}


# The README's rule, and the same command spelled in other JSON bytes: each is the call
# {"command": "rm -rf /tmp/x"} (or a tab for the space) once decoded.
RM_RF = Rule("bash", "deny", arguments=r"rm\s+-rf")
ESCAPED_RM_RF = [
    r'{"command": "rm \u002drf /tmp/x"}',
    r'{"command": "rm\u0020-rf /tmp/x"}',
    r'{"command": "r\u006d -rf /tmp/x"}',
    r'{"command": "rm\t-rf /tmp/x"}',
    r'{"command": "\u0072\u006d\u0020\u002d\u0072\u0066 /tmp/x"}',
    '{"cwd": "/", "command": "rm -rf /tmp/x"}',
    '{"command": "rm -rf /tmp/x", "cwd": "/"}',
    r'{"steps": [{"run": "echo ok"}, {"run": ["sh", "-c", "rm\u0009-rf /tmp/x"]}]}',
    r'{"r\u006d -rf /tmp/x": true}',
]


@pytest.mark.parametrize("arguments", ESCAPED_RM_RF)
def test_a_deny_pattern_sees_the_decoded_arguments(arguments: str) -> None:
    permissions = Permissions([RM_RF], default="ask")
    assert permissions.decide("bash", arguments) == "deny"
    permissions.grant("bash")  # an "always allow" of the tool never lifts a deny
    assert permissions.decide("bash", arguments) == "deny"
    assert permissions.decide("bash", '{"command": "rm -r /tmp/x"}') == "allow"


def test_a_pattern_over_the_whole_object_sees_the_canonical_rendering() -> None:
    # Keys sorted, no spaces, non-ASCII as itself, only the escapes JSON requires.
    seen = Arguments('{ "z" : [1, {"b": "t\\u00e9\\tx", "a": null}], "a" : "r\\u006d" }')
    assert seen.canonical == '{"a":"rm","z":[1,{"a":null,"b":"té\\tx"}]}'
    assert sorted(seen.strings) == ["a", "a", "b", "rm", "té\tx", "z"]
    deny = Permissions([Rule("bash", "deny", arguments=r'^\{"command":"rm -rf /","cwd":"/"\}$')], default="ask")
    for arguments in (
        '{"command": "rm -rf /", "cwd": "/"}',
        '{ "cwd" : "/" , "command" : "rm -rf /" }',
        r'{"cwd": "\/", "command": "rm \u002drf /"}',
    ):
        assert deny.decide("bash", arguments) == "deny", arguments
    # Not JSON: the text itself, and for deny/ask that text with its JSON escapes decoded (text
    # that almost parses, or holds an integer too long for Python, hides nothing in escapes).
    assert Permissions([Rule("bash", "deny", arguments=r"rm\s+-rf")]).decide("bash", "rm -rf /") == "deny"
    assert Arguments("rm -rf {").strings == ("rm -rf {",)
    for almost in (
        r'{"command": "rm \u002drf /tmp/x"} trailing',
        r'{"command": "r\u006d\t-rf /tmp/x", "n": ' + "9" * 5_000 + "}",
    ):
        assert Permissions([RM_RF], default="ask").decide("bash", almost) == "deny"
        assert Permissions([Rule("bash", "allow", arguments="rm -rf")], default="ask").decide("bash", almost) == "ask"
    assert Arguments(r'"\ud83d\ude00 \u00e9"x').strings[1] == '"\U0001f600 é"x'


def test_an_allow_pattern_cannot_be_met_by_a_string_the_model_chose() -> None:
    allow = Permissions([Rule("bash", "allow", arguments=r'^\{"command":"git status"\}$')], default="ask")
    assert allow.decide("bash", '{"command": "git status"}') == "allow"
    assert allow.decide("bash", r'{ "command" : "git\u0020status" }') == "allow"
    # Another value equal to the pattern (or holding the allowed command) does not make it apply.
    assert allow.decide("bash", '{"command": "rm -rf /", "note": "{\\"command\\":\\"git status\\"}"}') == "ask"
    loose = Permissions([Rule("bash", "allow", arguments=r"^git status$")], default="ask")
    assert loose.decide("bash", '{"command": "rm -rf /", "cwd": "git status"}') == "ask"


def test_a_granted_tool_still_cannot_run_a_denied_call_in_any_spelling(server: LLMServer) -> None:
    ran: list[Any] = []
    session = Session(
        chat(server),
        functions={"bash": lambda a: ran.append(a) or "done"},
        permissions=Permissions([RM_RF], default="ask"),
    )
    server.enqueue(Reply(tool_calls=[{"name": "bash", "arguments": '{"command": "ls"}', "id": "b0"}]))
    session.run("list")
    session.answer("b0", allow=True, always=True)  # "always allow bash"
    session.run()
    assert ran == [{"command": "ls"}]
    for i, arguments in enumerate(ESCAPED_RM_RF, start=1):
        server.enqueue(Reply(tool_calls=[{"name": "bash", "arguments": arguments, "id": f"b{i}"}]))
        session.run("clean up")
        assert session.pending_permission is None
        results = [m["content"] for m in server.last.body["messages"] if m["role"] == "tool"]
        assert results[-1] == (
            "Error: the session's permission settings do not allow calls to 'bash'. The call was not run."
        ), arguments
    assert ran == [{"command": "ls"}]


DEEP = "[" * 100_000 + "]" * 100_000


def test_arguments_nested_100000_deep_are_a_typed_error_not_a_recursion_error(server: LLMServer) -> None:
    with pytest.raises(OptionError, match="nested deeper than 128 levels"):
        ToolCall("c1", "t", DEEP).parsed()
    assert ToolCall("c1", "t", "[" * 128 + "]" * 128).parsed() is not None  # the limit itself parses
    assert ToolCall("c1", "t", json.dumps({"s": "[" * 100_000})).parsed() == {"s": "[" * 100_000}  # in a string
    ran: list[Any] = []
    session = Session(chat(server, window=1_000_000), functions={"t": lambda a: ran.append(a) or "ok"})
    server.enqueue(Reply(tool_calls=[{"name": "t", "arguments": DEEP, "id": "d1"}]))
    session.run("go")
    result = [m["content"] for m in server.last.body["messages"] if m["role"] == "tool"][-1]
    assert result.startswith("Error: OptionError: the arguments of tool call 'd1' are nested deeper than 128")
    assert ran == []
    # Through the compiler's registry too: refused, never run with the raw text.
    registry = Registry()
    registry.tool("t", "A tool.", lambda a: ran.append(a) or "ok")
    out = Compiler(WorkingSet(registry=registry)).execute("t", DEEP)
    assert out is not None and out.startswith("Error: the arguments of 't' are nested deeper than 128 levels")
    assert ran == []


# -- subagents ----------------------------------------------------------------------------------


def agent_call(description: str, prompt: str, call_id: str) -> dict[str, Any]:
    return {"name": "agent", "arguments": {"description": description, "prompt": prompt}, "id": call_id}


def routed(request: Recorded) -> Reply:
    """Parent and children told apart by their first user message."""
    messages = request.body["messages"]
    task, last = first_user(request), messages[-1]
    if task == "parent task":
        if last["role"] == "user":
            return Reply(tool_calls=[agent_call("look", "task A", "a1"), agent_call("write", "task B", "b1")])
        return Reply(text="parent done")
    if task in ("task A", "task B"):
        if last["role"] == "user":
            return Reply(tool_calls=[{"name": "meet", "arguments": {}}])
        return Reply(text="A is done" if task == "task A" else "word " * 1000)
    return echo(request)


def test_two_children_in_parallel_one_over_its_budget(tmp_path: Path) -> None:
    barrier = threading.Barrier(2, timeout=30)

    def meet(_args: Any) -> str:
        barrier.wait()  # both children must be running at once, or this breaks
        return "met"

    with LLMServer(default=routed) as server:
        log = SessionLog(tmp_path / "parent.jsonl", format="openai")
        parent = Session(
            chat(server),
            functions={"meet": meet},
            tools=[{"type": "function", "function": {"name": "meet", "parameters": {"type": "object"}}}],
            subagents=SubagentPolicy(return_tokens=200),
            log=log,
        )
        parent.run("parent task")
    assert parent.subagents is not None
    a, b = parent.subagents.results
    assert (a.call_id, b.call_id) == ("a1", "b1")  # call order
    for child in (a, b):
        assert child.session is not None
        child_results = [m for m in child.session.conversation.to_openai() if m["role"] == "tool"]
        assert [m["content"] for m in child_results] == ["met"]
        # A child sees only its task, never the parent's history.
        assert child.session.conversation.to_openai()[0] == {
            "role": "user",
            "content": "task A" if child is a else "task B",
        }
        assert child.log is not None and child.log.exists()
        assert "parent task" not in child.log.read_text()
    results = {m["tool_call_id"]: m["content"] for m in parent.conversation.to_openai() if m["role"] == "tool"}
    assert results["a1"].startswith("A is done\n[subagent transcript: ")
    assert b.final_tokens >= 10 * 100 and b.recall_id is not None  # ten times its budget
    assert b.recall_id in results["b1"] and len(results["b1"]) < 1000
    assert parent.result_store.get(b.recall_id) == "word " * 1000
    assert parent.conversation.to_openai()[-1]["content"] == "parent done"


def test_depth_limit_and_root_only_tools(tmp_path: Path) -> None:
    registry = Registry()
    registry.tool("remember", "write a memory", lambda _a: "saved", root_only=True)
    registry.tool("look", "read something", lambda _a: "seen", read_only=True)

    def script(request: Recorded) -> Reply:
        task, last = first_user(request), request.body["messages"][-1]
        if task == "top":
            if last["role"] == "user":
                return Reply(tool_calls=[agent_call("sub", "child task", "c1")])
            return Reply(text="top done")
        if task == "child task" and last["role"] == "user":
            names = sorted(t["function"]["name"] for t in request.body.get("tools", []))
            assert names == ["look"]  # no root-only tool, no agent tool at max depth
            return Reply(
                tool_calls=[agent_call("deeper", "grandchild", "g1"), {"name": "remember", "arguments": {}, "id": "m1"}]
            )
        return Reply(text="child done")

    with LLMServer(default=script) as server:
        compiler = Compiler(WorkingSet(registry=registry))
        parent = Session(chat(server), compiler=compiler, subagents=SubagentPolicy(max_depth=1))
        parent.run("top")
    assert parent.subagents is not None
    (child,) = parent.subagents.results
    assert child.session is not None
    results = {m["tool_call_id"]: m["content"] for m in child.session.conversation.to_openai() if m["role"] == "tool"}
    assert "may not start subagents at depth 1 (max_depth 1)" in results["g1"]
    assert "for the root agent only" in results["m1"]
    assert all(first_user(r) != "grandchild" for r in server.requests)  # never started


def test_fork_shares_the_parents_prefix_byte_for_byte(tmp_path: Path) -> None:
    def script(request: Recorded) -> Reply:
        messages = request.body["messages"]
        if messages[-1]["role"] == "user" and texts(messages[-1]) == "fork task":
            return Reply(text="fork result")
        if messages[-1]["role"] == "user":
            return Reply(
                tool_calls=[agent_call("fork", "fork task", "f1"), {"name": "ls", "arguments": {}, "id": "l1"}]
            )
        return Reply(text="done")

    with LLMServer(default=script) as server:
        parent = Session(
            chat(server),
            system="you are the parent",
            functions={"ls": lambda _a: "a.py"},
            tools=[{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}],
            subagents=SubagentPolicy(fork=True),
        )
        parent.run("start")
        requests = [r.body for r in server.requests]
    parent_next = requests[-1]  # the parent's request after the calls
    child_first = next(b for b in requests if texts(b["messages"][-1]) == "fork task")
    assistant = next(i for i, m in enumerate(parent_next["messages"]) if m["role"] == "assistant")
    shared = assistant + 1
    assert json.dumps(child_first["messages"][:shared]) == json.dumps(parent_next["messages"][:shared])
    assert json.dumps(child_first["tools"]) == json.dumps(parent_next["tools"])
    placeholders = [m for m in child_first["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in placeholders] == ["f1", "l1"]
    assert all("still running in the parent" in m["content"] for m in placeholders)
    assert parent.subagents is not None
    (fork,) = parent.subagents.results
    assert fork.shared_prefix_tokens is not None and fork.shared_prefix_tokens > 0


def test_isolated_workspaces(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (
        ["init", "-q"],
        ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "x"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True)
    seen: list[Path | None] = []

    def where(_args: Any) -> str:
        here = workspace()
        seen.append(here)
        return str(here)

    def script(request: Recorded) -> Reply:
        task, last = first_user(request), request.body["messages"][-1]
        if task == "top":
            return Reply(tool_calls=[agent_call("a", "child", "c1")]) if last["role"] == "user" else Reply(text="ok")
        return Reply(tool_calls=[{"name": "where", "arguments": {}}]) if last["role"] == "user" else Reply(text="ok")

    tools = [{"type": "function", "function": {"name": "where", "parameters": {"type": "object"}}}]
    for mode in ("directory", "worktree"):
        with LLMServer(default=script) as server:
            compiler = Compiler(WorkingSet.load(repo, git=False))
            session = Session(
                chat(server),
                compiler=compiler,
                tools=tools,
                functions={"where": where},
                subagents=SubagentPolicy(workspace=mode),  # type: ignore[arg-type]
            )
            session.run("top")
        here = seen[-1]
        assert here is not None and here != repo and not here.exists()  # removed afterwards
    listed = subprocess.run(["git", "worktree", "list"], cwd=repo, capture_output=True, text=True, check=True).stdout
    assert len(listed.strip().splitlines()) == 1


def test_bad_subagent_settings() -> None:
    with pytest.raises(OptionError, match="max_depth must be a positive integer"):
        SubagentPolicy(max_depth=0)
    with pytest.raises(OptionError, match="return_share must be a finite number over 0"):
        SubagentPolicy(return_share=0)
    with pytest.raises(OptionError, match='workspace must be "shared"'):
        SubagentPolicy(workspace="tmp")  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="tool_filter must be"):
        SubagentPolicy(tool_filter="ls")


@pytest.mark.parametrize("tool_filter", [5, iter(["read"]), (n for n in ["read"]), map(str, ["read"]), b"read"])
def test_a_tool_filter_that_is_not_a_collection_is_a_typed_error(tool_filter: object) -> None:
    # 5 raised a bare TypeError; a generator or iterator was used up by the check itself and then
    # left every tool out.
    with pytest.raises(ArgumentTypeError, match=r"tool_filter must be a collection of tool names .*, got "):
        SubagentPolicy(tool_filter=tool_filter)  # type: ignore[arg-type]
    assert SubagentPolicy(tool_filter={"read": 1}.keys()).tool_filter is not None  # a view is a collection


def test_a_child_cannot_ask_the_user(tmp_path: Path) -> None:
    def script(request: Recorded) -> Reply:
        task, last = first_user(request), request.body["messages"][-1]
        if task == "top":
            return Reply(tool_calls=[agent_call("a", "child", "c1")]) if last["role"] == "user" else Reply(text="ok")
        if last["role"] == "user":
            return Reply(tool_calls=[{"name": "write", "arguments": {}, "id": "w1"}])
        return Reply(text="child ok")

    with LLMServer(default=script) as server:
        session = Session(
            chat(server),
            functions={"write": lambda _a: pytest.fail("must not run")},
            permissions=Permissions(default="ask"),
            subagents=True,
        )
        session.run("top")  # the parent's own agent call asks too
        assert session.pending_permission is not None
        session.answer(allow=True)
        session.run()
    assert session.subagents is not None
    (child,) = session.subagents.results
    assert child.session is not None
    results = [m["content"] for m in child.session.conversation.to_openai() if m["role"] == "tool"]
    assert results == [
        "Error: calls to 'write' need the user's permission, which a subagent cannot ask for. The call was not run."
    ]


def test_anthropic_provider_runs_children_too(tmp_path: Path) -> None:
    def script(request: Recorded) -> Reply:
        messages = request.body["messages"]
        task = texts(messages[0])
        last = messages[-1]
        is_results = isinstance(last["content"], list) and any(b.get("type") == "tool_result" for b in last["content"])
        if task == "top":
            return Reply(text="ok") if is_results else Reply(tool_calls=[agent_call("a", "child", "c1")])
        return Reply(text="child says hi")

    with LLMServer(default=script) as server:
        provider = AnthropicProvider(
            "claude-test", base_url=server.url, api_key="k", max_retries=0, context_window=100_000
        )
        session = Session(provider, subagents=True)
        session.run("top")
    results = [
        b["content"]
        for m in session.conversation.to_anthropic_params()["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert results == ["child says hi"]


def test_resume_restores_mode_and_goal_and_compiles_the_prompt_anew(server: LLMServer, tmp_path: Path) -> None:
    from agentcontext.compiler.goal import EvidenceJudge, FileContains, Goal

    store = SnapshotStore(tmp_path / "snap")
    target = tmp_path / "done.txt"
    registry = Registry()
    registry.tool("look", "read something", lambda _a: "seen", read_only=True)
    registry.tool("edit", "change something", lambda _a: "changed")

    def goal() -> Goal:
        return Goal("done.txt says finished", EvidenceJudge(FileContains(str(target), "finished")), max_continuations=5)

    compiler = Compiler(WorkingSet(registry=registry, goal=goal()), mode="plan")
    session = Session(chat(server), compiler=compiler, snapshots=store)
    session.run("plan it")  # the judge does not run in plan mode
    compiler.set_mode("default")
    session.run("now do it")  # not met: the judge asks for more, up to a continuation
    assert compiler.working_set.goal is not None
    continuations = compiler.working_set.goal.continuations
    assert continuations >= 1
    saved = store.current()
    assert saved is not None and saved.control["mode"] == "default"
    assert saved.control["goal"]["continuations"] == continuations

    fresh = Compiler(WorkingSet(base="new base instructions", registry=registry, goal=goal()), mode="plan")
    resumed = Session.resume(store, chat(server), compiler=fresh)
    assert fresh.mode == "default"  # restored from the snapshot
    assert fresh.working_set.goal is not None and fresh.working_set.goal.continuations == continuations
    resumed.send("status?")
    system = server.last.body["messages"][0]
    assert system["role"] == "system" and "new base instructions" in texts(system)  # compiled anew

    other = Compiler(WorkingSet(registry=registry, goal=Goal("another goal", EvidenceJudge(FileContains(str(target))))))
    notes = Session.resume(store, chat(server), compiler=other).resume_notes
    assert "the goal changed since the snapshot; the new one starts afresh" in notes
    assert (
        "the tools or settings changed since the snapshot; the request is compiled from the current ones" not in notes
    )


def test_bad_session_arguments(server: LLMServer, tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="snapshots must be a SnapshotStore"):
        Session(chat(server), snapshots=str(tmp_path))  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="permissions must be a Permissions"):
        Session(chat(server), permissions={"default": "ask"})  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="subagents must be a SubagentPolicy or True"):
        Session(chat(server), subagents="yes")  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=r"Rule\.decision must be one of allow, deny, ask"):
        Rule("x", "maybe")  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="is not a regular expression"):
        Rule("x", "deny", arguments="(")
    with pytest.raises(OptionError, match="default must be one of"):
        Permissions(default="sometimes")  # type: ignore[arg-type]
    session = Session(chat(server), permissions=Permissions(default="ask"), functions={"w": lambda _a: "x"})
    server.enqueue(Reply(tool_calls=[{"name": "w", "arguments": {}, "id": "w1"}]))
    session.run("go")
    with pytest.raises(OptionError, match="allow must be True or False"):
        session.answer(allow="yes")  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="call 'nope' is not pending"):
        session.answer("nope", allow=True)


def _one_agent_call(arguments: Any) -> Any:
    def script(request: Recorded) -> Reply:
        task, last = first_user(request), request.body["messages"][-1]
        if task == "top":
            if last["role"] == "user":
                return Reply(tool_calls=[{"name": "agent", "arguments": arguments, "id": "c1"}])
            return Reply(text="ok")
        return Reply(text="child done")

    return script


@pytest.mark.parametrize("with_compiler", [False, True])
def test_agent_arguments_nested_too_deeply_are_an_error_result(tmp_path: Path, with_compiler: bool) -> None:
    # json.loads raised RecursionError out of the agent tool (and out of the compiler's execute),
    # ending the parent's run; the model now gets an error result and the run goes on.
    deep = "[" * 5000 + "]" * 5000
    with LLMServer(default=_one_agent_call(deep)) as server:
        compiler = Compiler(WorkingSet.load(tmp_path, git=False)) if with_compiler else None
        session = Session(chat(server), subagents=SubagentPolicy(), compiler=compiler)
        completion = session.run("top")
    assert completion.text == "ok"
    results = [m["content"] for m in session.conversation.to_openai() if m["role"] == "tool"]
    assert results == ["Error: the agent tool needs a non-empty 'prompt'."]


def test_a_worktree_that_cannot_be_made_is_an_error_result(tmp_path: Path) -> None:
    # A repository with no commit has no HEAD: `git worktree add` failed with CalledProcessError,
    # which escaped the parent's run as a traceback.
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    before = set(Path(os.environ.get("TMPDIR", "/tmp")).glob("agentcontext-agent-*"))
    with LLMServer(default=_one_agent_call({"description": "d", "prompt": "p"})) as server:
        session = Session(
            chat(server),
            compiler=Compiler(WorkingSet.load(repo, git=False)),
            subagents=SubagentPolicy(workspace="worktree"),
        )
        completion = session.run("top")
    assert completion.text == "ok"
    (result,) = [m["content"] for m in session.conversation.to_openai() if m["role"] == "tool"]
    assert result.startswith("Error: the subagent failed: OptionError: workspace='worktree': git worktree add failed")
    assert set(Path(os.environ.get("TMPDIR", "/tmp")).glob("agentcontext-agent-*")) <= before  # nothing left


@pytest.mark.parametrize("with_permissions", [False, True])
def test_resume_from_a_snapshot_with_malformed_control_says_what_was_not_restored(
    server: LLMServer, tmp_path: Path, with_permissions: bool
) -> None:
    # A control object edited by hand (or by another version): unanswered_tools 5 and granted 5 raised
    # TypeError ('int' object is not iterable) from resume; calls 5 raised OptionError. Each piece is
    # now left out with a note, and the session runs.
    store = SnapshotStore(tmp_path / "snap")
    Session(chat(server), snapshots=store).run("hi")
    path = store.current_path
    data = json.loads(path.read_text())
    data["control"].update({"unanswered_tools": 5, "permissions": {"granted": 5}, "pending_permission": {"calls": 5}})
    path.write_text(json.dumps(data))
    permissions = Permissions(default="ask") if with_permissions else None
    resumed = Session.resume(store, chat(server), permissions=permissions)
    notes = " | ".join(resumed.resume_notes)
    assert "unanswered_tools is not a list" in notes
    assert "'granted' is not a list" in notes
    assert "pending permission request was not restored" in notes
    assert resumed.pending_permission is None
    assert resumed.run("again").text == "answer to again"


def test_answer_always_must_be_a_bool(server: LLMServer) -> None:
    # always="no" is truthy: it granted the tool for the rest of the session.
    permissions = Permissions(default="ask")
    session = Session(chat(server), permissions=permissions, functions={"push": lambda _a: "pushed"})
    server.enqueue(Reply(tool_calls=[{"name": "push", "arguments": {}, "id": "p1"}]))
    session.run("ship it")
    with pytest.raises(OptionError, match="always must be True or False"):
        session.answer(allow=True, always="no")  # type: ignore[arg-type]
    assert permissions.granted == set()


def test_a_turn_whose_judge_raises_is_saved_before_the_error(server: LLMServer, tmp_path: Path) -> None:
    # The end-of-turn snapshot was skipped when the goal's judge raised: the reply the model gave
    # in that turn was in no snapshot, and a resume brought back the turn before it.
    from agentcontext.compiler.goal import Goal

    class Broken:
        def judge(self, goal: str, conversation: Any) -> Any:
            raise RuntimeError("judge is down")

    store = SnapshotStore(tmp_path / "snap")
    compiler = Compiler(WorkingSet(registry=Registry(), goal=Goal("tests pass", Broken())))  # type: ignore[arg-type]
    session = Session(chat(server), compiler=compiler, snapshots=store)
    with pytest.raises(RuntimeError, match="judge is down"):
        session.run("make the tests pass")
    saved = store.current()
    assert saved is not None and saved.reason == "error"
    assert [texts(m) for m in saved.conversation.to_openai()][-2:] == [
        "make the tests pass",
        "answer to make the tests pass",
    ]
    resumed = Session.resume(store, chat(server))
    assert texts(resumed.conversation.to_openai()[-1]) == "answer to make the tests pass"


# -- subagents: no lost sibling, no filter bypass, the budget holds ------------------------------


def tool_results(session: Session) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in session.conversation.to_openai() if m["role"] == "tool"}


def tool_def(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


def test_a_child_that_raises_loses_no_siblings_result_and_nothing_runs_twice(tmp_path: Path) -> None:
    # One child's provider error (not a library error) escaped pool.map: the three finished
    # siblings' results were lost with it, the parent's reply was left with no results, and the
    # next run() ran all four children again (their side effects twice).
    ran: dict[str, int] = {}
    lock = threading.Lock()

    def work(args: Any) -> str:
        with lock:
            ran[args["task"]] = ran.get(args["task"], 0) + 1
        return "worked"

    def script(request: Recorded) -> Any:
        task, last = first_user(request), request.body["messages"][-1]
        if task == "parent task":
            if last["role"] == "user":
                return Reply(tool_calls=[agent_call(f"t{k}", f"task {k}", f"c{k}") for k in range(1, 5)])
            return Reply(text="parent done")
        if last["role"] == "user":
            return Reply(tool_calls=[{"name": "work", "arguments": {"task": task}}])
        if task == "task 3":  # after its side effect, the provider fails
            return HTTPError(503, {"error": {"message": "upstream connect error", "type": "server_error"}})
        return Reply(text=f"{task} done")

    with LLMServer(default=script) as server:
        parent = Session(
            chat(server),
            functions={"work": work},
            tools=[tool_def("work")],
            subagents=SubagentPolicy(max_parallel=4),
        )
        assert parent.run("parent task").text == "parent done"
        assert ran == {"task 1": 1, "task 2": 1, "task 3": 1, "task 4": 1}
        results = tool_results(parent)
        assert [results[f"c{k}"] for k in (1, 2, 4)] == ["task 1 done", "task 2 done", "task 4 done"]
        assert results["c3"].startswith("Error: the subagent failed: InternalServerError: ")
        assert "upstream connect error" in results["c3"]
        assert parent.subagents is not None
        failed = [r for r in parent.subagents.results if r.error is not None]
        assert [(r.call_id, r.error.split(":")[0]) for r in failed] == [("c3", "InternalServerError")]
        children = sum(first_user(r) != "parent task" for r in server.requests)
        parent.run()  # nothing is left unanswered: no child runs again
        assert ran == {"task 1": 1, "task 2": 1, "task 3": 1, "task 4": 1}
        assert sum(first_user(r) != "parent task" for r in server.requests) == children


@pytest.mark.parametrize("fork", [False, True])
@pytest.mark.parametrize("with_compiler", [False, True])
def test_the_tool_filter_holds_at_execution_in_every_mode(fork: bool, with_compiler: bool) -> None:
    # With fork=True the child kept the parent's catalog and its registry, and ran secret_tool.
    ran: list[str] = []

    def script(request: Recorded) -> Reply:
        messages = request.body["messages"]
        last = messages[-1]
        if last["role"] == "user" and texts(last) == "child task":
            return Reply(
                tool_calls=[
                    {"name": "secret_tool", "arguments": {}, "id": "s1"},
                    {"name": "ok_tool", "arguments": {}, "id": "o1"},
                ]
            )
        if last["role"] == "user":
            return Reply(tool_calls=[agent_call("sub", "child task", "c1")])
        return Reply(text="child done" if any(texts(m) == "child task" for m in messages) else "parent done")

    functions = {
        "secret_tool": lambda _a: ran.append("secret") or "secret",
        "ok_tool": lambda _a: ran.append("ok") or "ok",
    }
    with LLMServer(default=script) as server:
        if with_compiler:
            registry = Registry()
            for name, fn in functions.items():
                registry.tool(name, f"the {name}", fn, read_only=True)
            options: dict[str, Any] = {"compiler": Compiler(WorkingSet(registry=registry))}
        else:
            options = {"functions": functions, "tools": [tool_def(n) for n in functions]}
        parent = Session(chat(server), subagents=SubagentPolicy(fork=fork, tool_filter=["ok_tool"]), **options)
        parent.run("start")
    assert ran == ["ok"]
    assert parent.subagents is not None
    (child,) = parent.subagents.results
    assert child.session is not None
    results = tool_results(child.session)
    assert results["s1"] == FILTERED.format(name="secret_tool")
    assert results["o1"] == "ok"


def test_a_filter_function_holds_at_execution_in_a_fork(tmp_path: Path) -> None:
    ran: list[str] = []
    registry = Registry()
    registry.tool("look", "read", lambda _a: ran.append("look") or "seen", read_only=True)
    registry.tool("edit", "write", lambda _a: ran.append("edit") or "changed")

    def script(request: Recorded) -> Reply:
        messages = request.body["messages"]
        last = messages[-1]
        if last["role"] == "user" and texts(last) == "child task":
            return Reply(tool_calls=[{"name": "edit", "arguments": {}, "id": "e1"}, {"name": "look", "arguments": {}}])
        if last["role"] == "user":
            return Reply(tool_calls=[agent_call("sub", "child task", "c1")])
        return Reply(text="done")

    with LLMServer(default=script) as server:
        policy = SubagentPolicy(fork=True, tool_filter=lambda spec: spec.read_only)
        parent = Session(chat(server), compiler=Compiler(WorkingSet(registry=registry)), subagents=policy)
        parent.run("start")
    assert ran == ["look"]
    assert parent.subagents is not None and parent.subagents.results[0].session is not None
    assert tool_results(parent.subagents.results[0].session)["e1"] == FILTERED.format(name="edit")


def _long_child(words: int) -> Any:
    def script(request: Recorded) -> Reply:
        task, last = first_user(request), request.body["messages"][-1]
        if task == "top":
            return Reply(tool_calls=[agent_call("a", "child", "c1")]) if last["role"] == "user" else Reply(text="ok")
        return Reply(text=" ".join(f"word{k}" for k in range(words)))

    return script


@pytest.mark.parametrize("words", [60, 1000])
def test_the_return_budget_holds_with_the_transcript_line(tmp_path: Path, words: int) -> None:
    # The "[subagent transcript: ...]" line was added after the cut: 68 tokens for a budget of 50.
    # A final text that fit alone but not with the line was not cut at all.
    from agentcontext import count_tokens

    with LLMServer(default=_long_child(words)) as server:
        log = SessionLog(tmp_path / "parent.jsonl", format="openai")
        parent = Session(chat(server), log=log, subagents=SubagentPolicy(return_tokens=150))
        parent.run("top")
    assert parent.subagents is not None
    (child,) = parent.subagents.results
    result = tool_results(parent)["c1"]
    assert result == child.text
    assert child.final_tokens > 100  # 60 words fit alone (120 tokens), not with the line
    assert count_tokens(result) <= 150
    assert child.log is not None and result.endswith(f"\n[subagent transcript: {child.log}]")
    assert child.recall_id is not None and f'recall(id="{child.recall_id}")' in result
    assert parent.result_store.get(child.recall_id) == " ".join(f"word{k}" for k in range(words))


def test_a_return_budget_below_the_marker_is_refused_at_construction(tmp_path: Path) -> None:
    with pytest.raises(BudgetError, match="cannot hold the truncation marker") as small:
        SubagentPolicy(return_tokens=20)
    assert small.value.needed > 20
    policy = SubagentPolicy(return_tokens=small.value.needed)  # the marker alone fits
    with LLMServer() as server:
        Session(chat(server), subagents=policy)  # no log: no transcript line
        log = SessionLog(tmp_path / "parent.jsonl", format="openai")
        with pytest.raises(BudgetError, match="the truncation marker, the transcript line") as with_log:
            Session(chat(server), log=log, subagents=policy)
        assert with_log.value.needed > small.value.needed
        with pytest.raises(BudgetError):  # a share of a small window
            Session(chat(server, window=200), subagents=SubagentPolicy(return_share=0.1))


def test_the_marker_bound_covers_the_real_marker() -> None:
    # The construction check sizes the marker from its format; truncate's own need stays below it.
    from agentcontext import truncate
    from agentcontext.sessions.subagents import marker_tokens

    for text in ("x", "word " * 1000, "line\n" * 200_000):
        with pytest.raises(BudgetError) as exc:
            truncate(text + "!" * 10, 1, unit="tokens", strategy="head_tail", recall_id="r-0123456789abcdef0123")
        assert exc.value.needed <= marker_tokens()


CHILD_PROCESS = textwrap.dedent(
    """
    import sys
    from agentcontext.sessions.loop import Session
    from agentcontext.providers import OpenAIChatProvider
    from agentcontext.sessions.subagents import SubagentPolicy

    url, directory, task = sys.argv[1], sys.argv[2], sys.argv[3]
    provider = OpenAIChatProvider("gpt-test", base_url=url + "/v1", api_key="k", max_retries=0, context_window=100000)
    session = Session(provider, subagents=SubagentPolicy(log_dir=directory))
    session.run("top " + task)
    print(session.subagents.results[0].log, flush=True)
    """
)


def test_two_processes_never_share_a_child_transcript(tmp_path: Path) -> None:
    # The number in agent-<n>-d1.jsonl restarted at 1 in every process: two processes wrote their
    # children into one file.
    def script(request: Recorded) -> Reply:
        task, last = first_user(request), request.body["messages"][-1]
        if task.startswith("top "):
            if last["role"] == "user":
                return Reply(tool_calls=[agent_call("a", "child of " + task[4:], "c1")])
            return Reply(text="ok")
        return Reply(text="done: " + task)

    directory = tmp_path / "agents"
    with LLMServer(default=script) as server:
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", CHILD_PROCESS, server.url, str(directory), name],
                stdout=subprocess.PIPE,
                text=True,
                env=_env(),
            )
            for name in ("alpha", "beta")
        ]
        outs = [p.communicate(timeout=120)[0].strip() for p in procs]
        assert [p.returncode for p in procs] == [0, 0]
    assert outs[0] != outs[1]
    assert sorted(os.listdir(directory)) == sorted(Path(o).name for o in outs)
    for name, out in zip(("alpha", "beta"), outs, strict=True):
        text = Path(out).read_text()
        other = "beta" if name == "alpha" else "alpha"
        assert f"child of {name}" in text and f"child of {other}" not in text


def test_a_worktree_child_names_the_branches_it_left(tmp_path: Path) -> None:
    # The child's branches stayed in the parent's repository after its worktree was removed, and
    # nothing said so.
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], cwd=repo, check=True)

    def branch(_args: Any) -> str:
        here = workspace()
        assert here is not None
        subprocess.run([*git, "checkout", "-q", "-b", "child-work"], cwd=here, check=True)
        (here / "f.txt").write_text("work\n")
        subprocess.run([*git, "add", "f.txt"], cwd=here, check=True)
        subprocess.run([*git, "commit", "-q", "-m", "child work"], cwd=here, check=True)
        return "committed on child-work"

    def script(request: Recorded) -> Reply:
        task, last = first_user(request), request.body["messages"][-1]
        if task == "top":
            return Reply(tool_calls=[agent_call("a", "child", "c1")]) if last["role"] == "user" else Reply(text="ok")
        return Reply(tool_calls=[{"name": "branch", "arguments": {}}]) if last["role"] == "user" else Reply(text="ok")

    with LLMServer(default=script) as server:
        session = Session(
            chat(server),
            compiler=Compiler(WorkingSet.load(repo, git=False)),
            tools=[tool_def("branch")],
            functions={"branch": branch},
            subagents=SubagentPolicy(workspace="worktree"),
        )
        session.run("top")
    assert session.subagents is not None
    (child,) = session.subagents.results
    assert child.workspace is not None and not child.workspace.exists()  # the worktree is removed
    assert child.branches == ["child-work"]  # the branch stays, and the result says so
    assert tool_results(session)["c1"] == "ok\n[subagent branches left in the repository: child-work]"
    listed = subprocess.run(
        ["git", "branch", "--list", "child-work"], cwd=repo, capture_output=True, text=True, check=True
    )
    assert listed.stdout.strip() == "child-work"


def _planted_repository(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose config and hooks name programs that each leave a file in the returned
    marker directory: post-checkout, reference-transaction and post-index-change hooks, an
    fsmonitor, and a clean/smudge filter on ``a.txt``."""
    repo, marker = tmp_path / "repo", tmp_path / "markers"
    repo.mkdir()
    marker.mkdir()
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    (repo / ".gitattributes").write_text("a.txt filter=evil\n")
    (repo / "a.txt").write_text("committed text\n")
    (repo / "RULES.md").write_text("Rule from RULES.md: answer in French.\n")
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], cwd=repo, check=True)
    fsmonitor = tmp_path / "fsmonitor.sh"
    fsmonitor.write_text(f"#!/bin/sh\ntouch {marker}/fsmonitor\n")
    fsmonitor.chmod(0o755)
    for key, value in (
        ("core.fsmonitor", str(fsmonitor)),
        ("filter.evil.smudge", f"sh -c 'touch {marker}/smudge; cat'"),
        ("filter.evil.clean", f"sh -c 'touch {marker}/clean; cat'"),
    ):
        subprocess.run(["git", "config", key, value], cwd=repo, check=True)
    for hook in ("post-checkout", "reference-transaction", "post-index-change"):
        path = repo / ".git" / "hooks" / hook
        path.write_text(f"#!/bin/sh\ntouch {marker}/{hook}\n")
        path.chmod(0o755)
    return repo, marker


def _run_worktree_child(repo: Path, **load: Any) -> tuple[Session, list[Recorded]]:
    """A parent whose one worktree child reads ``a.txt`` in its workspace with the ``look`` tool."""

    def look(_args: Any) -> str:
        here = workspace()
        assert here is not None and here != repo
        return (here / "a.txt").read_text()

    def script(request: Recorded) -> Reply:
        task, last = first_user(request), request.body["messages"][-1]
        if task == "top":
            return Reply(tool_calls=[agent_call("a", "child", "c1")]) if last["role"] == "user" else Reply(text="ok")
        if last["role"] == "user":
            return Reply(tool_calls=[{"name": "look", "arguments": {}}])
        return Reply(text="child read: " + last["content"])

    with LLMServer(default=script) as server:
        session = Session(
            chat(server),
            compiler=Compiler(WorkingSet.load(repo, **load)),
            tools=[tool_def("look")],
            functions={"look": look},
            subagents=SubagentPolicy(workspace="worktree"),
        )
        session.run("top")
        return session, list(server.requests)


@pytest.mark.skipif(sys.platform == "win32", reason="the planted programs are shell scripts")
def test_a_worktree_child_runs_no_program_the_repository_names(tmp_path: Path) -> None:
    # git worktree add ran the repository's post-checkout, reference-transaction and
    # post-index-change hooks, its fsmonitor and its smudge filter: a cloned repository ran code.
    repo, marker = _planted_repository(tmp_path)
    session, _ = _run_worktree_child(repo)
    assert sorted(os.listdir(marker)) == []
    assert session.subagents is not None
    (child,) = session.subagents.results
    assert child.workspace is not None and not child.workspace.exists()  # removed again
    assert tool_results(session)["c1"] == "child read: committed text\n"  # checked out unfiltered
    listed = subprocess.run(["git", "worktree", "list"], cwd=repo, capture_output=True, text=True, check=True)
    assert len(listed.stdout.splitlines()) == 1
    assert sorted(os.listdir(marker)) == []


@pytest.mark.skipif(sys.platform == "win32", reason="the planted programs are shell scripts")
def test_a_required_filter_fails_the_worktree_child_and_runs_nothing(tmp_path: Path) -> None:
    # A filter that must run (Git LFS marks its own `required`) is not run either: the child fails
    # with git's reason, and nothing is left behind in the repository.
    repo, marker = _planted_repository(tmp_path)
    subprocess.run(["git", "config", "filter.evil.required", "true"], cwd=repo, check=True)
    session, _ = _run_worktree_child(repo)
    assert sorted(os.listdir(marker)) == []
    result = tool_results(session)["c1"]
    assert result.startswith("Error: the subagent failed: OptionError: workspace='worktree': git worktree add failed")
    assert "smudge filter evil failed" in result
    listed = subprocess.run(["git", "worktree", "list"], cwd=repo, capture_output=True, text=True, check=True)
    assert len(listed.stdout.splitlines()) == 1


def test_a_worktree_is_not_made_of_the_work_tree_a_repository_names_elsewhere(tmp_path: Path) -> None:
    # core.worktree in the workspace's .git/config made `rev-parse --show-toplevel` answer another
    # directory, and the child got a worktree of whatever repository lay there.
    victim = tmp_path / "victim"
    victim.mkdir()
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=victim, check=True)
    (victim / "a.txt").write_text("victim text\n")
    subprocess.run([*git, "add", "."], cwd=victim, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], cwd=victim, check=True)
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "config", "core.worktree", str(victim)], cwd=repo, check=True)
    session, _ = _run_worktree_child(repo, git=False)
    result = tool_results(session)["c1"]
    assert "names a work tree outside it" in result and "victim text" not in result
    listed = subprocess.run(["git", "worktree", "list"], cwd=victim, capture_output=True, text=True, check=True)
    assert len(listed.stdout.splitlines()) == 1


@pytest.mark.skipif(sys.platform == "win32", reason="the planted programs are shell scripts")
def test_git_takes_no_git_variable_of_the_parent_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The parent's GIT_* variables reached the library's git: GIT_EXEC_PATH made git worktree add
    # run the `git` found there for its checkout, and GIT_DIR / GIT_INDEX_FILE pointed every git
    # command (the worktree, the environment section's status) at another repository.
    from agentcontext.compiler.environment import git_state

    repo, marker = _planted_repository(tmp_path)
    head = subprocess.run(
        ["git", "symbolic-ref", "--short", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    )
    other = tmp_path / "other"
    other.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "elsewhere"], cwd=other, check=True)
    exec_path = tmp_path / "exec-path"
    exec_path.mkdir()
    planted = exec_path / "git"
    planted.write_text(f'#!/bin/sh\ntouch {marker}/exec-path\nexec {shutil.which("git")} "$@"\n')
    planted.chmod(0o755)
    monkeypatch.setenv("GIT_EXEC_PATH", str(exec_path))
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "index"))
    assert git_state(repo) == (head.stdout.strip(), [])  # the workspace's repository, not GIT_DIR's
    session, _ = _run_worktree_child(repo)
    assert sorted(os.listdir(marker)) == []
    assert tool_results(session)["c1"] == "child read: committed text\n"
    assert not (tmp_path / "index").exists()


def test_a_worktree_child_reads_the_instruction_names_its_parent_loaded(tmp_path: Path) -> None:
    # The child's working set was loaded in its worktree with the default names (AGENTS.md,
    # CLAUDE.md), whatever instruction_names the parent's was loaded with.
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    (repo / "a.txt").write_text("committed text\n")
    (repo / "RULES.md").write_text("Rule from RULES.md: answer in French.\n")
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], cwd=repo, check=True)
    _, requests = _run_worktree_child(repo, instruction_names=["RULES.md"], git=False)
    child_first = next(r for r in requests if first_user(r) == "child")
    assert "Rule from RULES.md: answer in French." in texts(child_first.body["messages"][0])


def _memory_store(tmp_path: Path) -> Any:
    from agentcontext.memory import MemoryStore

    store = MemoryStore(directory=tmp_path / "memory")
    store.write("build-notes", type="project", description="how the build works", body="run make twice")
    return store


def memory_text(request: Recorded) -> str:
    system = texts(request.body["messages"][0])
    return system[system.index("# Memory") :]


def test_a_child_keeps_the_memory_reads_and_its_rules_name_only_them(tmp_path: Path) -> None:
    # Children lost memory_show, memory_list and memory_search with the writes, while their prompt
    # still told them to read records with memory_show and to keep them with memory_write.
    def script(request: Recorded) -> Reply:
        task, last = first_user(request), request.body["messages"][-1]
        if task == "top":
            return Reply(tool_calls=[agent_call("a", "child", "c1")]) if last["role"] == "user" else Reply(text="ok")
        if last["role"] == "user":
            return Reply(tool_calls=[{"name": "memory_show", "arguments": {"name": "build-notes"}, "id": "m1"}])
        return Reply(text="child ok")

    with LLMServer(default=script) as server:
        compiler = Compiler(WorkingSet(registry=Registry(), memory=_memory_store(tmp_path)))
        session = Session(chat(server), compiler=compiler, subagents=True)
        session.run("top")
        child_first = next(r for r in server.requests if first_user(r) == "child")
        parent_first = server.requests[0]
    names = sorted(t["function"]["name"] for t in child_first.body.get("tools", []))
    assert names == ["memory_list", "memory_search", "memory_show"]
    child_rules = memory_text(child_first)
    assert "memory_show" in child_rules
    assert "memory_write" not in child_rules and "memory_delete" not in child_rules
    assert "Memory cannot be changed here" in child_rules
    assert "memory_write" in memory_text(parent_first)  # the root's rules are unchanged
    assert session.subagents is not None and session.subagents.results[0].session is not None
    assert "run make twice" in tool_results(session.subagents.results[0].session)["m1"]


@pytest.mark.parametrize("hiding", ["filter", "deny"])
def test_plan_mode_memory_rules_name_no_hidden_tool(tmp_path: Path, hiding: str) -> None:
    # In plan mode the memory section still said "Keep (memory_write, ...)" and "delete it
    # (memory_delete)": tools the mode hides and refuses.
    with LLMServer() as server:
        compiler = Compiler(WorkingSet(registry=Registry(), memory=_memory_store(tmp_path)), hiding=hiding)
        session = Session(chat(server), compiler=compiler)
        session.send("look")
        default = memory_text(server.last)
        compiler.set_mode("plan")
        session.send("plan")
        plan = memory_text(server.last)
        offered = {t["function"]["name"] for t in server.last.body["tools"]}
    if hiding == "filter":
        assert offered == {"memory_show", "memory_list", "memory_search"}
        assert "memory_show" in plan and "memory_write" not in plan and "memory_delete" not in plan
        assert "Keep (memory_write" in default and "(memory_delete)" in default
    else:
        # The catalog and the prompt stay the same in every mode: the rules say plan mode refuses
        # the writes the catalog still lists.
        assert "memory_write" in offered and plan == default
        assert "In plan mode memory_write and memory_delete are refused" in plan


@pytest.mark.parametrize("arguments", [None, {"command": "rm -rf /"}, b'{"command":"rm -rf /"}', 5])
def test_permissions_refuse_arguments_that_are_not_the_json_text_with_a_typed_error(arguments: object) -> None:
    # A dict, bytes or None raised a bare AttributeError/TypeError from deep in the matcher.
    permissions = Permissions([Rule("bash", "deny", arguments=r"rm\s+-rf")])
    for check in (permissions.decide, permissions.settings_decision, permissions.rules[0].matches):
        with pytest.raises(ArgumentTypeError, match=r"JSON text the model sent \(str\), got"):
            check("bash", arguments)  # type: ignore[operator]
    with pytest.raises(ArgumentTypeError, match="tool name must be a str, got NoneType"):
        permissions.decide(None, "{}")  # type: ignore[arg-type]


def test_duplicate_keys_the_rule_sees_the_value_the_tool_runs() -> None:
    # json.loads keeps the last of duplicate keys; the rule's canonical rendering and the tool's
    # parsed arguments come from that same parse, so a rule cannot be shown one command while the
    # tool runs another. A deny rule also sees the value a repeated key shadows (a tool parsing
    # the text itself may keep the first): a call that names a denied command anywhere is denied.
    permissions = Permissions(
        [Rule("bash", "deny", arguments=r"rm\s+-rf"), Rule("bash", "allow", arguments=r'^\{"command":"ls"\}$')]
    )
    ran = []
    call = ToolCall("c1", "bash", '{"command":"ls","command":"rm -rf /"}')
    assert permissions.decide(call.name, call.arguments) == "deny"
    assert permissions.decide("bash", '{"command":"rm -rf /","command":"ls"}') == "deny"
    other = ToolCall("c2", "bash", '{"command":"pwd","command":"ls"}')
    assert permissions.decide(other.name, other.arguments) == "allow"
    ran.append(other.parsed())
    assert ran == [{"command": "ls"}]
    assert Arguments(other.arguments).canonical == json.dumps(ran[0], separators=(",", ":"))
