"""The budget every tool result gets when it enters the conversation."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from agentcontext import _checks
from agentcontext._core import Truncation, json_preview, truncate
from agentcontext.budgets.store import ResultStore
from agentcontext.types import TruncateStrategy as Strategy

__all__ = ["CHARS_PER_TOKEN", "BudgetedResult", "ToolResultPolicy"]

#: Characters per token used to turn a window in tokens into a budget in characters.
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class BudgetedResult:
    """What became of one tool result."""

    text: str
    #: ``"kept"`` (fit as is), ``"truncated"`` (head/tail with a marker) or ``"persisted"``
    #: (stored in full, replaced by a preview with its recall id).
    action: Literal["kept", "truncated", "persisted"]
    original_chars: int
    recall_id: str | None = None
    truncation: Truncation | None = None


@dataclass(frozen=True)
class ToolResultPolicy:
    """The budget every tool result gets when it enters the conversation.

    - A result over ``max_chars`` is cut to head + marker + tail (``strategy="auto"`` keeps the
      tail when it holds errors, tracebacks, test summaries, exit status or closing brackets).
      The default budget is min(16,000 chars, 30% of the context window).
    - A result over ``persist_over_chars`` is stored in full in ``store`` and replaced by a
      ``preview_chars`` preview (a structural one for JSON) with its size and recall id.
    - Across the parallel results of one message, at most ``message_limit_chars`` enter; the
      largest are persisted first until the rest fit.
    - ``per_tool`` overrides ``max_chars`` and ``persist_over_chars`` for named tools: their
      results are cut to their own budget (head + marker + tail), never replaced by a preview for
      being over ``persist_over_chars`` (the per-message limit still applies).
    """

    context_window: int = 200_000
    max_chars: int | None = None
    per_tool: Mapping[str, int] = field(default_factory=dict)
    persist_over_chars: int | None = 50_000
    preview_chars: int = 2_000
    message_limit_chars: int | None = 200_000
    strategy: Strategy = "auto"
    head_share: float = 0.5
    store: ResultStore | None = None

    def __post_init__(self) -> None:
        _checks.count("context_window", self.context_window)
        _checks.optional_count("max_chars", self.max_chars)
        object.__setattr__(self, "per_tool", _checks.count_map("per_tool", self.per_tool))
        _checks.optional_count("persist_over_chars", self.persist_over_chars)
        _checks.count("preview_chars", self.preview_chars)
        _checks.optional_count("message_limit_chars", self.message_limit_chars)
        _checks.number("head_share", self.head_share, high=1.0)

    @property
    def default_max_chars(self) -> int:
        if self.max_chars is not None:
            return self.max_chars
        return min(16_000, int(0.3 * self.context_window * CHARS_PER_TOKEN))

    def max_chars_for(self, tool: str | None) -> int:
        return self.per_tool.get(tool or "", self.default_max_chars)

    def _persists(self, content: str, tool: str | None) -> bool:
        """Whether ``content`` is over the persist threshold (tools in ``per_tool`` have none)."""
        return (
            self.persist_over_chars is not None
            and (tool or "") not in self.per_tool
            and len(content) > self.persist_over_chars
        )

    def apply(self, content: str, tool: str | None = None) -> BudgetedResult:
        """Budget one tool result."""
        if self._persists(content, tool):
            return self.persist(content)
        return self._cut(content, self.max_chars_for(tool))

    def apply_message(self, results: Iterable[tuple[str | None, str]]) -> list[BudgetedResult]:
        """Budget the parallel results of one message, given as ``(tool_name, content)``, in order."""
        items = list(results)
        persist = {i for i, (t, c) in enumerate(items) if self._persists(c, t)}
        if self.message_limit_chars is not None:
            sizes = {i: min(len(c), self.max_chars_for(t)) for i, (t, c) in enumerate(items)}
            total = sum(self.preview_chars if i in persist else sizes[i] for i in range(len(items)))
            for i in sorted(range(len(items)), key=lambda i: -len(items[i][1])):
                if total <= self.message_limit_chars:
                    break
                if i not in persist:
                    persist.add(i)
                    total -= sizes[i] - self.preview_chars
        return [
            self.persist(c) if i in persist else self._cut(c, self.max_chars_for(t)) for i, (t, c) in enumerate(items)
        ]

    def persist(self, content: str) -> BudgetedResult:
        """Store ``content`` in full and return its preview."""
        if self.store is None:
            # Nowhere to keep it: the best is a marked cut to the preview size.
            return self._cut(content, self.preview_chars)
        recall_id = self.store.put(content)
        # Lines as the recall tool pages them: a last line break ends the last line.
        lines = content.count("\n") + (not content.endswith("\n"))
        header = f"[Full result stored: {len(content):,} chars, {lines:,} lines; recall id {recall_id}]\n"
        room = max(self.preview_chars - len(header), 200)
        preview = json_preview(content, max_chars=room)
        if preview is None:
            preview = truncate(
                content, room, unit="chars", strategy=self.strategy, head_share=self.head_share, recall_id=recall_id
            ).text
        return BudgetedResult(
            text=header + preview, action="persisted", original_chars=len(content), recall_id=recall_id
        )

    def _cut(self, content: str, budget: int) -> BudgetedResult:
        if len(content) <= budget:
            return BudgetedResult(text=content, action="kept", original_chars=len(content))
        recall_id = self.store.put(content) if self.store is not None else None
        t = truncate(
            content,
            budget,
            unit="chars",
            strategy=self.strategy,
            head_share=self.head_share,
            recall_id=recall_id,
            not_stored=recall_id is None,
        )
        return BudgetedResult(
            text=t.text, action="truncated", original_chars=len(content), recall_id=recall_id, truncation=t
        )
