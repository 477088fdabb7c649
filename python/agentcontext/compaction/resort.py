"""The ladder's last rungs: refit (the largest recent suffix that fits beside a summary), the
drop of the oldest groups, and the oversized rung that cuts the last round when even that does
not fit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentcontext._core import Conversation, count_tokens
from agentcontext.compaction import fill
from agentcontext.compaction.ledger import LEDGER_MARKER, Ledger, ledger_cap
from agentcontext.compaction.policy import DROP_MARKER_TOKENS, MIN_SUMMARY_TOKENS, SUMMARY_HEADER_TOKENS
from agentcontext.compaction.results import CompactionResult
from agentcontext.compaction.state import Summary
from agentcontext.compaction.summaries import SummaryRun
from agentcontext.compaction.summarize import SUMMARY_MARKER
from agentcontext.compaction.writing import _holds_request

__all__ = ["ResortRun"]


class ResortRun(SummaryRun):
    """The ladder's state with its last rungs (:meth:`refit`, :meth:`drop`, :meth:`oversized`:
    public, a harness's rung may end in them)."""

    def refit(self, *, least: bool = False) -> CompactionResult | None:
        """The largest recent suffix of the original that fits the budget with room for a
        summary is kept raw, and everything before it summarized. None (``why`` says why) when
        the last round alone does not fit, nothing is older, or no summary was made. ``least``:
        the room kept for the summary is the least one takes (:data:`MIN_SUMMARY_TOKENS` and its
        header), and the summary gets what the suffix leaves; None when it does not fit there."""
        p, limit = self.policy, self.limit
        room = max(64, min(p.summary_max_tokens, limit // 4))
        pinned = self._pinned_tokens(len(self.original))
        start = self._fill_start(limit - room - SUMMARY_HEADER_TOKENS - pinned)
        # Room for the latest request whole (see the ladder's summarize) while a round fits beside it.
        grown = self.request_cap(room, start)
        if grown > room and (more := self._fill_start(limit - grown - SUMMARY_HEADER_TOKENS - pinned)) < len(
            self.original
        ):
            room, start = grown, more
        if least:
            # The largest suffix that leaves the least a summary takes, which gets that room.
            start = self._fill_start(limit - MIN_SUMMARY_TOKENS - SUMMARY_HEADER_TOKENS - pinned)
            room = limit - self.preamble_tokens - sum(self.totals[start:]) - pinned - SUMMARY_HEADER_TOKENS
            ask = self.original._latest_request(self.preamble, start)
            if ask is not None and self.totals[ask[0]] > room:
                # So short a summary would hold only part of the latest request: the drop keeps it.
                self.why = f"the latest request ({self.totals[ask[0]]:,} tokens) is larger than the room for a summary"
                return None
        if start >= len(self.original):
            self.roomless = True
            s = self.original.recent_suffix(max(0, limit - room))
            lo, hi = s["overflow"] or (start, start)
            self.why = (
                f"the last round alone ({self.original.slice(lo, hi).tokens:,} tokens) is larger than the "
                f"{max(0, limit - room):,} tokens left of the budget of {limit:,} after {room:,} kept for the "
                "summary; a round is never split"
            )
            return None
        if start <= self.preamble:
            self.why = (
                f"nothing older than the last round to remove ({self.original.tokens:,} tokens, budget {limit:,})"
            )
            return None
        summary = self.write_summary(start, room)
        if summary is None:
            return None
        summary.detail["kept"] = "the largest recent suffix that fits the budget with the summary"
        conv, prov = self._grow(summary, self._anchors(), min(self.target, limit) if self.fill else None)
        if conv.tokens > limit:
            conv, prov = self._grow(summary, [], None)
        if conv.tokens > limit:
            # Counted apart, the parts came out larger together: the summary gives way.
            shrunk = self.shrunk_summary(summary, limit - (conv.tokens - self.summary_tokens(summary)))
            if shrunk is not None:
                summary = shrunk
                conv, prov = self._grow(summary, [], None)
        if conv.tokens <= limit:
            return self.finish(conv, prov, summary=summary)
        if least:
            # The shorter summary does not fit either: the last round stays whole (dropping
            # what is older, with a marker), rather than cut for it.
            self.why = f"no summary fits beside the last round ({sum(self.totals[start:]):,} tokens)"
            return None
        return self.oversized(summary)

    def drop_unsummarized(self) -> CompactionResult | None:
        """Recompile's last step: no summary could be made, so everything before the largest
        recent suffix that fits beside a marker counting it is dropped, but for the latest user
        request, kept with the longest suffix that fits beside it (as :meth:`drop` keeps it). None
        when even the last round (with the request, when the suffix leaves it out) does not fit."""
        o, pre = self.original, self.preamble
        found = o._latest_request()
        plan = o._keep_plan(
            self.limit,
            reserve=DROP_MARKER_TOKENS,
            request=None if found is None else found[0],
            beside=DROP_MARKER_TOKENS,
        )
        if plan is None:
            s = o.recent_suffix(max(0, self.limit - DROP_MARKER_TOKENS))
            if found is not None and s["overflow"] is None and s["start"] > found[0]:
                # The last round fits: the latest request beside it does not.
                self.why = (
                    f"the latest user request and the last round after it, with markers counting what is "
                    f"dropped, are larger than the budget of {self.limit:,}; a round is never split"
                )
            return None
        if len(plan[0]) == len(o):
            return None
        keep, q = plan[0][pre:], plan[1]
        kept, positions, dropped = self._dropping(o, keep)
        if kept.tokens > self.limit:
            return None
        self.event("drop", o.tokens, kept.tokens, dropped_messages=dropped,
                   **({"kept_request": q} if q is not None else {}))  # fmt: skip
        return self.finish(kept, positions, first_kept=keep[0], origins=positions)

    def last_resort(self) -> CompactionResult:
        """(e) Drop the oldest whole groups (after summarizing them when the policy summarizes
        and the usual split left nothing older to summarize); the oversized rung when even the
        last round does not fit."""
        p, work = self.policy, self.work
        if not p.drop_oldest_groups or work.tokens <= self.limit:
            return self.finish(work, self.provenance)
        if p.summarize or self.manual:
            done = self.refit()
            if done is None and self.roomless:
                # What the drop would leave out is summarized in the room it would leave, when
                # a summary fits there: dropping unsummarized is the last resort.
                done = self.refit(least=True)
            if done is not None:
                return done
        return self.drop()

    def drop(self) -> CompactionResult:
        """Drop the oldest whole groups of the working conversation until it fits; the latest user
        request stays (cut when it alone is too large). A user marker takes the place of each
        run of dropped messages, saying how many and where their originals are (its room kept
        when fitting); when the last round does not fit beside the markers, the oversized rung
        decides."""
        work, limit = self.work, self.limit
        # The suffix that fits beside a marker; when it leaves out the latest request, the request
        # with the longest suffix that fits beside it and the markers before and after it (else
        # the last round with it, cut as they must be): the core's trim plan, the request never cut.
        found = self.original._latest_request()
        request = None if found is None else found[0]
        # Room for the earlier task ledger the drop leaves out (see _carry_ledger), while a plan fits.
        carry = self._earlier_ledger_room()
        plan = work._keep_plan(limit, reserve=DROP_MARKER_TOKENS + carry, request=request, beside=DROP_MARKER_TOKENS)
        if plan is None and carry:
            plan = work._keep_plan(limit, reserve=DROP_MARKER_TOKENS, request=request, beside=DROP_MARKER_TOKENS)
        if plan is None:
            return self.oversized(None)
        keep, q = plan[0][work.preamble :], plan[1]
        # Before a summary, positions in `work` are positions in the original.
        kept, origins, dropped = self._dropping(work, keep)
        if kept.tokens > limit:
            return self.oversized(None)
        self.event("drop", work.tokens, kept.tokens, dropped_messages=dropped,
                   **({"kept_request": q} if q is not None else {}))  # fmt: skip
        kept, origins = self._carry_summary(kept, origins, keep[0])
        kept, origins = self._carry_ledger(kept, origins, keep)
        new_prov = [None if i is None else self.provenance[i] for i in origins]
        return self.finish(kept, new_prov, first_kept=keep[0], origins=origins)

    def _carry_summary(
        self, kept: Conversation, origins: list[int | None], first: int
    ) -> tuple[Conversation, list[int | None]]:
        """``kept`` (the drop's result) with the summary this library wrote earlier, when the drop
        left it out: the oldest facts of the session live only there, so it comes back, shrunk to
        the room the drop leaves (at least :data:`MIN_SUMMARY_TOKENS`), right after the system
        messages; the marker after it still names the recall id of the original. Unchanged when
        there is none, it was kept, or it does not fit."""
        work, pre = self.work, self.work.preamble
        if first <= pre or pre >= len(work):
            return kept, origins
        content = work[pre].get("content")
        if work[pre].get("role") != "user" or not isinstance(content, str) or not content.startswith(SUMMARY_MARKER):
            return kept, origins
        header, _, body = content.partition("\n\n")
        enc = self.policy.encoding
        room = self.limit - kept.tokens - count_tokens(header, encoding=enc) - SUMMARY_HEADER_TOKENS
        if room < MIN_SUMMARY_TOKENS or not body:
            return kept, origins
        message = {
            "role": "user",
            "content": f"{header}\n\n{self.policy.harness.shrink_summary(body, room, encoding=enc)}",
        }
        why = "the earlier summary, left out by the drop, shrunk into the room it leaves"
        return self._carry(kept, origins, pre, message, "summary_tokens", why)

    def _earlier_ledger(self) -> int | None:
        """Where the task ledger an earlier compaction wrote is in the working conversation (right
        after the system messages, or after the summary there); None without one or when the
        policy has the ledger off."""
        work, pre = self.work, self.work.preamble
        if not self.policy.ledger:
            return None
        for i in range(pre, min(pre + 2, len(work) - 1)):
            content = work[i].get("content")
            if work[i].get("role") == "user" and isinstance(content, str) and content.startswith(LEDGER_MARKER):
                return i
        return None

    def _earlier_ledger_room(self) -> int:
        """The room the drop keeps for the earlier task ledger (:meth:`_earlier_ledger`): its
        tokens, at most the ledger's cap under this target; 0 without one."""
        found = self._earlier_ledger()
        if found is None:
            return 0
        cap = ledger_cap(self.policy.ledger_max_tokens, self.target)
        return min(self.work.message_tokens()[found], cap)

    def _carry_ledger(
        self, kept: Conversation, origins: list[int | None], keep: list[int]
    ) -> tuple[Conversation, list[int | None]]:
        """``kept`` (the drop's result) with the task ledger an earlier compaction wrote, when the
        drop left it out: bounded to the room the drop leaves (its oldest entries counted, not
        listed), right after the summary carried or the system messages. Unchanged when there is
        none, it was kept, or not even its request and heading fit (#27: a constraint the user
        stated once, the files touched, stay in every later working set)."""
        work, pre = self.work, self.work.preamble
        found = self._earlier_ledger() if self._earlier_ledger_room() else None
        ledger = Ledger.parse(work[found]["content"]) if found is not None and found not in set(keep) else None
        if ledger is None:
            return kept, origins
        enc = self.policy.encoding
        room = self.limit - kept.tokens - SUMMARY_HEADER_TOKENS
        if room < MIN_SUMMARY_TOKENS:
            return kept, origins
        message = ledger.bounded(room, encoding=enc).message()
        at = pre
        # After the summary carried back (the one message of no origin right after the system ones).
        if len(kept) > pre and origins[pre] is None and str(kept[pre].get("content", "")).startswith(SUMMARY_MARKER):
            at = pre + 1
        why = "the earlier task ledger, left out by the drop, bounded to the room it leaves"
        return self._carry(kept, origins, at, message, "ledger_tokens", why)

    def _carry(
        self, kept: Conversation, origins: list[int | None], at: int, message: dict[str, Any], tokens: str, why: str
    ) -> tuple[Conversation, list[int | None]]:
        """``kept`` (the drop's result) with ``message`` (of no origin) inserted at ``at``, and a
        ``carry`` event saying ``why`` and the message's tokens (under the key ``tokens``);
        unchanged when the whole would no longer fit the budget."""
        head = Conversation([message], format=kept.format, encoding=kept.encoding)
        carried = Conversation.concat([kept.slice(0, at), head, kept.slice(at, len(kept))])
        if carried.tokens > self.limit:
            return kept, origins
        self.event("carry", kept.tokens, carried.tokens, **{tokens: head.tokens}, why=why)
        return carried, [*origins[:at], None, *origins[at:]]

    def oversized(self, summary: Summary | None) -> CompactionResult:
        """The last rung: the last round alone (with the latest user request, when that comes
        before it) does not fit. Its oversized messages are cut head + marker + tail (equal
        shares of what is left for each, the original under a recall id), beside a summary of
        everything older when there is room for one (``summary`` when it covers exactly that,
        else one written again); without one, the latest request is kept and a marker counts
        each run of the messages dropped. Does not fit only when not even the markers and a
        head and tail of each message do."""
        o, limit = self.original, self.limit
        self._last_rung = True
        cuts = [c for c in o._cut_points() if self.preamble <= c < len(o)]
        last = cuts[-1] if cuts else self.preamble
        found = o._latest_request()
        q = found[0] if found is not None and self.preamble <= found[0] < last else None
        # Kept raw: the last round, with the latest request when it opens that turn (and no
        # summary already covers it). A summary covers everything older: one written for
        # another raw part is written again (re-planned), so that nothing between it and the
        # raw part is dropped unsummarized.
        keep = list(range(last, len(o)))
        # The latest request with what it cannot be parted from: an Anthropic user message that
        # also carries the results of calls before it is kept from the cut point before them.
        ask = [] if q is None else list(range(max((c for c in cuts if c <= q), default=self.preamble), q + 1))
        if q is not None and q + 1 == last and (summary is None or summary.stop <= q):
            keep[:0] = ask
        # In a live loop a round is never cut: when it does not fit beside the system messages,
        # no summary can make room, and none is written again (a summarizer call for nothing).
        hopeless = not self.one_shot and self.preamble_tokens + sum(self.totals[i] for i in keep) > limit
        replanned = summary is not None and summary.stop != keep[0] and not hopeless
        # The latest request, raw without a summary, is now in the one written.
        moved = q is not None and q not in keep and (summary is None or summary.stop <= q)
        if replanned:
            summary = None
        attempts: list[Summary | None] = [None]
        if keep[0] > self.preamble:
            if summary is None and (self.policy.summarize or self.manual) and not hopeless:
                cap = self.request_cap(max(64, min(self.policy.summary_max_tokens, limit // 5)), keep[0])
                summary = self.write_summary(keep[0], cap)
                if summary is not None and replanned:
                    summary.detail["replanned"] = "to cover what the earlier summary left between it and the last round"
            if summary is not None:
                # No ledger here: what the summary left to the one beside it comes back into it.
                summary = self.without_ledger(summary)
                summary.covers = summary.stop
                # The round whole beside the summary cut to the room left, then both cut.
                shrunk = self.shrunk_summary(summary, limit - self.preamble_tokens - sum(self.totals[i] for i in keep))
                if moved and shrunk is not None and found is not None and not _holds_request(shrunk.text, found[1]):
                    shrunk = None  # cut so short that it lost the latest request it took in
                attempts[:0] = [s for s in (shrunk, summary) if s is not None]
        done = self._first_fit(attempts, keep, ask)
        if done is not None:
            return done
        return self._unfit(keep, ask)

    def _first_fit(self, attempts: list[Summary | None], keep: list[int], ask: list[int]) -> CompactionResult | None:
        """The oversized rung's working set with the first of ``attempts`` (a summary, or None for
        the markers alone) beside which the round ``keep`` (with the latest request, ``ask``'s last
        message, and the messages before it that it cannot be parted from) fits cut."""
        o = self.original
        for attempt in attempts:
            # Without a summary, the latest request itself (a marker counts what is dropped).
            raw = keep if attempt is not None or not ask or ask[-1] in keep else [*ask, *keep]
            done = self._cut_round(raw, attempt)
            if done is not None:
                conv = done.conversation
                whole = self.preamble_tokens + sum(self.totals[i] for i in raw)
                if attempt is not None and not attempt.recorded:
                    whole += sum(count_tokens(m["content"], encoding=o.encoding)
                                 for m in self._summary_messages(attempt, store=False))  # fmt: skip
                    self.event("summarize", self.work.tokens, whole, **attempt.detail, kept_raw=len(raw))
                if done.dropped:
                    whole += done.notes_tokens
                    self.event("drop", self.work.tokens, whole, dropped_messages=done.dropped, kept_from=raw[0])
                if done.cut:
                    self.event("cut", whole, conv.tokens, messages_cut=done.cut, kept_from=raw[0])
                elif not done.dropped:
                    self.event("drop", whole, conv.tokens, kept_from=raw[0])
                return self.finish(
                    conv,
                    done.provenance,
                    summary=attempt,
                    first_kept=None if attempt else raw[0],
                    origins=done.origins,
                )
        return None

    def _unfit(self, keep: list[int], ask: list[int]) -> CompactionResult:
        """The oversized rung's result when not even the cut round fits: why, and the working set
        as it is (with the summary written, when one was)."""
        o, limit = self.original, self.limit
        raw = keep if not ask or ask[-1] in keep else [*ask, *keep]
        round_tokens = sum(self.totals[i] for i in raw)
        if self.one_shot:
            reason = (
                f"the last round ({round_tokens:,} tokens) does not fit the budget of {limit:,} even with its "
                f"messages cut to a head, a marker and a tail beside the system messages ({self.preamble_tokens:,} tokens)"
            )
            if self.preamble_tokens + round_tokens <= limit:
                dropped = len(o) - self.preamble - len(raw)
                reason += f" and a summary or a marker counting the {dropped:,} earlier messages"
        else:
            reason = (
                f"the last round ({round_tokens:,} tokens) and the system messages ({self.preamble_tokens:,} tokens) "
                f"are larger than the budget of {limit:,} beside any summary; a round is never split"
            )
        self.why = reason
        self.event("cut" if self.one_shot else "drop", self.work.tokens, self.work.tokens, failed=reason)
        if self.summarized is not None:
            conv, prov, kept = self.summarized
            return self.finish(conv, prov, summary=kept, reason=reason)
        return self.finish(self.work, self.provenance, reason=reason)

    def _cut_round(self, keep: list[int], summary: Summary | None) -> _Cut | None:
        """Messages ``keep`` of the original after the system messages and ``summary`` (which
        covers everything before ``keep``), or with a marker (:meth:`_drop_note`) in the place of
        each run of the others when there is no summary; the largest texts cut to equal shares
        of the room left so that the whole fits the budget (None when it cannot)."""
        o, p = self.original, self.policy
        head = self._summary_messages(summary, store=True) if summary else []
        head_conv = Conversation(head, format=o.format, encoding=o.encoding)
        # Before keep[k]: the marker of the messages dropped since the previous one kept.
        notes: dict[int, dict[str, str]] = {}
        at, dropped = summary.covers if summary else self.preamble, 0
        for k, i in enumerate(keep):
            if i > at:
                notes[k] = self._drop_note(o, at, i)
                dropped += i - at
            at = i + 1
        notes_tokens = 0
        if notes:
            notes_tokens = o.replace(0, None, list(notes.values())).tokens
        neutral = [o.slice(i, i + 1).to_jsonl() for i in keep]
        units = [(k, j, "content", m["content"]) for k, ms in enumerate(neutral) for j, m in enumerate(ms)
                 if isinstance(m.get("content"), str)]  # fmt: skip
        sizes = [count_tokens(text, encoding=p.encoding) for *_, text in units]
        room = self.limit - self.preamble_tokens - head_conv.tokens - notes_tokens
        room -= sum(self.totals[i] for i in keep) - sum(sizes)

        def build(out: list[list[dict[str, Any]]]) -> Conversation:
            body = o.replace(
                0, None, [m for k, ms in enumerate(out) for m in [*([notes[k]] if k in notes else []), *ms]]
            )
            return Conversation.concat([o.slice(0, self.preamble), head_conv, body])

        # Beside the latest user request, the tool output is cut first (the request keeps its room).
        found = o._latest_request()
        asks = found is not None and found[0] in keep
        yielding = [n for n, (k, j, _, _) in enumerate(units) if asks and neutral[k][j].get("role") == "tool"]
        done = fill.cut_texts(
            self, neutral, units, sizes, room, build, self.limit, may_cut=self.one_shot, yielding=yielding
        )
        if done is None and self.one_shot:
            # Each message less its texts, counted apart, may take more than the messages do with
            # their texts emptied (an Anthropic message of a result block and text counts more whole
            # than its parts): the room those leave, when larger.
            emptied = [[{**m, "content": ""} if isinstance(m.get("content"), str) else m for m in ms] for ms in neutral]
            measured = self.limit - build(emptied).tokens
            if measured > room:
                done = fill.cut_texts(
                    self, neutral, units, sizes, measured, build, self.limit, may_cut=True, yielding=yielding
                )
        if done is None:
            return None
        conv, cut_at = done
        cut = sorted({keep[k] for k in cut_at})
        n_body = len(conv) - self.preamble - len(head_conv)
        prov: list[int | None] = [*range(self.preamble), *[None] * len(head)]
        origins = list(prov)
        if n_body != len(keep) + len(notes):
            return _Cut(conv, [*prov, *[None] * n_body], [*origins, *[None] * n_body], cut, dropped, notes_tokens)
        for k, i in enumerate(keep):
            if k in notes:
                prov.append(None)
                origins.append(None)
            prov.append(None if i in cut else i)
            origins.append(i)
        return _Cut(conv, prov, origins, cut, dropped, notes_tokens)


@dataclass
class _Cut(fill.Filled):
    """A working set whose last round was cut to fit (:class:`~agentcontext.compaction.fill.Filled`:
    its provenance, origins and the positions in the original of the messages cut), with how many
    messages were dropped (each run counted by a marker) and the markers' tokens."""

    dropped: int = 0
    notes_tokens: int = 0
