"""What a compaction returns: the stage events and the result (the working set, its provenance
and how it came about), and the marker that takes the place of dropped messages."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from agentcontext._core import Conversation
from agentcontext.compaction.summarize import SUMMARY_MARKER
from agentcontext.types import CompactionResultDict, StageEventDict

__all__ = ["CompactionResult", "StageEvent", "drop_marker"]


@dataclass(frozen=True)
class StageEvent:
    """One stage of the ladder: what it did and the tokens before and after."""

    #: ``native``: the provider's own compaction (:mod:`agentcontext.compaction.native`): done, or
    #: skipped or failed and the ladder ran instead (its detail says why); ``flush``: the memory flush before a summary; ``fill``: results restored or raw messages
    #: added to fill the target; ``cut``: the oversized last round cut to fit; ``carry``: an
    #: earlier summary the drop left out, shrunk back into the room it left; ``skip``: the
    #: ladder stopped without a change (under the target, or clearing does not pay at the
    #: policy's ``prices``: its detail holds the decision's numbers).
    stage: Literal["native", "budgets", "clear", "flush", "summarize", "fill", "drop", "carry", "cut", "skip"]
    tokens_before: int
    tokens_after: int
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> StageEventDict:
        return cast("StageEventDict", dataclasses.asdict(self))


@dataclass(frozen=True)
class CompactionResult:
    """The compiled working set and how it came about."""

    conversation: Conversation
    original: Conversation
    stages: list[StageEvent]
    tokens_before: int
    tokens_after: int
    budget: int
    fits: bool
    #: For each message of ``conversation``: its position in ``original``, or None when new or changed.
    provenance: list[int | None]
    summary: str | None = None
    #: With a summary: the first message of ``original`` after what the summary covers (the drop
    #: stage may then drop recent messages from there on; ``fates`` says which). Without: the first
    #: message kept after a drop.
    first_kept: int | None = None
    reason: str | None = None
    #: For each message of ``conversation``: the position in ``original`` of the message it is or
    #: was made from (kept, cut or cleared), or None when new (a summary, a marker, a re-attached
    #: file). Default: the positions themselves when nothing was removed, else ``provenance``.
    origins: list[int | None] | None = None
    #: The size the ladder aimed at (the budget when one was given, else the policy's target).
    target: int | None = None
    #: With a summary whose summarizer never saw some of the messages it replaces (dropped from
    #: its request as too long: its oldest rounds under ``summarizer_overflow="drop_rounds"``, the
    #: middle of its transcript under ``"truncate"``): ``(lo, hi)``, messages ``lo:hi`` of
    #: ``original``, counted by a drop marker and not by the summary's header. None: it saw them all.
    unseen: tuple[int, int] | None = None
    #: With a provider-native compaction (a ``native`` stage): the library's own compaction of the
    #: same history (summary, ledger, raw recent part; no opaque provider parts), kept beside the
    #: provider's so the session can move to another provider or be read by a person. None otherwise.
    readable: CompactionResult | None = None

    def __post_init__(self) -> None:
        if self.origins is None:
            same = self.summary is None and len(self.conversation) == len(self.original)
            object.__setattr__(self, "origins", list(range(len(self.original))) if same else list(self.provenance))

    @property
    def fill(self) -> float | None:
        """Output tokens / the target: how much of the room the working set uses."""
        return self.tokens_after / self.target if self.target else None

    @property
    def compacted(self) -> bool:
        return any(s.stage != "skip" for s in self.stages)

    def summary_in_output(self) -> bool:
        """Whether ``conversation`` holds a summary message (a new message that opens with the
        summary marker)."""
        origins = self.origins or []
        return any(
            origins[i] is None and str(self.conversation[i].get("content") or "").startswith(SUMMARY_MARKER)
            for i in range(len(self.conversation))
        )

    def fates(self) -> list[str]:
        """The fate of each original message, read from what ``conversation`` holds: ``kept``
        (unchanged), ``changed`` (cut or cleared), ``summarized`` (older than ``first_kept`` and
        covered by a summary message that is in the output) or ``dropped``."""
        kept = {q for q in self.provenance if q is not None}
        changed = {q for q in (self.origins or []) if q is not None} - kept
        summarized = self.summary_in_output() and self.first_kept is not None
        lo, hi = self.unseen or (0, 0)
        out = []
        for i in range(len(self.original)):
            if i in kept:
                out.append("kept")
            elif i in changed:
                out.append("changed")
            elif summarized and self.original.preamble <= i < (self.first_kept or 0) and not lo <= i < hi:
                out.append("summarized")
            else:
                out.append("dropped")
        return out

    def _repr_html_(self) -> str:
        from agentcontext.display import result_repr_html

        return result_repr_html(self)

    def to_dict(self) -> CompactionResultDict:
        fates = self.fates()
        return {
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "budget": self.budget,
            "target": self.target,
            "fill": round(self.fill, 4) if self.fill is not None else None,
            "fits": self.fits,
            "reason": self.reason,
            "messages_before": len(self.original),
            "messages_after": len(self.conversation),
            "kept": fates.count("kept"),
            "changed": fates.count("changed"),
            "summarized": fates.count("summarized"),
            "dropped": fates.count("dropped"),
            "first_kept": self.first_kept,
            "summary": self.summary,
            "stages": [s.to_dict() for s in self.stages],
        }


def drop_marker(messages: int, tokens: int, recall_id: str | None) -> dict[str, str]:
    """The user message that takes the place of ``messages`` dropped messages of ``tokens``
    tokens, naming the recall id of their originals (or saying they are not stored)."""
    where = (
        f"recall id {recall_id} gives the originals (the recall tool reads them; conversation_search "
        "searches the session's history)"
        if recall_id
        else "the originals are not stored"
    )
    text = (
        f"[agentcontext: {messages:,} earlier messages ({tokens:,} tokens) "
        f"were dropped to fit the context window; {where}.]"
    )
    return {"role": "user", "content": text}
