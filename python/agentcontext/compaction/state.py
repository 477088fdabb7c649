"""The public state of one run of the ladder: what the rungs and the harness hooks
(:class:`~agentcontext.compaction.harness.Harness`) read and change — the working conversation
(``work``), the ``original`` it came from, the ``provenance`` of each working message, the stage
``events`` — and the ``store`` that keeps the originals of what leaves."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentcontext._core import Conversation, HandoffScan, _HandoffFacts
from agentcontext.budgets import result_text
from agentcontext.budgets.recall import ARGUMENTS, _cleared_arguments, recall_names
from agentcontext.compaction.results import StageEvent
from agentcontext.compaction.writing import run_summarizer
from agentcontext.errors import CompactionError
from agentcontext.observe.calls import observe_summary

if TYPE_CHECKING:
    from agentcontext.compaction.compactor import Compactor
    from agentcontext.compaction.policy import CompactionPolicy
    from agentcontext.compaction.summarize import Summarizer, SummaryRequest

__all__ = ["LadderState", "Summary"]


#: How the placeholder of a cleared tool result opens.
_CLEARED = "[cleared: "

#: How a workspace anchor message opens (see :mod:`agentcontext.memory.anchors`).
_ANCHOR_HEADER = "[Re-attached after compaction: current content of workspace file "


def _runs(indices: list[int]) -> list[tuple[int, int]]:
    """Sorted ``indices`` as contiguous ``(start, stop)`` ranges."""
    out: list[tuple[int, int]] = []
    for i in indices:
        if out and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out


@dataclass
class Summary:
    """A summary written over ``original[preamble:stop]``. It replaces ``original[preamble:covers]``:
    ``covers`` is ``stop`` until the raw recent part grows back into what the summary describes
    (filling the room a summary smaller than its cap left); the message header then names only
    the messages no longer kept raw."""

    text: str
    stop: int
    covers: int
    #: The summarize stage's event detail (recorded once the working set is built).
    detail: dict[str, Any]
    recorded: bool = False
    #: How many messages of ``original[preamble:stop]``, from its ``unseen_at``-th on, the
    #: summarizer never saw (dropped from its request as too long: the oldest rounds under
    #: ``summarizer_overflow="drop_rounds"``, the middle of the transcript under ``"truncate"``):
    #: the working set counts them by a drop marker before the summary, not in its header.
    unseen: int = 0
    unseen_at: int = 0
    #: The check of the facts that leave with its span (a
    #: :class:`~agentcontext.compaction.check.SpanCheck`), when the ledger beside the summary held
    #: some of them: a rung that carries no ledger checks the summary again against them all.
    left_to_ledger: Any = None
    #: The summarizer's event of the call that wrote ``text`` (an LLM summarizer's: attempts,
    #: outcome), which the check's report reads; None for a summarizer that keeps none.
    event: dict[str, Any] | None = None


class LadderState:
    """One run of the ladder over one conversation: the state every stage reads and advances.
    The rungs (:class:`~agentcontext.compaction.ladder.LadderRun`) and the harness hooks change
    ``work`` and ``provenance`` together, record an event per step (:meth:`event`) and keep the
    originals of what they change (:meth:`keep_results`, :meth:`keep_span`)."""

    def __init__(
        self,
        compactor: Compactor,
        conv: Conversation,
        policy: CompactionPolicy,
        *,
        manual: bool,
        one_shot: bool,
        idle_seconds: float | None = None,
    ) -> None:
        self.compactor = compactor
        #: Where the originals of what this run cuts, clears, summarizes or drops are kept (None: nowhere).
        self.store = compactor.store
        #: Seconds since the previous model call (None: unknown), for the cache TTL.
        self.idle_seconds = idle_seconds
        self.original = conv
        self.policy = policy
        self.manual = manual
        #: A working set of a given size is asked for (``budget``): fill it, and cut an oversized
        #: last round rather than give up. A live loop (no budget) aims under its target instead.
        self.one_shot = one_shot
        self.fill = one_shot and not manual
        #: The working set with the summary that the rungs after it try to shrink (their fallback).
        self.summarized: tuple[Conversation, list[int | None], Summary] | None = None
        #: The most the working set may take.
        self.limit = policy.available
        self.target = self.limit if manual else min(policy.target_tokens, self.limit)
        self.before = conv.tokens
        #: The stage events so far.
        self.events: list[StageEvent] = []
        #: The working conversation every rung shrinks (``original`` until one changes it).
        self.work = conv
        #: For each message of ``work``: its position in ``original``, or None when new or changed.
        self.provenance: list[int | None] = list(range(len(conv)))
        self.preamble = conv.preamble
        #: The tokens of each message of ``original``.
        self.totals = conv.message_tokens()
        self.preamble_tokens = sum(self.totals[: self.preamble])
        self.deferred = False
        #: The original messages before this index were shown to a memory flush turn (or are the
        #: system messages).
        self.flushed_upto = conv.preamble
        #: The agent's system prompt, sent with the memory flush turn.
        self.system: str | None = None
        #: The agent's tool definitions, sent with a summary request that reuses the agent's cached prefix.
        self.tools: list[dict[str, Any]] | None = None
        #: refit found no recent suffix that leaves its usual room for the summary.
        self.roomless = False
        #: Why the last rung that gave up did (for recompile's error).
        self.why = ""
        self._cuts: list[int] | None = None
        self._stale: set[int] | None = None
        #: The working set whose raw part ends in a cut round (see :mod:`agentcontext.compaction.fill`), and its origins.
        self._filled: tuple[Conversation, list[int | None]] | None = None
        #: The user's extra focus for the summary (``compact(instructions=...)``).
        self.instructions: str | None = None
        #: The task ledger beside a summary that ends at each stop, and ledger messages in what stays raw.
        self._ledgers: dict[int, list[dict[str, str]]] = {}
        self._raw_ledgers: dict[int, set[int]] = {}
        #: ``original.handoff(preamble, stop)`` by stop, kept in the core (``HandoffScan._facts``),
        #: made for a summary whose span has a ledger.
        self._handoffs: dict[int, _HandoffFacts] = {}
        #: The one scan of the original from ``preamble`` those handoffs come from (made when first asked).
        self._scan: HandoffScan | None = None
        #: (message index, part, call id) → recall id, where calls reuse an id (:meth:`recall_name`).
        self._names: dict[tuple[int, str, str, int], str | None] | None = None
        self._reused: set[str] | None = None
        #: The oversized rung runs: the last round and the latest request take all the room (no ledger).
        self._last_rung = False
        #: Where each group of the original starts (a real user message), read once.
        self._group_starts: list[int] | None = None

    @property
    def p(self) -> CompactionPolicy:
        """The policy (the short name :mod:`agentcontext.compaction.fill` reads)."""
        return self.policy

    @property
    def pre(self) -> int:
        """The number of system messages (the short name :mod:`agentcontext.compaction.fill` reads)."""
        return self.preamble

    def event(self, stage: str, before: int, after: int, **detail: Any) -> None:
        self.events.append(StageEvent(stage, before, after, detail))  # type: ignore[arg-type]

    def nothing_to_summarize(self) -> None:
        """The summarize rung found nothing older than the recent messages: a manual run raises
        :class:`CompactionError`; otherwise the rung is recorded as failed and the ladder goes on."""
        why = "nothing older than the recent messages to summarize"
        if self.manual:
            raise CompactionError(why)
        self.event("summarize", self.work.tokens, self.work.tokens, failed=why)

    def replace_work(self, conv: Conversation, changed: set[int]) -> None:
        """``conv`` (the same messages as ``work``, those at ``changed`` rewritten) is the working
        conversation now; the changed messages lose their provenance."""
        self.provenance = [None if i in changed else q for i, q in enumerate(self.provenance)]
        self.work = conv

    def run_summarizer(
        self, summarizer: Summarizer, request: SummaryRequest, notes: dict[str, Any] | None = None
    ) -> tuple[str | None, str | None]:
        """The accepted summary of ``request`` by ``summarizer`` under this run's policy, or None and
        why not (:func:`~agentcontext.compaction.writing.run_summarizer`)."""
        return observe_summary(
            getattr(self.compactor, "on_event", None), summarizer, request, self.policy.encoding,
            lambda: run_summarizer(summarizer, request, self.policy, notes),
        )  # fmt: skip

    def reused_ids(self) -> set[str]:
        """The call ids more than one call of the original uses."""
        if self._reused is None:
            self._reused = {v["id"] for v in self.original.validate() if v["kind"] == "duplicate_id" and v["id"]}
        return self._reused

    def recall_name(self, index: int, part: str, call_id: str, n: int = 1) -> str | None:
        """The recall id the core's placeholders and markers name for the result (``part="result"``)
        or arguments (``"arguments"``) of call ``call_id`` in message ``index`` of the original
        (the ``n``-th of that id there): the call id unless calls reuse it
        (:func:`~agentcontext.budgets.recall.recall_names`); None when no placeholder names one."""
        if self._names is None:
            original = self.original
            if not self.reused_ids():
                self._names = {}
            else:
                self._names = recall_names(
                    (i, m) for i in range(len(original)) for m in original.slice(i, i + 1).to_jsonl()
                )
        return self._names.get((index, part, call_id, n), call_id)

    def keep_results(self, changed: list[Any]) -> None:
        """Store the original of every cut or cleared result (``changed``: the report entries, by
        message index and call id) under the recall id its marker names (:meth:`recall_name`)."""
        original = self.original
        if self.store is None or not changed:
            return
        for c in changed:
            i, call_id = c["index"], c["tool_use_id"]
            # The ladder's stages change contents, never positions: the index is the original's.
            items = original.slice(i, i + 1).to_jsonl() if i < len(original) else []
            found = [m for m in items if m.get("role") == "tool" and m.get("tool_call_id") == call_id]
            name = self.recall_name(i, "result", call_id, len(found))
            if found and name is not None:
                self.store.put(result_text(found[-1].get("content")), alias=name)

    def keep_arguments(self, cleared: Conversation, changed: list[int]) -> None:
        """Store the original arguments of every call whose arguments ``clear_tool_inputs``
        cleared (in the messages ``changed`` of ``cleared``, by index) under ``<call id>#arguments``,
        which its placeholder names."""
        original = self.original
        if self.store is None or not changed:
            return
        for i in changed:
            if i >= len(original):
                continue
            now = dict(_numbered(cleared.slice(i, i + 1).to_jsonl()))
            for (call_id, n), args in _numbered(original.slice(i, i + 1).to_jsonl()):
                if not isinstance(call_id, str) or not isinstance(args, str) or _cleared_arguments(args):
                    continue
                name = self.recall_name(i, "arguments", call_id, n)
                after = now.get((call_id, n))
                if name is not None and after != args and _cleared_arguments(after or ""):
                    self.store.put(args, alias=name + ARGUMENTS)

    def keep_span(self, conv: Conversation, start: int, stop: int, skip: tuple[int, int] | None = None) -> str | None:
        """Store messages ``start:stop`` of ``conv`` (JSON Lines in its format, one message a line),
        but for those in the range ``skip``, and return their recall id; None without a store."""
        if self.store is None:
            return None
        lo, hi = skip or (start, start)
        parts = [conv.slice(start, max(start, lo)), conv.slice(min(max(hi, start), stop), stop)]
        lines = [json.dumps(m, ensure_ascii=False) for part in parts for items in part._export_each() for m in items]
        return self.store.put("\n".join(lines) + "\n")


def _numbered(messages: list[dict[str, Any]]) -> list[tuple[tuple[Any, int], Any]]:
    """The arguments of each call of ``messages``, by (call id, n: the call's place among those
    of its id there, from 1), as :func:`~agentcontext.budgets.recall.recall_names` tells them."""
    seen: dict[Any, int] = {}
    out: list[tuple[tuple[Any, int], Any]] = []
    for m in messages:
        for c in m.get("tool_calls") or ():
            call_id = c.get("id")
            n = seen[call_id] = seen.get(call_id, 0) + 1
            out.append(((call_id, n), c.get("arguments")))
    return out
