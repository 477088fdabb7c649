"""Budgets on what enters the context: tool results, project files and file reads.

The cutting itself (head + marker + tail, tail importance, token fitting, JSON previews, paging)
runs in the Rust core. This package holds one module per job:

- :mod:`~agentcontext.budgets.ids`: the form of recall ids and the check every lookup makes;
- :mod:`~agentcontext.budgets.store`: :class:`ResultStore`, the store of full results;
- :mod:`~agentcontext.budgets.recall`: :class:`Recall`, the ``recall`` tool that pages them back;
- :mod:`~agentcontext.budgets.tools`: the tool definitions (:func:`recall_tool`, :func:`read_file_tool`);
- :mod:`~agentcontext.budgets.results`: :class:`ToolResultPolicy`, the budget of each tool result;
- :mod:`~agentcontext.budgets.reads`: :class:`FileReader`, file reads with dedup;
- :mod:`~agentcontext.budgets.open_files`: :class:`OpenFiles`, open-file views;
- :mod:`~agentcontext.budgets.project_files`: :func:`fit_project_files`;
- :mod:`~agentcontext.budgets.windows`: models' context windows, output limits and counters
  (:data:`MODEL_WINDOWS`, :func:`model_window`, :func:`register_model`);
- :mod:`~agentcontext.budgets.presets`: :class:`BudgetPreset`, the budget half of each harness preset
  (the whole preset, budgets and compaction together, is :class:`agentcontext.compaction.presets.Preset`,
  by name in :data:`agentcontext.PRESETS`).

Everything is importable from ``agentcontext.budgets`` as before.
"""

from __future__ import annotations

from agentcontext.budgets.open_files import OpenFiles, open_file_limits
from agentcontext.budgets.presets import BudgetPreset
from agentcontext.budgets.project_files import fit_project_files
from agentcontext.budgets.reads import FileReader
from agentcontext.budgets.recall import Recall, RecallPage, result_text
from agentcontext.budgets.results import CHARS_PER_TOKEN, BudgetedResult, ToolResultPolicy
from agentcontext.budgets.store import MAX_ID_CHARS, RECALL_ID, ResultStore
from agentcontext.budgets.tools import read_file_tool, recall_tool
from agentcontext.budgets.windows import (
    MODEL_WINDOWS,
    ModelWindow,
    context_window,
    encoding_for_model,
    model_window,
    register_model,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "MAX_ID_CHARS",
    "MODEL_WINDOWS",
    "RECALL_ID",
    "BudgetPreset",
    "BudgetedResult",
    "FileReader",
    "ModelWindow",
    "OpenFiles",
    "Recall",
    "RecallPage",
    "ResultStore",
    "ToolResultPolicy",
    "context_window",
    "encoding_for_model",
    "fit_project_files",
    "model_window",
    "open_file_limits",
    "read_file_tool",
    "recall_tool",
    "register_model",
    "result_text",
]
