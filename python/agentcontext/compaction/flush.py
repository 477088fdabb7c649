"""The memory flush turn of the ladder (#16): before a summary replaces older history, the model
is shown the originals of what leaves and may write what matters to memory."""

from __future__ import annotations

import json
import time
from typing import Any

from agentcontext._core import Conversation, count_tokens
from agentcontext.budgets import result_text
from agentcontext.compaction.state import _CLEARED, LadderState
from agentcontext.errors import AgentContextError, failure_text
from agentcontext.observe.calls import observe_flush

__all__ = ["FlushingRun"]


class FlushingRun(LadderState):
    """The ladder's state with the memory flush turn (:meth:`_flush`), which every rung that
    writes a summary runs first."""

    def _flush(self, stop: int) -> None:
        """:meth:`_flush_turn`, observed (:mod:`agentcontext.observe`) from its ``flush`` stage event."""
        count, start, clock = len(self.events), time.time_ns(), time.perf_counter()
        self._flush_turn(stop)
        if len(self.events) > count and self.events[-1].stage == "flush":
            provider = getattr(self.compactor.summarizer, "provider", None)
            on_event = getattr(self.compactor, "on_event", None)
            observe_flush(on_event, provider, start, time.perf_counter() - clock, self.events[-1])

    def _flush_turn(self, stop: int) -> None:
        """The memory flush (#16): one silent turn before a summary replaces ``original[pre:stop]``,
        with a provider (the summarizer's), on every path that writes a summary. The model sees the
        originals of what leaves (not what this run cut or cleared; a result an earlier compaction
        cleared gets its text back from the compactor's store), after the system messages,
        with the agent's system prompt; the newest whole groups of it when all of it does not fit
        the provider's window. A later summary of the same run that replaces more gets a flush of
        the rest."""
        c = self.compactor
        provider = getattr(c.summarizer, "provider", None)
        from agentcontext.memory.flush import FLUSH_INSTRUCTION, flush_memory

        first = self.flushed_upto
        if first >= stop or c.memory is None or provider is None:
            return
        checkpoint = self.policy.harness.checkpoint(self)
        if not (c.flush or checkpoint):
            return
        self.flushed_upto = stop
        tokens = self.work.tokens
        instruction = checkpoint or FLUSH_INSTRUCTION
        shown, detail = self._flush_view(provider, first, stop, instruction)
        detail["before_message"] = stop
        if checkpoint:
            detail["checkpoint"] = True
        if shown is None:
            self.event("flush", tokens, tokens, **detail)
            return
        try:
            report = flush_memory(
                provider,
                shown,
                c.memory,
                system=self.system,
                max_output_tokens=c.flush_max_output_tokens,
                instruction=instruction,
            )
        except Exception as exc:  # noqa: BLE001 - a failed flush is reported and the ladder goes on
            self.event("flush", tokens, tokens, failed=failure_text(exc), **detail)
            return
        done: dict[str, Any] = dict(report.to_dict())
        done.pop("stage")
        self.event("flush", tokens, tokens, **done, **detail)

    def _flush_view(
        self, provider: Any, first: int, stop: int, instruction: str
    ) -> tuple[Conversation | None, dict[str, Any]]:
        """What the flush turn shows: the system messages and the originals of ``first:stop``
        (the newest whole groups that fit the provider's window beside the system prompt, the
        memory tools, the instruction and the output), and the event detail saying how much."""
        o, p = self.original, self.policy
        first = max(first, self.preamble)
        leaving = Conversation.concat([o.slice(0, self.preamble), o.slice(first, stop)])
        c = self.compactor
        leaving, restored = self._uncleared(leaving)
        outside = count_tokens(
            (self.system or "") + instruction + json.dumps(c.memory.definitions("openai") if c.memory else []),
            encoding=p.encoding,
        )
        window = getattr(provider, "context_window", None) or p.summarizer_window
        # 10% slack: the provider's tokenizer is not ours.
        room = int(window * 0.9) - c.flush_max_output_tokens - outside
        detail: dict[str, Any] = {"leaving_messages": stop - first}
        if restored:
            detail["results_restored"] = restored
        if leaving.tokens <= room:
            detail["shown_messages"] = stop - first
            return leaving, detail
        s = leaving.recent_suffix(max(0, room))
        if s["overflow"] is not None or s["start"] >= len(leaving):
            detail["skipped"] = (
                f"the originals of what leaves ({leaving.tokens:,} tokens) do not fit the flush turn's room "
                f"({room:,} tokens of the provider's {window:,}), not even their last round"
            )
            return None, detail
        pre = leaving.preamble
        shown = Conversation.concat([leaving.slice(0, pre), leaving.slice(s["start"])])
        detail["shown_messages"] = len(leaving) - s["start"]
        detail["omitted_messages"] = s["start"] - pre
        return shown, detail

    def _uncleared(self, conv: Conversation) -> tuple[Conversation, int]:
        """``conv`` with every result an earlier compaction cleared given back its text from the
        compactor's store (kept there under its call id when it was cleared), and how many."""
        store = self.store
        if store is None:
            return conv, 0
        messages = conv.to_jsonl()
        restored = 0
        for m in messages:
            call_id = m.get("tool_call_id")
            if m.get("role") != "tool" or not isinstance(call_id, str):
                continue
            if not result_text(m.get("content")).startswith(_CLEARED):
                continue
            try:
                recall_id = store.alias(call_id)
                if recall_id is None:
                    continue
                m["content"] = store.get(recall_id)
            except (AgentContextError, OSError):
                continue  # not stored, or not readable: the placeholder stays
            restored += 1
        if not restored:
            return conv, 0
        return Conversation(messages, format="jsonl", encoding=conv.encoding), restored
