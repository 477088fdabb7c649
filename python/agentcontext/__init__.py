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
from agentcontext.calibration import Calibration
from agentcontext.compaction import PRESETS as STRATEGIES
from agentcontext.compaction import CompactionError, CompactionPolicy, CompactionResult, Compactor, StageEvent
from agentcontext.display import conversation_repr_html
from agentcontext.errors import (
    AgentContextError,
    BudgetError,
    ContextOverflowError,
    ConversionError,
    FileReadError,
    InvalidMessageError,
    MessageIndexError,
    MissingExtraError,
    OptionError,
    RecallError,
    SessionSelectionError,
    SummaryError,
    TranscriptError,
    TranscriptReadError,
    UnknownFormatError,
)
from agentcontext.loop import Session
from agentcontext.providers import AnthropicProvider, OpenAIChatProvider, OpenAIResponsesProvider, Provider
from agentcontext.session_log import SessionLog
from agentcontext.summarize import LLMSummarizer, OfflineSummarizer, Summarizer, SummaryRequest


def _repr_html_(self: Conversation) -> str:
    return conversation_repr_html(self)


# Jupyter shows a conversation as a table of messages with token bars (agentcontext.display).
Conversation._repr_html_ = _repr_html_  # type: ignore[method-assign]

__all__ = [
    "MAX_IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "PRESETS",
    "STRATEGIES",
    "TOOL_BLOCK_OVERHEAD",
    "AgentContextError",
    "AnthropicProvider",
    "BudgetError",
    "BudgetPreset",
    "Calibration",
    "CompactionError",
    "CompactionPolicy",
    "CompactionResult",
    "Compactor",
    "ContextOverflowError",
    "Conversation",
    "ConversionError",
    "FileReadError",
    "FileReader",
    "InvalidMessageError",
    "LLMSummarizer",
    "MessageIndexError",
    "MissingExtraError",
    "OfflineSummarizer",
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "OpenFiles",
    "OptionError",
    "Page",
    "Provider",
    "RecallError",
    "ResultStore",
    "Session",
    "SessionLog",
    "SessionSelectionError",
    "StageEvent",
    "Summarizer",
    "SummaryError",
    "SummaryRequest",
    "ToolResultPolicy",
    "TranscriptError",
    "TranscriptReadError",
    "Truncation",
    "UnknownFormatError",
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
