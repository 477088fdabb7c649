"""The in-memory span exporter the observe tests read (the SDK is in the ``test`` extra)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

#: (the exporter, the sampler's switch) once the global tracer provider is set.
_SET: Any = None


def _install() -> Any:
    """The global tracer provider (set once per process): an SDK provider whose sampler records
    only while an observe test runs, so the tests after it in the same worker pay nothing."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult

    class Switch(Sampler):
        on = False

        def should_sample(
            self, parent: Any, trace_id: Any, name: str, kind: Any = None, attributes: Any = None, *args: Any, **kw: Any
        ) -> SamplingResult:
            # The span's attributes are the ones the sampler gives back.
            return SamplingResult(Decision.RECORD_AND_SAMPLE if self.on else Decision.DROP, attributes)

        def get_description(self) -> str:
            return "observe tests"

    switch = Switch()
    current = trace.get_tracer_provider()
    if not isinstance(current, TracerProvider):
        trace.set_tracer_provider(TracerProvider(sampler=switch))
        current = trace.get_tracer_provider()
    assert isinstance(current, TracerProvider)
    exporter = InMemorySpanExporter()
    current.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, switch


@pytest.fixture
def spans() -> Iterator[Any]:
    """The SDK's InMemorySpanExporter behind the global tracer provider, recording during the
    test only, emptied before and after it."""
    global _SET
    pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk is a test extra: pip install -e '.[test]'")
    if _SET is None:
        _SET = _install()
    exporter, switch = _SET
    exporter.clear()
    switch.on = True
    try:
        yield exporter
    finally:
        switch.on = False
        exporter.clear()
