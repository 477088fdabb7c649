"""The events of the summarizer calls one compaction made: an
:class:`~agentcontext.compaction.llm.LLMSummarizer` appends each call's event to its ``events``
list, which every thread using that summarizer shares; the calls made in this context (thread or
task) are collected here too (:func:`collecting`), so a report counts its own calls and tokens,
not another thread's that ran at the same time."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["collecting", "events_since", "record"]

#: The lists collecting the events of the summarizer calls made in this context, innermost last.
_COLLECTORS: ContextVar[tuple[list[dict[str, Any]], ...]] = ContextVar("agentcontext_summary_events", default=())


def record(event: dict[str, Any]) -> None:
    """``event`` (a summarizer call's, already in its ``events``) to every collection open here."""
    for collected in _COLLECTORS.get():
        collected.append(event)


@contextmanager
def collecting() -> Iterator[list[dict[str, Any]]]:
    """The events of the summarizer calls the block makes in this context, in order."""
    collected: list[dict[str, Any]] = []
    token = _COLLECTORS.set((*_COLLECTORS.get(), collected))
    try:
        yield collected
    finally:
        _COLLECTORS.reset(token)


def events_since(summarizer: Any, seen: int, collected: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events of ``summarizer``'s calls in a block: ``collected`` (what the block collected)
    when it records them here (``records_events``), else its ``events`` after the first ``seen``
    (a summarizer that keeps only its own list)."""
    if getattr(summarizer, "records_events", False):
        return [e for e in collected if isinstance(e, dict)]
    events = getattr(summarizer, "events", None)
    return [e for e in events[seen:] if isinstance(e, dict)] if isinstance(events, list) else []
