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

from agentcontext.compaction.harness import Harness
from agentcontext.compaction.summarize import SummaryRequest, strip_scratchpad

__all__ = ["TURN_CONTEXT_HEADING", "Pi", "split_turn_start", "summarize_split_turn"]

#: The heading of the turn prefix's summary (Pi's wording).
TURN_CONTEXT_HEADING = "**Turn Context (split turn):**"

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
    return f"{strip_scratchpad(write(history))}\n\n---\n\n{TURN_CONTEXT_HEADING}\n\n{turn}"
