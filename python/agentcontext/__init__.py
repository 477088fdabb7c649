"""agentcontext compiles the working set an LLM agent sends on every call.

The core is written in Rust; this package is its public face. Start with :class:`Conversation`.

Names are imported on first use, so ``import agentcontext`` (and loading its pytest plugin) is
cheap until something is used.
"""

from __future__ import annotations

import importlib
import os
import sys
import types as _types
from typing import TYPE_CHECKING, Any

#: An option of mimalloc, the core's allocator, which reads its options from the environment once,
#: when the core is loaded. On Linux it commits its 1 GiB arena eagerly by default, and memory it
#: committed eagerly is never given back: each thread that counted (the core counts on all cores)
#: kept its freed scratch pages resident, ~10 MiB for a 1M-token ``Conversation`` on 2 cores.
#: Committed on demand, freed memory goes back to the system. Set only until the core is loaded
#: (see ``_Package``), and never over a value the user set.
_MIMALLOC_OPTION = "MIMALLOC_ARENA_EAGER_COMMIT"
_mimalloc_option_set = _MIMALLOC_OPTION not in os.environ
if _mimalloc_option_set:
    os.environ[_MIMALLOC_OPTION] = "0"

#: The public names, by the module that defines them. This is the one list: ``_EXPORTS`` and
#: ``__all__`` are derived from it, and the ``TYPE_CHECKING`` imports below (which type checkers
#: need spelled out) are checked against it by ``tests/test_public_api.py``.
_PUBLIC: dict[str, tuple[str, ...]] = {
    "agentcontext._core": (
        "Conversation", "MAX_IMAGE_TOKENS", "MESSAGE_OVERHEAD", "MemoryIndex", "Page", "TOOL_BLOCK_OVERHEAD",
        "Truncation", "__version__", "convert", "count_tokens", "count_tokens_batch", "detect_format",
        "estimate_tokens", "important_tail", "json_path", "json_preview", "page_text", "read_page", "repair",
        "token_cache_clear", "token_cache_info", "trim_messages", "truncate", "validate"
    ),
    "agentcontext.budgets": (
        "BudgetPreset", "FileReader", "OpenFiles", "Recall", "ResultStore", "ToolResultPolicy", "fit_project_files"
    ),
    "agentcontext.measure.calibration": ("Calibration",),
    "agentcontext.compaction": ("CompactionPolicy", "CompactionResult", "Compactor", "StageEvent"),
    "agentcontext.integrations": ("Budget",),
    "agentcontext.errors": (
        "AgentContextError", "ArgumentTypeError", "BudgetError", "CompactionError", "ContextOverflowError",
        "ConversionError", "FileReadError", "InvalidMessageError", "MemoryRecordError", "MessageIndexError",
        "MissingCredentialsError", "MissingExtraError", "OptionError", "ProviderResponseError", "RecallError",
        "SessionSelectionError", "SummaryError", "TranscriptError", "TranscriptReadError", "UnknownFormatError",
        "UnknownModelError",
    ),
    "agentcontext.sessions.loop": ("Session",),
    "agentcontext.memory.conversation": ("conversation_search",),
    "agentcontext.memory.store": ("MemoryStore",),
    "agentcontext.compaction.presets": ("PRESETS", "Preset"),
    "agentcontext.providers": ("AnthropicProvider", "OpenAIChatProvider", "OpenAIResponsesProvider", "Provider"),
    "agentcontext.sessions.log": ("SessionLog",),
    "agentcontext.compaction.summarize": ("OfflineSummarizer", "Summarizer", "SummaryRequest"),
    "agentcontext.compaction.llm": ("LLMSummarizer",),
    "agentcontext.measure.context_view": ("ContextView", "context_view"),
}  # fmt: skip

#: Public name -> (module, attribute), imported on first access.
_EXPORTS: dict[str, tuple[str, str]] = {name: (module, name) for module, names in _PUBLIC.items() for name in names}

__all__ = sorted(_EXPORTS)  # noqa: PLE0605  (derived from the one list above)

#: Submodules reachable as attributes before they are imported (``agentcontext.measure``).
_SUBMODULES = frozenset(
    {
        "budgets", "cli", "compaction", "errors", "importers", "integrations", "measure", "memory", "observe",
        "providers", "sessions", "types",
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


def _conversation_repr_html(self: Conversation) -> str:
    """``Conversation._repr_html_`` (Jupyter): :func:`agentcontext.display.conversation_repr_html`."""
    from agentcontext.display import conversation_repr_html

    return conversation_repr_html(self)


class _Package(_types.ModuleType):
    """This package's module type. The compiled core renders no HTML and imports nothing of the
    package above it but the errors: its ``Conversation`` gets the Jupyter view from here, as soon
    as the core is loaded (Python sets ``agentcontext._core`` on the package when it imports it),
    by whichever import comes first — yet ``import agentcontext`` alone still loads no core."""

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "_core":
            value.Conversation._repr_html_ = _conversation_repr_html
            if _mimalloc_option_set:
                os.environ.pop(_MIMALLOC_OPTION, None)


sys.modules[__name__].__class__ = _Package


if TYPE_CHECKING:
    from agentcontext._core import MAX_IMAGE_TOKENS as MAX_IMAGE_TOKENS
    from agentcontext._core import MESSAGE_OVERHEAD as MESSAGE_OVERHEAD
    from agentcontext._core import TOOL_BLOCK_OVERHEAD as TOOL_BLOCK_OVERHEAD
    from agentcontext._core import Conversation as Conversation
    from agentcontext._core import MemoryIndex as MemoryIndex
    from agentcontext._core import Page as Page
    from agentcontext._core import Truncation as Truncation
    from agentcontext._core import __version__ as __version__
    from agentcontext._core import convert as convert
    from agentcontext._core import count_tokens as count_tokens
    from agentcontext._core import count_tokens_batch as count_tokens_batch
    from agentcontext._core import detect_format as detect_format
    from agentcontext._core import estimate_tokens as estimate_tokens
    from agentcontext._core import important_tail as important_tail
    from agentcontext._core import json_path as json_path
    from agentcontext._core import json_preview as json_preview
    from agentcontext._core import page_text as page_text
    from agentcontext._core import read_page as read_page
    from agentcontext._core import repair as repair
    from agentcontext._core import token_cache_clear as token_cache_clear
    from agentcontext._core import token_cache_info as token_cache_info
    from agentcontext._core import trim_messages as trim_messages
    from agentcontext._core import truncate as truncate
    from agentcontext._core import validate as validate
    from agentcontext.budgets import BudgetPreset as BudgetPreset
    from agentcontext.budgets import FileReader as FileReader
    from agentcontext.budgets import OpenFiles as OpenFiles
    from agentcontext.budgets import Recall as Recall
    from agentcontext.budgets import ResultStore as ResultStore
    from agentcontext.budgets import ToolResultPolicy as ToolResultPolicy
    from agentcontext.budgets import fit_project_files as fit_project_files
    from agentcontext.compaction import CompactionPolicy as CompactionPolicy
    from agentcontext.compaction import CompactionResult as CompactionResult
    from agentcontext.compaction import Compactor as Compactor
    from agentcontext.compaction import StageEvent as StageEvent
    from agentcontext.compaction.llm import LLMSummarizer as LLMSummarizer
    from agentcontext.compaction.presets import PRESETS as PRESETS
    from agentcontext.compaction.presets import Preset as Preset
    from agentcontext.compaction.summarize import OfflineSummarizer as OfflineSummarizer
    from agentcontext.compaction.summarize import Summarizer as Summarizer
    from agentcontext.compaction.summarize import SummaryRequest as SummaryRequest
    from agentcontext.errors import AgentContextError as AgentContextError
    from agentcontext.errors import ArgumentTypeError as ArgumentTypeError
    from agentcontext.errors import BudgetError as BudgetError
    from agentcontext.errors import CompactionError as CompactionError
    from agentcontext.errors import ContextOverflowError as ContextOverflowError
    from agentcontext.errors import ConversionError as ConversionError
    from agentcontext.errors import FileReadError as FileReadError
    from agentcontext.errors import InvalidMessageError as InvalidMessageError
    from agentcontext.errors import MemoryRecordError as MemoryRecordError
    from agentcontext.errors import MessageIndexError as MessageIndexError
    from agentcontext.errors import MissingCredentialsError as MissingCredentialsError
    from agentcontext.errors import MissingExtraError as MissingExtraError
    from agentcontext.errors import OptionError as OptionError
    from agentcontext.errors import ProviderResponseError as ProviderResponseError
    from agentcontext.errors import RecallError as RecallError
    from agentcontext.errors import SessionSelectionError as SessionSelectionError
    from agentcontext.errors import SummaryError as SummaryError
    from agentcontext.errors import TranscriptError as TranscriptError
    from agentcontext.errors import TranscriptReadError as TranscriptReadError
    from agentcontext.errors import UnknownFormatError as UnknownFormatError
    from agentcontext.errors import UnknownModelError as UnknownModelError
    from agentcontext.integrations import Budget as Budget
    from agentcontext.measure.calibration import Calibration as Calibration
    from agentcontext.measure.context_view import ContextView as ContextView
    from agentcontext.measure.context_view import context_view as context_view
    from agentcontext.memory.conversation import conversation_search as conversation_search
    from agentcontext.memory.store import MemoryStore as MemoryStore
    from agentcontext.providers import AnthropicProvider as AnthropicProvider
    from agentcontext.providers import OpenAIChatProvider as OpenAIChatProvider
    from agentcontext.providers import OpenAIResponsesProvider as OpenAIResponsesProvider
    from agentcontext.providers import Provider as Provider
    from agentcontext.sessions.log import SessionLog as SessionLog
    from agentcontext.sessions.loop import Session as Session
