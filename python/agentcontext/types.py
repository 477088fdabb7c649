"""Type names used across the public API (option literals and the shapes of returned dicts)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeAlias, TypedDict

__all__ = [
    "AnthropicRequest",
    "Change",
    "ClearReport",
    "ClearedResult",
    "DedupedRead",
    "Encoding",
    "Format",
    "FormatOrAuto",
    "Handoff",
    "HandoffArtifact",
    "HandoffCommand",
    "HandoffError",
    "JsonDict",
    "MemoryHit",
    "MemoryRecord",
    "MemoryRecordWithBody",
    "Message",
    "RecordType",
    "RefreshStats",
    "SearchHit",
    "SearchResult",
    "Stats",
    "Suffix",
    "Target",
    "TokenCacheInfo",
    "ToolTotals",
    "TruncateStrategy",
    "TruncatedResult",
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


class DedupedRead(TypedDict):
    """A result ``dedup_reads`` made a stub pointing to a later call with the same input."""

    index: int
    tool_use_id: str
    tool_name: str


class TruncatedResult(TypedDict):
    """A tool result ``truncate_tool_results`` cut to head + marker + tail."""

    index: int
    tool_use_id: str
    tool_name: str
    chars_before: int
    chars_after: int


class HandoffCommand(TypedDict):
    """The last outcome of one distinct command in a :class:`Handoff`."""

    command: str
    outcome: str
    ok: bool
    index: int


class HandoffError(TypedDict):
    """An error seen in the history of a :class:`Handoff`."""

    text: str
    index: int
    resolved: bool


class HandoffArtifact(TypedDict):
    """One file of the artifact trail of a :class:`Handoff`."""

    path: str
    ops: list[str]
    """What was done to it, each once in the order first done: ``read``, ``created``, ``edited``,
    ``deleted``, ``renamed``."""
    last: str
    """The last call that touched it, in one line."""
    index: int
    """The message of that call."""


class Handoff(TypedDict):
    """What ``Conversation.handoff`` extracts for the offline summarizer (indices relative to ``start``)."""

    user_requests: list[tuple[int, str]]
    """Real user requests as ``(index, text)``, latest first."""
    previous_summaries: list[str]
    files_read: list[str]
    files_modified: list[str]
    commands: list[HandoffCommand]
    errors: list[HandoffError]
    identifiers: list[str]
    paths: list[str]
    tests: list[tuple[str, str]]
    """``(test name, status)``: ``passed``, ``failed``, ``error``, ``skipped``, ``ran`` or ``named``."""
    references: list[str]
    todos: list[str]
    decisions: list[str]
    last_assistant: str | None
    messages: int
    tool_calls: int
    artifacts: list[HandoffArtifact]
    """Each file a call read, created, edited, deleted or renamed, most recently touched last."""
    constraints: list[tuple[int, str]]
    """Sentences of real user messages that state a rule, verbatim, as ``(index, text)``, latest first."""
    plan: list[tuple[str, str]]
    """The latest TODO list or plan a tool call set, as ``(item, status)``."""
    previous_ledger: str | None
    """The text of the latest task ledger an earlier compaction wrote into this history."""


RecordType: TypeAlias = Literal["user", "feedback", "project", "reference"]
"""The kind of a memory record."""


class MemoryRecord(TypedDict):
    """A memory record as ``MemoryStore.list`` and ``MemoryIndex.records`` give it (no body)."""

    name: str
    type: RecordType
    description: str
    updated: str | None
    file: str
    bytes: int


class MemoryRecordWithBody(MemoryRecord):
    """A memory record with its ``body`` (``MemoryStore.get``, ``MemoryIndex.get``)."""

    body: str


class MemoryHit(MemoryRecord):
    """A memory record found by ``MemoryStore.search`` / ``MemoryIndex.search``."""

    score: float
    matches: int
    snippets: list[str]


class RefreshStats(TypedDict):
    """What ``MemoryIndex.refresh`` did: record files seen, read, reused and removed."""

    files: int
    read: int
    reused: int
    removed: int


class SearchHit(TypedDict):
    """A message found by ``search_log``, ``search_messages`` or ``conversation_search``."""

    message: int
    line: int | None
    role: str
    recall_id: str | None
    score: float
    matches: int
    snippets: list[str]


class SearchResult(TypedDict):
    """The result of ``search_log``, ``search_messages`` and ``conversation_search``."""

    messages: int
    matched: int
    skipped: int
    hits: list[SearchHit]
