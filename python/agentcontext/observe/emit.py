"""The one place that reports: :class:`Observer` sends each event to the ``on_event`` callback and
the matching span to OpenTelemetry.

OpenTelemetry is optional (the ``otel`` extra). It is looked for once, at the first span, never on
``import agentcontext``; when it is not installed nothing of it is imported and every span is a
no-op. When it is installed but no tracer provider is set (or the no-op one), no span is started
at all (:func:`recording_tracer`: a span that would not record costs ~15 µs to start, the check
~0.1 µs); when one records nothing, its attributes are not computed (:meth:`Observer.span`
yields None).

A callback that raises does not break the run: the error is logged (logger
``agentcontext.observe``, with its traceback) and the run goes on, the next event reaching the
callback again."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from agentcontext.errors import ArgumentTypeError

if TYPE_CHECKING:
    from agentcontext.observe.events import Event

__all__ = ["EventCallback", "Observer", "check_callback", "for_agent", "otel_available", "recording_tracer"]

#: What ``on_event=`` takes: called with each event, in order, on the thread that made it.
EventCallback = Callable[["Event"], Any]

log = logging.getLogger("agentcontext.observe")

_UNSET: Any = object()
#: ``opentelemetry.trace`` once looked for (None: not installed), and the library's tracer.
_trace: Any = _UNSET
_tracer: Any = None
#: Once a tracer provider is set (OpenTelemetry sets it once, for good): whether it can record.
_provider_records: bool | None = None
#: Whether OpenTelemetry may load a provider from the environment (read at the first look).
_provider_from_env = False


def _tracing() -> Any:
    """The tracer (None without OpenTelemetry), looked for once."""
    global _trace, _tracer, _provider_from_env
    if _trace is _UNSET:
        _provider_from_env = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
        try:
            from opentelemetry import trace
        except ImportError:
            _trace = None
        else:
            from agentcontext._core import __version__

            _trace, _tracer = trace, trace.get_tracer("agentcontext", __version__)
    return _tracer


def recording_tracer() -> Any:
    """The tracer when a span could record: OpenTelemetry installed and a tracer provider set that
    is not the no-op one; else None, so no span is started. Until a provider is set this is read
    on each call (one may be set later), from OpenTelemetry's global when it has one (~0.1 µs;
    ``get_tracer_provider()`` reads the environment each call, ~3 µs); once set, the answer is kept."""
    global _provider_records
    tracer = _tracing()
    if tracer is None or _provider_records:
        return tracer
    if _provider_records is False:
        return None
    if not _provider_from_env and getattr(_trace, "_TRACER_PROVIDER", _UNSET) is None:
        return None  # not set yet, and nothing for OpenTelemetry to load it from
    provider = _trace.get_tracer_provider()
    if isinstance(provider, _trace.ProxyTracerProvider):
        return None  # not set yet
    _provider_records = not isinstance(provider, _trace.NoOpTracerProvider)
    return tracer if _provider_records else None


def otel_available() -> bool:
    """Whether OpenTelemetry's API is installed (imports it when it is)."""
    return _tracing() is not None


def check_callback(on_event: Any, owner: str | None = None) -> EventCallback | None:
    """``on_event`` when it is None or callable, else an error naming it (and ``owner``, the
    adapter or class that takes it, when given)."""
    if on_event is not None and not callable(on_event):
        of = f" of {owner}" if owner else ""
        raise ArgumentTypeError(f"on_event{of} must be a callable or None, got {type(on_event).__name__}")
    return cast("EventCallback | None", on_event)


def for_agent(on_event: EventCallback | None, agent: str) -> EventCallback | None:
    """``on_event`` for a subagent's session: each event given on with its ``agent`` field naming
    ``agent`` (the id of the tool call that started it), before the id a deeper subagent's event
    already names (``parent/child``). None without ``on_event``."""
    if on_event is None:
        return None
    parent = on_event

    def report(event: Event) -> Any:
        inner = event.agent
        return parent(dataclasses.replace(event, agent=agent if inner is None else f"{agent}/{inner}"))

    return report


def _scalar(value: Any) -> bool:
    return isinstance(value, bool | int | float | str)


def attribute_value(value: Any) -> Any:
    """``value`` as an OpenTelemetry attribute value (a scalar or a list of one scalar type), or
    None when it is not one (a dict, a mixed list, None)."""
    if _scalar(value):
        return value
    if isinstance(value, list | tuple) and value and all(_scalar(v) for v in value):
        kinds = {type(v) for v in value}
        return list(value) if len(kinds) == 1 else None
    return None


class Observer:
    """Reports one run's events to ``on_event`` and its spans to OpenTelemetry."""

    __slots__ = ("on_event", "tracer")

    def __init__(self, on_event: EventCallback | None) -> None:
        self.on_event = on_event
        self.tracer = recording_tracer()

    def emit(self, event: Event) -> None:
        """``event`` to the callback; a callback that raises is logged, and the run goes on."""
        if self.on_event is None:
            return
        try:
            self.on_event(event)
        except Exception:  # a UI's bug must not break the agent's run
            log.warning("the on_event callback raised on %s; the run goes on", type(event).__name__, exc_info=True)

    @contextmanager
    def span(self, name: str, attributes: Mapping[str, Any] | None = None) -> Iterator[Any]:
        """A span around the block, current within it (spans started inside are its children):
        the recording span, or None when nothing records it (no OpenTelemetry, no tracer provider)
        so the caller skips computing its attributes. An exception is recorded on it and goes on."""
        tracer = self.tracer
        if tracer is None:
            yield None
            return
        with tracer.start_as_current_span(name, attributes=dict(attributes or {})) as span:
            yield span if span.is_recording() else None

    def record(self, name: str, start_ns: int, attributes: Callable[[], Mapping[str, Any]], error: str | None) -> None:
        """A span from ``start_ns`` (``time.time_ns()``) to now, child of the current one, made
        after the fact; ``attributes()`` is called only when it records; ``error`` marks it failed."""
        tracer = self.tracer
        if tracer is None:
            return
        span = tracer.start_span(name, start_time=start_ns)
        if span.is_recording():
            span.set_attributes({k: v for k, v in attributes().items() if v is not None})
            if error is not None:
                fail(span, error)
        span.end(end_time=time.time_ns())

    @property
    def silent(self) -> bool:
        """No callback and no span that could record: nothing to report to."""
        return self.on_event is None and self.tracer is None


def fail(span: Any, error: str) -> None:
    """Mark ``span`` as failed with ``error``."""
    if _trace is not None and _trace is not _UNSET:
        span.set_status(_trace.Status(_trace.StatusCode.ERROR, error))
