"""Pi's split-turn compaction.

Pi keeps the most recent ``keepRecentTokens`` raw, cutting at any user or assistant message that
does not separate a tool call from its result. When that cut falls inside a turn (one turn larger
than the kept budget, or the budget ending in the middle of one), the turn is split: its end stays
raw, and its prefix — the user request and the rounds before the cut — is summarized apart as the
turn context, joined to the summary of the history before the turn. Pi's ``/compact [focus]``
passes the user's focus to the summarizer (:attr:`~agentcontext.compaction.summarize.SummaryRequest.instructions`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from agentcontext._core import count_tokens
from agentcontext.compaction.harness import Harness
from agentcontext.compaction.summarize import SummaryRequest, shrink_summary, strip_scratchpad
from agentcontext.types import Encoding

__all__ = ["TURN_CONTEXT_HEADING", "Pi", "split_turn_start", "summarize_split_turn"]

#: The heading of the turn prefix's summary (Pi's wording).
TURN_CONTEXT_HEADING = "**Turn Context (split turn):**"

#: What joins the summary of the history before a split turn to the turn's prefix.
_JOIN = f"\n\n---\n\n{TURN_CONTEXT_HEADING}\n\n"

#: The least a history part keeps beside the turn's prefix when a joined summary is made smaller.
_HISTORY_LEAST = 32

#: The least share of the summary's cap given to the turn prefix beside older history (Pi: 0.5
#: of the reserve against 0.8 for the history); a larger prefix gets its share by tokens.
TURN_SHARE = 0.4


@dataclass(frozen=True)
class Pi(Harness):
    """Pi: when the raw recent part starts inside a turn, the turn's prefix is summarized apart
    (the turn context) and joined to the summary of the history before it
    (:func:`summarize_split_turn`)."""

    def summary_request(
        self, write: Callable[[SummaryRequest], str], request: SummaryRequest, notes: dict[str, Any]
    ) -> str:
        return summarize_split_turn(write, request, notes)

    def shrink_summary(
        self,
        text: str,
        max_tokens: int,
        *,
        encoding: Encoding,
        request_room: int = 0,
        counts: dict[str, int] | None = None,
    ) -> str:
        """A joined summary (:func:`summarize_split_turn`) made smaller part by part: the turn's
        prefix, which holds the latest request, first; the history before it gets what is left
        (dropped, with the heading, when that is under :data:`_HISTORY_LEAST`). Fitted as one
        text, the history's sections came first and the turn's prefix, the latest request with
        it, was cut away."""
        history, join, turn = text.partition(_JOIN)
        if not join or not turn:
            return super().shrink_summary(text, max_tokens, encoding=encoding, request_room=request_room, counts=counts)
        if count_tokens(text, encoding=encoding) <= max_tokens:
            return text
        # (A token of slack where the parts meet: counted apart, they may count one more together.)
        room = max_tokens - count_tokens(join, encoding=encoding) - _HISTORY_LEAST - 2
        turn_tokens = count_tokens(turn, encoding=encoding)
        if room < min(turn_tokens, _HISTORY_LEAST):
            return shrink_summary(turn, max_tokens, encoding=encoding, request_room=request_room)
        turn = shrink_summary(turn, min(turn_tokens, room), encoding=encoding, request_room=request_room)
        left = max_tokens - count_tokens(join + turn, encoding=encoding) - 2
        return f"{shrink_summary(history, left, encoding=encoding)}{join}{turn}"


def split_turn_start(request: SummaryRequest) -> int | None:
    """The start of the turn that the end of ``request`` cuts in two (the raw part kept after it
    opens inside that turn), in ``request.source``; None when the cut falls between turns."""
    stop = request.stop
    for lo, hi in request.source.groups():
        if lo < stop < hi and lo >= request.start:
            return lo
    return None


def summarize_split_turn(write: Callable[[SummaryRequest], str], request: SummaryRequest, notes: dict[str, Any]) -> str:
    """The summary of ``request`` written by ``write``: when its end splits a turn, the history
    before the turn and the turn's prefix are summarized apart (the prefix within its
    share of the cap by tokens, at least :data:`TURN_SHARE`) and joined under :data:`TURN_CONTEXT_HEADING`; ``notes``
    receives ``split_turn`` (where the turn starts and where the raw part resumes). When the turn
    opens the older history, its prefix is all there is to summarize: one summary, the whole cap,
    no heading."""
    at = split_turn_start(request)
    if at is None:
        return write(request)
    notes["split_turn"] = {"turn_start": at, "kept_from": request.stop, "turn_prefix_messages": request.stop - at}
    if at == request.start:
        # Nothing before the turn: the turn's prefix is all there is to summarize, with the whole cap.
        return write(replace(request, context={**request.context, "split_turn": "prefix"}))
    # Beside older history, the prefix gets a share of the cap by size, at least TURN_SHARE.
    totals = request.source.message_tokens()
    share = sum(totals[at : request.stop]) / max(1, sum(totals[request.start : request.stop]))
    turn_cap = min(max(32, int(request.max_tokens * max(TURN_SHARE, share))), request.max_tokens - 32)
    prefix = replace(
        request,
        start=at,
        max_tokens=turn_cap,
        previous_summary=None,
        context={**request.context, "split_turn": "prefix"},
    )
    turn = strip_scratchpad(write(prefix))
    history = replace(
        request,
        stop=at,
        max_tokens=max(32, request.max_tokens - turn_cap),
        context={**request.context, "split_turn": "history"},
        # The latest request opens the turn (the prefix carries it): history's is an earlier one.
        request_room=0,
        request_recall_id=None,
    )
    return f"{strip_scratchpad(write(history))}{_JOIN}{turn}"
