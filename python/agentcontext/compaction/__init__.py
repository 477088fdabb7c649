"""The compaction engine: one ladder from the cheapest step to the most lossy, driven by one
policy, with an event per stage.

(a) tool-result budgets → (b) clear old tool results → (c) summarize older history (staged when
the summarizer's own window is too small) → (e) drop the oldest whole groups as a last resort.
Each stage stops the ladder once the conversation is under the target. Recent messages are kept
raw, taken from the original conversation; the originals of everything that leaves stay in the
session log.

The modules: :mod:`~agentcontext.compaction.policy` (the policy and the budget parser),
:mod:`~agentcontext.compaction.harness` (the hooks through which a harness changes a rung),
:mod:`~agentcontext.compaction.state` (the public state of a run),
:mod:`~agentcontext.compaction.ladder` (the rungs, with ``summaries``, ``resort``, ``flush``,
``writing`` and ``fill``), :mod:`~agentcontext.compaction.compactor` (the :class:`Compactor`),
:mod:`~agentcontext.compaction.results`, :mod:`~agentcontext.compaction.pricing` (prices, and
whether clearing pays), :mod:`~agentcontext.compaction.summarize` (the summarizers),
:mod:`~agentcontext.compaction.native` (the provider's own compaction as the first rung),
:mod:`~agentcontext.compaction.harnesses` (one module per harness) and
:mod:`~agentcontext.compaction.presets`, which wires the harnesses into the named policies.
"""

from agentcontext.compaction.compactor import Compactor
from agentcontext.compaction.harness import Harness
from agentcontext.compaction.native import NativeCompaction
from agentcontext.compaction.policy import (
    DEFAULT_CONTEXT_WINDOW,
    DROP_MARKER_TOKENS,
    MIN_SUMMARY_TOKENS,
    SUMMARY_HEADER_TOKENS,
    CompactionPolicy,
    parse_budget,
    resolve_policy,
    summary_cap,
)

# The presets wire the harnesses in (the generic modules import none) and fill the policies by name.
from agentcontext.compaction.presets import PRESETS, Preset
from agentcontext.compaction.results import CompactionResult, StageEvent, drop_marker
from agentcontext.errors import CompactionError

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
    "Harness",
    "NativeCompaction",
    "Preset",
    "StageEvent",
    "drop_marker",
    "parse_budget",
    "resolve_policy",
    "summary_cap",
]
