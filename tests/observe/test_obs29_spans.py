"""Issue #29, item 1: a 10-turn agent loop over the loopback server, with two compactions (the
second clears, flushes memory and summarizes), captured by the OpenTelemetry SDK's in-memory
exporter: the span tree and every attribute, and the same facts as events to ``on_event``."""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agentcontext.budgets import ResultStore
from agentcontext.compaction import PRESETS, CompactionResult, Compactor
from agentcontext.compaction.llm import LLMSummarizer
from agentcontext.compaction.pricing import PRICES
from agentcontext.memory.flush import FLUSH_INSTRUCTION
from agentcontext.memory.store import MemoryStore
from agentcontext.memory.tools import MemoryTools
from agentcontext.observe import (
    CompactionFinished,
    CompactionStarted,
    FlushDone,
    ModelCall,
    SummarizerCall,
    ToolCallDone,
)
from agentcontext.sessions.loop import Session
from tests import support
from tests.llm_server import LLMServer, Recorded, Reply

pytest.importorskip("openai", reason="the openai SDK is a test extra: pip install -e '.[test]'")

READ_TOOL = {
    "type": "function",
    "function": {"name": "read", "description": "read a file", "parameters": {"type": "object"}},
}


def _model(request: Recorded) -> Reply:
    """The loopback model: a flush turn saves nothing; a summary request gets a summary quoting
    the user's steps (100 tokens read from the cache); a new user turn calls ``read``; after the
    result, a long answer."""
    text = json.dumps(request.body)
    if FLUSH_INSTRUCTION[:60] in text:
        return Reply("nothing", output_tokens=1)
    if "handing this task over" in text:
        asks = sorted(set(re.findall(r"Step \d+: [a-z ]+", text)))
        summary = "<summary>## Current state\n- working on the steps\n\n## User requests\n" + "\n".join(asks)
        return Reply(summary + "</summary>", output_tokens=80, cached_tokens=100)
    if request.body["messages"][-1]["role"] == "user":
        return Reply("", tool_calls=[{"name": "read", "arguments": {"path": "src/main.rs"}}], output_tokens=12)
    return Reply("Done. " + "Details of the work follow. " * 300, output_tokens=300)


def _run(server: LLMServer, tmp_path: Path) -> tuple[Session, list[Any]]:
    server.default = _model
    provider = support.provider("openai", server, context_window=26_000)
    policy = replace(PRESETS["openharness"].compaction, recent_messages=4, recent_tools=1, prices="claude-sonnet-4-5")
    compactor = Compactor(
        policy,
        summarizer=LLMSummarizer(provider),
        memory=MemoryTools(MemoryStore(directory=tmp_path / "mem")),
        store=ResultStore(tmp_path / "recall"),
    )
    events: list[Any] = []
    session = Session(
        provider, compactor=compactor, tools=[READ_TOOL], result_policy=False, max_output_tokens=1_000,
        functions={"read": lambda args: 'fn main() { println!("step"); }\n' * 40}, on_event=events.append,
    )  # fmt: skip
    for step in range(10):
        session.run(f"Step {step}: do the next part")
    return session, events


def _as_made(result: CompactionResult) -> CompactionResult:
    """``result`` as the compaction made it: the session goes on extending the conversation a
    result hands it (``result.conversation``), so only its first messages are the output."""
    return dataclasses.replace(result, conversation=result.conversation.slice(0, len(result.provenance)))


def _children(spans: list[Any], parent: Any) -> list[Any]:
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


def test_a_ten_turn_loop_with_two_compactions(server: LLMServer, tmp_path: Path, spans: Any) -> None:
    """One run (its SDK calls are most of the test's time), every check over it."""
    session, events = _run(server, tmp_path)
    finished = list(spans.get_finished_spans())
    _check_tree(session, finished)
    _check_calls(session, finished)
    _check_compactions(session, finished)
    _check_summarizer_and_flush(session, finished)
    _check_events(session, events)


def _check_tree(session: Session, finished: list[Any]) -> None:
    """The span tree: a turn span per outer turn, its model and tool calls and compactions under
    it, the summarizer and flush calls under the compaction that made them."""
    turns = [s for s in finished if s.name == "invoke_agent agentcontext"]
    assert [t.attributes["agentcontext.turn"] for t in turns] == list(range(1, 11))
    assert all(t.parent is None and t.attributes["gen_ai.operation.name"] == "invoke_agent" for t in turns)
    # Under each turn: two model calls and one tool call; the two compactions under the turns
    # that made them.
    for turn in turns:
        names = sorted(s.name for s in _children(finished, turn))
        assert names.count("chat gpt-test") == 2 and names.count("execute_tool read") == 1, names
    compactions = [s for s in finished if s.name == "agentcontext.compaction"]
    assert len(compactions) == len(session.compactions) == 2
    assert all(c.parent is not None and c.parent.span_id in {t.context.span_id for t in turns} for c in compactions)
    # The summarizer call and the memory flush are children of the second compaction, not the first.
    first, second = compactions
    assert not _children(finished, first)
    assert sorted(s.name for s in _children(finished, second)) == ["agentcontext.flush", "agentcontext.summarize"]
    assert len(finished) == 10 + 20 + 10 + 2 + 2


def _check_calls(session: Session, finished: list[Any]) -> None:
    """Every model and tool call span carries the GenAI attributes."""
    chats = [s for s in finished if s.name == "chat gpt-test"]
    assert len(chats) == len(session.completions) == 20
    for span, completion in zip(chats, session.completions, strict=True):
        a = span.attributes
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.provider.name"] == "openai"
        assert a["gen_ai.request.model"] == "gpt-test" and a["gen_ai.request.max_tokens"] == 1_000
        assert a["gen_ai.usage.input_tokens"] == completion.usage.input_tokens > 0
        assert a["gen_ai.usage.output_tokens"] == completion.usage.output_tokens
        assert a["gen_ai.usage.cache_read.input_tokens"] == completion.usage.cache_read_tokens == 0
        assert a["gen_ai.usage.cache_creation.input_tokens"] == 0
        assert list(a["gen_ai.response.finish_reasons"]) == [completion.stop_reason]
        assert a["agentcontext.response.tool_calls"] == len(completion.tool_calls)
        assert a["agentcontext.request.messages"] > 0 and a["agentcontext.request.local_tokens"] > 0
    tools = [s for s in finished if s.name == "execute_tool read"]
    calls = [c for completion in session.completions for c in completion.tool_calls]
    assert [t.attributes["gen_ai.tool.call.id"] for t in tools] == [c.id for c in calls]
    for t in tools:
        assert t.attributes["gen_ai.operation.name"] == "execute_tool" and t.attributes["gen_ai.tool.name"] == "read"
        assert t.attributes["agentcontext.tool.outcome"] == "ran"
        assert t.attributes["agentcontext.tool.result_chars"] == len('fn main() { println!("step"); }\n' * 40)


def _check_compactions(session: Session, finished: list[Any]) -> None:
    """The compaction spans say what each compaction did, read from its result."""
    compactions = [s for s in finished if s.name == "agentcontext.compaction"]
    for span, made in zip(compactions, session.compactions, strict=True):
        result = _as_made(made)
        a = span.attributes
        stages = result.stages
        assert a["agentcontext.compaction.kind"] == "auto" and a["agentcontext.compaction.policy"] == "openharness"
        assert a["agentcontext.compaction.tokens_before"] == result.tokens_before
        assert a["agentcontext.compaction.tokens_after"] == result.tokens_after < result.tokens_before
        assert a["agentcontext.compaction.target"] == result.target
        assert a["agentcontext.compaction.fits"] is result.fits is True
        assert list(a["agentcontext.compaction.stages"]) == [s.stage for s in stages]
        assert list(a["agentcontext.compaction.stage_tokens_before"]) == [s.tokens_before for s in stages]
        assert list(a["agentcontext.compaction.stage_tokens_after"]) == [s.tokens_after for s in stages]
        fates = result.fates()
        for fate in ("kept", "changed", "summarized", "dropped"):
            assert a[f"agentcontext.compaction.messages_{fate}"] == fates.count(fate)
        assert a["agentcontext.compaction.messages_before"] == len(result.original)
        assert a["agentcontext.compaction.messages_after"] == len(result.conversation)
        cleared = sum(s.detail.get("results_cleared", 0) for s in stages)
        assert a["agentcontext.compaction.results_cleared"] == cleared > 0
        assert a["agentcontext.compaction.results_cut"] == 0
        # Every recall id named is in the output and gives an original back from the store.
        output = json.dumps(result.conversation.to_jsonl())
        ids = list(a["agentcontext.compaction.recall_ids"])
        assert ids and all(i in output for i in ids)
        store = session.compactor.store
        assert store is not None
        assert all((store.alias(i) or i) in store for i in ids)
        # The stages as span events, each with its own numbers and details.
        events = [e for e in span.events if e.name == "agentcontext.stage"]
        assert [e.attributes["agentcontext.stage"] for e in events] == [s.stage for s in stages]
        assert [e.attributes["agentcontext.stage.tokens_after"] for e in events] == [s.tokens_after for s in stages]
        clear = next(e for e in events if e.attributes["agentcontext.stage"] == "clear")
        assert clear.attributes["agentcontext.stage.results_cleared"] > 0
        # The prompt cache: kept up to the first changed message, the rest written again.
        first = next(i for i, q in enumerate(result.provenance) if q != i)
        tokens = result.conversation.message_tokens()
        assert a["agentcontext.cache.first_changed_message"] == first
        assert a["agentcontext.cache.kept_tokens"] == sum(tokens[:first])
        assert a["agentcontext.cache.rewritten_tokens"] == sum(tokens[first:]) > 0
        p = PRICES["claude-sonnet-4-5"]
        cost = sum(tokens[first:]) * (p.cache_write - p.cache_read) / 1e6
        assert a["agentcontext.cache.rewrite_cost_usd"] == pytest.approx(cost)
    second = session.compactions[1]
    assert [s.stage for s in second.stages] == ["clear", "flush", "summarize"]
    assert compactions[1].attributes["agentcontext.compaction.messages_summarized"] > 0


def _check_summarizer_and_flush(session: Session, finished: list[Any]) -> None:
    """The summarizer and flush spans carry what their model reported."""
    (summarize,) = [s for s in finished if s.name == "agentcontext.summarize"]
    (flush,) = [s for s in finished if s.name == "agentcontext.flush"]
    result = session.compactions[1]
    stage = next(s for s in result.stages if s.stage == "summarize")
    summarizer = session.compactor.summarizer
    assert isinstance(summarizer, LLMSummarizer)
    usage = [u for e in summarizer.events for u in e["usage"]]
    a = summarize.attributes
    assert a["agentcontext.summarizer"] == "LLMSummarizer" and a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.request.model"] == "gpt-test" and a["gen_ai.provider.name"] == "openai"
    assert a["agentcontext.summary.model_calls"] == len(usage) >= 1
    assert a["gen_ai.usage.input_tokens"] == sum(u["input_tokens"] for u in usage) > 0
    assert a["gen_ai.usage.output_tokens"] == 80 * len(usage)
    assert a["gen_ai.usage.cache_read.input_tokens"] == 100 * len(usage)
    assert a["gen_ai.usage.cache_creation.input_tokens"] == 0
    assert a["agentcontext.summary.request_tokens"] == stage.detail["summarized_tokens"]
    assert a["agentcontext.summary.tokens"] == stage.detail["summary_tokens"]
    assert a["agentcontext.summary.max_tokens"] == stage.detail["summary_cap"]
    assert "agentcontext.summary.failure" not in a
    done = next(s for s in result.stages if s.stage == "flush").detail
    f = flush.attributes
    assert f["gen_ai.operation.name"] == "chat" and f["gen_ai.request.model"] == "gpt-test"
    assert f["gen_ai.usage.input_tokens"] == done["input_tokens"] > 0
    assert f["gen_ai.usage.output_tokens"] == done["output_tokens"] == 1
    assert f["agentcontext.flush.shown_messages"] == done["shown_messages"] > 0
    assert f["agentcontext.flush.model_calls"] == done["calls"] == 1
    assert f["agentcontext.flush.written"] == 0 and f["agentcontext.flush.deleted"] == 0
    # Each span lies within its compaction's.
    (parent,) = [s for s in finished if s.context.span_id == summarize.parent.span_id]
    assert parent.start_time <= flush.start_time <= summarize.start_time <= summarize.end_time <= parent.end_time


def _check_events(session: Session, events: list[Any]) -> None:
    """The same facts reach ``on_event``, in order."""
    kinds = [type(e) for e in events]
    assert kinds.count(ModelCall) == 20 and kinds.count(ToolCallDone) == 10
    assert kinds.count(CompactionStarted) == kinds.count(CompactionFinished) == 2
    assert kinds.count(SummarizerCall) == kinds.count(FlushDone) == 1
    # Started, then the flush and summarizer calls, then finished; a model call follows.
    at = kinds.index(CompactionStarted, kinds.index(CompactionFinished) + 1)
    assert kinds[at : at + 5] == [CompactionStarted, FlushDone, SummarizerCall, CompactionFinished, ModelCall]
    done = [e for e in events if isinstance(e, CompactionFinished)]
    for event, made in zip(done, session.compactions, strict=True):
        result = _as_made(made)
        assert event.stages == tuple(result.stages) and event.error is None
        assert (event.tokens_before, event.tokens_after, event.fits) == (
            result.tokens_before, result.tokens_after, result.fits,
        )  # fmt: skip
        assert event.messages_summarized == result.fates().count("summarized")
        assert event.cache is not None and event.cache.rewrite_cost is not None and event.seconds > 0
    models = [e for e in events if isinstance(e, ModelCall)]
    assert [m.input_tokens for m in models] == [c.usage.input_tokens for c in session.completions]
    assert all(m.model == "gpt-test" and m.provider == "openai" and m.error is None for m in models)
    summary = next(e for e in events if isinstance(e, SummarizerCall))
    assert summary.model == "gpt-test" and summary.failure is None and summary.summary_tokens
