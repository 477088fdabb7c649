"""One LLMSummarizer shared by two threads' compactions (a server compacting many sessions): each
compaction reports its own summarizer call. Thread A's model call is held until thread B's whole
compaction finished; before, A's SummarizerCall counted B's call and tokens as its own (2 calls,
1,000 + 7,777 input tokens), and A's summarize stage read B's event (its cache prefix, its check)."""

from __future__ import annotations

import threading
from typing import Any

import agentcontext as ac
from agentcontext.compaction import Compactor
from agentcontext.compaction.llm import LLMSummarizer
from agentcontext.observe import SummarizerCall
from agentcontext.providers import Reply, ScriptedChatProvider, Usage
from tests import support

SUMMARY = "<summary>" + "what happened so far. " * 40 + "</summary>"


def test_each_thread_reports_its_own_summarizer_call() -> None:
    b_done = threading.Event()

    def answer(request: Any) -> Reply:
        if threading.current_thread().name == "A":
            assert b_done.wait(30)
            return Reply(text=SUMMARY, usage=Usage(1_000, 10))
        return Reply(text=SUMMARY, usage=Usage(7_777, 77))

    summarizer = LLMSummarizer(ScriptedChatProvider(answer), retry_missing=False)
    seen: dict[str, list[Any]] = {}
    stages: dict[str, Any] = {}

    def run(seed: int) -> None:
        name = threading.current_thread().name
        conv = ac.Conversation(support.synthetic_session(80, seed=seed), format="openai")
        events: list[Any] = []
        result = Compactor("openharness", summarizer=summarizer, on_event=events.append).compact(
            conv, budget=conv.tokens // 3
        )
        seen[name] = [e for e in events if isinstance(e, SummarizerCall) and e.summarizer == "LLMSummarizer"]
        stages[name] = next(s for s in result.stages if s.stage == "summarize").detail
        if name == "B":
            b_done.set()

    a = threading.Thread(target=run, args=(3,), name="A")
    a.start()
    while not summarizer.events:  # A is in its model call
        threading.Event().wait(0.01)
    b = threading.Thread(target=run, args=(4,), name="B")
    b.start()
    b.join(60)
    a.join(60)
    assert summarizer.provider.calls == 2
    assert [(e.calls, e.input_tokens, e.output_tokens) for e in seen["A"]] == [(1, 1_000, 10)]
    assert [(e.calls, e.input_tokens, e.output_tokens) for e in seen["B"]] == [(1, 7_777, 77)]
    # Each stage reads its own event: A's request was its own prefix (80 messages of seed 3).
    a_event, b_event = summarizer.events
    assert stages["A"].get("cache_prefix") == a_event["cache_prefix"]
    assert stages["B"].get("cache_prefix") == b_event["cache_prefix"]
