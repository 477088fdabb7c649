"""The calls a run makes, observed: a summarizer's (``agentcontext.summarize``), the memory flush
turn (``agentcontext.flush``), a model call of the loop (``chat <model>``) and a tool call
(``execute_tool <name>``), with the OpenTelemetry GenAI attributes where they exist
(``gen_ai.operation.name``, ``gen_ai.provider.name``, ``gen_ai.request.model``,
``gen_ai.usage.*``) and ``agentcontext.*`` ones for the rest."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

from agentcontext.errors import failure_text
from agentcontext.observe.emit import EventCallback, Observer
from agentcontext.observe.events import FlushDone, ModelCall, SummarizerCall, ToolCallDone
from agentcontext.observe.summary_events import collecting, events_since

if TYPE_CHECKING:
    from agentcontext.compaction.results import StageEvent
    from agentcontext.types import Encoding

__all__ = [
    "ModelCallWatch",
    "observe_flush",
    "observe_summary",
    "observe_tool",
    "turn_span",
    "usage_attributes",
    "watch_model_call",
]


def usage_attributes(
    input_tokens: Any, output_tokens: Any, cache_read: Any = None, cache_write: Any = None
) -> dict[str, Any]:
    """The GenAI usage attributes (None values left out)."""
    out = {
        "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens,
        "gen_ai.usage.cache_read.input_tokens": cache_read,
        "gen_ai.usage.cache_creation.input_tokens": cache_write,
    }
    return {k: v for k, v in out.items() if v is not None}


def _model(provider: Any) -> dict[str, Any]:
    """The GenAI attributes of a chat call to ``provider`` (empty without one)."""
    if provider is None:
        return {}
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": str(getattr(provider, "name", "") or "") or None,
        "gen_ai.request.model": getattr(provider, "model", None),
    }


def observe_summary(
    on_event: EventCallback | None, summarizer: Any, request: Any, encoding: Encoding,
    write: Callable[[], tuple[str | None, str | None]],
) -> tuple[str | None, str | None]:  # fmt: skip
    """``write()`` (the ladder's summarizer run: the summary or why not), reported as one
    summarizer call; an LLM summarizer's model calls in it are read from its ``events``."""
    observer = Observer(on_event)
    if observer.silent:
        return write()
    events = getattr(summarizer, "events", None)
    seen = len(events) if isinstance(events, list) else 0
    start, clock = time.time_ns(), time.perf_counter()
    with collecting() as collected:
        text, why = write()
    # This call's events (not another thread's, made meanwhile with the same summarizer).
    own = events_since(summarizer, seen, collected)
    usage = [u for e in own for u in e.get("usage", [])]
    # The summarizer's own fallback wrote the text (its model failed): the model's reason.
    fell_back = next((str(e.get("failure") or "") for e in reversed(own) if e.get("outcome") == "fallback"), None)
    provider = getattr(summarizer, "provider", None)
    from agentcontext._core import count_tokens

    event = SummarizerCall(
        summarizer=type(summarizer).__name__, request_tokens=request.tokens, max_tokens=request.max_tokens,
        summary_tokens=count_tokens(text, encoding=encoding) if text else None, failure=why,
        seconds=time.perf_counter() - clock, model=getattr(provider, "model", None), calls=len(usage),
        input_tokens=sum(u.get("input_tokens", 0) for u in usage),
        output_tokens=sum(u.get("output_tokens", 0) for u in usage),
        cache_read_tokens=sum(u.get("cache_read_tokens", 0) for u in usage),
        cache_write_tokens=sum(u.get("cache_write_tokens", 0) for u in usage),
        fallback=fell_back if text is not None else None,
    )  # fmt: skip

    def attributes() -> dict[str, Any]:
        out: dict[str, Any] = {
            "agentcontext.summarizer": event.summarizer,
            "agentcontext.summary.request_tokens": event.request_tokens,
            "agentcontext.summary.max_tokens": event.max_tokens,
            "agentcontext.summary.tokens": event.summary_tokens,
            "agentcontext.summary.failure": event.failure,
            "agentcontext.summary.fallback": event.fallback,
        }
        if event.calls:  # a model was called: the GenAI attributes say which and what it reported
            out.update(_model(provider))
            out["agentcontext.summary.model_calls"] = event.calls
            out.update(usage_attributes(event.input_tokens, event.output_tokens,
                                        event.cache_read_tokens, event.cache_write_tokens))  # fmt: skip
        return out

    observer.record("agentcontext.summarize", start, attributes, why)
    observer.emit(event)
    return text, why


def observe_flush(
    on_event: EventCallback | None, provider: Any, start_ns: int, seconds: float, stage: StageEvent
) -> None:
    """The memory flush turn that ended with ``stage`` (its ``flush`` stage event, the source of
    every number), started at ``start_ns``."""
    observer = Observer(on_event)
    if observer.silent:
        return
    d = stage.detail
    event = FlushDone(
        model=getattr(provider, "model", None), shown_messages=int(d.get("shown_messages", 0)),
        calls=int(d.get("calls", 0)), input_tokens=int(d.get("input_tokens", 0)),
        output_tokens=int(d.get("output_tokens", 0)), written=len(d.get("written", [])),
        deleted=len(d.get("deleted", [])), seconds=seconds, skipped=d.get("skipped"), failed=d.get("failed"),
    )  # fmt: skip

    def attributes() -> dict[str, Any]:
        out = _model(provider) if event.calls else {}
        out.update(usage_attributes(event.input_tokens, event.output_tokens) if event.calls else {})
        out.update({
            "agentcontext.flush.shown_messages": event.shown_messages,
            "agentcontext.flush.model_calls": event.calls,
            "agentcontext.flush.written": event.written,
            "agentcontext.flush.deleted": event.deleted,
            "agentcontext.flush.skipped": event.skipped,
        })  # fmt: skip
        return out

    observer.record("agentcontext.flush", start_ns, attributes, event.failed)
    observer.emit(event)


class ModelCallWatch:
    """One model call being observed (see :func:`watch_model_call`)."""

    def __init__(self, observer: Observer, span: Any, provider: Any, request: Any, max_output_tokens: int) -> None:
        self.observer, self.span, self.provider = observer, span, provider
        self.request, self.max_output_tokens = request, max_output_tokens
        self.started = time.perf_counter()

    def event(self, completion: Any = None, error: str | None = None) -> ModelCall:
        usage = getattr(completion, "usage", None)
        return ModelCall(
            provider=str(getattr(self.provider, "name", "")), model=str(self.provider.model),
            messages=len(self.request), local_tokens=self.request.tokens, max_output_tokens=self.max_output_tokens,
            seconds=time.perf_counter() - self.started,
            input_tokens=usage.input_tokens if usage else None, output_tokens=usage.output_tokens if usage else None,
            cache_read_tokens=usage.cache_read_tokens if usage else None,
            cache_write_tokens=usage.cache_write_tokens if usage else None,
            stop_reason=getattr(completion, "stop_reason", None),
            tool_calls=len(getattr(completion, "tool_calls", None) or []), error=error,
        )  # fmt: skip

    def done(self, completion: Any) -> None:
        if self.span is None and self.observer.on_event is None:
            return
        event = self.event(completion)
        if self.span is not None:
            self.span.set_attributes(
                usage_attributes(
                    event.input_tokens, event.output_tokens, event.cache_read_tokens, event.cache_write_tokens
                )
            )
            if event.stop_reason:
                self.span.set_attribute("gen_ai.response.finish_reasons", [event.stop_reason])
            self.span.set_attribute("agentcontext.response.tool_calls", event.tool_calls)
        self.observer.emit(event)


@contextmanager
def watch_model_call(
    on_event: EventCallback | None, provider: Any, request: Any, max_output_tokens: int
) -> Iterator[ModelCallWatch]:
    """Observe one model call of the loop: a ``chat <model>`` span around the block (current:
    an instrumented HTTP client's spans are its children); the block calls ``done(completion)``.
    A call that raises is reported with its error."""
    observer = Observer(on_event)
    attributes = {
        **{k: v for k, v in _model(provider).items() if v is not None},
        "gen_ai.request.max_tokens": max_output_tokens,
    }
    if observer.silent:
        yield ModelCallWatch(observer, None, provider, request, max_output_tokens)
        return
    with observer.span(f"chat {provider.model}", attributes) as span:
        if span is not None:
            span.set_attributes({"agentcontext.request.messages": len(request),
                                 "agentcontext.request.local_tokens": request.tokens})  # fmt: skip
        watch = ModelCallWatch(observer, span, provider, request, max_output_tokens)
        try:
            yield watch
        except Exception as exc:
            observer.emit(watch.event(error=failure_text(exc)))
            raise


def observe_tool(
    on_event: EventCallback | None, name: str, call_id: str, run: Callable[[], tuple[str, bool]], refused: bool
) -> str:
    """``run()`` (a tool call's result text, and whether it failed) reported as one tool call:
    an ``execute_tool <name>`` span and a :class:`ToolCallDone` event."""
    observer = Observer(on_event)
    if observer.silent:
        return run()[0]
    start, clock = time.time_ns(), time.perf_counter()
    text, failed = run()
    outcome: Literal["ran", "error", "refused"] = "refused" if refused else "error" if failed else "ran"
    event = ToolCallDone(name, call_id, outcome, len(text), time.perf_counter() - clock)
    observer.record(
        f"execute_tool {name}", start,
        lambda: {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": call_id,
                 "agentcontext.tool.outcome": outcome, "agentcontext.tool.result_chars": len(text)},
        text[:200] if failed else None,
    )  # fmt: skip
    observer.emit(event)
    return text


@contextmanager
def turn_span(on_event: EventCallback | None, provider: Any, turn: int) -> Iterator[None]:
    """An ``invoke_agent`` span around one outer turn of the loop (its model and tool calls and
    compactions are its children)."""
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.request.model": getattr(provider, "model", None),
                  "agentcontext.turn": turn}  # fmt: skip
    with Observer(on_event).span("invoke_agent agentcontext", {k: v for k, v in attributes.items() if v is not None}):
        yield
