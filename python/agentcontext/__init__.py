"""agentcontext compiles the working set an LLM agent sends on every call.

The core is written in Rust; this package is its public face. Start with :class:`Conversation`.
"""

from __future__ import annotations

from agentcontext._core import (
    MAX_IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    TOOL_BLOCK_OVERHEAD,
    Conversation,
    Page,
    Truncation,
    __version__,
    convert,
    count_tokens,
    count_tokens_batch,
    detect_format,
    estimate_tokens,
    important_tail,
    json_preview,
    page_text,
    read_page,
    repair,
    trim_messages,
    truncate,
    validate,
)
from agentcontext.budgets import (
    PRESETS,
    BudgetPreset,
    FileReader,
    OpenFiles,
    ResultStore,
    ToolResultPolicy,
    fit_project_files,
)
from agentcontext.compaction import PRESETS as STRATEGIES
from agentcontext.compaction import CompactionError, CompactionPolicy, CompactionResult, Compactor, StageEvent
from agentcontext.errors import (
    AgentContextError,
    BudgetError,
    ConversionError,
    FileReadError,
    InvalidMessageError,
    MessageIndexError,
    OptionError,
    RecallError,
    TranscriptError,
    TranscriptReadError,
)
from agentcontext.session_log import SessionLog
from agentcontext.summarize import OfflineSummarizer, Summarizer, SummaryRequest

__all__ = [
    "MAX_IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "PRESETS",
    "STRATEGIES",
    "TOOL_BLOCK_OVERHEAD",
    "AgentContextError",
    "BudgetError",
    "BudgetPreset",
    "CompactionError",
    "CompactionPolicy",
    "CompactionResult",
    "Compactor",
    "Conversation",
    "ConversionError",
    "FileReadError",
    "FileReader",
    "InvalidMessageError",
    "MessageIndexError",
    "OfflineSummarizer",
    "OpenFiles",
    "OptionError",
    "Page",
    "RecallError",
    "ResultStore",
    "SessionLog",
    "StageEvent",
    "Summarizer",
    "SummaryRequest",
    "ToolResultPolicy",
    "TranscriptError",
    "TranscriptReadError",
    "Truncation",
    "__version__",
    "convert",
    "count_tokens",
    "count_tokens_batch",
    "detect_format",
    "estimate_tokens",
    "fit_project_files",
    "important_tail",
    "json_preview",
    "page_text",
    "read_page",
    "repair",
    "trim_messages",
    "truncate",
    "validate",
]
