"""The budget numbers of well-known harnesses (see :mod:`agentcontext.compaction.presets` for the preset
that carries these with the compaction policy)."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from typing import Any

from agentcontext import _checks
from agentcontext.budgets.reads import FileReader
from agentcontext.budgets.results import ToolResultPolicy
from agentcontext.budgets.store import ResultStore
from agentcontext.types import TruncateStrategy as Strategy

__all__ = ["BudgetPreset"]


@dataclass(frozen=True)
class BudgetPreset:
    """The budget numbers of a well-known harness, for comparison on the same transcripts."""

    name: str
    #: Per tool-result budget in chars (``None``: the policy default, min(16,000, 30% of window)).
    result_max_chars: int | None
    strategy: Strategy
    head_share: float
    persist_over_chars: int | None
    preview_chars: int
    message_limit_chars: int | None
    read_max_lines: int
    read_max_bytes: int
    read_line_max_chars: int | None
    read_byte_gate: int | None
    read_token_gate: int | None
    read_dedup: bool
    project_file_chars: int | None
    project_total_chars: int | None
    note: str = ""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "int":
                _checks.count(f.name, value)
            elif f.type == "int | None":
                _checks.optional_count(f.name, value)
            elif f.type == "float":
                _checks.number(f.name, value, high=1.0)

    def result_policy(self, context_window: int = 200_000, store: ResultStore | None = None) -> ToolResultPolicy:
        return ToolResultPolicy(
            context_window=context_window,
            max_chars=self.result_max_chars,
            persist_over_chars=self.persist_over_chars,
            preview_chars=self.preview_chars,
            message_limit_chars=self.message_limit_chars,
            strategy=self.strategy,
            head_share=self.head_share,
            store=store,
        )

    def file_reader(self, *, root: str | os.PathLike[str] | None = None) -> FileReader:
        """The read tool under these limits (``root``: read only inside it, see :class:`FileReader`)."""
        return FileReader(
            max_lines=self.read_max_lines,
            max_bytes=self.read_max_bytes,
            line_max_chars=self.read_line_max_chars or 1_000_000,
            byte_gate=self.read_byte_gate,
            token_gate=self.read_token_gate,
            dedup=self.read_dedup,
            root=root,
        )

    def with_(self, **changes: Any) -> BudgetPreset:
        return replace(self, **changes)


#: Internal: each harness's budget numbers by name (the public table is
#: :data:`agentcontext.compaction.PRESETS`, whose presets carry these as ``.budgets``).
_BUDGETS: dict[str, BudgetPreset] = {
    preset.name: preset
    for preset in [
        BudgetPreset(
            name="openharness",
            result_max_chars=None,
            strategy="head_tail",
            head_share=0.5,
            persist_over_chars=50_000,
            preview_chars=2_000,
            message_limit_chars=200_000,
            read_max_lines=2_000,
            read_max_bytes=51_200,
            read_line_max_chars=2_000,
            read_byte_gate=262_144,
            read_token_gate=25_000,
            read_dedup=True,
            project_file_chars=12_000,
            project_total_chars=60_000,
            note="the seed design: head + marker + tail on every result",
        ),
        BudgetPreset(
            name="pi",
            result_max_chars=51_200,
            strategy="tail",
            head_share=0.0,
            persist_over_chars=None,
            preview_chars=2_000,
            message_limit_chars=None,
            read_max_lines=2_000,
            read_max_bytes=51_200,
            read_line_max_chars=None,
            read_byte_gate=None,
            read_token_gate=None,
            read_dedup=False,
            project_file_chars=None,
            project_total_chars=None,
            note="reads keep the head (2,000 lines / 50 KB); bash output keeps the tail",
        ),
        BudgetPreset(
            name="openclaw",
            result_max_chars=None,
            strategy="auto",
            head_share=0.5,
            persist_over_chars=None,
            preview_chars=2_000,
            message_limit_chars=None,
            read_max_lines=2_000,
            read_max_bytes=51_200,
            read_line_max_chars=None,
            read_byte_gate=None,
            read_token_gate=None,
            read_dedup=False,
            project_file_chars=12_000,
            project_total_chars=60_000,
            note="min(16,000 chars, 30% of window); head+tail when the tail is important",
        ),
        BudgetPreset(
            name="claude-code",
            result_max_chars=30_000,
            strategy="head",
            head_share=1.0,
            persist_over_chars=50_000,
            preview_chars=2_000,
            message_limit_chars=200_000,
            read_max_lines=2_000,
            read_max_bytes=1_073_741_824,
            read_line_max_chars=2_000,
            read_byte_gate=262_144,
            read_token_gate=25_000,
            read_dedup=True,
            project_file_chars=None,
            project_total_chars=None,
            note="persist >50,000 chars with a 2 KB preview; 200,000 per message; read dedup",
        ),
        BudgetPreset(
            name="codex",
            result_max_chars=40_000,
            strategy="head_tail",
            head_share=0.5,
            persist_over_chars=None,
            preview_chars=2_000,
            message_limit_chars=None,
            read_max_lines=2_000,
            read_max_bytes=51_200,
            read_line_max_chars=None,
            read_byte_gate=None,
            read_token_gate=None,
            read_dedup=False,
            project_file_chars=None,
            project_total_chars=None,
            note="head and tail halves of about 10,000 tokens (~40,000 chars)",
        ),
        BudgetPreset(
            name="letta",
            result_max_chars=5_000,
            strategy="head",
            head_share=1.0,
            persist_over_chars=None,
            preview_chars=2_000,
            message_limit_chars=None,
            read_max_lines=2_000,
            read_max_bytes=51_200,
            read_line_max_chars=None,
            read_byte_gate=None,
            read_token_gate=None,
            read_dedup=False,
            project_file_chars=None,
            project_total_chars=None,
            note="tool returns cut to 5,000 chars; open files scale with the window",
        ),
        BudgetPreset(
            name="alyx",
            result_max_chars=40_000,
            strategy="head",
            head_share=1.0,
            persist_over_chars=None,
            preview_chars=2_000,
            message_limit_chars=None,
            read_max_lines=2_000,
            read_max_bytes=51_200,
            read_line_max_chars=None,
            read_byte_gate=None,
            read_token_gate=10_000,
            read_dedup=True,
            project_file_chars=None,
            project_total_chars=None,
            note="tool results within 10,000 tokens (~40,000 chars; the compaction ladder fits the largest head by "
            "binary search over tokens); a repeated read keeps the latest",
        ),
    ]
}
