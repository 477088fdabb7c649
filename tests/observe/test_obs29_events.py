"""Issue #29, item 1: the events without OpenTelemetry, the callback's failures, the compaction
that fails, the offline summarizer's span (no model: no GenAI attributes), the adapters' events,
and no ``opentelemetry`` import when it is not installed."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.compaction import Compactor
from agentcontext.errors import ArgumentTypeError, CompactionError
from agentcontext.observe import CompactionFinished, CompactionStarted, SummarizerCall
from tests import support

ROOT = Path(__file__).resolve().parents[2]


def _conv(messages: int = 80, seed: int = 3) -> ac.Conversation:
    return ac.Conversation(support.synthetic_session(messages, seed=seed), format="openai")


def test_no_opentelemetry_import_when_it_is_not_installed() -> None:
    """With ``opentelemetry`` unimportable (a meta path finder refuses it), a compaction reports
    its events and nothing of OpenTelemetry is imported."""
    code = textwrap.dedent(
        """
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry" or name.startswith("opentelemetry."):
                    raise ModuleNotFoundError(f"blocked: {name}")
                return None

        sys.meta_path.insert(0, Block())
        import agentcontext as ac
        from agentcontext.observe import otel_available
        from tests import support

        events = []
        conv = ac.Conversation(support.synthetic_session(80, seed=3), format="openai")
        result = ac.Compactor("openharness", on_event=events.append).compact(conv, budget=conv.tokens // 3)
        assert [type(e).__name__ for e in events] == ["CompactionStarted", "SummarizerCall", "CompactionFinished"]
        assert events[-1].stages == tuple(result.stages)
        assert not otel_available()
        assert not [m for m in sys.modules if m.startswith("opentelemetry")], sorted(sys.modules)
        print("ok")
        """
    )
    env = {"PYTHONPATH": f"{ROOT / 'python'}:{ROOT}", "PATH": "/usr/bin:/bin"}
    import os

    env.update({k: v for k, v in os.environ.items() if k.startswith("AGENTCONTEXT_")})
    done = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, env=env, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_a_callback_that_raises_is_logged_and_the_compaction_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    conv = _conv()
    seen: list[Any] = []

    def broken(event: Any) -> None:
        seen.append(event)
        raise RuntimeError("the UI broke")

    with caplog.at_level(logging.WARNING, logger="agentcontext.observe"):
        result = Compactor("openharness", on_event=broken).compact(conv, budget=conv.tokens // 3)
    plain = Compactor("openharness").compact(conv, budget=conv.tokens // 3)
    assert result.to_dict() == plain.to_dict()
    # Every event still reached the callback; each failure was logged with its traceback.
    assert [type(e) for e in seen] == [CompactionStarted, SummarizerCall, CompactionFinished]
    failures = [r for r in caplog.records if r.name == "agentcontext.observe"]
    assert len(failures) == 3 and all(r.exc_info and "the UI broke" in str(r.exc_info[1]) for r in failures)
    assert "CompactionFinished" in failures[-1].getMessage()


def test_on_event_must_be_callable() -> None:
    with pytest.raises(ArgumentTypeError, match="on_event must be a callable or None, got str"):
        Compactor("openharness", on_event="print")  # type: ignore[arg-type]


def test_a_compaction_that_fails_reports_its_error(spans: Any) -> None:
    """recompile of a conversation whose last round alone is over the budget raises; the finished
    event says why and claims no stage, the span is marked failed."""
    conv = _conv(40)
    events: list[Any] = []
    with pytest.raises(CompactionError) as raised:
        Compactor("openharness", on_event=events.append).recompile(conv, 50)
    started, finished = events
    assert isinstance(started, CompactionStarted) and started.kind == "recompile"
    assert isinstance(finished, CompactionFinished)
    assert finished.error == f"CompactionError: {raised.value}" and finished.stages == ()
    assert finished.tokens_after == finished.tokens_before == conv.tokens and not finished.fits
    (span,) = [s for s in spans.get_finished_spans() if s.name == "agentcontext.compaction"]
    assert span.status.status_code.name == "ERROR" and span.attributes["agentcontext.compaction.kind"] == "recompile"


def test_the_offline_summary_span_claims_no_model_call(spans: Any) -> None:
    conv = _conv()
    events: list[Any] = []
    result = Compactor("openharness", on_event=events.append).compact(conv, budget=conv.tokens // 3)
    (span,) = [s for s in spans.get_finished_spans() if s.name == "agentcontext.summarize"]
    assert span.attributes["agentcontext.summarizer"] == "OfflineSummarizer"
    assert not [k for k in span.attributes if k.startswith("gen_ai.")]
    (call,) = [e for e in events if isinstance(e, SummarizerCall)]
    assert call.model is None and call.calls == 0 and call.input_tokens == 0
    stage = next(s for s in result.stages if s.stage == "summarize")
    assert call.summary_tokens == stage.detail["summary_tokens"] == span.attributes["agentcontext.summary.tokens"]
    (compaction,) = [s for s in spans.get_finished_spans() if s.name == "agentcontext.compaction"]
    assert compaction.attributes["agentcontext.compaction.kind"] == "budget"
    assert span.parent is not None and span.parent.span_id == compaction.context.span_id
    assert "agentcontext.cache.rewrite_cost_usd" not in compaction.attributes  # no prices: no cost claimed


def test_the_compacting_session_reports_its_compactions() -> None:
    pytest.importorskip("agents", reason="the OpenAI Agents SDK is a test extra")
    from agents import SQLiteSession

    from agentcontext.integrations.openai_agents import CompactingSession

    events: list[Any] = []
    session = CompactingSession(SQLiteSession("obs29"), 3_000, on_event=events.append)
    items = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"Step {i}: " + "details of the work " * 60}
        for i in range(16)
    ]
    asyncio.run(session.add_items(items))
    done = [e for e in events if isinstance(e, CompactionFinished)]
    assert session.compactions >= 1 and len(done) >= session.compactions
    assert all(e.kind == "budget" and e.tokens_after < e.tokens_before and e.stages for e in done)
    assert [type(e) for e in events].count(CompactionStarted) == len(done)


def test_an_adapter_fit_is_a_compaction_span_that_claims_no_stage(spans: Any) -> None:
    from agentcontext.integrations.litellm import fit_messages

    messages = support.synthetic_session(80, seed=5)
    fitted = fit_messages(messages, 3_000)
    (span,) = [s for s in spans.get_finished_spans() if s.name == "agentcontext.compaction"]
    a = span.attributes
    assert a["agentcontext.compaction.kind"] == "fit" and a["agentcontext.compaction.target"] == 3_000
    assert a["agentcontext.compaction.messages_before"] == len(messages)
    assert a["agentcontext.compaction.messages_after"] == len(fitted) < len(messages)
    assert a["agentcontext.compaction.tokens_before"] == ac.Conversation(messages, format="openai").tokens
    assert a["agentcontext.compaction.tokens_after"] == ac.Conversation(fitted, format="openai").tokens <= 3_000
    assert a["agentcontext.compaction.fits"] is True
    assert "agentcontext.compaction.stages" not in a and not span.events


def test_tool_calls_report_ran_error_and_refused(server: Any, spans: Any) -> None:
    pytest.importorskip("openai", reason="the openai SDK is a test extra")
    from agentcontext.observe import ToolCallDone
    from agentcontext.sessions.loop import Session
    from tests.llm_server import Reply

    def boom(args: Any) -> str:
        raise ValueError("disk full")

    calls = [{"name": n, "arguments": {}} for n in ("ok", "boom", "hidden")]
    server.enqueue(Reply("", tool_calls=calls), Reply("done"))
    events: list[Any] = []
    session = Session(
        support.provider("openai", server), functions={"ok": lambda a: "fine", "boom": boom, "hidden": lambda a: "x"},
        result_policy=False, on_event=events.append,
    )  # fmt: skip
    session.tool_gate = lambda name: name != "hidden"
    session.run("Go.")
    done = [e for e in events if isinstance(e, ToolCallDone)]
    assert [(e.name, e.outcome) for e in done] == [("ok", "ran"), ("boom", "error"), ("hidden", "refused")]
    assert done[0].result_chars == 4 and done[1].result_chars == len("Error: ValueError: disk full")
    tools = {
        s.attributes["gen_ai.tool.name"]: s for s in spans.get_finished_spans() if s.name.startswith("execute_tool")
    }
    assert tools["boom"].status.status_code.name == "ERROR"
    assert tools["ok"].status.status_code.name == "UNSET" and tools["hidden"].status.status_code.name == "UNSET"
    assert tools["hidden"].attributes["agentcontext.tool.outcome"] == "refused"
