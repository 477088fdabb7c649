"""The compaction engine: one ladder from the cheapest step to the most lossy, driven by one
policy, with an event per stage (see :mod:`agentcontext.compaction.ladder`)."""

from agentcontext.compaction.ladder import (
    DEFAULT_CONTEXT_WINDOW,
    DROP_MARKER_TOKENS,
    MIN_SUMMARY_TOKENS,
    PRESETS,
    SUMMARY_HEADER_TOKENS,
    CompactionError,
    CompactionPolicy,
    CompactionResult,
    Compactor,
    StageEvent,
    drop_marker,
    parse_budget,
    resolve_policy,
    summary_cap,
)

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "DROP_MARKER_TOKENS",
    "MIN_SUMMARY_TOKENS",
    "PRESETS",
    "SUMMARY_HEADER_TOKENS",
    "CompactionError",
    "CompactionPolicy",
    "CompactionResult",
    "Compactor",
    "StageEvent",
    "drop_marker",
    "parse_budget",
    "resolve_policy",
    "summary_cap",
]
