"""The offline handoff (``OfflineSummarizer`` over the core's extraction): what it keeps of older
history, measured against facts written into the test sessions, never against its own notes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import agentcontext as ac
from agentcontext.compaction.summarize import SUMMARY_MARKER, OfflineSummarizer, SummaryRequest


def bash(cid: str, command: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": command})}}
        ],
    }


def offline(conv: ac.Conversation, cap: int, stop: int | None = None) -> str:
    stop = len(conv) if stop is None else stop
    previous = next(reversed(conv.handoff(0, stop)["previous_summaries"]), None)
    return OfflineSummarizer().summarize(SummaryRequest(conv, 0, stop, previous, cap))


EARLIER = {
    "claude-code": "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\nPrimary request: migrate billing/ledger.ex to Ecto 3 (ticket BILL-204).",
    "pi": "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
    "## Goal\nShip the pi_exporter.rs streaming writer behind the --stream flag.\n</summary>",
    "codex": "Another language model started to solve this problem and produced a summary of its thinking process. "
    "Here it is:\nThe flaky test tests/test_sync.py::test_retry_backoff needs a fixed clock.",
    "agentcontext": f"{SUMMARY_MARKER}: 40 earlier messages (9,000 tokens) are summarized below; the originals "
    "are not stored.]\n\n## Latest request (verbatim)\nRename config/app_settings.toml keys to snake case.\n\n"
    "## Files modified\n- config/app_settings.toml",
}
FACTS = {
    "claude-code": ["billing/ledger.ex", "BILL-204"],
    "pi": ["pi_exporter.rs", "--stream"],
    "codex": ["tests/test_sync.py::test_retry_backoff"],
    "agentcontext": ["Rename config/app_settings.toml keys to snake case.", "config/app_settings.toml"],
}


def session_with_earlier_summaries() -> ac.Conversation:
    """One summary of each kind in the history (as a resumed session of each harness carries
    it), with work between them."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for k, text in enumerate(EARLIER.values()):
        messages.append({"role": "user", "content": text})
        messages.append({"role": "user", "content": f"Now do step {k}: update module_{k}.py."})
        for j in range(3):
            cid = f"c{k}_{j}"
            messages.append(bash(cid, f"pytest tests/test_m{k}.py -q"))
            messages.append({"role": "tool", "tool_call_id": cid, "content": "ok\n" * 200 + f"{j + 1} passed"})
        messages.append({"role": "assistant", "content": f"Step {k} done."})
    return ac.Conversation(messages)


def test_earlier_summaries_of_every_harness_are_carried_forward() -> None:
    conv = session_with_earlier_summaries()
    summary = offline(conv, 2_000)
    for harness, facts in FACTS.items():
        for fact in facts:
            assert fact in summary, f"{harness}: {fact!r} lost"
    # Ours is merged section by section, not nested; the others are quoted once each.
    assert SUMMARY_MARKER not in summary
    assert summary.count("This session is being continued") == 1
    # The latest request is the latest the user typed, not one of the summaries.
    assert summary.split("\n")[1] == "Now do step 3: update module_3.py."


def test_a_fact_named_in_the_latest_request_is_not_listed_again() -> None:
    """Paths the latest request quotes are in the summary once: the room goes to other facts."""
    ask = "Fix src/billing/ledger.ex and src/billing/invoice.ex; keep config/prod.exs as it is."
    messages: list[dict[str, Any]] = [{"role": "user", "content": ask}]
    for k in range(30):
        messages.append(bash(f"c{k}", f"cat lib/module_{k}/impl_{k}.ex"))
        messages.append({"role": "tool", "tool_call_id": f"c{k}", "content": "defmodule X do end\n" * 40})
    summary = offline(ac.Conversation(messages), 400)
    assert summary.count("src/billing/ledger.ex") == 1
    assert "- lib/module_29/impl_29.ex" in summary


def test_paths_tests_and_urls_inside_written_contents_are_kept() -> None:
    """A tool input's other members — the contents of a file written, an edit — name paths, tests
    and URLs too (were read only from path and command members)."""
    content = (
        "import { parse } from '../core/metrics/types.js';\n"
        "// see https://example.com/spec/metrics#v2\n"
        "def test_parses_cached_tokens(): pass\n"
    )
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Add the metrics adapter."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "w1",
                    "type": "function",
                    "function": {
                        "name": "write_file",
                        "arguments": json.dumps({"file_path": "src/adapter.ts", "content": content}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "w1", "content": "written"},
        bash("b1", "git branch feat/metrics-v2 && python -m unittest -v"),
        {
            "role": "tool",
            "tool_call_id": "b1",
            "content": "test_parses_cached_tokens (tests.test_adapter.AdapterTests) ... FAIL\nFAILED (failures=1)",
        },
        {"role": "user", "content": "Now make it pass."},
    ]
    conv = ac.Conversation(messages)
    summary = offline(conv, 2_000, stop=len(messages) - 1)
    for fact in ("../core/metrics/types.js", "https://example.com/spec/metrics#v2", "feat/metrics-v2"):
        assert fact in summary, fact
    assert "test_parses_cached_tokens (tests.test_adapter.AdapterTests): failed" in summary


def test_corpus_targets_at_a_quarter(transcripts: Path) -> None:
    """The whole shared corpus at 25% of each transcript, the claude-code preset (offline
    summarizer): pooled retention of the independent probes at least 0.90; no transcript below
    the recent-suffix + every-user-message baseline where that baseline fits; the latest ask in
    every output that fits and whose summary the ladder did not cut down afterwards (the drop stage)."""
    from agentcontext.compaction import MIN_SUMMARY_TOKENS, SUMMARY_HEADER_TOKENS
    from agentcontext.measure import evaluation
    from agentcontext.measure.metrics import BASELINE, Evaluation

    rows = evaluation.run([transcripts / "normalized"], ["claude-code", BASELINE], "25%", workers=2)
    assert all(r.error is None for r in rows)
    # Over the probe kinds these targets were set for (issue 27's constraint kind is measured by
    # benches/quality.py; artifact paths are call paths too).
    kinds = ("latest_ask", "user_message", "user_path", "call_path", "exception", "test", "identifier")
    ours = [r for r in rows if r.strategy == "claude-code"]
    pooled = sum(r.kept_and_total(*kinds)[0] for r in ours) / sum(r.kept_and_total(*kinds)[1] for r in ours)
    assert pooled >= 0.90, pooled

    def share(r: Evaluation) -> float:
        kept, total = r.kept_and_total(*kinds)
        return kept / total if total else 1.0

    base = {r.transcript: r for r in rows if r.strategy == BASELINE}
    # A baseline that does not fit its budget is no competitor; nor is one where no summary
    # message fits at all (a 143-token session at 25% = 35 tokens: the baseline keeps the user
    # messages and drops the last round, the ladder keeps the last round).
    floor = SUMMARY_HEADER_TOKENS + MIN_SUMMARY_TOKENS
    below = [
        (r.transcript, share(r), share(base[r.transcript]))
        for r in ours
        if base[r.transcript].fits and r.budget >= floor and share(r) < share(base[r.transcript])
    ]
    assert not below
    # An output that cannot fit (the system messages alone fill the budget) reports so instead.
    lost_ask = [r.transcript for r in ours if r.latest_ask is False and r.fits and "drop" not in r.stages]
    assert not lost_ask


def test_shrinking_a_summary_keeps_the_head_and_tail_of_the_latest_request() -> None:
    """For a ladder that must cut an accepted summary down (the room beside the last round): the
    offline sections are fitted again, the request first, instead of cutting the whole text to
    head + tail (which kept the request's head and the next step's tail)."""
    from agentcontext import count_tokens
    from agentcontext.compaction.summarize import shrink_summary

    ask = (
        "START of the task: port ledger.ex.\n## Steps (the user's own heading)\n"
        + "detail line\n" * 300
        + "END: run mix test."
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": ask}]
    for k in range(20):
        messages.append(bash(f"c{k}", f"mix test test/m{k}_test.exs"))
        messages.append({"role": "tool", "tool_call_id": f"c{k}", "content": "ok\n" * 50 + "1 test, 0 failures"})
    messages.append({"role": "assistant", "content": "All green; the next step is the changelog. " * 10})
    summary = offline(ac.Conversation(messages), 2_000)
    for room in (64, 150, 400):
        small = shrink_summary(summary, room)
        assert count_tokens(small) <= room
        assert small.startswith("## Latest request (cut: head and tail)\nSTART of the task: port ledger.ex.")
        assert "END: run mix test." in small, (room, small)
    assert shrink_summary(summary, 10_000) == summary
    plain = "an LLM's prose summary. " * 200
    cut = shrink_summary(plain, 100)
    assert count_tokens(cut) <= 100 and cut.startswith("an LLM's prose") and "omitted" in cut


# -- updating a previous summary (as OpenClaw's oldest-chunks summary is updated) ---------------

REQUEST = "Please make the parser accept tabs in tests/test_parser.py and keep the public API stable"


def rounds_only(n: int, start: int = 0) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(start, start + n):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"cmd": "ls"})}}
        out += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"file_{i}.py\n"},
        ]
    return out


def test_an_update_with_no_new_request_keeps_the_latest_request() -> None:
    conv = ac.Conversation([{"role": "user", "content": REQUEST}, *rounds_only(10)])
    summarizer = OfflineSummarizer()
    first = summarizer.summarize(SummaryRequest(conv, 0, 11, None, 2_000))
    assert REQUEST in first
    # The next range holds only tool rounds: the request is still the latest, not dropped.
    second = summarizer.summarize(SummaryRequest(conv, 11, len(conv), first, 2_000))
    assert REQUEST in second and second.startswith("## Latest request (verbatim)\n")


def test_a_markdown_heading_in_the_latest_request_survives_an_update() -> None:
    ask = "Fix the importer.\n\n## Steps\n1. read importers/base.py\n2. run the tests\n\n## Done when\nall tests pass"
    conv = ac.Conversation(
        [
            {"role": "user", "content": ask},
            *rounds_only(3),
            {"role": "user", "content": "now the docs"},
            *rounds_only(3, 3),
        ]
    )
    summarizer = OfflineSummarizer()
    first = summarizer.summarize(SummaryRequest(conv, 0, 7, None, 2_000))
    second = summarizer.summarize(SummaryRequest(conv, 7, len(conv), first, 2_000))
    # The earlier request, now among the earlier ones, is whole: its "## " lines are its own.
    assert "all tests pass" in second and "run the tests" in second
    assert "\n## Done when\n" not in second and "\n## Steps\n" not in second
