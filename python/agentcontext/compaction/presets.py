"""One preset per harness: the budget numbers and the compaction policy of a well-known agent
harness, in one object, for comparison on the same transcripts.

``PRESETS["claude-code"].result_policy()`` is its tool-result budget, ``.file_reader()`` its read
tool, ``.compactor()`` its compaction ladder (``.budgets`` and ``.compaction`` hold the numbers).
:data:`agentcontext.budgets.PRESETS` and :data:`agentcontext.compaction.PRESETS` are the two
halves by name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentcontext.budgets.presets import PRESETS as BUDGET_PRESETS
from agentcontext.budgets.presets import BudgetPreset
from agentcontext.budgets.reads import FileReader
from agentcontext.budgets.results import ToolResultPolicy
from agentcontext.budgets.store import ResultStore
from agentcontext.compaction.ladder import PRESETS as COMPACTION_PRESETS
from agentcontext.compaction.ladder import CompactionPolicy

if TYPE_CHECKING:
    from agentcontext.compaction.ladder import Compactor

__all__ = ["PRESETS", "Preset"]


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
        from agentcontext.compaction.ladder import Compactor

        return Compactor(self.compaction, **options)


#: Every harness by name, in the order of the compaction presets.
PRESETS: dict[str, Preset] = {
    name: Preset(name, BUDGET_PRESETS.get(name), policy) for name, policy in COMPACTION_PRESETS.items()
}
