"""Type names used across the public API (option literals and the shapes of returned dicts)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeAlias, TypedDict

__all__ = [
    "AnthropicRequest", "CalibrationDict", "CalibrationModel", "Change", "ClearDecision", "ClearReport",
    "ClearedResult", "CompactionResultDict", "CompactionState", "CompiledRequestDict", "CostDict", "DedupedRead",
    "DroppedRounds", "Encoding", "EvaluationDict", "FlushReportDict", "Format", "FormatOrAuto", "GoalState",
    "Handoff", "HandoffArtifact", "HandoffCommand", "HandoffError", "JsonDict", "LoggedData", "LoggedRef", "MemoryHit", "MemoryRecord",
    "MemoryRecordWithBody", "Message", "PendingCallDict", "PermissionRequestDict", "PermissionState",
    "ReconcileRecord", "Reconciliation", "RecordType", "RefreshStats", "RequestTokens", "RuleDict", "SearchHit",
    "SearchResult", "SectionTokens", "SessionState", "SnapshotDict", "SnapshotInfoDict", "StageEventDict", "Stats",
    "StrategySummary", "Suffix", "Target", "TokenCacheInfo", "ToolTotals", "TruncateStrategy", "TruncatedResult",
    "Unit", "Violation"
]  # fmt: skip

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

    kind: Literal["moved_result", "synthesized_result", "orphan_to_user", "duplicate_to_user", "renamed_id",
                  "reordered_thinking", "dropped_empty", "dropped_call"]  # fmt: skip
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


# -- what the ``to_dict``/``to_json`` methods of results and reports return ------------------------


class CostDict(TypedDict):
    """``Cost.to_dict``: the tokens and dollars of one price table, and their sum (``dollars``)."""

    prices: str
    read_tokens: int
    written_tokens: int
    output_tokens: int
    read_dollars: float
    written_dollars: float
    output_dollars: float
    dollars: float


class StageEventDict(TypedDict):
    stage: Literal["native", "budgets", "clear", "flush", "summarize", "fill", "drop", "carry", "cut", "skip"]
    tokens_before: int
    tokens_after: int
    detail: JsonDict
    """Each stage's own numbers (a JSON object whose keys depend on the stage and the harness)."""


class CompactionResultDict(TypedDict):
    """``CompactionResult.to_dict``: the sizes, the fate counts of the original messages and the stages."""

    tokens_before: int
    tokens_after: int
    budget: int
    target: int | None
    fill: float | None
    fits: bool
    reason: str | None
    messages_before: int
    messages_after: int
    kept: int
    changed: int
    summarized: int
    dropped: int
    first_kept: int | None
    summary: str | None
    stages: list[StageEventDict]


class _ClearDecisionNumbers(TypedDict):
    prices: str
    remaining_turns: float
    saved_tokens: int
    rewritten_tokens: int
    keep_dollars: float | None
    clear_dollars: float | None


class ClearDecision(_ClearDecisionNumbers, total=False):
    """The detail of ``clear_rung``'s decision: the numbers, and ``pays`` (it clears), or
    ``does_not_pay`` with ``cleared_anyway`` (over the limit), or ``why`` (it does not clear)."""

    pays: str
    does_not_pay: str
    cleared_anyway: str
    why: str


class DroppedRounds(TypedDict):
    """What ``drop_oldest_rounds`` dropped from a summary request."""

    dropped_rounds: int
    dropped_messages: int
    dropped_tokens: int


class SectionTokens(TypedDict):
    name: str
    tokens: int


class RequestTokens(TypedDict):
    """``CompiledRequest.tokens``: tokens per source of one request."""

    sections: dict[str, int]
    system: int
    tools: int
    history: dict[str, int]
    """Tokens of the history by role."""
    history_total: int
    pending_results: int
    reminders: int
    reserved_output: int
    input_total: int


class CompiledRequestDict(TypedDict):
    mode: Literal["default", "plan"]
    hiding: Literal["filter", "deny"]
    system: str
    sections: list[SectionTokens]
    tools: list[JsonDict]
    """Tool definitions as sent (JSON by nature: each provider's own shape)."""
    visible: list[str]
    hidden: dict[str, str]
    reminders: list[str]
    tokens: RequestTokens


class CalibrationModel(TypedDict):
    """One model's fit in ``Calibration.to_dict``."""

    observations: int
    factors: list[float]
    xtx: list[list[float]]
    xty: list[float]


class CalibrationDict(TypedDict):
    """``Calibration.to_dict`` (what ``Calibration.from_dict`` reads)."""

    version: int
    encoding: Encoding
    prior: float
    decay: float
    classes: list[str]
    models: dict[str, CalibrationModel]


class _EvaluationFields(TypedDict):
    transcript: str
    strategy: str
    budget: int
    messages: int
    tokens_before: int
    tokens_after: int
    fits: bool
    valid: bool
    violations: int
    retention: float
    retention_by_kind: dict[str, float | None]
    probes: int
    lost: list[str]
    summary_tokens: int
    summarized_tokens: int
    cache_stability: float
    cache_write_tokens: int
    compactions_per_100_turns: float
    turns: int
    seconds: float
    error: str | None
    compactions: int
    request_tokens: int
    cached_tokens: int
    stages: list[str]
    kept_probes: int
    probe_counts: dict[str, tuple[int, int]]
    latest_ask: bool | None
    latest_whole: bool | None
    latest_ask_tokens: int
    artifact_trail: float | None
    constraints: float | None
    reduction: float
    summary_ratio: float | None
    fill: float | None
    over: bool


class EvaluationDict(_EvaluationFields, total=False):
    """``Evaluation.to_dict``: every field and measure; ``cost`` by price table name when asked for;
    ``timed`` and ``scheduled`` (by price table name, ``(read, written)`` tokens) when measured."""

    cost: dict[str, CostDict | None]
    timed: dict[str, tuple[int, int]]
    scheduled: dict[str, tuple[int, int]]


class _StrategyFields(TypedDict):
    """The fields every row of ``summarize_evaluations`` has."""

    strategy: str
    transcripts: int
    errors: int
    valid: float
    fits: float
    reduction: float
    retention: float
    retention_mean: float
    retention_by_kind: dict[str, float | None]
    latest_ask: float | None
    latest_whole: float | None
    latest_whole_runs: int
    artifact_trail: float | None
    constraints: float | None
    fill: float | None
    min_fill: float | None
    filled: float | None
    over: int
    cache_stability: float | None
    compactions_per_100_turns: float | None
    cost: dict[str, CostDict | None]
    seconds: float


class StrategySummary(_StrategyFields, total=False):
    """One row of ``summarize_evaluations``: one strategy over every transcript; ``timed_cost`` and
    ``scheduled_cost``, the cost under a model of time (a call after the TTL reads nothing) without
    and with the cache schedule, only when the rows were measured with it (``eval --schedule``)."""

    timed_cost: dict[str, CostDict | None]
    scheduled_cost: dict[str, CostDict | None]


class FlushReportDict(TypedDict):
    stage: Literal["memory_flush"]
    calls: int
    input_tokens: int
    output_tokens: int
    tool_calls: int
    written: list[str]
    deleted: list[str]
    truncated: bool


class LoggedRef(TypedDict):
    """A working-set entry of a log's compaction record: message ``ref`` of the log."""

    ref: int


class LoggedData(TypedDict):
    """A working-set entry of a log's compaction record: a message written out (one a compaction made)."""

    data: list[JsonDict]


class Reconciliation(TypedDict):
    reason: str
    set_aside: list[int | None]
    """Log indices of the messages set aside (None: one a compaction had changed)."""
    set_aside_messages: int
    added_messages: int


class ReconcileRecord(TypedDict):
    """The compaction record ``SessionLog.reconcile`` writes."""

    type: Literal["compaction"]
    seq: int
    upto: int
    working_set: list[LoggedRef | LoggedData]
    summary: None
    stages: list[JsonDict]
    reconciled: Reconciliation


class RuleDict(TypedDict):
    tool: str
    decision: Literal["allow", "deny", "ask"]
    arguments: str | None


class PendingCallDict(TypedDict):
    id: str
    name: str
    arguments: str


class PermissionRequestDict(TypedDict):
    calls: list[PendingCallDict]
    answers: dict[str, bool]


class PermissionState(TypedDict):
    """``Permissions.state``: the grants and the fingerprint of the settings they were given under."""

    granted: list[str]
    settings: str


class SnapshotDict(TypedDict):
    """``Snapshot.to_json``: a snapshot file's JSON object."""

    version: int
    created: str
    reason: Literal["reply", "permission", "turn_limit", "error", "clear", "manual"]
    turn: int
    fingerprint: str
    format: Format
    encoding: Encoding
    tokens: int
    messages: list[JsonDict]
    control: JsonDict
    """The session's control state (``SessionState`` when this version wrote it)."""


class SnapshotInfoDict(TypedDict):
    path: str
    slot: int
    created: str
    reason: str
    turn: int
    messages: int
    tokens: int
    format: str
    fingerprint: str
    control: JsonDict


class GoalState(TypedDict):
    condition: str
    status: str
    continuations: int


class CompactionState(TypedDict):
    turns_since: int
    count: int
    last: list[str] | None
    """The stages of the last compaction."""


class SessionState(TypedDict):
    """``sessions.state.capture``: a session's control state, as a snapshot keeps it."""

    mode: Literal["default", "plan"] | None
    hiding: Literal["filter", "deny"] | None
    goal: GoalState | None
    permissions: PermissionState | None
    pending_permission: PermissionRequestDict | None
    compaction: CompactionState
    calibration: CalibrationDict | None
    turn: int
    depth: int
    unanswered_tools: list[str]
