"""Issue #29, the hot path: with OpenTelemetry's API installed and no tracer provider set (or the
no-op one), an adapter's fit, a compaction and a session's model call start no span at all; a
provider set later is picked up, and its spans record as before. The fit events and spans say
the same."""

from __future__ import annotations

from typing import Any

import pytest

import agentcontext as ac
from agentcontext.observe import CompactionFinished, emit
from tests import support

pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk is a test extra: pip install -e '.[test]'")


class Counting:
    """The library's tracer, counting the spans started through it."""

    def __init__(self, tracer: Any) -> None:
        self.tracer, self.started = tracer, 0

    def start_span(self, *args: Any, **kwargs: Any) -> Any:
        self.started += 1
        return self.tracer.start_span(*args, **kwargs)

    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Any:
        self.started += 1
        return self.tracer.start_as_current_span(*args, **kwargs)


def _work() -> tuple[list[Any], Any]:
    """An adapter's fit, a compaction and a session's turn (model calls, a tool call)."""
    from agentcontext.integrations.litellm import fit_messages
    from agentcontext.providers import ScriptedChatProvider, scripted_call

    messages = support.synthetic_session(80, seed=5)
    fitted = fit_messages(messages, 3_000)
    conv = ac.Conversation(messages)
    result = ac.Compactor("openharness").compact(conv, budget=conv.tokens // 3)
    session = ac.Session(
        ScriptedChatProvider([scripted_call("read", {}), "done"]), functions={"read": lambda a: "text"}
    )
    session.run("Read it.")
    return fitted, result.conversation.to_openai()


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch, spans: Any) -> Any:
    """The tracer counted, and OpenTelemetry's global provider as if none were set (the one the
    ``spans`` fixture set is put back by the test, or after it)."""
    from opentelemetry import trace

    assert emit.otel_available()
    counter = Counting(emit._tracer)
    monkeypatch.setattr(emit, "_tracer", counter)
    monkeypatch.setattr(emit, "_provider_records", None)
    monkeypatch.setattr(emit, "_provider_from_env", False)
    real = trace.get_tracer_provider()
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    return counter, real


def test_no_provider_starts_no_span_and_one_set_later_records(counting: Any, spans: Any) -> None:
    from opentelemetry import trace

    counter, real = counting
    quiet = _work()
    assert counter.started == 0 and emit.recording_tracer() is None and emit._provider_records is None

    trace._TRACER_PROVIDER = real  # set later (restored by the fixture)
    assert _work() == quiet
    names = [s.name for s in spans.get_finished_spans()]
    assert counter.started == len(names) > 0 and emit._provider_records is True
    assert {"agentcontext.compaction", "agentcontext.summarize", "chat scripted", "execute_tool read"} <= set(names)
    kinds = [s.attributes["agentcontext.compaction.kind"] for s in spans.get_finished_spans() if s.name == names[0]]
    assert "fit" in kinds


def test_the_no_op_provider_starts_no_span(counting: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry import trace

    counter, _ = counting
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", trace.NoOpTracerProvider())
    _work()
    assert counter.started == 0 and emit._provider_records is False


def test_a_fit_reported_and_traced_says_the_same(spans: Any) -> None:
    from agentcontext.integrations.litellm import fit_messages

    messages = support.synthetic_session(80, seed=5)
    events: list[Any] = []
    fitted = fit_messages(messages, 3_000, on_event=events.append)
    (done,) = [e for e in events if isinstance(e, CompactionFinished)]
    (span,) = [s for s in spans.get_finished_spans() if s.name == "agentcontext.compaction"]
    a = span.attributes
    assert a["agentcontext.compaction.kind"] == done.kind == "fit"
    assert a["agentcontext.compaction.target"] == done.target == 3_000
    assert a["agentcontext.compaction.tokens_before"] == done.tokens_before
    assert a["agentcontext.compaction.tokens_after"] == done.tokens_after == ac.Conversation(fitted).tokens
    assert a["agentcontext.compaction.messages_before"] == done.messages_before == len(messages)
    assert a["agentcontext.compaction.messages_after"] == done.messages_after == len(fitted)
    assert a["agentcontext.compaction.fits"] is done.fits is True


def test_a_fit_that_fails_reports_its_error(spans: Any) -> None:
    """A fit whose system message alone is over the budget: the finished event says why, the span
    is marked failed, the error reaches the caller."""
    from agentcontext.integrations.litellm import fit_messages

    messages = [{"role": "system", "content": "word " * 2_000}, {"role": "user", "content": "hi"}]
    events: list[Any] = []
    with pytest.raises(ac.BudgetError) as raised:
        fit_messages(messages, 100, on_event=events.append)
    started, finished = events
    assert started.kind == finished.kind == "fit" and finished.error == f"BudgetError: {raised.value}"
    assert not finished.fits and finished.messages_after == finished.messages_before == 2
    assert finished.tokens_after == finished.tokens_before == started.tokens > 100
    (span,) = [s for s in spans.get_finished_spans() if s.name == "agentcontext.compaction"]
    assert span.status.status_code.name == "ERROR"
