"""The ladder: one run over one conversation, from the cheapest rung to the most lossy — (a)
tool-result budgets, (b) clearing old tool results, (c) summarizing older history, then the last
rungs (:mod:`agentcontext.compaction.resort`). The rungs are generic: a harness changes them
through the hooks of its :class:`~agentcontext.compaction.harness.Harness`, never by name here."""

from __future__ import annotations

from agentcontext._containment import one_line
from agentcontext._core import Conversation, count_tokens
from agentcontext.compaction.policy import SUMMARY_HEADER_TOKENS, summary_cap
from agentcontext.compaction.pricing import clear_rung
from agentcontext.compaction.resort import ResortRun
from agentcontext.compaction.results import CompactionResult
from agentcontext.errors import FileReadError

__all__ = ["LadderRun"]


class LadderRun(ResortRun):
    """One run of the ladder: each rung returns the finished result when the ladder stops there,
    else None (:meth:`skip`, :meth:`budgets`, :meth:`clear`, :meth:`summarize`,
    :meth:`clear_deferred`, then :meth:`last_resort`)."""

    def skip(self) -> CompactionResult | None:
        if self.manual or self.before > self.target:
            return None
        self.event("skip", self.before, self.before, why="under the target")
        return self.finish(self.original, self.provenance)

    def budgets(self) -> CompactionResult | None:
        """(a) Cut every tool result over its budget."""
        p = self.policy
        replaces = p.harness.budgets(self)
        if replaces is not None:
            if self.events and not self.manual and self.work.tokens <= self.target:
                return self.finish(self.work, self.provenance)
            if replaces:
                return None
        work = self.work
        per_tool = dict(p.per_tool_max_chars)
        if not p.tool_result_budgets or not work.tool_results_over(p.default_result_max_chars, per_tool=per_tool):
            return None
        cut_conv, cut = work.truncate_tool_results(
            p.default_result_max_chars, per_tool=per_tool, recall_ids=self.store is not None
        )
        self.keep_results(cut)
        if not cut:
            return None
        changed = {c["index"] for c in cut}
        self.provenance = [None if i in changed else q for i, q in enumerate(self.provenance)]
        self.event("budgets", work.tokens, cut_conv.tokens, results_cut=len(cut))
        self.work = cut_conv
        if not self.manual and self.work.tokens <= self.target:
            return self.finish(self.work, self.provenance)
        return None

    def clear(self) -> CompactionResult | None:
        """(b) Clear old tool results; deferred when even clearing all of them cannot reach the
        target and the summarizer reads the originals anyway (then it is done only if the summary
        fails)."""
        p = self.policy
        if not p.clear_tool_results or self.manual:
            return None
        warm = p.harness.clear_gate(self)
        if warm is not None:
            self.deferred = True
            self.event("clear", self.work.tokens, self.work.tokens, deferred=warm)
            return None
        if p.harness.before_clear(self) and self.work.tokens <= self.target:
            return self.finish(self.work, self.provenance)
        work = self.work
        floor = work.tokens - work.clearable_tokens(
            recent_messages=p.recent_messages,
            recent_tools=p.recent_tools,
            exclude_tools=list(p.exclude_tools),
        )
        if floor > self.target and p.clear_tool_inputs:
            # The results alone leave too much: with the old calls' arguments cleared too (what
            # the clearing does), the floor is what clearing every one of them leaves.
            floor = work.clear_tool_results(
                recall_ids=False,
                recent_messages=p.recent_messages,
                recent_tools=p.recent_tools,
                clear_at_least=0,
                exclude_tools=list(p.exclude_tools),
                clear_tool_inputs=True,
                keep_thinking=p.keep_thinking,
            )[0].tokens
        if floor > self.target and p.summarize and not getattr(self.compactor.summarizer, "window_bound", True):
            self.deferred = True
            what = "old result and argument" if p.clear_tool_inputs else "old result"
            why = f"clearing every {what} leaves at least {floor:,} tokens, over the target"
            self.event("clear", work.tokens, work.tokens, deferred=why)
            return None
        if not self._clear_now(priced=True):
            return self.finish(self.work, self.provenance)
        if self.work.tokens <= self.target:
            return self.finish(self.work, self.provenance)
        return None

    def clear_deferred(self) -> CompactionResult | None:
        if self.deferred and not (self.policy.harness.before_clear(self) and self.work.tokens <= self.target):
            self._clear_now()
        return None

    def _clear_now(self, *, priced: bool = False) -> bool:
        """Clear old tool results; False when ``priced`` and the policy's prices say that does not
        pay (:func:`~agentcontext.compaction.pricing.clear_rung`): then nothing changes and the ladder stops."""
        p, work = self.policy, self.work
        cleared, report = work.clear_tool_results(
            recall_ids=self.store is not None,
            recent_messages=p.recent_messages,
            recent_tools=p.recent_tools,
            clear_at_least=p.clear_at_least,
            exclude_tools=list(p.exclude_tools),
            clear_tool_inputs=p.clear_tool_inputs,
            keep_thinking=p.keep_thinking,
        )
        if not report["cleared"] and not report["inputs_cleared"]:
            return True
        changed = sorted({c["index"] for c in report["cleared"]})
        first_changed = min([*changed, *report["inputs_cleared"]])  # (arguments alone may be cleared)
        pays = clear_rung(p.prices, p.remaining_turns, before=work, after=cleared, first_changed=first_changed,
                          limit=self.limit, clear_at_least=p.clear_at_least,
                          seconds_since_last_call=self.idle_seconds) if priced else None  # fmt: skip
        if pays is not None and not pays[0]:
            self.event("skip", work.tokens, work.tokens, **pays[1])
            return False
        self.keep_results(report["cleared"])
        self.keep_arguments(cleared, report["inputs_cleared"])
        self.event(
            "clear", work.tokens, cleared.tokens,
            results_cleared=len(report["cleared"]), tokens_freed=report["tokens_freed"], **(dict(pays[1]) if pays else {}),
        )  # fmt: skip
        before_prov = self.provenance
        # (A call whose arguments were cleared is changed too: not the original message any more.)
        gone = {*changed, *report["inputs_cleared"]}
        self.provenance = [None if i in gone else q for i, q in enumerate(before_prov)]
        self.work = cleared
        if self.fill and cleared.tokens <= self.target:
            self._restore_cleared(work, before_prov, changed)
        return True

    def _restore_cleared(self, uncleared: Conversation, before_prov: list[int | None], changed: list[int]) -> None:
        """Fill after clearing: the newest cleared messages get their results back while the
        conversation stays within the target."""
        room = self.target - self.work.tokens
        was, now = uncleared.message_tokens(), self.work.message_tokens()
        restore: set[int] = set()
        for i in reversed(changed):
            grow = was[i] - now[i]
            if grow <= room:
                restore.add(i)
                room -= grow
        if not restore:
            return
        parts: list[Conversation] = []
        at = 0
        for i in sorted(restore):
            parts += [self.work.slice(at, i), uncleared.slice(i, i + 1)]
            at = i + 1
        parts.append(self.work.slice(at))
        filled = Conversation.concat(parts)
        self.event("fill", self.work.tokens, filled.tokens, results_restored=len(restore))
        self.provenance = [before_prov[i] if i in restore else q for i, q in enumerate(self.provenance)]
        self.work = filled

    def summarize(self) -> CompactionResult | None:
        """(c) Summarize older history: everything before the raw recent part, which keeps at
        least the policy's recent messages and, when filling, as much more as leaves room for
        the summary within the target. The raw part then grows into the room the summary left."""
        p = self.policy
        if not (p.summarize or self.manual):
            return None
        if p.harness.rebuilds():
            return p.harness.rebuild(self)
        keep = p.manual_recent_messages if self.manual else p.recent_messages
        start = self.work._raw_start_at_least(keep_messages=keep, keep_tokens=0 if self.manual else p.recent_tokens)
        if not self.manual:
            start = p.harness.raw_start(self, start)
        cap = summary_cap(p, self.target) if self.one_shot else p.summary_max_tokens
        recent, n = start, len(self.original)
        fit = self._raw_fit(cap, recent)
        # The policy's recent part is the least kept raw when it fits beside the summary; when it
        # does not (20,000 recent tokens under a 5,000-token budget), as many whole rounds as fit,
        # rather than a summary written for nothing and the refit rung.
        start = fit if fit < n else recent
        # A latest request the summary must carry whole (at most a quarter of the budget) grows
        # its cap; the raw recent part gives the room while a whole round still fits beside it.
        grown = self.request_cap(cap, start)
        if grown > cap and ((more := self._raw_fit(grown, recent)) < n or fit >= n):
            cap, start = grown, more if more < n else recent
        if start <= self.preamble:
            self.nothing_to_summarize()
            return None
        extras = [*self._reattach(self.preamble, start), *self._anchors()]
        if self.fill:
            # Whole rounds rarely fill the target exactly: the summary may take the room the raw
            # part leaves, not only its third. (On the shared corpus at 25%, one preset's pooled
            # retention was 0.877 with the third alone.)
            raw = self.preamble_tokens + sum(self.totals[start:]) + self._pinned_tokens(start)
            raw += Conversation(extras, format=self.original.format, encoding=self.original.encoding).tokens
            raw += self.ledger_tokens(start)  # the ledger beside the summary takes from its room
            cap = self.summary_room(cap, raw)
        summary = self.write_summary(start, cap)
        if summary is None:
            return None
        conv, prov = self._grow(summary, extras, self.target if self.fill else None)
        if conv.tokens <= self.limit or not p.drop_oldest_groups:
            return self.finish(conv, prov, summary=summary)
        self.summarized = (conv, prov, summary)
        # The recent messages kept raw do not fit beside the summary: keep fewer of them,
        # summarizing the rest, before dropping anything unsummarized.
        return self.refit() or self.oversized(summary)

    def _raw_fit(self, cap: int, recent: int) -> int:
        """Filling: the earliest whole round from which the raw part fits beside a summary of
        ``cap`` tokens (the number of messages when none does); not filling: ``recent``."""
        if not self.fill:
            return recent
        return self._fill_start(
            self.target - cap - SUMMARY_HEADER_TOKENS - self._pinned_tokens(recent) - self.ledger_reserve(recent)
        )

    def _reattach(self, start: int, stop: int) -> list[dict[str, str]]:
        """Up to ``reattach_files`` files read in the older history, re-read now, within
        ``reattach_tokens``. The path is the one the model wrote: shown on one line."""
        p, files = self.policy, self.compactor.files
        if files is None or p.reattach_files <= 0:
            return []
        out: list[dict[str, str]] = []
        used = 0
        for path in reversed(self.original.handoff(start, stop)["files_read"]):
            if len(out) >= p.reattach_files:
                break
            # What was read before is no longer in the context: read afresh, never answered by
            # the reader's "unchanged since read #N, still above" stub.
            try:
                files.forget(path)
                text = files.read(path)
            except (FileReadError, OSError):
                continue
            tokens = count_tokens(text, encoding=p.encoding)
            if used + tokens > p.reattach_tokens:
                continue
            used += tokens
            out.append(
                {
                    "role": "user",
                    "content": f"[Re-attached after compaction: current content of {one_line(path)}]\n{text}",
                }
            )
        return out
