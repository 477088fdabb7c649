"""agentcontext compiles the working set an LLM agent sends on every call.

The core is written in Rust; this package is its public face. Start with :class:`Conversation`.
"""

from __future__ import annotations

from agentcontext._core import (
    MAX_IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    TOOL_BLOCK_OVERHEAD,
    Conversation,
    __version__,
    convert,
    count_tokens,
    count_tokens_batch,
    detect_format,
    estimate_tokens,
)
from agentcontext.errors import (
    AgentContextError,
    ConversionError,
    InvalidMessageError,
    MessageIndexError,
    OptionError,
    TranscriptError,
    TranscriptReadError,
)

__all__ = [
    "MAX_IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "TOOL_BLOCK_OVERHEAD",
    "AgentContextError",
    "Conversation",
    "ConversionError",
    "InvalidMessageError",
    "MessageIndexError",
    "OptionError",
    "TranscriptError",
    "TranscriptReadError",
    "__version__",
    "convert",
    "count_tokens",
    "count_tokens_batch",
    "detect_format",
    "estimate_tokens",
]
