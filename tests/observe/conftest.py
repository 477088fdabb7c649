"""The in-memory span exporter the observe tests read (the SDK is in the ``test`` extra)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

_EXPORTER: Any = None


@pytest.fixture
def spans() -> Iterator[Any]:
    """The SDK's InMemorySpanExporter behind the global tracer provider (set once per process),
    emptied before and after the test."""
    global _EXPORTER
    pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk is a test extra: pip install -e '.[test]'")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    if _EXPORTER is None:
        current = trace.get_tracer_provider()
        if not isinstance(current, TracerProvider):
            trace.set_tracer_provider(TracerProvider())
            current = trace.get_tracer_provider()
        assert isinstance(current, TracerProvider)
        _EXPORTER = InMemorySpanExporter()
        current.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()
