"""Alyx's tool-result budgets and checkpoint (Arize's data-exploration assistant).

- Repeated idempotent calls (the same read-only tool with the same input) keep only the latest
  preview: earlier results become stubs pointing to the latest call.
- Every tool result is budgeted at 10,000 tokens: over it, the result is cut to the largest head
  that fits, counted exactly (:func:`agentcontext.truncate` with ``exact=True``), with a marker
  saying what was left out and how to recall it.
- A forced checkpoint at 50,000 tokens: before history is trimmed, the agent writes its state
  (the memory flush turn of the ladder with :data:`CHECKPOINT_INSTRUCTION`, run even when the
  compactor's flush is off; it needs the compactor's memory tools and an LLM summarizer).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from agentcontext._core import Conversation, count_tokens, truncate
from agentcontext.compaction.harness import Harness
from agentcontext.errors import BudgetError
from agentcontext.types import Encoding

if TYPE_CHECKING:
    from agentcontext.compaction.state import LadderState

__all__ = ["CHECKPOINT_INSTRUCTION", "IDEMPOTENT_TOOLS", "Alyx", "budget_results", "checkpoint_due", "dedup_idempotent",
           "largest_head"]  # fmt: skip

#: What the model is told in the forced checkpoint turn.
CHECKPOINT_INSTRUCTION = (
    "[Checkpoint] This conversation has passed its checkpoint size and older history is about to be trimmed. "
    "Before that happens, write your current state with memory_write: the user's goal, what you found so far "
    "(with the exact queries, ids and values), what is done, and the next step. Update your earlier checkpoint "
    "record rather than adding another. Your reply is not shown to the user."
)


#: Read-only tools whose repeated calls with the same input return the same preview (Alyx's
#: idempotent calls; the names the shared transcripts use for reads, searches and listings).
IDEMPOTENT_TOOLS: tuple[str, ...] = (
    "Read", "read", "read_file", "view", "cat", "Grep", "grep", "Glob", "glob", "find", "LS", "ls", "list_dir",
    "list_files", "search", "search_files", "search_dir", "search_file", "find_file", "open", "WebFetch", "fetch",
)  # fmt: skip


@dataclass(frozen=True)
class Alyx(Harness):
    """Alyx's options: ``result_max_tokens`` (stage (a) cuts each tool result over it to the
    largest head that fits; None: the char budgets apply), ``checkpoint_tokens`` (over it, the
    memory flush turn runs as a forced checkpoint, even when the compactor's flush is off; 0:
    never) and ``dedup_tools`` (results of these tools called again with the same input become
    stubs pointing to the latest call, which keeps the only preview)."""

    result_max_tokens: int | None = field(default=10_000, metadata={"minimum": 1})
    checkpoint_tokens: int = 50_000
    dedup_tools: tuple[str, ...] = IDEMPOTENT_TOOLS

    def scaled(self, factor: float) -> Alyx:
        budget = self.result_max_tokens
        return replace(
            self,
            checkpoint_tokens=int(self.checkpoint_tokens / factor),
            result_max_tokens=None if budget is None else max(1, int(budget / factor)),
        )

    def budgets(self, run: LadderState) -> bool | None:
        if not (self.dedup_tools or self.result_max_tokens is not None):
            return None
        if self.dedup_tools:
            dedup_idempotent(run, self.dedup_tools)
        if self.result_max_tokens is not None and run.policy.tool_result_budgets:
            budget_results(run, self.result_max_tokens)
        return self.result_max_tokens is not None

    def checkpoint(self, run: LadderState) -> str | None:
        return CHECKPOINT_INSTRUCTION if checkpoint_due(run, self.checkpoint_tokens) else None


def checkpoint_due(run: LadderState, checkpoint_tokens: int) -> bool:
    """Whether the working conversation is at or over ``checkpoint_tokens`` (0: never)."""
    return checkpoint_tokens > 0 and run.work.tokens >= checkpoint_tokens


def dedup_idempotent(run: LadderState, tools: tuple[str, ...]) -> None:
    """Stub earlier results of repeated calls of the idempotent ``tools`` (however recent: only
    the latest preview stays), the originals kept in the compactor's store."""
    work = run.work
    deduped, stubbed = work.dedup_reads(list(tools), recent_messages=0)
    if not stubbed:
        return
    run.keep_results(stubbed)
    run.event("budgets", work.tokens, deduped.tokens, repeated_calls_stubbed=len(stubbed))
    run.replace_work(deduped, {s["index"] for s in stubbed})


def budget_results(run: LadderState, budget: int) -> None:
    """Cut every text tool result over ``budget`` tokens to the largest head that fits (counted
    exactly), marker included; the originals go to the compactor's store (their call ids resolve
    to them as aliases) and the marker names their recall id."""
    work, enc = run.work, run.policy.encoding
    store = run.store
    totals = work.message_tokens()
    parts: list[Conversation] = []
    cut: list[dict[str, Any]] = []
    at = 0
    for i, total in enumerate(totals):
        if total <= budget or i < run.preamble:
            continue
        items = work.slice(i, i + 1).to_jsonl()
        changed = False
        for m in items:
            content = m.get("content")
            if m.get("role") != "tool" or not isinstance(content, str):
                continue
            if count_tokens(content, encoding=enc) <= budget:
                continue
            call_id = m.get("tool_call_id")
            # The original under a recall id (its call id an alias of it, unless calls reuse the
            # id: the alias would name more than one result), which the marker names.
            alias = call_id if isinstance(call_id, str) and call_id not in run.reused_ids() else None
            recall = store.put(content, alias=alias) if store else None
            text = largest_head(content, budget, encoding=enc, recall_id=recall)
            if text is None:
                continue
            m["content"] = text
            changed = True
            cut.append({"index": i, "tool_use_id": call_id})
        message = _rebuilt(items, work) if changed else None
        if message is None or len(message) != 1:
            del cut[len(cut) - sum(1 for c in cut if c["index"] == i) :]
            continue
        parts += [work.slice(at, i), message]
        at = i + 1
    if not cut:
        return
    parts.append(work.slice(at))
    budgeted = Conversation.concat(parts)
    run.event("budgets", work.tokens, budgeted.tokens, results_cut=len(cut), result_budget_tokens=budget)
    run.replace_work(budgeted, {c["index"] for c in cut})


def largest_head(
    text: str, budget: int, *, encoding: Encoding = "o200k_base", recall_id: str | None = None
) -> str | None:
    """``text`` cut to the largest head that fits ``budget`` tokens with its marker, counted
    exactly (:func:`agentcontext.truncate` with ``exact=True``). None when not even a marker fits."""
    try:
        return truncate(text, budget, unit="tokens", strategy="head", encoding=encoding,
                        recall_id=recall_id, not_stored=recall_id is None, exact=True).text  # fmt: skip
    except BudgetError:
        return None


def _rebuilt(items: list[dict[str, Any]], like: Conversation) -> Conversation:
    """One message of ``like`` rebuilt from its neutral items (as the ladder's cut rung does)."""
    return like.replace(0, None, items)
