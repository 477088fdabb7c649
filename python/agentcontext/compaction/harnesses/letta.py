"""Letta's compaction behaviours, for the ``letta`` preset (or any policy that sets their fields):

- **Sliding window** (``sliding_window`` 0.3): the oldest 30% of the messages are summarized, then
  40%, 50%, ... (+10% a step) until what stays raw is under the target (70% of the window for the
  preset, with room for the summary). Each cut falls on a cut point (the start of a group or a
  round: a call is never split from its result), the latest one at or before the step's message.
- **Memory-pressure warning** (``memory_warning`` 0.75): a reminder, before the 90% trigger, that
  history will soon be trimmed and what matters should be saved to memory.
  :func:`memory_warning` gives it as a :class:`~agentcontext.compiler.Reminder` (context
  pressure); a :class:`~agentcontext.Session` with a compiler adds it itself.
- **Overflowing summarizer request** (``summarizer_overflow="truncate"``): when the older history
  is larger than a window-bound summarizer's window, instead of staging it, every tool result in
  it is cut to 5,000 chars and the request retried; when that is still too large, the transcript
  is kept as text, 30% of the room from its head and 30% from its tail. The messages wholly in
  the omitted middle are not summarized: the compaction ladder counts them by a drop marker in its
  output (their originals under a recall id when the compactor has a store), and the summary
  header names only the messages the summarizer saw (whole or cut).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from agentcontext._core import Conversation, count_tokens, truncate
from agentcontext.compaction.harness import Harness
from agentcontext.compaction.policy import SUMMARY_HEADER_TOKENS, summary_cap
from agentcontext.compaction.summarize import Summarizer, SummaryRequest

if TYPE_CHECKING:
    from agentcontext.compaction.policy import CompactionPolicy
    from agentcontext.compaction.state import LadderState
    from agentcontext.compiler.reminders import Reminder

__all__ = ["MEMORY_WARNING", "TOOL_RETURN_CHARS", "TRANSCRIPT_KEEP_SHARE", "WINDOW_STEP", "Letta", "memory_warning",
           "sliding_window_start", "summarize_overflowing"]  # fmt: skip

#: Letta's memory-pressure warning.
MEMORY_WARNING = (
    "The conversation history will soon reach its maximum length and be trimmed. "
    "Make sure to save any important information from the conversation to your memory before it is removed."
)
#: Each step of the sliding window evicts this much more of the messages.
WINDOW_STEP = 0.1
#: Tool returns in an overflowing summarizer request are cut to this many chars.
TOOL_RETURN_CHARS = 5_000
#: Then the transcript keeps this share of the summarizer's room from its head, and as much from its tail.
TRANSCRIPT_KEEP_SHARE = 0.3


@dataclass(frozen=True)
class Letta(Harness):
    """Letta's options: ``sliding_window`` (summarize the oldest this share of the messages, +10%
    per step, until the rest is under the target; None: the policy's recent part) and
    ``memory_warning`` (the share of the window at which a memory-pressure reminder fires,
    :func:`memory_warning`). An overflowing summary request is cut as Letta cuts it
    (:func:`summarize_overflowing`)."""

    summarizer_overflow: ClassVar[str] = "truncate"

    sliding_window: float | None = 0.3
    memory_warning: float | None = 0.75

    def raw_start(self, run: LadderState, start: int) -> int:
        if self.sliding_window is None:
            return start
        return sliding_window_start(run, start, self.sliding_window)

    def summary_overflow(
        self,
        summarizer: Summarizer,
        request: SummaryRequest,
        room: int | None,
        notes: dict[str, Any],
        staged: Callable[[SummaryRequest], str],
    ) -> str:
        if room is not None and request.tokens > room:
            return summarize_overflowing(summarizer, request, room, notes)
        return staged(request)


def memory_warning(policy: CompactionPolicy) -> Reminder | None:
    """The memory-pressure reminder at the ``memory_warning`` share of the window of a policy whose
    harness is :class:`Letta` (None for any other, or without one)."""
    harness = policy.harness
    share = harness.memory_warning if isinstance(harness, Letta) else None
    if share is None:
        return None
    from agentcontext.compiler.reminders import Reminder

    return Reminder(on="pressure", text=MEMORY_WARNING, share=share)


def sliding_window_start(run: LadderState, least: int, first: float) -> int:
    """Where the raw recent part starts under the sliding window: the first step (30%, 40%, ...
    of the messages after the system messages) whose cut point leaves the rest, with the system
    messages and room for the summary, under the target; ``least`` (the policy's own recent
    start) when no step does; the first step is ``first``."""
    p = run.policy
    cap = summary_cap(p, run.target) if run.one_shot else p.summary_max_tokens
    room = run.target - run.preamble_tokens - cap - SUMMARY_HEADER_TOKENS
    start = run.original._raw_start_steps(room, first, WINDOW_STEP)
    return least if start is None else start


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] if isinstance(b, dict) and isinstance(b.get("text"), str) else json.dumps(b)
                         for b in content)  # fmt: skip
    return "" if content is None else json.dumps(content)


def transcript(conv: Conversation) -> str:
    """``conv`` as a plain-text transcript, one block per message (calls named with their input)."""
    return "\n\n".join(_blocks(conv))


def _blocks(conv: Conversation) -> list[str]:
    """The transcript's block of each message of ``conv``."""
    lines = []
    for m in conv.to_jsonl():
        role = m.get("role", "?")
        label = f"tool result ({m['tool_call_id']})" if role == "tool" and m.get("tool_call_id") else role
        body = _text(m.get("content"))
        calls = [f"calls {c.get('name')}({c.get('arguments')}) [{c.get('id')}]" for c in m.get("tool_calls") or []]
        lines.append("\n".join(x for x in (f"{label}: {body}", *calls) if x))
    return lines


def summarize_overflowing(
    summarizer: Summarizer, request: SummaryRequest, room: int, notes: dict[str, Any] | None = None
) -> str:
    """Letta's fallback for a summarizer request over ``room`` tokens: tool results cut to
    :data:`TOOL_RETURN_CHARS`; when still over, the transcript's head and tail,
    :data:`TRANSCRIPT_KEEP_SHARE` of ``room`` each (the middle marked as omitted). ``notes``
    receives the messages wholly in the omitted middle, which the summarizer never sees:
    ``omitted_messages``, and ``omitted_from`` (the first of them, counted from ``request.start``)."""
    # From the original when the request has it: a result the budgets stage cut is not cut again.
    older = (request.original or request.source).slice(request.start, request.stop)
    cut, entries = older.truncate_tool_results(TOOL_RETURN_CHARS, recall_ids=False)
    if entries and sum(cut.message_tokens()) <= room:
        return summarizer.summarize(
            SummaryRequest(
                cut, cut.preamble, len(cut), request.previous_summary, request.max_tokens,
                encoding=request.encoding, context={"overflow": f"tool returns cut to {TOOL_RETURN_CHARS:,} chars"},
            )
        )  # fmt: skip
    blocks = _blocks(cut)
    text = "\n\n".join(blocks)
    keep = max(1, int(2 * TRANSCRIPT_KEEP_SHARE * room))
    if count_tokens(text, encoding=request.encoding) > keep:
        done = truncate(
            text, keep, unit="tokens", strategy="head_tail", head_share=0.5, encoding=request.encoding, not_stored=True
        )
        if notes is not None and len(blocks) == len(cut):
            # The blocks that lie wholly between the head and the tail kept (a block cut at either
            # end was seen in part, like a result cut to its head and tail).
            at, omitted = 0, []
            for k, block in enumerate(blocks):
                if at >= done.head_chars and at + len(block) <= len(text) - done.tail_chars:
                    omitted.append(k)
                at += len(block) + 2
            if omitted:
                notes.update(omitted_messages=len(omitted), omitted_from=omitted[0])
        text = done.text
    whole = Conversation([{"role": "user", "content": text}], encoding=request.encoding)
    return summarizer.summarize(
        SummaryRequest(
            whole, 0, 1, request.previous_summary, request.max_tokens, encoding=request.encoding,
            context={"overflow": f"transcript kept as {TRANSCRIPT_KEEP_SHARE:.0%} head + {TRANSCRIPT_KEEP_SHARE:.0%} tail"},
        )
    )  # fmt: skip
