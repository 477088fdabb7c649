"""Incremental, anchored summaries (issue 27, item 3): a later compaction merges the newly leaving
span into the previous summary instead of re-summarizing a summary — the LLM summarizer gets only
the messages after the previous summary, with that summary to update; the offline summary merges
section by section — and however many times it runs, one summary stays, within its cap."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import agentcontext as ac
from agentcontext.compaction import PRESETS, Compactor
from agentcontext.compaction.llm import LLMSummarizer
from agentcontext.compaction.summarize import SUMMARY_MARKER
from tests import support
from tests.llm_server import LLMServer, Recorded, Reply

POLICY = replace(PRESETS["openharness"].compaction, clear_tool_results=False)


def summaries_in(conv: ac.Conversation) -> list[str]:
    return [
        str(m.get("content"))
        for m in conv.to_jsonl()
        if isinstance(m.get("content"), str) and m["content"].startswith(SUMMARY_MARKER)
    ]


def test_repeated_offline_compaction_keeps_one_summary_within_its_cap() -> None:
    session = support.synthetic_session(2400, seed=5)
    compactor = Compactor(POLICY)
    conv = ac.Conversation(session[:100], format="openai")
    sizes: list[tuple[int, int]] = []
    for at in range(100, len(session), 100):
        conv.extend(session[at : at + 100])
        if conv.tokens <= 20_000 or conv.validate():
            continue
        result = compactor.compact(conv, budget=20_000)
        stage = next(s for s in result.stages if s.stage == "summarize")
        sizes.append((stage.detail["summary_tokens"], stage.detail["summary_cap"]))
        assert len(summaries_in(result.conversation)) == 1
        conv = result.conversation
    assert len(sizes) >= 10
    assert all(tokens <= cap for tokens, cap in sizes)
    # Merged, not nested: the final summary is one summary, its sections once each.
    final = summaries_in(conv)[0]
    assert final.count(SUMMARY_MARKER) == 1
    assert final.count("## User requests and constraints") <= 1
    assert final.count("## Latest request (verbatim)") == 1


def sent_messages(recorded: Recorded) -> list[dict[str, Any]]:
    return list(recorded.body.get("messages") or [])


def test_the_llm_updates_the_previous_summary_from_the_messages_after_it(server: LLMServer) -> None:
    session = support.synthetic_session(700, seed=13)
    provider = support.provider("openai", server, context_window=400_000)
    summarizer = LLMSummarizer(provider, retry_missing=False)
    compactor = Compactor(POLICY, summarizer=summarizer)
    passes = iter(range(100))

    def reply(request: Recorded) -> Reply:
        # Holds every request it was sent (the compactor accepts a summary holding the latest).
        asks = [
            m["content"] for m in sent_messages(request)
            if m["role"] == "user" and isinstance(m["content"], str) and not m["content"].startswith(SUMMARY_MARKER)
        ]  # fmt: skip
        lines = "\n".join(f"- {a[:300]}" for a in reversed(asks[:-1]))
        return Reply(f"<summary>## Current state\n- pass {next(passes)}\n\n## User requests\n{lines}</summary>")

    server.default = reply
    conv = ac.Conversation(session[:350], format="openai")
    first = compactor.compact(conv, budget=conv.tokens // 3)
    assert first.summary is not None and "pass 0" in first.summary
    grown = first.conversation.slice(0)
    grown.extend(session[350:])
    second = compactor.compact(grown, budget=grown.tokens // 3)
    sent = sent_messages(server.last)
    prompt = sent[-1]["content"]
    # The request is the conversation's own cached prefix (issue 29 item 4): the previous summary is
    # in it once, as the message that carries it, and the handoff request names it to be updated.
    assert "previous summary" in prompt and "do not nest it" in prompt and "pass 0" not in prompt
    history = sent[:-1]
    assert history == grown.to_openai()[: len(history)]
    assert sum("pass 0" in json.dumps(m) for m in history) == 1
    assert len(summaries_in(second.conversation)) == 1
    assert second.summary is not None and "pass 1" in second.summary
