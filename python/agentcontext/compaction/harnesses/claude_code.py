"""Claude Code's retry when the compaction call itself is too long.

When the summary request does not fit the summarizer's window (known before sending, for a
summarizer with a window), or its provider rejects it as too long
(:class:`~agentcontext.errors.ContextOverflowError`), Claude Code does not stage the summary: it
drops the oldest API-round groups of the request — enough to close the gap when the size of the
gap is known, else 20% of the groups — and sends it again, at most :data:`MAX_RETRIES` times. What
was dropped is not summarized: the compaction ladder counts those messages by a drop marker in
its output (their originals under a recall id when the compactor has a store), and the summary
header names only the messages the summarizer saw. The latest user request is kept: when it falls
in the dropped part, the request opens with it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from agentcontext._core import Conversation
from agentcontext.compaction.harness import Harness
from agentcontext.compaction.summarize import Summarizer, SummaryRequest
from agentcontext.errors import ContextOverflowError
from agentcontext.types import DroppedRounds

__all__ = ["DROP_SHARE", "MAX_RETRIES", "ClaudeCode", "api_rounds", "drop_oldest_rounds", "summarize_dropping_rounds"]

#: Share of the API-round groups dropped when the provider does not say by how much the request is over.
DROP_SHARE = 0.2

#: Retries after the first too-long summary request (Claude Code's MAX_PTL_RETRIES).
MAX_RETRIES = 3


@dataclass(frozen=True)
class ClaudeCode(Harness):
    """Claude Code's options: compact at ``available - trigger_margin`` at the latest (13,000
    tokens under the window less its output reservation); a summary request too long for the
    summarizer drops its oldest API-round groups and is retried (:func:`summarize_dropping_rounds`)."""

    summarizer_overflow: ClassVar[str] = "drop_rounds"

    trigger_margin: int = 13_000

    def trigger_limit(self, available: int) -> int:
        return max(0, available - self.trigger_margin)

    def scaled(self, factor: float) -> ClaudeCode:
        return replace(self, trigger_margin=int(self.trigger_margin / factor))

    def for_budget(self) -> ClaudeCode:
        return replace(self, trigger_margin=0)

    def summary_overflow(
        self,
        summarizer: Summarizer,
        request: SummaryRequest,
        room: int | None,
        notes: dict[str, Any],
        staged: Callable[[SummaryRequest], str],
    ) -> str:
        return summarize_dropping_rounds(summarizer.summarize, request, room, notes)


def api_rounds(request: SummaryRequest) -> list[tuple[int, int]]:
    """The request's older history as API-round groups, ``(start, stop)`` in ``request.source``:
    the user turn that opens it, then each assistant message with the tool results that follow it
    (cut only where a call is never separated from its result)."""
    cuts = [c for c in request.source._cut_points() if request.start < c < request.stop]
    bounds = [request.start, *cuts, request.stop]
    return [(lo, hi) for lo, hi in itertools.pairwise(bounds) if lo < hi]


def drop_oldest_rounds(
    request: SummaryRequest, gap: int | None, *, already: int = 0
) -> tuple[SummaryRequest, DroppedRounds] | None:
    """``request`` without its oldest API-round groups: ``already`` of them (dropped by an earlier
    try) and then enough more to free ``gap`` tokens, or :data:`DROP_SHARE` of those left (at
    least one) when ``gap`` is None. The last group always stays; None when no more can be
    dropped. The new request's history opens with the latest user request when it was dropped,
    followed by a note saying what was dropped. The counts returned (``dropped_rounds``,
    ``dropped_messages``, ``dropped_tokens``) are of ``request``'s own messages, all the groups
    dropped so far."""
    groups = api_rounds(request)
    if len(groups) - already < 2:
        return None
    totals = request.source.message_tokens()
    if gap is None:
        k = already + max(1, math.ceil((len(groups) - already) * DROP_SHARE))
    else:
        k, freed = already, 0
        while k < len(groups) and freed < gap:
            lo, hi = groups[k]
            freed += sum(totals[lo:hi])
            k += 1
        k = max(k, already + 1)
    k = min(k, len(groups) - 1)
    at = groups[k][0]
    dropped = sum(totals[request.start : at])
    base = request.original or request.source
    found = base._latest_request(request.start, request.stop)
    ask = found[1] if found is not None and found[0] < at else None
    note = (
        f"[agentcontext: the {at - request.start:,} oldest messages ({dropped:,} tokens, {k} API rounds) were "
        "dropped from this summary request because it was too long for the summarizer"
        + ("; the latest user request among them is quoted above" if ask else "")
        + ".]"
    )
    head = [{"role": "user", "content": f"{ask}\n\n{note}" if ask else note}]

    def rebuilt(conv: Conversation) -> Conversation:
        return conv.slice(at, request.stop).replace(0, 0, head)

    source = rebuilt(request.source)
    original = rebuilt(request.original) if request.original is not None else None
    shorter = replace(request, source=source, start=0, stop=len(source), original=original)
    return shorter, {"dropped_rounds": k, "dropped_messages": at - request.start, "dropped_tokens": dropped}


def _gap(exc: ContextOverflowError) -> int | None:
    if exc.tokens is not None and exc.limit is not None and exc.tokens > exc.limit:
        return exc.tokens - exc.limit
    return None


def summarize_dropping_rounds(
    write: Callable[[SummaryRequest], str], request: SummaryRequest, room: int | None, notes: dict[str, Any]
) -> str:
    """The summary of ``request`` written by ``write``, after dropping the oldest API-round groups
    while the request is over ``room`` tokens (None: no window is known) or the provider rejects
    it as too long. ``notes`` receives what was dropped (``overflow_retries``, ``dropped_rounds``,
    ``dropped_messages``, ``dropped_tokens``).

    Raises:
        ContextOverflowError: still too long after :data:`MAX_RETRIES` retries, or nothing is
            left to drop.
    """
    asked = replace(request, context={**request.context, "overflow": "raise"})
    current = asked
    rounds = 0
    retries = 0

    def drop(gap: int | None, exc: ContextOverflowError | None) -> None:
        # Always from the request as asked (the counts are of its messages, never of a note
        # an earlier try put in): its oldest groups, those dropped before and more.
        nonlocal current, rounds
        shorter = drop_oldest_rounds(asked, gap, already=rounds)
        if shorter is None:
            if exc is not None:
                raise exc
            raise ContextOverflowError(
                f"the summary request ({current.tokens:,} tokens) is larger than the summarizer's room "
                f"({room:,} tokens) and holds a single API round",
                provider="summarizer",
                tokens=current.tokens,
                limit=room,
            )
        current, what = shorter
        rounds = what["dropped_rounds"]
        notes.update(what, overflow_retries=retries)

    while True:
        if room is not None and current.tokens > room:
            if retries >= MAX_RETRIES:
                raise ContextOverflowError(
                    f"the summary request is still {current.tokens:,} tokens, over the summarizer's room of "
                    f"{room:,}, after {MAX_RETRIES} retries",
                    provider="summarizer",
                    tokens=current.tokens,
                    limit=room,
                )
            retries += 1
            drop(current.tokens - room, None)
            continue
        try:
            return write(current)
        except ContextOverflowError as exc:
            if retries >= MAX_RETRIES:
                raise
            retries += 1
            drop(_gap(exc), exc)
