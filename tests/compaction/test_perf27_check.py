"""The check before commit at its bounded cost (issue 27's time bound): it extracts only the probe
kinds it checks, and the repair's make-room fit reuses the token counts of the offline summary's
fit instead of counting its lines again — with the same facts and the same summaries."""

from __future__ import annotations

from typing import Any

import pytest

import agentcontext as ac
from agentcontext.compaction import Compactor
from agentcontext.compaction import summarize as summarize_module
from agentcontext.compaction.check import CHECKED_KINDS, SpanCheck, reduced_view
from agentcontext.compaction.summarize import LINE_TOKENS, OfflineSummarizer, SummaryRequest, shrink_summary
from agentcontext.probes import extract
from tests import support


def session(rounds: int = 40) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for k in range(rounds):
        out.append({"role": "user", "content": f"Step {k}: never touch deploy/prod{k}.yaml; fix src/mod{k}.py."})
        out.append(
            {
                "role": "assistant",
                "content": f"Reading src/mod{k}.py first.",
                "tool_calls": [
                    {
                        "id": f"c{k}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": f'{{"command": "pytest tests/test_{k}.py"}}'},
                    }
                ],
            }
        )
        out.append({"role": "tool", "tool_call_id": f"c{k}", "content": f"KeyError: 'k{k}'\n1 failed, {k} passed"})
    return out


def test_the_check_extracts_only_its_kinds_and_finds_the_same_facts() -> None:
    conv = ac.Conversation(session())
    messages = reduced_view(conv.to_jsonl())
    only = extract(messages, kinds=CHECKED_KINDS)
    assert only == [p for p in extract(messages) if p.kind in CHECKED_KINDS]
    assert {p.kind for p in only} >= {"user_message", "user_path", "call_path", "exception", "constraint"}
    check = SpanCheck.of(conv, 1, len(conv) - 3, window=10**9)
    assert check.extracted > 0 and {p.kind for p in check.facts} <= set(CHECKED_KINDS)


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the offline fit counts from now on."""
    calls: list[str] = []
    count = summarize_module.count_tokens

    def counting(text: str, **kwargs: Any) -> int:
        calls.append(text)
        return count(text, **kwargs)

    monkeypatch.setattr(summarize_module, "count_tokens", counting)
    return calls


def test_a_second_fit_with_the_first_fits_counts_gives_the_same_summary_and_counts_no_line_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    conv = ac.Conversation(session())
    counts: dict[str, int] = {}
    request = SummaryRequest(conv, 1, len(conv) - 3, None, 900, original=conv, context={LINE_TOKENS: counts})
    text = OfflineSummarizer().summarize(request)
    assert counts and all(counts[t] == ac.count_tokens(t) for t in counts)
    plain = shrink_summary(text, 500)
    calls = _counted(monkeypatch)
    shared = shrink_summary(text, 500, counts=dict(counts))
    assert shared == plain and shared != text
    # Only what the first fit never rendered is counted: no line of the summary it shrinks.
    lines = {line for line in text.splitlines() if line.startswith("- ")}
    assert not lines & set(calls)


def test_the_ladders_summary_is_the_same_with_and_without_the_shared_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    conv = ac.Conversation(session(60))
    result = Compactor("openharness").compact(conv, budget=conv.tokens // 6)
    # The same compaction with the fits counting every line themselves.
    monkeypatch.setattr(summarize_module, "LINE_TOKENS", "unused")
    again = Compactor("openharness").compact(conv, budget=conv.tokens // 6)
    assert result.summary == again.summary and result.summary
    assert result.conversation.to_jsonl() == again.conversation.to_jsonl()


@pytest.mark.parametrize("path", support.normalized_files()[1::16], ids=lambda p: f"{p.parent.name}/{p.stem[:30]}")
def test_the_check_of_a_shared_transcript_is_the_same_with_its_kinds_only(path: Any) -> None:
    messages = reduced_view(ac.Conversation.from_file(path).to_jsonl())
    assert extract(messages, kinds=CHECKED_KINDS) == [p for p in extract(messages) if p.kind in CHECKED_KINDS]
