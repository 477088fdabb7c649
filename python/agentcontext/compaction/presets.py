"""One preset per harness: the budget numbers and the compaction policy of a well-known agent
harness, in one object, for comparison on the same transcripts.

``PRESETS["claude-code"].result_policy()`` is its tool-result budget, ``.file_reader()`` its read
tool, ``.compactor()`` its compaction ladder (``.budgets`` and ``.compaction`` hold the numbers).
:data:`PRESETS` is the one table of presets (also :data:`agentcontext.PRESETS` and
:data:`agentcontext.compaction.PRESETS`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from agentcontext.budgets.presets import _BUDGETS, BudgetPreset
from agentcontext.budgets.reads import FileReader
from agentcontext.budgets.results import ToolResultPolicy
from agentcontext.budgets.store import ResultStore
from agentcontext.compaction import policy as _policy
from agentcontext.compaction.compactor import Compactor
from agentcontext.compaction.harnesses.alyx import IDEMPOTENT_TOOLS, Alyx
from agentcontext.compaction.harnesses.claude_code import ClaudeCode
from agentcontext.compaction.harnesses.codex import Codex
from agentcontext.compaction.harnesses.letta import Letta
from agentcontext.compaction.harnesses.openclaw import OpenClaw
from agentcontext.compaction.harnesses.pi import Pi
from agentcontext.compaction.policy import CompactionPolicy

__all__ = ["PRESETS", "Preset"]

#: The compaction policy of each harness by name, its harness wired in (each preset's
#: ``.compaction``; :func:`~agentcontext.compaction.resolve_policy` reads them by name).
_POLICIES: dict[str, CompactionPolicy] = {
    p.name: p
    for p in [
        CompactionPolicy(
            "openharness",
            trigger=0.85, target=0.6, recent_messages=12, recent_tools=3, manual_recent_messages=2,
            note="the seed design: clear old tool results first, then summarize all but the last 12 messages",
        ),
        CompactionPolicy(
            "pi", ledger=False,
            reserved_output=16_384, safety_margin=0, trigger=1.0, target=1.0, recent_messages=0,
            recent_tokens=20_000, clear_tool_results=False, tool_result_budgets=False, harness=Pi(),
            note="trigger at window - 16,384; keep the last ~20,000 tokens raw, splitting a turn larger than that "
            "(its prefix summarized as the turn context); summary as a user message",
        ),
        CompactionPolicy(
            "openclaw", ledger=False,
            trigger=0.5, target=0.4, recent_messages=12, recent_tools=3, summarizer_window=32_000,
            harness=OpenClaw(max_history_share=0.5, soft_trim_chars=4_000, cache_ttl_seconds=300),
            note="history over 50% of the window; the oldest equal-token chunks summarized first, then the rest "
            "(staged, merged); old results soft-trimmed then cleared, never while the cache is warm (5 min)",
        ),
        CompactionPolicy(
            "claude-code", ledger=False,
            reserved_output=20_000, safety_margin=0, trigger=1.0, target=1.0, harness=ClaudeCode(trigger_margin=13_000),
            recent_messages=0, recent_tools=0, clear_tool_results=False, reattach_files=5,
            reattach_tokens=50_000,
            note="trigger at window - 20,000 output - 13,000 (167,000 on 200K); summary of all but the last round; "
            "re-attach up to 5 read files; a summary request too long drops the oldest API rounds and retries",
        ),
        CompactionPolicy(
            "codex", ledger=False,
            trigger=0.9, target=0.9, recent_messages=0, harness=Codex(recent_user_tokens=20_000),
            clear_tool_results=False, result_max_chars=40_000,
            note="auto-compact near 90%; history rebuilt as the user messages (newest ~20,000 tokens) + the summary",
        ),
        CompactionPolicy(
            "letta", ledger=False,
            trigger=0.9, target=0.7, recent_messages=0, recent_tokens=0, result_max_chars=5_000,
            clear_tool_results=False, harness=Letta(sliding_window=0.3, memory_warning=0.75),
            note="trigger at 90%, warning at 75%; tool returns cut to 5,000 chars; sliding window from 30% of "
            "messages, +10% a step, to under 70%; an overflowing summary request: tool returns cut to 5,000 "
            "chars, then 30% head + 30% tail",
        ),
        CompactionPolicy(
            "goose", ledger=False,
            trigger=0.8, target=0.5, recent_messages=2, clear_tool_results=False,
            note="auto-compact at 80%; keep the latest exchange raw",
        ),
        CompactionPolicy(
            "alyx", ledger=False,
            trigger=50_000, target=30_000, recent_messages=12, recent_tools=3, clear_tool_results=False,
            harness=Alyx(result_max_tokens=10_000, checkpoint_tokens=50_000, dedup_tools=IDEMPOTENT_TOOLS),
            note="tool results cut to the largest head within 10,000 tokens (binary search); repeated idempotent "
            "calls keep only the latest preview; a forced checkpoint turn at 50,000 tokens before history is trimmed",
        ),
    ]
}  # fmt: skip

_policy._POLICIES.update(_POLICIES)


@dataclass(frozen=True)
class Preset:
    """A harness: ``budgets`` (tool results, reads, project files; None when the harness
    publishes none, and the library's defaults apply) and ``compaction`` (the ladder's policy).
    """

    name: str
    budgets: BudgetPreset | None
    compaction: CompactionPolicy

    def result_policy(self, context_window: int = 200_000, store: ResultStore | None = None) -> ToolResultPolicy:
        """The budget of each tool result under this harness's numbers."""
        if self.budgets is None:
            return ToolResultPolicy(context_window=context_window, store=store)
        return self.budgets.result_policy(context_window, store)

    def file_reader(self, *, root: str | os.PathLike[str] | None = None) -> FileReader:
        """The read tool under this harness's limits (``root``: read only inside it, see
        :class:`FileReader`)."""
        return FileReader(root=root) if self.budgets is None else self.budgets.file_reader(root=root)

    def compactor(self, **options: Any) -> Compactor:
        """A :class:`~agentcontext.Compactor` with this harness's policy (``options`` as for it)."""
        return Compactor(self.compaction, **options)


#: Every harness by name, in the order of the compaction presets.
PRESETS: dict[str, Preset] = {name: Preset(name, _BUDGETS.get(name), policy) for name, policy in _POLICIES.items()}
