"""Type names used across the public API (option literals and the shapes of returned dicts)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeAlias, TypedDict

__all__ = [
    "AnthropicRequest",
    "Encoding",
    "Format",
    "FormatOrAuto",
    "JsonDict",
    "Message",
    "Stats",
    "Target",
    "ToolTotals",
    "TruncateStrategy",
    "Unit",
]

Encoding: TypeAlias = Literal["o200k_base", "cl100k_base", "heuristic"]
"""What to count with: OpenAI's exact encodings, or the class-aware heuristic."""
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
