"""The compaction engine: the ladder end to end on the shared corpus, failure semantics,
anti-loop guards, staged and updated summaries, re-attached files, presets, the session log
(including a writer killed mid-append) and the `compact` command."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.budgets import FileReader
from agentcontext.compaction import PRESETS, CompactionError, CompactionPolicy, Compactor
from agentcontext.compaction.summarize import SUMMARY_MARKER, OfflineSummarizer, SummaryRequest, strip_scratchpad
from agentcontext.sessions.log import SessionLog
from tests import support


def same_messages(result: Any) -> None:
    """Every message the result kept unchanged equals its original, byte for byte."""
    each = support.each_message(result.conversation)
    originals = support.each_message(result.original)
    for i, p in enumerate(result.provenance):
        if p is not None:
            assert each[i] == originals[p], (i, p)


@pytest.mark.parametrize("path", support.normalized_files(), ids=lambda p: f"{p.parent.name}/{p.stem[:40]}")
def test_ladder_on_the_corpus(path: Path, transcripts: Path, tmp_path: Path) -> None:
    conv = ac.Conversation.from_file(path)
    for share in (0.1, 0.25, 0.5):
        budget = max(1, int(conv.tokens * share))
        result = Compactor("openharness").compact(conv, budget=budget)
        assert result.tokens_after == result.conversation.tokens
        if result.fits:
            assert result.tokens_after <= budget
        else:
            assert result.reason and any(
                w in result.reason for w in ("never split", "over the budget", "cut to a head")
            )
        assert result.conversation.validate() == []
        same_messages(result)
        # The recent messages are the originals, byte for byte: the result ends with an unbroken
        # run of the original's last messages, covering the protected last 12 when they are kept.
        run = 0
        while run < len(result.provenance) and result.provenance[-1 - run] == len(conv) - 1 - run:
            run += 1
        assert all(p is None or p < len(conv) - run for p in result.provenance[: len(result.provenance) - run])
        # A round the fill added cut (head + marker + tail) opens the raw part: from there on
        # every message is kept or cut, none summarized or dropped.
        cut_fill = any(s.stage == "fill" and s.detail.get("messages_cut") for s in result.stages)
        if result.fits and result.summary is not None and not any(s.stage in ("drop", "cut") for s in result.stages):
            if cut_fill:
                assert set(result.fates()[result.first_kept :]) <= {"kept", "changed"}
            else:
                assert run >= min(12, len(conv) - result.first_kept)
        log = SessionLog(tmp_path / f"{share}.jsonl", format=conv.format)  # type: ignore[arg-type]
        log.append(conv)
        log.record_compaction(result)
        reloaded = SessionLog(tmp_path / f"{share}.jsonl")
        assert support.each_message(reloaded.originals()) == support.each_message(conv)
        assert support.each_message(reloaded.working_set()) == support.each_message(result.conversation)


def session_conv(n: int = 300, seed: int = 3) -> ac.Conversation:
    return ac.Conversation(support.synthetic_session(n, seed=seed))


class Failing:
    def summarize(self, request: SummaryRequest) -> str:
        raise RuntimeError("provider down")


class Empty:
    def summarize(self, request: SummaryRequest) -> str:
        return "<analysis>thinking</analysis>"


class Larger:
    def summarize(self, request: SummaryRequest) -> str:
        return "blah " * (request.tokens * 2)


@pytest.mark.parametrize("summarizer", [Failing(), Empty(), Larger()], ids=["fails", "empty", "larger"])
def test_auto_failure_keeps_the_cleared_conversation(summarizer: Any) -> None:
    conv = session_conv()
    policy = PRESETS["openharness"].compaction.for_budget(conv.tokens // 8)
    policy = CompactionPolicy(**{**policy.__dict__, "drop_oldest_groups": False})
    compactor = Compactor(policy, summarizer=summarizer, fallback=None)
    result = compactor.compact(conv)
    stages = [s.stage for s in result.stages]
    assert stages == ["clear", "summarize"]
    assert "failed" in result.stages[-1].detail
    cleared, _ = conv.clear_tool_results(recall_ids=False)  # a compactor without a store
    assert support.each_message(result.conversation) == support.each_message(cleared)
    assert result.summary is None and not result.fits


@pytest.mark.parametrize("summarizer", [Failing(), Empty(), Larger()], ids=["fails", "empty", "larger"])
def test_auto_failure_falls_back_to_the_offline_summarizer(summarizer: Any) -> None:
    conv = session_conv()
    result = Compactor(summarizer=summarizer).compact(conv, budget=conv.tokens // 8)
    summary_stage = result.stages[-1] if result.stages[-1].stage == "summarize" else result.stages[-2]
    assert summary_stage.detail["summarizer"] == "OfflineSummarizer"
    assert "used the fallback" in summary_stage.detail["note"]
    assert result.summary and result.fits


@pytest.mark.parametrize("summarizer", [Failing(), Empty(), Larger()], ids=["fails", "empty", "larger"])
def test_manual_failure_raises_and_leaves_history_unchanged(summarizer: Any) -> None:
    conv = session_conv()
    before = support.each_message(conv)
    with pytest.raises(CompactionError, match="history unchanged"):
        Compactor(summarizer=summarizer).compact(conv, manual=True)
    assert support.each_message(conv) == before


def test_manual_compaction_keeps_the_last_two_messages() -> None:
    conv = session_conv()
    result = Compactor().compact(conv, manual=True)
    assert [s.stage for s in result.stages][-1] == "summarize"
    # The last 2 messages, extended back to the nearest point that keeps calls with their results.
    cut = max(c for c in support.cut_points(conv) if c <= len(conv) - 2)
    assert result.stages[-1].detail["kept_raw"] == len(conv) - cut >= 2
    assert result.conversation.validate() == []
    same_messages(result)


def test_stages_stop_as_soon_as_the_target_is_met() -> None:
    conv = session_conv()
    cleared, _report = conv.clear_tool_results()
    result = Compactor().compact(conv, budget=cleared.tokens + 10)
    # Clearing met the target; the fill gives back the newest cleared results that fit.
    assert [s.stage for s in result.stages] in (["clear"], ["clear", "fill"])
    assert result.summary is None and result.fits
    untouched = Compactor().compact(conv, budget=conv.tokens + 10)
    assert [s.stage for s in untouched.stages] == ["skip"]
    assert support.each_message(untouched.conversation) == support.each_message(conv)


def test_anti_loop_guards() -> None:
    conv = session_conv(400)
    policy = CompactionPolicy(context_window=conv.tokens, reserved_output=0, safety_margin=0, trigger=0.5, target=0.3)
    compactor = Compactor(policy)
    first = compactor.maybe_compact(conv)
    assert first is not None and first.tokens_after < first.tokens_before
    # At steady state (the compacted working set, under the trigger) nothing happens again.
    assert compactor.maybe_compact(first.conversation) is None
    assert compactor.maybe_compact(first.conversation) is None
    # A compaction that freed nothing is not repeated while nothing has grown.
    stuck = Compactor(CompactionPolicy(context_window=100, reserved_output=0, safety_margin=0, trigger=0.5, target=0.5,
                                       tool_result_budgets=False, clear_tool_results=False, summarize=False,
                                       drop_oldest_groups=False))  # fmt: skip
    small = ac.Conversation([{"role": "user", "content": "x " * 200}])
    r = stuck.maybe_compact(small)
    assert r is not None and r.tokens_after >= r.tokens_before
    assert stuck.maybe_compact(small) is None
    # Cooldown in turns.
    cool = Compactor(
        CompactionPolicy(
            context_window=conv.tokens, reserved_output=0, safety_margin=0, trigger=0.5, target=0.3, cooldown_turns=3
        )
    )
    assert cool.maybe_compact(conv) is not None
    assert cool.maybe_compact(conv) is None, "within the cooldown"


def test_a_later_summary_updates_the_previous_one() -> None:
    conv = session_conv(400)
    first = Compactor().compact(conv, budget=conv.tokens // 6)
    grown = ac.Conversation.concat([first.conversation, session_conv(200, seed=9).slice(1)])
    second = Compactor().compact(grown, budget=grown.tokens // 3)
    assert second.summary is not None
    text = json.dumps(second.conversation.to_openai())
    assert text.count(SUMMARY_MARKER) == 1, "not nested"
    assert "Please fix" in second.summary
    assert second.conversation.validate() == []


def test_an_updated_summary_keeps_the_latest_request_when_no_new_one_came() -> None:
    # A long tool loop after one request: the first summary quotes the request; the second covers
    # only tool calls since, and must still carry the request as the latest one (not drop it).
    def loop(start: int, stop: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for i in range(start, stop):
            call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": f'{{"n": {i}}}'}}
            out.append({"role": "assistant", "content": f"Reading part {i}.", "tool_calls": [call]})
            out.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"part {i}: " + "data " * 300})
        return out

    ask = "Please audit every part of the archive for corrupted records."
    conv = ac.Conversation(
        [{"role": "system", "content": "Be careful."}, {"role": "user", "content": ask}, *loop(0, 8)]
    )
    policy = dataclasses.replace(PRESETS["openharness"].compaction, clear_tool_results=False, recent_messages=2)
    first = Compactor(policy).compact(conv, budget=conv.tokens // 3)
    assert first.summary is not None and ask in first.summary
    grown = ac.Conversation([*first.conversation.to_openai(), *loop(8, 16)])
    second = Compactor(policy).compact(grown, budget=grown.tokens // 3)
    assert second.summary is not None and second.summary_in_output()
    assert ask in second.summary
    assert json.dumps(second.conversation.to_openai()).count(SUMMARY_MARKER) == 1


def test_staged_summary_when_older_history_exceeds_the_summarizer_window() -> None:
    calls: list[dict[str, Any]] = []

    class Recording(OfflineSummarizer):
        window_bound = True  # behave like an LLM summarizer with a context window

        def summarize(self, request: SummaryRequest) -> str:
            calls.append(request.context)
            return super().summarize(request)

    conv = session_conv(400)
    policy = CompactionPolicy(
        context_window=conv.tokens, reserved_output=0, safety_margin=0, trigger=0.2, target=0.1, summarizer_window=6_000
    )
    result = Compactor(policy, summarizer=Recording()).compact(conv)
    parts = [c for c in calls if "part" in c]
    assert len(parts) >= 2 and parts[0]["parts"] == len(parts)
    assert calls[-1] == {"merge": True}
    assert result.summary and result.conversation.validate() == []


def test_recent_files_are_reattached(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print('current version')\n")
    messages: list[dict[str, Any]] = [{"role": "user", "content": "read the app"}]
    for i in range(30):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"r{i}",
                        "type": "function",
                        "function": {
                            "name": "read_file",
                            "arguments": json.dumps({"path": str(tmp_path / "src" / "app.py")}),
                        },
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"r{i}", "content": "old version\n" * 100})
    messages.append({"role": "user", "content": "now summarize"})
    conv = ac.Conversation(messages)
    result = Compactor(files=FileReader()).compact(conv, manual=True)
    texts = [m.get("content") or "" for m in result.conversation.to_openai()]
    attached = [t for t in texts if t.startswith("[Re-attached after compaction")]
    assert len(attached) == 1 and "current version" in attached[0]


def test_pinned_messages_are_always_rendered() -> None:
    conv = session_conv(300)
    conv.pin(1)
    result = Compactor().compact(conv, budget=conv.tokens // 8)
    assert result.summary is not None
    assert 1 in result.provenance, "the pinned task statement is still there, verbatim"
    same_messages(result)


def test_environment_overrides_every_field() -> None:
    env = {
        "AGENTCONTEXT_COMPACT__RECENT_MESSAGES": "20",
        "AGENTCONTEXT_COMPACT__TRIGGER": "0.7",
        "AGENTCONTEXT_COMPACT__CLEAR_TOOL_RESULTS": "false",
    }
    p = Compactor(environ=env).policy
    assert (p.recent_messages, p.trigger, p.clear_tool_results) == (20, 0.7, False)
    with pytest.raises(ac.OptionError):
        Compactor(environ={"AGENTCONTEXT_COMPACT__RECENT_MESSAGES": "many"})
    with pytest.raises(ac.OptionError):
        Compactor("nope")
    per_tool = Compactor(environ={"AGENTCONTEXT_COMPACT__PER_TOOL_MAX_CHARS": '{"bash": 4000}'}).policy
    assert dict(per_tool.per_tool_max_chars) == {"bash": 4000}
    with pytest.raises(ac.OptionError):
        Compactor(environ={"AGENTCONTEXT_COMPACT__PER_TOOL_MAX_CHARS": "[1, 2]"})


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_keeps_the_protocol(name: str) -> None:
    conv = session_conv(300)
    result = Compactor(name).compact(conv, budget=conv.tokens // 5)
    assert result.conversation.validate() == []
    assert result.fits, result.reason
    same_messages(result)


def test_scratchpad_is_stripped() -> None:
    assert strip_scratchpad("<analysis>long thoughts</analysis>\n<summary>the state</summary>") == "the state"
    assert strip_scratchpad("<analysis>x</analysis> rest") == "rest"
    assert strip_scratchpad("plain") == "plain"
    assert strip_scratchpad("<summary>cut off before the end") == "cut off before the end"
    # A <summary> tag quoted inside other text (a Claude Code task notification) is content.
    quoted = "## Latest request (verbatim)\n<task-notification>\n<summary>Background command done</summary>"
    assert strip_scratchpad(quoted) == quoted
    # In a model's output, a tag quoted inside its analysis does not count.
    model = "<analysis>the user pasted <summary>x</summary> earlier</analysis>\n<summary>the handoff</summary>"
    assert strip_scratchpad(model) == "the handoff"


def claude_code_with_task_notifications() -> ac.Conversation:
    """A Claude Code session shape: the real requests, then task notifications in user turns that
    quote a <summary> of a background command."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are Claude Code."}]
    for k in range(12):
        messages.append(
            {"role": "user", "content": f"Step {k}: port module_{k}.ex to the new API and keep tests green."}
        )
        for j in range(4):
            cid = f"c{k}_{j}"
            messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": cid,
                            "type": "function",
                            "function": {
                                "name": "Bash",
                                "arguments": json.dumps({"command": f"mix test test/m{k}_{j}_test.exs"}),
                            },
                        }
                    ],
                }
            )
            messages.append({"role": "tool", "tool_call_id": cid, "content": f"{j} tests, 0 failures\n" + "ok\n" * 300})
        messages.append(
            {
                "role": "user",
                "content": (
                    "<task-notification>\n<task-id>b7</task-id>\n<status>completed</status>\n"
                    f'<summary>Background command "Force recompile ash deps {k}" completed (exit code 0)</summary>\n'
                    "</task-notification>"
                ),
            }
        )
        messages.append({"role": "assistant", "content": f"Noted; continuing with step {k}."})
    return ac.Conversation(messages)  # fmt: skip


def test_a_summary_quoted_in_user_text_does_not_become_the_summary() -> None:
    conv = claude_code_with_task_notifications()
    result = Compactor("claude-code", environ={}).compact(conv, budget=conv.tokens // 4)
    assert result.summary is not None
    summarized = next(s for s in result.stages if s.stage == "summarize")
    assert summarized.detail["summary_tokens"] > 200, "not the 20-token collapse"
    assert "Force recompile ash deps" not in result.summary.split("\n\n")[0]
    # The latest real request of the summarized range is the summary's latest request.
    latest_in_range = max(
        i
        for i, m in enumerate(conv.to_jsonl()[: summarized.detail["summarized_messages"] + 1])
        if m["role"] == "user" and str(m["content"]).startswith("Step")
    )
    assert conv[latest_in_range]["content"] in result.summary.split("\n\n")[0]


def test_a_degenerate_summary_is_rejected_and_the_fallback_runs() -> None:
    conv = session_conv(300)

    class Tiny:
        window_bound = False

        def summarize(self, request: SummaryRequest) -> str:
            return "Background command completed (exit code 0)"

    class NoAsk:
        window_bound = False

        def summarize(self, request: SummaryRequest) -> str:
            return "Lots of work happened on the files. " * 60

    for summarizer, why in ((Tiny(), "under the floor"), (NoAsk(), "lacks the latest user request")):
        result = Compactor("openharness", summarizer=summarizer, environ={}).compact(conv, budget=conv.tokens // 4)
        stage = next(s for s in result.stages if s.stage == "summarize")
        assert why in stage.detail["note"] and "used the fallback" in stage.detail["note"]
        assert stage.detail["summarizer"] == "OfflineSummarizer"
        assert result.summary is not None and "## Latest request (verbatim)" in result.summary


# ---------------------------------------------------------------------------------------------
# The session log.


def test_log_rebuilds_rolls_back_and_never_deletes(tmp_path: Path) -> None:
    conv = session_conv(200)
    log = SessionLog(tmp_path / "s.jsonl")
    log.append(conv)
    result = Compactor().compact(log.working_set(), budget=conv.tokens // 5)
    log.record_compaction(result)
    more = session_conv(30, seed=11).slice(1)
    log.append(more)
    ws = log.working_set()
    assert support.each_message(ws) == support.each_message(result.conversation) + support.each_message(more)
    assert len(log.originals()) == len(conv) + len(more)
    before = log.rollback()
    assert support.each_message(before) == support.each_message(conv) + support.each_message(more)
    reloaded = SessionLog(tmp_path / "s.jsonl")
    assert len(reloaded.compactions) == 2
    assert support.each_message(reloaded.working_set()) == support.each_message(before)
    assert support.each_message(reloaded.originals()) == support.each_message(conv) + support.each_message(more)


def test_a_torn_last_line_is_reported_and_ignored(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    log = SessionLog(path)
    log.append(ac.Conversation([{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]))
    with path.open("ab") as f:
        f.write(b'{"type": "message", "index": 2, "data": [{"role": "us')
    reloaded = SessionLog(path)
    assert reloaded.torn is not None
    assert [m[0]["content"] for m in reloaded.messages] == ["one", "two"]
    reloaded.append(ac.Conversation([{"role": "user", "content": "three"}]))
    again = SessionLog(path)
    assert again.torn is None
    assert [m[0]["content"] for m in again.messages] == ["one", "two", "three"]


def test_a_writer_killed_mid_append_leaves_every_complete_record(tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(support.ROOT)!r})
        import agentcontext as ac
        from agentcontext.sessions.log import SessionLog
        log = SessionLog({str(path)!r})
        i = 0
        while True:
            log.append(ac.Conversation([{{"role": "user", "content": f"message {{i}} " + "x" * 200_000}}]))
            i += 1
            if i == 3:
                print("ready", flush=True)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    log = SessionLog(path)
    assert len(log.messages) >= 3
    for i, data in enumerate(log.messages):
        assert data[0]["content"].startswith(f"message {i} ")
        assert len(data[0]["content"]) == len(f"message {i} ") + 200_000


# ---------------------------------------------------------------------------------------------
# The command line.


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentcontext", *args], capture_output=True, text=True, check=False)


def test_compact_command(tmp_path: Path) -> None:
    example = str(support.ROOT / "examples" / "session.jsonl")
    out = tmp_path / "out.jsonl"
    proc = run("compact", example, "--budget", "25%", "--json", "-o", str(out), "--to", "anthropic")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    for key in ("tokens_before", "tokens_after", "budget", "fits", "stages", "summary", "kept", "summarized"):
        assert key in report
    assert report["fits"] and report["tokens_after"] <= report["budget"]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["role"] == "system" and report["output"]["format"] == "anthropic"
    assert ac.validate(lines, format="anthropic") == []
    text = run("compact", example, "--budget", "6000", "--strategy", "pi")
    assert text.returncode == 0 and "summarize" in text.stdout and "fits" in text.stdout


def test_compact_exit_3_when_the_budget_cannot_be_met(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    messages = [
        {"role": "user", "content": "dump it"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "a", "type": "function", "function": {"name": "sql", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "a", "content": "row\n" * 3000},
    ]
    path.write_text("\n".join(json.dumps(m) for m in messages))
    # 100 tokens hold the round with its result cut head + marker + tail; 30 do not hold even that.
    assert run("compact", str(path), "--budget", "100").returncode == 0
    proc = run("compact", str(path), "--budget", "30")
    assert proc.returncode == 3
    assert "cannot be met" in proc.stderr and "a marker and a tail" in proc.stderr
    assert run("compact", str(path), "--budget", "lots").returncode == 2


def test_clearing_is_deferred_when_it_cannot_reach_the_target_and_applied_if_the_summary_fails() -> None:
    conv = session_conv(300)
    budget = conv.tokens // 8
    floor = conv.tokens - conv.clearable_tokens()
    cleared, report = conv.clear_tool_results(recall_ids=False)  # a compactor without a store
    assert conv.clearable_tokens() >= report["tokens_freed"]
    assert floor <= cleared.tokens
    assert floor > budget, "the scenario: clearing alone cannot reach the budget"
    ok = Compactor().compact(conv, budget=budget)
    # Clearing deferred, then a summary (refit once more when the summary at its cap leaves too
    # little room for the recent messages).
    assert [s.stage for s in ok.stages][:2] == ["clear", "summarize"]
    assert {s.stage for s in ok.stages[2:]} <= {"summarize", "fill"}
    assert "deferred" in ok.stages[0].detail and ok.stages[0].tokens_after == ok.stages[0].tokens_before
    assert ok.fits and ok.conversation.validate() == []

    class FailingOffline:
        window_bound = False

        def summarize(self, request: SummaryRequest) -> str:
            raise RuntimeError("nope")

    policy = CompactionPolicy(
        **{**PRESETS["openharness"].compaction.for_budget(budget).__dict__, "drop_oldest_groups": False}
    )
    failed = Compactor(policy, summarizer=FailingOffline(), fallback=None).compact(conv)
    assert [s.stage for s in failed.stages] == ["clear", "summarize", "clear"]
    assert support.each_message(failed.conversation) == support.each_message(cleared), (
        "auto failure keeps the cleared conversation"
    )


def test_tool_results_over_counts_what_truncation_would_cut() -> None:
    conv = ac.Conversation(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "big", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "small", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "x\n" * 5_000},
            {"role": "tool", "tool_call_id": "b", "content": "y\n" * 500},
        ]
    )  # fmt: skip
    assert conv.tool_results_over(2_000) == 1
    assert conv.tool_results_over(500) == 2
    assert conv.tool_results_over(2_000, per_tool={"small": 100}) == 2
    assert len(conv.truncate_tool_results(2_000, per_tool={"small": 100})[1]) == 2


def test_recent_part_too_large_summarizes_before_dropping() -> None:
    """pi keeps ~20,000 recent tokens raw: in a small window nothing is older than that, so the
    ladder keeps the largest recent suffix that fits and summarizes the rest instead of dropping
    the user's request unsummarized."""
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Please fix src/app.py: tests/test_app.py::test_start fails with KeyError"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "pytest"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "x " * 2_000},
        {"role": "assistant", "content": "Done fixing it."},
    ]
    conv = ac.Conversation(messages)
    result = Compactor("pi").compact(conv, budget=conv.tokens // 2)
    assert result.fits and result.summary is not None
    out = result.conversation.to_openai()
    # The summary and the last round; the room left holds the call's round with its result cut
    # (head + marker + tail), which fills the budget. One summary: the recent part pi keeps
    # raw is larger than the budget, so as many whole rounds as fit are kept from the start.
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool", "assistant"]
    assert "src/app.py" in out[1]["content"] and "tests/test_app.py::test_start" in out[1]["content"]
    assert out[2]["tool_calls"][0]["id"] == "c1" and out[3]["tool_call_id"] == "c1"
    assert out[3]["content"].startswith("x x") and len(out[3]["content"]) < len(messages[3]["content"])
    assert out[4] == messages[4]
    assert result.fates() == ["kept", "summarized", "kept", "changed", "kept"]
    assert [s.stage for s in result.stages] == ["summarize", "fill"] and (result.fill or 0) >= 0.8


def test_dropping_into_a_group_keeps_the_request_first() -> None:
    """Dropping whole rounds inside one long group would open the kept part with the assistant
    (Anthropic rejects that, and the model loses the request): the latest request is kept before
    the rounds that fit beside it (issue 13: the latest ask is always in the working set)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Please fix src/app.py now"},
    ]
    for i in range(6):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "y " * 300},
        ]
    messages.append({"role": "assistant", "content": "done"})
    conv = ac.Conversation(messages)
    policy = dataclasses.replace(
        ac.PRESETS["openharness"].compaction, summarize=False, clear_tool_results=False, tool_result_budgets=False
    )
    result = Compactor(policy).compact(conv, budget=conv.tokens // 2)
    assert result.fits and [s.stage for s in result.stages] == ["drop"]
    out = result.conversation.to_openai()
    assert out[:2] == messages[:2]
    # After the request, a marker counts the rounds dropped between it and those kept (issue 25).
    dropped = result.fates().count("dropped")
    assert dropped == len(messages) - len(out) + 1 > 0
    assert out[2] == {
        "role": "user",
        "content": f"[agentcontext: {dropped} earlier messages ({sum(conv.message_tokens()[2 : 2 + dropped]):,} "
        "tokens) were dropped to fit the context window; the originals are not stored.]",
    }
    assert out[3]["role"] == "assistant" and out[3:] == messages[len(messages) - len(out) + 3 :]
    assert result.stages[0].detail["dropped_messages"] == dropped
    assert result.conversation.validate() == []

    # Without a user request to keep, a user marker says what was dropped.
    no_request = ac.Conversation([messages[0], *messages[2:]])
    result = Compactor(policy).compact(no_request, budget=no_request.tokens // 2)
    out = result.conversation.to_openai()
    assert out[1]["role"] == "user" and out[1]["content"].startswith("[agentcontext: ")
    dropped = result.fates().count("dropped")
    assert f"{dropped:,} earlier messages" in out[1]["content"]
    assert out[2:] == messages[len(messages) - len(out) + 2 :]
    assert result.conversation.validate() == []
    anthropic = result.conversation.to_anthropic_params()
    assert anthropic["messages"][0]["role"] == "user"
