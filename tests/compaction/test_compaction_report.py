"""A compaction report that matches its output: every count of ``CompactionResult.to_dict()`` is
counted again here from the output messages alone (not with the code under test), the summary
is never dropped, and the output keeps the protocol — over every shared transcript, every preset
and budgets from 5% to 60% of the transcript; plus the 1M-token session whose last user turn
takes nearly the whole budget."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.budgets import ResultStore
from agentcontext.compaction import PRESETS, CompactionError, Compactor
from agentcontext.compaction.summarize import SUMMARY_MARKER
from tests import support

SHARES = (0.05, 0.10, 0.25, 0.40, 0.60)
NEW = (SUMMARY_MARKER, "[agentcontext: ", "[Re-attached after compaction")
HEADER = re.compile(re.escape(SUMMARY_MARKER) + r": ([\d,]+) earlier messages")


def messages(conv: ac.Conversation) -> list[dict[str, Any]]:
    return [conv[i] for i in range(len(conv))]


def recount(result: Any) -> dict[str, Any]:
    """The report's counts, from the output: output messages equal to an original (matched in
    order) are kept; new messages are the library's own (summary, markers, re-attached files);
    the rest are changed originals. The summary covers what its header says."""
    out = messages(result.conversation)
    originals = messages(result.original)
    kept = changed = 0
    summaries: list[int] = []
    j = 0
    for m in out:
        at = next((k for k in range(j, len(originals)) if originals[k] == m), None)
        if at is not None:
            kept += 1
            j = at + 1
            continue
        content = m.get("content")
        text = content if isinstance(content, str) else ""
        if isinstance(content, list):
            text = "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        if text.startswith(NEW):
            if text.startswith(SUMMARY_MARKER):
                header = HEADER.match(text)
                assert header, text[:200]
                summaries.append(int(header.group(1).replace(",", "")))
            continue
        changed += 1
    summarized = sum(summaries)
    return {
        "messages_after": len(out),
        "tokens_after": ac.Conversation(out, format=result.conversation.format).tokens,
        "kept": kept,
        "changed": changed,
        "summarized": summarized,
        "dropped": len(originals) - kept - changed - summarized,
        "summaries": len(summaries),
    }


def check(result: Any, budget: int) -> None:
    report = result.to_dict()
    counted = recount(result)
    for key in ("messages_after", "tokens_after", "kept", "changed", "summarized", "dropped"):
        assert report[key] == counted[key], (key, report[key], counted[key], report["stages"])
    assert counted["summaries"] <= 1
    assert (report["summarized"] > 0) == (counted["summaries"] == 1)
    if report["summarized"]:
        texts = [str(m.get("content")) for m in messages(result.conversation)]
        assert any(t.startswith(SUMMARY_MARKER) and t.endswith(report["summary"]) for t in texts)
    assert report["fits"] == (counted["tokens_after"] <= budget)
    assert ac.validate(messages(result.conversation), format=result.conversation.format) == []


@pytest.mark.parametrize("path", support.normalized_files(), ids=lambda p: f"{p.parent.name}/{p.stem[:40]}")
def test_every_count_in_the_report_is_what_the_output_holds(path: Path, transcripts: Path) -> None:
    conv = ac.Conversation.from_file(path)
    for name in PRESETS:
        compactor = Compactor(name)
        for share in SHARES:
            budget = max(1, int(conv.tokens * share))
            try:
                result = compactor.compact(conv, budget=budget)
            except CompactionError:
                continue
            check(result, budget)


@pytest.fixture(scope="module")
def session() -> list[dict[str, Any]]:
    """A ~1.1M-token coding session (9,000 messages)."""
    return support.synthetic_session(9000)


def with_last_turn(session: list[dict[str, Any]], lines: int) -> ac.Conversation:
    """``session`` ending with one large user turn (a pasted log of ``lines`` lines)."""
    log = "\n".join(f"line {i}: value={i * 7} status=ok" for i in range(lines))
    return ac.Conversation([*session, {"role": "user", "content": f"Here is the log:\n{log}"}])


@pytest.fixture(scope="module")
def million(session: list[dict[str, Any]]) -> ac.Conversation:
    return with_last_turn(session, 2290)


@pytest.mark.parametrize("name", ["pi", "codex", "claude-code", "goose", "openharness"])
def test_the_drop_stage_never_drops_the_summary(million: ac.Conversation, name: str) -> None:
    # The last user turn (~28.6K tokens) and a full summary do not fit 30,000 together: the
    # summary is cut to the room left, never dropped, and the report says what the output holds.
    assert million.tokens > 1_000_000
    result = Compactor(name).compact(million, budget=30_000)
    check(result, 30_000)
    out = messages(result.conversation)
    assert result.fits
    assert sum(str(m.get("content")).startswith(SUMMARY_MARKER) for m in out) == 1
    if name == "codex":
        # Codex: the user messages (the latest cut to its 20,000 tokens), then the summary.
        assert str(out[-1]["content"]).startswith(SUMMARY_MARKER)
        assert (result.origins or [])[-2] == len(million) - 1 and out[-2]["role"] == "user"
    else:
        assert out[-1] == million[len(million) - 1]
    assert result.to_dict()["summarized"] > 8_000


def test_a_last_round_larger_than_the_budget_is_cut_beside_the_summary(
    session: list[dict[str, Any]], tmp_path: Path
) -> None:
    # The last user turn (~33.7K tokens) alone is larger than the budget: the last rung cuts it
    # head + marker + tail beside the summary, the original recallable by the marker's id (on
    # main: no working set, exit 3).
    conv = with_last_turn(session, 2700)
    store = ResultStore(tmp_path / "store")
    result = Compactor("pi", store=store).compact(conv, budget=30_000)
    check(result, 30_000)
    assert result.fits and result.tokens_after <= 30_000
    out = messages(result.conversation)
    assert sum(str(m.get("content")).startswith(SUMMARY_MARKER) for m in out) == 1
    last = str(out[-1]["content"])
    original = str(conv[len(conv) - 1]["content"])
    assert last.startswith("Here is the log:\nline 0: value=0") and last.endswith("line 2699: value=18893 status=ok")
    recall_id = re.search(r'recall\(id="([^"]+)"\)', last)
    assert recall_id and store.get(recall_id.group(1)) == original
    assert [s.stage for s in result.stages][-1] == "cut"


def test_recompile_says_what_it_compared() -> None:
    conv = ac.Conversation(
        [
            {"role": "user", "content": "hi there"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "more"},
        ]
    )
    with pytest.raises(CompactionError) as e:
        Compactor().recompile(conv, 40)
    # The round (5 tokens) is smaller than the budget: what it did not fit is the budget less the
    # room kept for the summary, and the message says so.
    assert "left of the budget of 40 after 64 kept for the summary" in str(e.value)
