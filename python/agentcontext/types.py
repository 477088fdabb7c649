"""Type names used across the public API (option literals and the shapes of returned dicts)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeAlias, TypedDict

__all__ = [
    "AnthropicRequest",
    "Change",
    "ClearReport",
    "ClearedResult",
    "Encoding",
    "Format",
    "FormatOrAuto",
    "JsonDict",
    "Message",
    "Stats",
    "Suffix",
    "Target",
    "ToolTotals",
    "TruncateStrategy",
    "Unit",
    "Violation",
]

Encoding: TypeAlias = Literal["o200k_base", "cl100k_base", "heuristic", "approximate"]
"""What to count with: OpenAI's exact encodings, the class-aware heuristic, or ``approximate``
(one token per four characters, computable from lengths alone)."""
Target: TypeAlias = Literal["o200k_base", "cl100k_base"]
"""The tokenizer an estimate aims at."""
Format: TypeAlias = Literal["openai", "responses", "anthropic", "jsonl"]
"""``openai``: Chat Completions messages; ``responses``: Responses input items; ``anthropic``:
Messages API messages (system separate); ``jsonl``: the library's own format, one message per line."""
FormatOrAuto: TypeAlias = Literal["openai", "responses", "anthropic", "jsonl", "auto"]
Unit: TypeAlias = Literal["chars", "bytes", "lines", "tokens"]
"""What a truncation budget is measured in."""
TruncateStrategy: TypeAlias = Literal["auto", "head", "tail", "head_tail"]
"""Which part of an over-budget text to keep."""
Message: TypeAlias = Mapping[str, Any]
JsonDict: TypeAlias = dict[str, Any]


class ToolTotals(TypedDict):
    calls: int
    results: int
    tokens: int


class Stats(TypedDict):
    encoding: Encoding
    tokens: int
    tool_calls: int
    messages: int
    by_role: dict[str, int]
    messages_by_role: dict[str, int]
    by_tool: dict[str, ToolTotals]


class AnthropicRequest(TypedDict, total=False):
    system: str | list[JsonDict]
    messages: list[JsonDict]


class Violation(TypedDict):
    """A protocol violation found by ``validate``."""

    kind: Literal[
        "orphan_result",
        "missing_result",
        "misplaced_result",
        "duplicate_result",
        "duplicate_id",
        "thinking_order",
        "empty_message",
    ]
    index: int
    id: str | None
    detail: str


class Change(TypedDict):
    """One change made by ``repair``."""

    kind: Literal[
        "moved_result",
        "synthesized_result",
        "orphan_to_user",
        "duplicate_to_user",
        "renamed_id",
        "reordered_thinking",
        "dropped_empty",
    ]
    index: int
    id: str | None


class ClearedResult(TypedDict):
    index: int
    tool_use_id: str
    tool_name: str
    tokens_before: int
    tokens_after: int


class ClearReport(TypedDict):
    """What ``clear_tool_results`` did."""

    cleared: list[ClearedResult]
    inputs_cleared: list[int]
    thinking_dropped: list[int]
    tokens_freed: int
    skipped_below_minimum: bool
    tokens_before: int
    tokens_after: int


class Suffix(TypedDict):
    """The recent suffix chosen by ``recent_suffix``."""

    start: int
    tokens: int
    available: int
    boundary: Literal["group", "round", "none"]
    fits: bool
    overflow: tuple[int, int] | None
    preamble: int


class TokenCacheInfo(TypedDict):
    """What ``token_cache_info`` reports of the token-count memo."""

    entries: int
    capacity: int
    bytes: int
    hits: int
    misses: int
