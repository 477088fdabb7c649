"""The one place that reports: :class:`Observer` sends each event to the ``on_event`` callback and
the matching span to OpenTelemetry.

OpenTelemetry is optional (the ``otel`` extra). It is looked for once, at the first span, never on
``import agentcontext``; when it is not installed nothing of it is imported and every span is a
no-op. When it is installed but no tracer provider is set, spans do not record and their
attributes are not even computed (:meth:`Observer.span` yields None).

A callback that raises does not break the run: the error is logged (logger
``agentcontext.observe``, with its traceback) and the run goes on, the next event reaching the
callback again."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from agentcontext.errors import ArgumentTypeError

if TYPE_CHECKING:
    from agentcontext.observe.events import Event

__all__ = ["EventCallback", "Observer", "check_callback", "otel_available"]

#: What ``on_event=`` takes: called with each event, in order, on the thread that made it.
EventCallback = Callable[["Event"], Any]

log = logging.getLogger("agentcontext.observe")

_UNSET: Any = object()
#: ``opentelemetry.trace`` once looked for (None: not installed), and the library's tracer.
_trace: Any = _UNSET
_tracer: Any = None


def _tracing() -> Any:
    """The tracer (None without OpenTelemetry), looked for once."""
    global _trace, _tracer
    if _trace is _UNSET:
        try:
            from opentelemetry import trace
        except ImportError:
            _trace = None
        else:
            from agentcontext._core import __version__

            _trace, _tracer = trace, trace.get_tracer("agentcontext", __version__)
    return _tracer


def otel_available() -> bool:
    """Whether OpenTelemetry's API is installed (imports it when it is)."""
    return _tracing() is not None


def check_callback(on_event: Any) -> EventCallback | None:
    """``on_event`` when it is None or callable, else an error naming it."""
    if on_event is not None and not callable(on_event):
        raise ArgumentTypeError(f"on_event must be a callable or None, got {type(on_event).__name__}")
    return cast("EventCallback | None", on_event)


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
        self.tracer = _tracing()

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
        """No callback and no OpenTelemetry: nothing to report to."""
        return self.on_event is None and self.tracer is None


def fail(span: Any, error: str) -> None:
    """Mark ``span`` as failed with ``error``."""
    if _trace is not None and _trace is not _UNSET:
        span.set_status(_trace.Status(_trace.StatusCode.ERROR, error))
