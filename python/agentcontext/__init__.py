"""agentcontext compiles the working set an LLM agent sends on every call.

The core is written in Rust; this package is its public face. Start with :class:`Conversation`.

Names are imported on first use, so ``import agentcontext`` (and loading its pytest plugin) is
cheap until something is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Public name -> (module, attribute), imported on first access.
_EXPORTS: dict[str, tuple[str, str]] = {
    "AgentContextError": ("agentcontext.errors", "AgentContextError"),
    "ArgumentTypeError": ("agentcontext.errors", "ArgumentTypeError"),
    "AnthropicProvider": ("agentcontext.providers", "AnthropicProvider"),
    "BudgetError": ("agentcontext.errors", "BudgetError"),
    "BudgetPreset": ("agentcontext.budgets", "BudgetPreset"),
    "Calibration": ("agentcontext.calibration", "Calibration"),
    "CompactionError": ("agentcontext.compaction", "CompactionError"),
    "CompactionPolicy": ("agentcontext.compaction", "CompactionPolicy"),
    "CompactionResult": ("agentcontext.compaction", "CompactionResult"),
    "Compactor": ("agentcontext.compaction", "Compactor"),
    "ContextOverflowError": ("agentcontext.errors", "ContextOverflowError"),
    "Conversation": ("agentcontext._core", "Conversation"),
    "ConversionError": ("agentcontext.errors", "ConversionError"),
    "FileReadError": ("agentcontext.errors", "FileReadError"),
    "FileReader": ("agentcontext.budgets", "FileReader"),
    "InvalidMessageError": ("agentcontext.errors", "InvalidMessageError"),
    "LLMSummarizer": ("agentcontext.summarize", "LLMSummarizer"),
    "MAX_IMAGE_TOKENS": ("agentcontext._core", "MAX_IMAGE_TOKENS"),
    "MESSAGE_OVERHEAD": ("agentcontext._core", "MESSAGE_OVERHEAD"),
    "MemoryIndex": ("agentcontext._core", "MemoryIndex"),
    "MemoryRecordError": ("agentcontext.errors", "MemoryRecordError"),
    "MemoryStore": ("agentcontext.memory.store", "MemoryStore"),
    "MessageIndexError": ("agentcontext.errors", "MessageIndexError"),
    "MissingCredentialsError": ("agentcontext.errors", "MissingCredentialsError"),
    "MissingExtraError": ("agentcontext.errors", "MissingExtraError"),
    "OfflineSummarizer": ("agentcontext.summarize", "OfflineSummarizer"),
    "OpenAIChatProvider": ("agentcontext.providers", "OpenAIChatProvider"),
    "OpenAIResponsesProvider": ("agentcontext.providers", "OpenAIResponsesProvider"),
    "OpenFiles": ("agentcontext.budgets", "OpenFiles"),
    "OptionError": ("agentcontext.errors", "OptionError"),
    "PRESETS": ("agentcontext.budgets", "PRESETS"),
    "Page": ("agentcontext._core", "Page"),
    "Provider": ("agentcontext.providers", "Provider"),
    "Recall": ("agentcontext.budgets", "Recall"),
    "RecallError": ("agentcontext.errors", "RecallError"),
    "ResultStore": ("agentcontext.budgets", "ResultStore"),
    "STRATEGIES": ("agentcontext.compaction", "PRESETS"),
    "Session": ("agentcontext.loop", "Session"),
    "SessionLog": ("agentcontext.session_log", "SessionLog"),
    "SessionSelectionError": ("agentcontext.errors", "SessionSelectionError"),
    "StageEvent": ("agentcontext.compaction", "StageEvent"),
    "Summarizer": ("agentcontext.summarize", "Summarizer"),
    "SummaryError": ("agentcontext.errors", "SummaryError"),
    "SummaryRequest": ("agentcontext.summarize", "SummaryRequest"),
    "TOOL_BLOCK_OVERHEAD": ("agentcontext._core", "TOOL_BLOCK_OVERHEAD"),
    "ToolResultPolicy": ("agentcontext.budgets", "ToolResultPolicy"),
    "TranscriptError": ("agentcontext.errors", "TranscriptError"),
    "TranscriptReadError": ("agentcontext.errors", "TranscriptReadError"),
    "Truncation": ("agentcontext._core", "Truncation"),
    "UnknownFormatError": ("agentcontext.errors", "UnknownFormatError"),
    "__version__": ("agentcontext._core", "__version__"),
    "conversation_search": ("agentcontext.memory.conversation", "conversation_search"),
    "convert": ("agentcontext._core", "convert"),
    "count_tokens": ("agentcontext._core", "count_tokens"),
    "count_tokens_batch": ("agentcontext._core", "count_tokens_batch"),
    "detect_format": ("agentcontext._core", "detect_format"),
    "estimate_tokens": ("agentcontext._core", "estimate_tokens"),
    "fit_project_files": ("agentcontext.budgets", "fit_project_files"),
    "important_tail": ("agentcontext._core", "important_tail"),
    "json_path": ("agentcontext._core", "json_path"),
    "json_preview": ("agentcontext._core", "json_preview"),
    "page_text": ("agentcontext._core", "page_text"),
    "read_page": ("agentcontext._core", "read_page"),
    "repair": ("agentcontext._core", "repair"),
    "token_cache_clear": ("agentcontext._core", "token_cache_clear"),
    "token_cache_info": ("agentcontext._core", "token_cache_info"),
    "trim_messages": ("agentcontext._core", "trim_messages"),
    "truncate": ("agentcontext._core", "truncate"),
    "validate": ("agentcontext._core", "validate"),
}

#: Submodules reachable as attributes before they are imported (``agentcontext.metrics``).
_SUBMODULES = frozenset(
    {
        "budgets", "calibration", "cli", "compaction", "display", "errors", "evaluation", "importers", "integrations", "loop",
        "memory", "metrics", "providers", "pytest_plugin", "server_side", "session_log", "summarize", "testing", "types",
    }
)  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module, attr = _EXPORTS[name]
        value = getattr(importlib.import_module(module), attr)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"agentcontext.{name}")
    else:
        raise AttributeError(f"module 'agentcontext' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS, *_SUBMODULES})


if TYPE_CHECKING:
    from agentcontext._core import (
        MAX_IMAGE_TOKENS,
        MESSAGE_OVERHEAD,
        TOOL_BLOCK_OVERHEAD,
        Conversation,
        MemoryIndex,
        Page,
        Truncation,
        __version__,
        convert,
        count_tokens,
        count_tokens_batch,
        detect_format,
        estimate_tokens,
        important_tail,
        json_path,
        json_preview,
        page_text,
        read_page,
        repair,
        token_cache_clear,
        token_cache_info,
        trim_messages,
        truncate,
        validate,
    )
    from agentcontext.budgets import (
        PRESETS,
        BudgetPreset,
        FileReader,
        OpenFiles,
        Recall,
        ResultStore,
        ToolResultPolicy,
        fit_project_files,
    )
    from agentcontext.calibration import Calibration
    from agentcontext.compaction import PRESETS as STRATEGIES
    from agentcontext.compaction import CompactionError, CompactionPolicy, CompactionResult, Compactor, StageEvent
    from agentcontext.errors import (
        AgentContextError,
        ArgumentTypeError,
        BudgetError,
        ContextOverflowError,
        ConversionError,
        FileReadError,
        InvalidMessageError,
        MemoryRecordError,
        MessageIndexError,
        MissingCredentialsError,
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
    from agentcontext.memory.conversation import conversation_search
    from agentcontext.memory.store import MemoryStore
    from agentcontext.providers import AnthropicProvider, OpenAIChatProvider, OpenAIResponsesProvider, Provider
    from agentcontext.session_log import SessionLog
    from agentcontext.summarize import LLMSummarizer, OfflineSummarizer, Summarizer, SummaryRequest

__all__ = [
    "MAX_IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "PRESETS",
    "STRATEGIES",
    "TOOL_BLOCK_OVERHEAD",
    "AgentContextError",
    "AnthropicProvider",
    "ArgumentTypeError",
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
    "MemoryIndex",
    "MemoryRecordError",
    "MemoryStore",
    "MessageIndexError",
    "MissingCredentialsError",
    "MissingExtraError",
    "OfflineSummarizer",
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "OpenFiles",
    "OptionError",
    "Page",
    "Provider",
    "Recall",
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
    "conversation_search",
    "convert",
    "count_tokens",
    "count_tokens_batch",
    "detect_format",
    "estimate_tokens",
    "fit_project_files",
    "important_tail",
    "json_path",
    "json_preview",
    "page_text",
    "read_page",
    "repair",
    "token_cache_clear",
    "token_cache_info",
    "trim_messages",
    "truncate",
    "validate",
]
