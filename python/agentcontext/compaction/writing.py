"""Running a summarizer for the ladder: its request staged when it overflows (or as the harness
handles that), its text checked (non-empty, smaller than what it replaces, over the floor, holding
the latest user request) and cut to the cap."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from agentcontext._core import Conversation, count_tokens
from agentcontext.compaction.summarize import LINE_TOKENS, Summarizer, SummaryRequest
from agentcontext.compaction.summary_text import HANDOFF_PROMPT, join_summaries, strip_scratchpad
from agentcontext.errors import SummaryError, failure_text

if TYPE_CHECKING:
    from agentcontext.compaction.policy import CompactionPolicy

__all__ = ["latest_request", "run_summarizer", "summary_floor", "write_staged"]


class _NotText(SummaryError):
    """A summarizer answered with something other than text (its message is the failure note)."""


class _Checked:
    """``summarizer`` with each ``summarize`` answer checked to be text, as every caller of it
    (the staged parts, a harness's overflow handling) reads it: anything else is a
    :class:`~agentcontext.errors.SummaryError` saying what it returned. Every other attribute is
    the summarizer's own."""

    def __init__(self, summarizer: Summarizer) -> None:
        self._summarizer = summarizer

    def summarize(self, request: SummaryRequest) -> str:
        raw = self._summarizer.summarize(request)
        if not isinstance(raw, str):
            got = "None" if raw is None else f"a value of type {type(raw).__name__}"
            raise _NotText(f"{type(self._summarizer).__name__}.summarize returned {got}, not the summary text (a str)")
        return raw

    def __getattr__(self, name: str) -> Any:
        return getattr(self._summarizer, name)


def run_summarizer(
    summarizer: Summarizer, request: SummaryRequest, p: CompactionPolicy, notes: dict[str, Any] | None = None
) -> tuple[str | None, str | None]:
    """The accepted summary, or None and why not. Staged (parts of equal token share, then a
    merge) when the older history does not fit a window-bound summarizer's window (or as the
    policy's harness handles an overflowing request, :meth:`Harness.summary_overflow`); accepted only if
    non-empty and smaller than what it replaces, and cut to the size cap. ``notes`` receives
    what the harness behaviours did (rounds dropped, a split turn)."""
    # A summarizer that knows its own model's window (an LLM summarizer) plans with it.
    window = getattr(summarizer, "context_window", None) or p.summarizer_window
    room = window - p.reserved_output - count_tokens(HANDOFF_PROMPT)
    window_bound = getattr(summarizer, "window_bound", True)
    notes = {} if notes is None else notes
    summarizer = _Checked(summarizer)

    harness, bound = p.harness, room if window_bound else None

    def staged(r: SummaryRequest) -> str:
        return write_staged(summarizer, r, p, bound)

    def write(r: SummaryRequest) -> str:
        return harness.summary_overflow(summarizer, r, bound, notes, staged)

    try:
        raw = harness.summary_request(write, request, notes)
    except _NotText as exc:
        return None, str(exc)
    except Exception as exc:  # noqa: BLE001 - any summarizer failure is a reported fallback, not a crash
        return None, failure_text(exc)
    if raw is not None and not isinstance(raw, str):
        return None, f"the summary written was a {type(raw).__name__}, not text (a str)"
    summary = strip_scratchpad(raw or "")
    if not summary:
        return None, "the summary was empty"
    # The offline summary's fit counted its text already (in the request's encoding: LINE_TOKENS).
    known = request.context.get(LINE_TOKENS, {}) if request.encoding == p.encoding else {}
    tokens = known.get(summary) or count_tokens(summary, encoding=p.encoding)
    if tokens >= request.tokens:
        return None, f"the summary ({tokens:,} tokens) is not smaller than what it replaces ({request.tokens:,})"
    floor = summary_floor(request.tokens, request.max_tokens)
    if tokens < floor:
        return None, (
            f"the summary ({tokens:,} tokens) is under the floor of {floor:,} for {request.tokens:,} tokens replaced"
        )
    ask = latest_request(request)
    if ask is not None and not _holds_request(summary, ask):
        return None, "the summary lacks the latest user request"
    if tokens > request.max_tokens:
        summary = p.harness.shrink_summary(summary, request.max_tokens, encoding=p.encoding)
    return summary, None


def write_staged(summarizer: Summarizer, request: SummaryRequest, p: CompactionPolicy, room: int | None) -> str:
    """The summarizer's raw text for ``request``: one call when it fits ``room`` (None: no
    window to respect), else staged — parts of equal token share, then a merge."""
    if room is None or request.tokens <= room:
        return summarizer.summarize(request)
    older = request.older
    parts = older.split(max(2, math.ceil(request.tokens / max(room, 1))))
    partial = [
        summarizer.summarize(
            SummaryRequest(
                older, lo, hi, request.previous_summary if k == 0 else None, request.max_tokens,
                encoding=p.encoding, context={"part": k + 1, "parts": len(parts)},
                instructions=request.instructions,
            )
        )
        for k, (lo, hi) in enumerate(parts)
    ]  # fmt: skip
    merged = Conversation(
        [{"role": "user", "content": join_summaries([strip_scratchpad(x) for x in partial])}],
        encoding=p.encoding,
    )
    return summarizer.summarize(
        SummaryRequest(
            merged, 0, 1, None, request.max_tokens, encoding=p.encoding, context={"merge": True},
            instructions=request.instructions,
        )
    )  # fmt: skip


def summary_floor(replaced_tokens: int, max_tokens: int) -> int:
    """The fewest tokens an accepted summary may have: 1/200 of what it replaces, at least 32,
    and never more than a quarter of its cap. A 20-token summary of 145,000 tokens is a collapse
    (a tag quoted from a message, an error line), not a handoff; the fallback runs instead."""
    return min(max_tokens // 4, max(32, replaced_tokens // 200))


def latest_request(request: SummaryRequest) -> str | None:
    """The latest real user request in the range a summary replaces (None when there is none)."""
    found = (request.original or request.source)._latest_request(request.start, request.stop)
    return found[1] if found else None


def _holds_request(summary: str, ask: str) -> bool:
    """Whether ``summary`` holds the user request ``ask``: its opening (up to 40 characters,
    whitespace folded), as a handoff quotes it."""
    # Folding a prefix of a text gives a prefix of the folded text: the first 40 characters
    # folded of a long request come from its first few hundred.
    opening = " ".join(ask[:400].split())[:40]
    if len(opening) < 40:
        opening = " ".join(ask.split())[:40]
    # Folding keeps every single space between words: an opening found in the text as written is
    # in the folded text too (folding it, the long part of the check, only when it is not).
    return opening in summary or opening in " ".join(summary.split())
