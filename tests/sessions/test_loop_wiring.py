"""Every path of the agent loop wired (issue 25, section 6): a compactor object plans with the
provider's window; a memory flush turn, seeing the originals of what leaves and the system
prompt, precedes every summary; workspace anchors and goal checks read the workspace's files and
none outside it; a resume after kill -9 mid-turn leaves the session log agreeing with the
session; compacting a conversation another thread extends reads one consistent copy. Over the
loopback server with the real SDK clients, real files, a real killed process and real threads."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.budgets import ResultStore
from agentcontext.compaction import PRESETS, CompactionPolicy, Compactor
from agentcontext.compaction.llm import LLMSummarizer
from agentcontext.compiler.compile import Compiler, WorkingSet
from agentcontext.compiler.goal import EvidenceJudge, FileContains, Goal
from agentcontext.errors import OptionError
from agentcontext.memory import MemoryStore, MemoryTools
from agentcontext.memory.anchors import WorkspaceAnchors
from agentcontext.memory.flush import FLUSH_INSTRUCTION
from agentcontext.sessions import SnapshotStore
from agentcontext.sessions.log import SessionLog
from agentcontext.sessions.loop import Session
from tests import support
from tests.llm_server import LLMServer, Recorded, Reply

pytest.importorskip("openai", reason="the openai SDK is a test extra: pip install -e '.[test]'")
pytest.importorskip("anthropic", reason="the anthropic SDK is a test extra: pip install -e '.[test]'")

ROOT = support.ROOT
SYSTEM = "You are the payments agent. House rule 7: never deploy on Fridays."


def make(kind: str, server: LLMServer, window: int) -> Any:
    return support.provider(kind, server, context_window=window)


def _sent_text(request: Recorded) -> str:
    return json.dumps(request.body, ensure_ascii=False)


def _is_flush(request: Recorded) -> bool:
    return FLUSH_INSTRUCTION[:60] in _sent_text(request)


def _is_summary(request: Recorded) -> bool:
    return "handing this task over" in _sent_text(request)


def _agent_replies(request: Recorded) -> Reply:
    """The loopback model: a flush turn saves nothing, a summary request gets a summary that
    quotes the user's requests, an agent turn answers with a long reply (the history grows)."""
    text = _sent_text(request)
    if _is_flush(request):
        return Reply("nothing", output_tokens=1)
    if _is_summary(request):
        asks = sorted(set(re.findall(r"Step \d+: [a-z ]+", text)))
        return Reply(
            "<summary>## Current state\n- working on the steps\n\n## User requests\n" + "\n".join(asks) + "</summary>"
        )
    return Reply("Done. " + "Details of the work follow. " * 330)


# -- 1. a compactor object plans with the provider's window -------------------------------------------


def test_a_compactor_object_adopts_the_provider_window_or_refuses_a_larger_one(server: LLMServer) -> None:
    provider = make("openai", server, 24_000)
    session = Session(provider, compactor=Compactor("openharness"), result_policy=False)
    assert session.compactor.policy.context_window == 24_000
    own = Compactor(CompactionPolicy(context_window=16_000))  # set smaller: the user's choice, kept
    assert Session(provider, compactor=own).compactor.policy.context_window == 16_000
    with pytest.raises(OptionError, match=r"context_window \(100,000 tokens.*larger than the provider's \(24,000"):
        Session(provider, compactor=Compactor(CompactionPolicy(context_window=100_000)))
    with pytest.raises(ac.AgentContextError):
        Session(provider, compactor=object())  # type: ignore[arg-type]


def test_a_compactor_object_compacts_at_its_trigger_not_only_in_the_emergency(server: LLMServer) -> None:
    server.default = _agent_replies
    provider = make("openai", server, 24_000)
    session = Session(
        provider, compactor=Compactor("openharness"), system=SYSTEM, result_policy=False, max_output_tokens=1_000
    )
    for step in range(12):
        session.run(f"Step {step}: do the next part")
        if session.compactions:
            break
    assert session.compactions, "the session never compacted"
    first = session.compactions[0]
    # Compacted at the trigger (85% of 24,000 less the request's overhead), long before the request
    # would overflow the window: the emergency recompile (the only way before) had nothing to do.
    assert first.tokens_before <= 0.85 * 24_000
    assert session.compactor.policy.context_window == 24_000


# -- 2. a flush turn before every summary, on every path ----------------------------------------------


def _flush_compactor(server: LLMServer, tmp_path: Path, window: int, **policy: Any) -> tuple[Compactor, MemoryStore]:
    store = MemoryStore(directory=tmp_path / "mem")
    summarizer = LLMSummarizer(make("openai", server, window))
    base = replace(PRESETS["openharness"].compaction, **policy)
    return Compactor(base, summarizer=summarizer, memory=MemoryTools(store)), store


def test_the_recompile_path_flushes_the_originals_with_the_system_prompt(server: LLMServer, tmp_path: Path) -> None:
    server.default = _agent_replies
    compactor, _ = _flush_compactor(server, tmp_path, 400_000)
    conv = ac.Conversation(support.synthetic_session(120, seed=4), format="openai")
    result = compactor.recompile(conv, conv.tokens // 3, system=SYSTEM)
    stages = [s.stage for s in result.stages]
    assert "summarize" in stages, stages
    assert "flush" in stages and stages.index("flush") < stages.index("summarize")
    flushes = [r for r in server.requests if _is_flush(r)]
    assert len(flushes) == 1
    sent = flushes[0].body
    system = [m for m in sent["messages"] if m["role"] == "system"]
    assert system and SYSTEM in json.dumps(system)


def test_the_flush_sees_results_the_clear_stage_cleared_as_they_were(server: LLMServer, tmp_path: Path) -> None:
    server.default = _agent_replies
    compactor, _ = _flush_compactor(server, tmp_path, 400_000, recent_messages=4, recent_tools=1)
    msgs = support.synthetic_session(160, seed=7)
    conv = ac.Conversation(msgs, format="openai")
    result = compactor.compact(conv, budget=conv.tokens // 5, system=SYSTEM)
    stages = [s.stage for s in result.stages]
    assert "clear" in stages and "summarize" in stages, stages
    assert stages.index("clear") < stages.index("flush") < stages.index("summarize")
    (flush,) = [r for r in server.requests if _is_flush(r)]
    shown = [m for m in flush.body["messages"] if m["role"] == "tool"]
    assert shown, "the flush turn showed no tool result"
    assert not any("[cleared" in json.dumps(m) for m in shown)
    originals = {m["tool_call_id"]: m["content"] for m in msgs if m["role"] == "tool"}
    assert all(m["content"] == originals[m["tool_call_id"]] for m in shown)
    event = result.stages[stages.index("flush")]
    assert event.detail["shown_messages"] == event.detail["leaving_messages"] > 0


def test_the_flush_sees_results_an_earlier_compaction_cleared_from_the_store(server: LLMServer, tmp_path: Path) -> None:
    server.default = _agent_replies
    compactor, _ = _flush_compactor(server, tmp_path, 400_000, recent_messages=4)
    compactor.store = ResultStore(tmp_path / "recall")
    msgs = support.synthetic_session(160, seed=8)
    originals = {m["tool_call_id"]: m["content"] for m in msgs if m["role"] == "tool"}
    conv = ac.Conversation(msgs, format="openai")
    # An earlier compaction cleared these results and kept their text under their call ids.
    cleared, report = conv.clear_tool_results(recall_ids=True, recent_messages=40)
    assert report["cleared"]
    for c in report["cleared"]:
        compactor.store.put(originals[c["tool_use_id"]], alias=c["tool_use_id"])
    result = compactor.compact(cleared, budget=cleared.tokens // 3, system=SYSTEM)
    event = next(s for s in result.stages if s.stage == "flush")
    assert event.detail["results_restored"] > 0
    (flush,) = [r for r in server.requests if _is_flush(r)]
    shown = [m for m in flush.body["messages"] if m["role"] == "tool"]
    assert shown and not any("[cleared" in json.dumps(m) for m in shown)
    assert all(m["content"] == originals[m["tool_call_id"]] for m in shown)


def test_the_flush_shows_the_newest_of_what_leaves_when_all_of_it_does_not_fit(
    server: LLMServer, tmp_path: Path
) -> None:
    server.default = _agent_replies
    compactor, _ = _flush_compactor(server, tmp_path, 8_000)
    conv = ac.Conversation(support.synthetic_session(150, seed=5), format="openai")
    assert conv.tokens > 15_000
    result = compactor.compact(conv, budget=conv.tokens // 4, system=SYSTEM)
    event = next(s for s in result.stages if s.stage == "flush")
    assert 0 < event.detail["shown_messages"] < event.detail["leaving_messages"]
    assert event.detail["omitted_messages"] > 0
    (flush,) = [r for r in server.requests if _is_flush(r)]
    assert ac.count_tokens(_sent_text(flush)) < 8_000


def test_a_manual_compaction_flushes_too(server: LLMServer, tmp_path: Path) -> None:
    server.default = _agent_replies
    compactor, _ = _flush_compactor(server, tmp_path, 400_000)
    conv = ac.Conversation(support.synthetic_session(60, seed=2), format="openai")
    result = compactor.compact(conv, manual=True, system=SYSTEM)
    stages = [s.stage for s in result.stages]
    assert stages.index("flush") < stages.index("summarize")


@pytest.mark.parametrize("kind", ["anthropic", "openai", "responses"])
def test_a_14_turn_session_flushes_before_every_summary(kind: str, server: LLMServer, tmp_path: Path) -> None:
    """The issue's "must show": memory, an LLM summarizer and a Compactor object in a 14-turn
    Session over the loopback server; every compaction that summarizes has a flush event first,
    the flush turn carries the system prompt, and one flush request precedes every summary request."""
    server.default = _agent_replies
    window = 24_000
    store = MemoryStore(directory=tmp_path / "mem")
    provider = make(kind, server, window)
    compactor = Compactor(
        replace(PRESETS["openharness"].compaction, recent_messages=4),
        summarizer=LLMSummarizer(make(kind, server, window)),
        memory=MemoryTools(store),
    )
    log = SessionLog(tmp_path / "s.jsonl", format=provider.format)
    session = Session(
        provider, compactor=compactor, system=SYSTEM, log=log, max_output_tokens=1_000, result_policy=False
    )
    for step in range(14):
        session.run(f"Step {step}: do the next part")
    summaries = [c for c in session.compactions if c.summary]
    assert len(summaries) >= 2, [[s.stage for s in c.stages] for c in session.compactions]
    for c in session.compactions:
        stages = [s.stage for s in c.stages]
        if "summarize" in stages and not c.stages[stages.index("summarize")].detail.get("failed"):
            assert "flush" in stages and stages.index("flush") < stages.index("summarize"), stages
    kinds = ["flush" if _is_flush(r) else "summary" if _is_summary(r) else "agent" for r in server.requests]
    for k, what in enumerate(kinds):
        if what == "summary":  # the request before it (past other parts of the same summary) is a flush
            assert next(kinds[j] for j in range(k - 1, -1, -1) if kinds[j] != "summary") == "flush", kinds
    flushes = [r for r in server.requests if _is_flush(r)]
    assert len(flushes) >= len(summaries)
    assert all(SYSTEM in _sent_text(r) for r in flushes)
    logged = [c.get("stages") or [] for c in log.compactions]
    assert sum(1 for st in logged if any(s["stage"] == "flush" for s in st)) >= len(summaries)


# -- 3. anchors and goal checks read the workspace -------------------------------------------------------


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "PLAN.md").write_text("1. the workspace's plan\n")
    (ws / "NOTES.md").write_text("status: done\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "PLAN.md").write_text("1. the wrong plan (the process's current directory)\n")
    (elsewhere / "NOTES.md").write_text("status: done\n")
    (tmp_path / "secret.txt").write_text("API_KEY=sk-do-not-leak\n")
    return ws, elsewhere


def test_anchors_resolve_against_the_workspace_not_the_process_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, elsewhere = _workspace(tmp_path)
    monkeypatch.chdir(elsewhere)
    text = json.dumps(WorkspaceAnchors(["PLAN.md"], workspace=ws).messages())
    assert "the workspace's plan" in text and "wrong plan" not in text
    # Bound by a Session to its compiler's workspace when not given.
    compactor = Compactor("openharness", anchors=WorkspaceAnchors(["PLAN.md"]))
    with LLMServer() as server:
        provider = support.provider("openai", server)
        session = Session(provider, compactor=compactor, compiler=Compiler(WorkingSet.load(workspace=ws, git=False)))
        text = json.dumps(session.compactor.anchors.messages())  # type: ignore[union-attr]
    assert "the workspace's plan" in text and "wrong plan" not in text
    assert compactor.anchors is not None and compactor.anchors.workspace is None  # the caller's is unchanged


def test_anchors_do_not_follow_symlinks_out_of_the_workspace(tmp_path: Path) -> None:
    ws, _ = _workspace(tmp_path)
    (ws / "PLAN.md").unlink()
    (ws / "PLAN.md").symlink_to(tmp_path / "secret.txt")
    (ws / "ENV.md").symlink_to("/proc/self/environ")
    (ws / "docs").mkdir()
    (ws / "docs" / "real.md").write_text("inside, reached through a link\n")
    (ws / "INSIDE.md").symlink_to(ws / "docs" / "real.md")
    paths = ["PLAN.md", "ENV.md", "../secret.txt", str(tmp_path / "secret.txt"), "INSIDE.md"]
    messages = WorkspaceAnchors(paths, workspace=ws).messages()
    text = json.dumps(messages)
    assert "sk-do-not-leak" not in text and "PATH=" not in text
    assert text.count("outside the workspace") == 4
    assert "inside, reached through a link" in text


def test_goal_file_checks_resolve_against_the_workspace_and_stay_in_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, elsewhere = _workspace(tmp_path)
    (elsewhere / "NOTES.md").write_text("status: pending\n")
    (ws / "NOTES.md").write_text("status: done\n")
    monkeypatch.chdir(elsewhere)
    conv = ac.Conversation([], format="openai")
    judge = EvidenceJudge(FileContains("NOTES.md", "done"))
    compiler = Compiler(WorkingSet.load(workspace=ws, git=False))
    compiler.working_set.goal = Goal("notes say done", judge)
    assert compiler.after_reply(conv) is None  # met: the workspace's NOTES.md was read
    assert compiler.working_set.goal.status == "met"
    assert EvidenceJudge(FileContains("NOTES.md", "done"), workspace=ws).judge("g", conv).met
    (ws / "LEAK.md").symlink_to(tmp_path / "secret.txt")
    for path in ("LEAK.md", "../secret.txt", str(tmp_path / "secret.txt")):
        verdict = EvidenceJudge(FileContains(path, "sk-"), workspace=ws).judge("g", conv)
        assert not verdict.met and "outside the workspace" in verdict.missing, path


# -- 4. kill -9 mid-turn, resume: the log agrees with the session ----------------------------------------

KILLED_MID_TURN = textwrap.dedent(
    """
    import sys, time
    from agentcontext.sessions.loop import Session
    from agentcontext.providers import OpenAIChatProvider
    from agentcontext.sessions.log import SessionLog
    from agentcontext.sessions import SnapshotStore

    url, directory, log_path = sys.argv[1], sys.argv[2], sys.argv[3]
    provider = OpenAIChatProvider("gpt-test", base_url=url + "/v1", api_key="k", max_retries=0, context_window=100000)

    def deploy(args):
        print("in tool", flush=True)
        time.sleep(600)
        return "deployed"

    session = Session(provider, system="be brief", snapshots=SnapshotStore(directory),
                      log=SessionLog(log_path), functions={"deploy": deploy})
    session.run("one")
    print("turn one", flush=True)
    session.run("two: deploy it")
    """
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), str(ROOT), env.get("PYTHONPATH", "")])
    return env


@pytest.mark.skipif(sys.platform == "win32", reason="kill -9 is POSIX")
def test_kill_9_mid_turn_then_resume_leaves_the_log_agreeing_with_the_session(
    server: LLMServer, tmp_path: Path
) -> None:
    directory, log_path = tmp_path / "snap", tmp_path / "session.jsonl"
    server.enqueue(Reply("first answer"), Reply("", tool_calls=[{"name": "deploy", "arguments": {"env": "prod"}}]))
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_MID_TURN, server.url, str(directory), str(log_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "turn one"
    assert proc.stdout.readline().strip() == "in tool"  # mid-turn: the call is logged, its result never
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    lost = SessionLog(log_path).working_set()
    assert len(lost) == 4  # one, its answer, two, the call never answered
    assert [v["kind"] for v in lost.validate()] == ["missing_result"]

    provider = make("openai", server, 100_000)
    log = SessionLog(log_path)
    resumed = Session.resume(SnapshotStore(directory), provider, system="be brief", log=log, functions={})
    assert resumed.turn == 1
    working = log.working_set()
    assert working.to_openai() == resumed.conversation.to_openai()
    assert working.validate() == []
    assert any("set aside" in note for note in resumed.resume_notes)
    (record,) = [c for c in log.compactions if "reconciled" in c]
    assert record["reconciled"]["reason"] == "resume"
    assert record["reconciled"]["set_aside"] == [2, 3] and record["reconciled"]["added_messages"] == 0
    assert len(log.originals()) == 4  # nothing leaves the log
    # A reader opening the file anew sees the same; the next turn goes on from the session.
    assert SessionLog(log_path).working_set().to_openai() == resumed.conversation.to_openai()
    server.enqueue(Reply("three done"))
    resumed.run("three")
    again = SessionLog(log_path).working_set()
    assert again.to_openai() == resumed.conversation.to_openai() and again.validate() == []
    # Resuming again when they agree writes nothing.
    before = log_path.read_bytes()
    Session.resume(SnapshotStore(directory), provider, system="be brief", log=SessionLog(log_path))
    assert log_path.read_bytes() == before


def test_reconcile_logs_what_the_session_holds_and_the_log_never_saw(tmp_path: Path) -> None:
    log = SessionLog(tmp_path / "s.jsonl")
    conv = ac.Conversation([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}], format="openai")
    log.append(conv)
    assert log.reconcile(conv) is None
    other = ac.Conversation([{"role": "user", "content": "a"}, {"role": "assistant", "content": "c"}], format="openai")
    record = log.reconcile(other, reason="edited")
    assert record is not None and record["reconciled"]["set_aside"] == [1]
    assert record["reconciled"]["added_messages"] == 1
    assert log.working_set().to_openai() == other.to_openai()
    assert len(log.originals()) == 3
    with pytest.raises(OptionError):
        log.reconcile([{"role": "user", "content": "a"}])  # type: ignore[arg-type]


# -- 5. compacting a conversation another thread extends --------------------------------------------------


def test_compact_reads_a_consistent_copy_of_a_conversation_being_extended() -> None:
    msgs = support.synthetic_session(300, seed=1)
    failures: list[BaseException] = []
    iterations = 40
    for it in range(iterations):
        conv = ac.Conversation(msgs[:160], format="openai")
        stop = threading.Event()

        def grow(conv: ac.Conversation = conv, stop: threading.Event = stop) -> None:
            k = 0
            while not stop.is_set():
                conv.extend([{"role": "user", "content": f"more {k} " * 40}])
                k += 1

        thread = threading.Thread(target=grow)
        thread.start()
        try:
            compactor = Compactor("openharness")
            result = compactor.compact(conv, budget=30_000) if it % 2 else compactor.maybe_compact(conv)
            if result is not None:
                assert result.conversation.validate() == []
                assert len(result.provenance) == len(result.conversation)
                assert all(q is None or q < len(result.original) for q in result.provenance)
            compactor.recompile(conv, 20_000)
        except BaseException as exc:  # noqa: BLE001 - counted, the first one re-raised below
            failures.append(exc)
        finally:
            stop.set()
            thread.join()
    assert not failures, f"{len(failures)} of {iterations} failed: {failures[0]!r}"


def test_a_compaction_that_changes_nothing_returns_the_copy_it_read() -> None:
    conv = ac.Conversation([{"role": "user", "content": "hello"}], format="openai")
    result = Compactor("openharness").compact(conv)
    assert result.conversation is result.original and not result.compacted
    assert result.conversation.to_openai() == conv.to_openai()
    conv.append({"role": "assistant", "content": "hi"})
    assert len(result.original) == 1  # the caller's conversation goes on alone
