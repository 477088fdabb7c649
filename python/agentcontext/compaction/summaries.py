"""The ladder's summary operations: writing a summary (with the fallback and the memory flush),
the message that carries it, the working set built around it (the raw recent part grown back to
fill a budget) and the markers of dropped messages; :meth:`SummaryRun.finish` makes the result."""

from __future__ import annotations

import dataclasses
from bisect import bisect_left, bisect_right
from typing import Any

from agentcontext._core import Conversation, HandoffScan, _HandoffFacts, count_tokens
from agentcontext.compaction import fill
from agentcontext.compaction.check import SpanCheck
from agentcontext.compaction.flush import FlushingRun
from agentcontext.compaction.ledger import LEDGER_MARKER, ledger_cap, ledger_limit, ledger_message
from agentcontext.compaction.policy import MIN_SUMMARY_TOKENS, SUMMARY_HEADER_TOKENS
from agentcontext.compaction.results import CompactionResult, drop_marker
from agentcontext.compaction.state import _ANCHOR_HEADER, Summary, _runs
from agentcontext.compaction.summarize import (
    _REQUEST_SLACK,
    LATEST_SHARE,
    LINE_TOKENS,
    OPENING_TOKENS,
    SUMMARY_MARKER,
    USERS_SHARE,
    SummaryRequest,
    previous_summary_of,
    summary_message,
)
from agentcontext.compaction.summary_text import split_latest
from agentcontext.errors import BudgetError, CompactionError
from agentcontext.observe.summary_events import collecting, events_since
from agentcontext.probes import found_in
from agentcontext.types import Handoff

__all__ = ["SummaryRun"]


def _without_held(check: SpanCheck, held: list[dict[str, str]]) -> SpanCheck:
    """``check`` less the facts that the messages ``held`` (the ledger) hold."""
    if not held:
        return check
    haystack = " ".join(" ".join(m["content"].split()) for m in held)
    return dataclasses.replace(check, facts=[p for p in check.facts if not found_in(p, haystack)])


def _events(summarizer: Any) -> int:
    events = getattr(summarizer, "events", None)
    return len(events) if isinstance(events, list) else 0


def _cache_prefix(own: list[dict[str, Any]]) -> dict[str, Any] | None:
    """How the summarizer's latest request of this run (``own``: its events, see
    :func:`~agentcontext.observe.summary_events.events_since`) reused the conversation's
    cached prefix, when it says (:class:`~agentcontext.compaction.llm.LLMSummarizer`'s
    ``cache_prefix`` event field)."""
    got = own[-1].get("cache_prefix") if own else None
    return dict(got) if isinstance(got, dict) else None


def _own_fallback(own: list[dict[str, Any]]) -> str | None:
    """Why the summarizer's model failed when its own fallback wrote the summary (an event of
    this run, ``own``, whose ``outcome`` is ``fallback``); None otherwise."""
    fell = [e for e in own if e.get("outcome") == "fallback"]
    return str(fell[-1].get("failure") or "the model's summary failed") if fell else None


class SummaryRun(FlushingRun):
    """The ladder's state with its summary operations, the public ones called by harness hooks
    too (:meth:`write_summary`, :meth:`summary_room`, :meth:`summary_tokens`,
    :meth:`shrunk_summary`, :meth:`unseen`, :meth:`finish`)."""

    def finish(
        self,
        conv: Conversation,
        provenance: list[int | None],
        *,
        summary: Summary | None = None,
        first_kept: int | None = None,
        reason: str | None = None,
        origins: list[int | None] | None = None,
    ) -> CompactionResult:
        fits = conv.tokens <= self.limit
        if origins is None and self._filled is not None and self._filled[0] is conv:
            origins = self._filled[1]
        if not fits and reason is None:
            reason = f"{conv.tokens:,} tokens remain over the budget of {self.limit:,}"
        lo, hi = self.unseen(summary) if summary is not None else (self.preamble, self.preamble)
        if lo < hi:
            # The summary in the output did not see some of its messages: the marker before it
            # counts those not in the output, and so does this event.
            present = {q for q in [*provenance, *(origins or [])] if q is not None}
            unseen = [i for i in range(lo, hi) if i not in present]
            totals = self.work.message_tokens()
            marker_tokens = self.original.replace(0, None, [drop_marker(len(unseen), 0, None)]).tokens
            self.event(
                "drop", conv.tokens - marker_tokens + sum(totals[i] for i in unseen), conv.tokens,
                dropped_messages=len(unseen),
                why=f"dropped from the summarizer's request as too long (summarizer_overflow={self.policy.harness.summarizer_overflow!r})",
            )  # fmt: skip
        return CompactionResult(
            conv, self.original, self.events, self.before, conv.tokens, self.limit, fits, provenance,
            summary=summary.text if summary else None, reason=reason, origins=origins,
            first_kept=summary.covers if summary and first_kept is None else first_kept, target=self.target,
            unseen=(lo, hi) if lo < hi else None,
        )  # fmt: skip

    def write_summary(self, stop: int, cap: int) -> Summary | None:
        """A summary of ``original[preamble:stop]`` within ``cap`` tokens (the fallback summarizer
        when the summarizer fails in auto mode); None, with a failed stage event, when none was
        accepted (manual mode raises instead)."""
        self._flush(stop)
        p, work, c = self.policy, self.work, self.compactor
        older_tokens = sum(work.message_tokens()[self.preamble : stop])
        # Earlier summaries in the older part are updated, not nested.
        previous = next(reversed(work._summaries(self.preamble, stop)), None)
        max_tokens = max(64, min(cap, older_tokens - 1))
        check = self._span_check(stop)
        # The tokens of the lines the offline summary's fit counts: the repair's fit reuses them.
        counts: dict[str, int] = {}
        request = SummaryRequest(
            work, self.preamble, stop, previous, max_tokens, encoding=p.encoding, original=self.original,
            instructions=self.instructions, request_room=self._request_room(stop),
            request_recall_id=self._request_recall(stop), system=self.system, tools=self.tools,
            # The ledger's extraction of the same span (for a summarizer that extracts too) and
            # the check of the facts that leave with it.
            context={"check": check, LINE_TOKENS: counts, **({"handoff": (self.preamble, stop, self._handoff(stop))} if stop in self._ledgers else {})},
        )  # fmt: skip
        if held := self.ledger_messages(stop):
            # What the ledger beside the summary names (an offline summary lists no file twice).
            request.context["held"] = "\n".join(m["content"] for m in held)
        notes: dict[str, Any] = {}
        chunks = p.harness.summarizer(self, request)
        seen = _events(c.summarizer)
        with collecting() as collected:
            text, failure = self.run_summarizer(chunks or c.summarizer, request, notes)
        # The summarizer's events of this run (not another thread's, made meanwhile).
        own = events_since(c.summarizer, seen, collected)
        used = type(c.summarizer).__name__
        if text is None and not self.manual and c.fallback is not None and c.fallback is not c.summarizer:
            notes.clear()
            text, fallback_failure = self.run_summarizer(c.fallback, request, notes)
            used = type(c.fallback).__name__
            failure = (
                f"{failure}; used the fallback" if text is not None else f"{failure}; fallback: {fallback_failure}"
            )
        if text is None:
            if self.manual:
                raise CompactionError(f"summary failed: {failure}; history unchanged")
            self.event("summarize", work.tokens, work.tokens, failed=failure)
            self.why = f"no summary could be made: {failure}"
            return None
        # The messages dropped from the summarizer's request are not in the summary: its oldest
        # (drop_rounds), or those wholly in the omitted middle of its transcript (truncate).
        at = min(int(notes.get("omitted_from", 0)), stop - self.preamble - 1)
        unseen = min(
            int(notes.get("dropped_messages", notes.get("omitted_messages", 0))), stop - self.preamble - 1 - at
        )
        totals = work.message_tokens()
        detail: dict[str, Any] = {
            "summarized_messages": stop - self.preamble - unseen,
            "summarized_tokens": older_tokens - sum(totals[self.preamble + at : self.preamble + at + unseen]),
            "summary_tokens": counts.get(text) or count_tokens(text, encoding=p.encoding),
            "summary_cap": max_tokens,
            "summarizer": used,
            **notes,
        }
        if (prefix := _cache_prefix(own)) is not None:
            detail["cache_prefix"] = prefix
        if failure:
            detail["note"] = failure
        elif (fell_back := _own_fallback(own)) is not None:
            # The summarizer's model failed and its own fallback wrote the text.
            detail["note"] = f"{fell_back}; used the fallback"
        elif chunks is not None:
            detail.update(chunks.detail)
        # A fact the ledger beside the summary holds need not be appended to it too (a model is
        # still asked for every fact: its summary is carried forward, the ledger's oldest detail
        # may leave).
        beside = _without_held(check, self.ledger_messages(stop))
        last = None if failure or not own else own[-1]
        text, detail["check"] = self._checked(text, beside, last, max_tokens, counts)
        detail["summary_tokens"] = counts.get(text) or count_tokens(text, encoding=p.encoding)
        left = check if len(beside.facts) < len(check.facts) else None
        return Summary(text, stop, stop, detail, unseen=unseen, unseen_at=at, left_to_ledger=left, event=last)

    def _span_check(self, stop: int) -> SpanCheck:
        """The facts that leave with ``original[preamble:stop]``, checked in its summary before it
        is used (#27); meanwhile the span's whole handoff (which the summary reads next) is made
        on the core's threads (``HandoffScan._facts_ahead``)."""
        if stop in self._ledgers and stop not in self._handoffs:
            self._handoff_scan()._facts_ahead(stop)
        return SpanCheck.of(self.original, self.preamble, stop)

    def without_ledger(self, summary: Summary) -> Summary:
        """``summary`` for a working set that carries no ledger (the oversized rung): when it was
        written beside one that held some of its span's facts, checked again against them all and
        repaired within its cap (what it left to the ledger would be lost otherwise); else
        unchanged."""
        check = summary.left_to_ledger
        if check is None:
            return summary
        cap = int(summary.detail.get("summary_cap", 0)) or count_tokens(summary.text, encoding=self.policy.encoding)
        text, report = self._checked(summary.text, check, summary.event, cap, {})
        detail = {**summary.detail, "check_without_ledger": report}
        return dataclasses.replace(summary, text=text, detail=detail, left_to_ledger=None)

    def _checked(
        self, text: str, check: SpanCheck, last: dict[str, Any] | None, cap: int, counts: dict[str, int]
    ) -> tuple[str, dict[str, Any]]:
        """``text`` checked against the facts that leave with its span (#27): repaired within
        ``cap`` when it misses some (:meth:`SpanCheck.repair`), and what the check found — the facts
        checked, those missing before, whether an LLM summarizer asked its model once more or fell
        back to the offline summary (``last``: its event of the call that wrote ``text``), the facts
        appended, and those still missing (named by count)."""
        p = self.policy

        def shrink(summary: str, max_tokens: int) -> str:
            return p.harness.shrink_summary(summary, max_tokens, encoding=p.encoding, counts=counts)

        checked, missing, repaired, left = check.repair(
            text, cap, encoding=p.encoding, stored=self.store is not None, counts=counts, shrink=shrink
        )
        report: dict[str, Any] = {"facts": len(check.facts), "missing_before": missing}
        if last is not None and "checked_facts" in last:
            report["missing_before"] = max(missing, len(last.get("missing", [])))
            report["retried"] = last.get("attempts", 0) > 1
            report["fallback"] = last.get("outcome") == "fallback"
        report["repaired"] = repaired
        report["missing_after"] = left
        if check.unscanned:
            report["unscanned_messages"] = check.unscanned
        return checked, report

    def unseen(self, summary: Summary) -> tuple[int, int]:
        """``(lo, hi)``: the messages ``lo:hi`` of the original among those ``summary``'s message
        covers that its summarizer never saw (counted by a marker instead); ``lo == hi``: none."""
        lo = min(self.preamble + summary.unseen_at, summary.covers)
        return lo, min(lo + summary.unseen, summary.covers)

    def _summary_messages(self, summary: Summary, *, store: bool) -> list[dict[str, str]]:
        """The message carrying ``summary``, its header naming what it replaces (with a recall id
        for the originals when ``store`` and the compactor has a store); before it, when its
        summarizer never saw some of those messages, a drop marker counting them instead."""
        covers, (lo, hi) = summary.covers, self.unseen(summary)
        recall_id = self.keep_span(self.original, self.preamble, covers, (lo, hi)) if store else None
        totals = self.work.message_tokens()
        tokens = sum(totals[self.preamble : covers]) - sum(totals[lo:hi])
        message = summary_message(
            summary.text, messages=covers - self.preamble - (hi - lo), tokens=tokens, recall_id=recall_id
        )
        ledger = self.ledger_messages(summary.stop)
        if lo == hi:
            return [message, *ledger]
        return [self._drop_note(self.original, lo, hi, store=store), message, *ledger]

    def ledger_messages(self, stop: int) -> list[dict[str, str]]:
        """The task ledger beside a summary of ``original[preamble:stop]``
        (:mod:`~agentcontext.compaction.ledger`): none when the policy has it off."""
        p = self.policy
        if not p.ledger or self.ledger_room() == 0:
            return []
        if stop not in self._ledgers:
            o = self.original
            later = [o[i]["content"] for i in sorted(self._stale_ledgers(stop))]
            h = self._ledger_handoff(stop)
            message = ledger_message(
                o, self.preamble, stop, cap=ledger_limit(p.ledger_max_tokens, self.target), encoding=p.encoding,
                later=later[-1] if later else None, handoff=h,
            )  # fmt: skip
            self._ledgers[stop] = [message] if message is not None else []
        return self._ledgers[stop]

    def _ledger_handoff(self, stop: int) -> Handoff:
        """``original.handoff(preamble, stop)`` with only the fields the task ledger reads
        (``HandoffScan.ledger_handoff``), from the one scan of the original every span a
        compaction asks for reads (the ledger's room at the policy's raw start, then the
        summary's span)."""
        return self._handoff_scan().ledger_handoff(stop)

    def _handoff(self, stop: int) -> _HandoffFacts:
        """``original.handoff(preamble, stop)`` kept in the core (``HandoffScan._facts``), from
        the same scan: the offline summary reads its long lists in the core's fit."""
        if stop not in self._handoffs:
            self._handoffs[stop] = self._handoff_scan()._facts(stop)
        return self._handoffs[stop]

    def _handoff_scan(self) -> HandoffScan:
        if self._scan is None:
            self._scan = HandoffScan(self.original, self.preamble)
        return self._scan

    def ledger_room(self) -> int:
        """The most tokens the task ledger takes (0 when the policy has it off)."""
        p = self.policy
        return ledger_cap(p.ledger_max_tokens, self.target) if p.ledger and not self._last_rung else 0

    def ledger_reserve(self, stop: int) -> int:
        """The room the raw recent part leaves for the ledger beside a summary of
        ``original[preamble:stop]``: :meth:`ledger_room`, or more, up to
        :func:`~agentcontext.compaction.ledger.ledger_limit`, when that span's ledger needs it (a
        long artifact trail keeps its files rather than more raw messages)."""
        room = self.ledger_room()
        return max(room, self.ledger_tokens(stop)) if room else 0

    def ledger_tokens(self, stop: int) -> int:
        """Tokens of :meth:`ledger_messages` (0 when off)."""
        ledger = self.ledger_messages(stop)
        if not ledger:
            return 0
        return Conversation(ledger, format=self.original.format, encoding=self.original.encoding).tokens

    def _stale_ledgers(self, start: int) -> set[int]:
        """Ledger messages an earlier compaction wrote, from ``start`` on: a new ledger merges and
        replaces them (none when the policy has the ledger off)."""
        if self.ledger_room() == 0:
            return set()
        start = max(start, self.preamble)
        # A ledger is written right after a summary of this library: none without one.
        if not any(t.startswith(SUMMARY_MARKER) for t in self.original._summaries(max(self.preamble, start - 1))):
            return set()
        scanned = min(self._raw_ledgers, default=len(self.original))
        if start < scanned:
            # One scan from the earliest start asked for; later starts read it.
            o = self.original
            self._raw_ledgers[start] = {
                i for i in range(start, scanned)
                if o[i]["role"] == "user" and isinstance(c := o[i].get("content"), str) and c.startswith(LEDGER_MARKER)
            } | self._raw_ledgers.get(scanned, set())  # fmt: skip
            scanned = start
        return {i for i in self._raw_ledgers.get(scanned, set()) if i >= start}

    def summary_room(self, cap: int, kept: int) -> int:
        """The cap of a summary beside ``kept`` tokens (system messages, what stays raw, extras)
        under a one-shot target: the room they leave, at least ``cap``, at most the policy's
        ``summary_max_tokens``."""
        return max(cap, min(self.policy.summary_max_tokens, self.target - kept - SUMMARY_HEADER_TOKENS))

    @property
    def request_room(self) -> int:
        """The most tokens the latest request may take and still travel whole: a quarter of the
        budget (the target)."""
        return self.target // 4

    def latest_request(self, stop: int) -> str | None:
        """The latest real user request a summary of ``original[preamble:stop]`` carries: the
        conversation's latest when it is older than ``stop``, or, when a summary came after it,
        the latest request that summary carries; None when the latest is raw (at or after
        ``stop``) or there is none."""
        o = self.original
        found = o._latest_request(self.preamble)
        if found is not None:
            return found[1] if found[0] < stop else None
        summaries = self.work._summaries(self.preamble, stop)
        return split_latest(previous_summary_of(summaries[-1]))[0] if summaries else None

    def request_cap(self, cap: int, stop: int) -> int:
        """``cap`` grown so that a summary of ``original[preamble:stop]`` holds the latest request
        whole beside the rest's usual room when the request takes at most :attr:`request_room`
        (the room comes from the raw recent part, which the ladder plans after the cap)."""
        ask = self.latest_request(stop)
        cap += self._openings_room(cap, stop)
        if ask is None or len(ask) <= cap * LATEST_SHARE:  # a token is at least a character
            return cap
        tokens = count_tokens(ask, encoding=self.policy.encoding)
        if tokens > self.request_room or tokens <= int(cap * LATEST_SHARE):
            return cap
        return cap - int(cap * LATEST_SHARE) + tokens + _REQUEST_SLACK

    def _openings_room(self, cap: int, stop: int) -> int:
        """The tokens a summary of ``original[preamble:stop]`` needs beyond the users' share of
        ``cap`` to name every earlier request by its opening (at most :data:`OPENING_TOKENS`
        each), at most an eighth of the target: the raw part gives them, as it does the latest
        request's room."""
        if self._group_starts is None:
            self._group_starts = [g for g, _ in self.original.groups()]
        earlier = [g for g in self._group_starts if self.preamble <= g < stop][:-1]
        need = sum(min(self.totals[g], OPENING_TOKENS) for g in earlier)
        return max(0, min(need - int(cap * USERS_SHARE), self.target // 8))

    def _request_room(self, stop: int) -> int:
        """:attr:`request_room` for a summary of ``original[preamble:stop]`` that carries the
        conversation's latest request; 0 (its share of the cap) when that request stays raw, or
        when the harness rebuilds the working set itself (Codex keeps the user messages raw
        beside its summary)."""
        if self.policy.harness.rebuilds():
            return 0
        return self.request_room if self.latest_request(stop) is not None else 0

    def _request_recall(self, stop: int) -> str | None:
        """The recall id under which the latest real request of ``original[preamble:stop]`` is
        stored when it is over :attr:`request_room` (the summary cuts it, the marker names the
        id); None without a store or when it travels whole."""
        if self.store is None:
            return None
        found = self.original._latest_request(self.preamble, stop)
        if found is None or len(found[1]) <= self.request_room:
            return None
        if count_tokens(found[1], encoding=self.policy.encoding) <= self.request_room:
            return None
        return self.store.put(found[1])

    def summary_tokens(self, summary: Summary) -> int:
        """Tokens of the message carrying ``summary``."""
        messages = self._summary_messages(summary, store=False)
        return Conversation(messages, format=self.original.format, encoding=self.original.encoding).tokens

    def shrunk_summary(self, summary: Summary, room: int) -> Summary | None:
        """``summary`` cut (head and tail) so that its message takes at most ``room`` tokens; None
        when under :data:`MIN_SUMMARY_TOKENS` would be left of it."""
        enc = self.policy.encoding
        overhead = sum(
            count_tokens(m["content"], encoding=enc) for m in self._summary_messages(summary, store=False)
        ) - count_tokens(summary.text, encoding=enc)
        left = room - overhead - 8
        if left < MIN_SUMMARY_TOKENS:
            return None
        if count_tokens(summary.text, encoding=enc) <= left:
            return summary
        # The offline sections are fitted again, the latest request first (any other text: head + tail).
        try:
            text = self.policy.harness.shrink_summary(
                summary.text, left, encoding=enc, request_room=self._request_room(summary.stop)
            )
        except BudgetError:
            return None
        # The event of the summary used says its tokens as cut, not as written.
        detail = {**summary.detail, "summary_cut_to_tokens": left, "summary_tokens": count_tokens(text, encoding=enc)}
        return Summary(text, summary.stop, summary.covers, detail, unseen=summary.unseen, unseen_at=summary.unseen_at)

    def _anchors(self) -> list[dict[str, Any]]:
        anchors = self.compactor.anchors
        return anchors.messages() if anchors is not None else []

    def _pinned(self, stop: int) -> list[int]:
        """Pinned messages older than ``stop`` that travel beside a summary (not tool messages)."""
        o = self.original
        return [
            i for i in o.pinned if self.preamble <= i < stop and not o[i].get("tool_calls") and o[i]["role"] != "tool"
        ]

    def _pinned_tokens(self, stop: int) -> int:
        return sum(self.totals[i] for i in self._pinned(stop))

    def _fill_start(self, room: int) -> int:
        """The earliest cut point (start of a group or round, never between a call and its
        result) from which the raw recent part, with the system messages, fits ``room`` tokens;
        the number of messages when none does."""
        if self._cuts is None:
            # Ascending: the slice from the preamble on (each is before the end).
            cuts = self.original._cut_points()
            self._cuts = cuts[bisect_left(cuts, self.preamble) :]
        return self.original._raw_start_fits(room - self.preamble_tokens)

    def _grow(
        self, summary: Summary, extras: list[dict[str, Any]], fill_to: int | None
    ) -> tuple[Conversation, list[int | None]]:
        """The working set: system messages, the summary and ``extras`` (re-attached files,
        anchors), pinned older messages, then the raw recent part from where the summary ends —
        grown backwards by whole groups or rounds until the whole reaches ``fill_to`` (None: not
        grown). The summary then replaces only what is not kept raw."""
        o, stop = self.original, summary.stop
        summary.covers = stop
        head = [*self._summary_messages(summary, store=False), *extras]
        if fill_to is not None:
            fixed = Conversation(head, format=o.format, encoding=o.encoding).tokens + self._pinned_tokens(stop)
            summary.covers = min(stop, self._fill_start(fill_to - fixed))
        while True:
            head = [*self._summary_messages(summary, store=True), *extras]
            conv, prov = self._assemble(Conversation(head, format=o.format, encoding=o.encoding), summary.covers)
            if fill_to is None or summary.covers >= stop or conv.tokens <= fill_to:
                break
            # Counted apart, the parts came out larger together: the next cut point.
            cuts = self._cuts or []
            k = bisect_right(cuts, summary.covers)
            summary.covers = cuts[k] if k < len(cuts) else stop
        # The summary as written, beside the raw part it was written for; then the fill.
        pinned = set(self._pinned(stop))
        unfilled = conv.tokens - sum(self.totals[i] for i in range(summary.covers, stop) if i not in pinned)
        if not summary.recorded:
            self.event("summarize", self.work.tokens, unfilled, **summary.detail, kept_raw=len(o) - stop)
            summary.recorded = True
        cut = fill.cut_round(self, summary, extras, conv, fill_to) if fill_to is not None else None
        if cut is not None:
            conv, prov = cut.conversation, cut.provenance
            self._filled = (conv, cut.origins)
        if summary.covers < stop:
            lo, hi = self.unseen(summary)
            self.event("fill", unfilled, conv.tokens, raw_messages_added=stop - summary.covers,
                       summarized_messages=summary.covers - self.preamble - (hi - lo),
                       **({"messages_cut": len(cut.cut)} if cut is not None else {}))  # fmt: skip
        return conv, prov

    def _assemble(self, head: Conversation, start: int) -> tuple[Conversation, list[int | None]]:
        o = self.original
        pinned = self._pinned(start)
        stale = self._stale_anchors() | self._stale_ledgers(start)
        raw = [i for i in range(start, len(o)) if i not in stale]
        runs = [o.slice(lo, hi) for lo, hi in _runs(raw)]
        parts = [o.slice(0, self.preamble), head, *(o.slice(i, i + 1) for i in pinned), *runs]
        prov: list[int | None] = [*range(self.preamble), *[None] * len(head), *pinned, *raw]
        return Conversation.concat(parts), prov

    def _stale_anchors(self) -> set[int]:
        """Anchor messages an earlier compaction attached, superseded by the ones attached now."""
        if self.compactor.anchors is None:
            return set()
        if self._stale is None:
            o, marker = self.original, _ANCHOR_HEADER
            self._stale = {
                i for i in range(self.preamble, len(o))
                if o[i]["role"] == "user" and isinstance(c := o[i].get("content"), str) and c.startswith(marker)
            }  # fmt: skip
        return self._stale

    def _drop_note(self, conv: Conversation, lo: int, hi: int, *, store: bool = True) -> dict[str, str]:
        """The user message that takes the place of messages ``lo:hi`` of ``conv`` when they are
        dropped: how many, their tokens, and the recall id of their originals (stored now when
        ``store`` and the compactor has a store)."""
        dropped = sum(conv.message_tokens()[lo:hi])
        span = self.keep_span(conv, lo, hi) if store else None
        return drop_marker(hi - lo, dropped, span)

    def _dropping(self, conv: Conversation, keep: list[int]) -> tuple[Conversation, list[int | None], int]:
        """The system messages of ``conv``, then its messages ``keep`` (sorted positions after
        them, ending with its last message) with a marker (:meth:`_drop_note`) where each run
        of the others was: the conversation, the position in ``conv`` of each of its messages
        (None for a marker) and how many messages were dropped."""
        parts, positions = [conv.slice(0, self.preamble)], list[int | None](range(self.preamble))
        at = self.preamble
        for lo, hi in _runs(keep):
            if lo > at:
                note = self._drop_note(conv, at, lo)
                parts.append(Conversation([note], format=conv.format, encoding=conv.encoding))
                positions.append(None)
            parts.append(conv.slice(lo, hi))
            positions += range(lo, hi)
            at = hi
        return Conversation.concat(parts), positions, len(conv) - self.preamble - len(keep)
