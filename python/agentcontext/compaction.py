"""The compaction engine: one ladder from the cheapest step to the most lossy, driven by one
policy, with an event per stage.

(a) tool-result budgets → (b) clear old tool results → (c) summarize older history (staged when
the summarizer's own window is too small) → (e) drop the oldest whole groups as a last resort.
Some presets change a rung the way their harness does (:mod:`agentcontext.harnesses`).
Each stage stops the ladder once the conversation is under the target. Recent messages are kept
raw, taken from the original conversation; the originals of everything that leaves stay in the
session log.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Literal

from agentcontext import _checks, _fill
from agentcontext._core import Conversation, count_tokens, truncate
from agentcontext.budgets import FileReader, ResultStore, result_text
from agentcontext.errors import (
    AgentContextError,
    ArgumentTypeError,
    BudgetError,
    CompactionError,
    FileReadError,
    OptionError,
)
from agentcontext.harnesses import letta, openclaw
from agentcontext.measure.pricing import DEFAULT_REMAINING_TURNS, Prices, clear_rung, resolve_prices
from agentcontext.summarize import (
    HANDOFF_PROMPT,
    OfflineSummarizer,
    Summarizer,
    SummaryRequest,
    join_summaries,
    shrink_summary,
    strip_scratchpad,
    summary_message,
)
from agentcontext.types import Encoding

if TYPE_CHECKING:
    from agentcontext.memory.anchors import WorkspaceAnchors
    from agentcontext.memory.tools import MemoryTools
    from agentcontext.presets import Preset

__all__ = [
    "PRESETS",
    "CompactionError",
    "CompactionPolicy",
    "CompactionResult",
    "Compactor",
    "StageEvent",
    "parse_budget",
    "resolve_policy",
]

ENV_PREFIX = "AGENTCONTEXT_COMPACT__"


def parse_budget(budget: str | int, total: int) -> int:
    """A token budget given as tokens (``8000``, ``"8,000"``) or as a share of ``total`` tokens
    (``"25%"``): the one parser of the CLI's ``--budget`` and of :meth:`Compactor.compact`.

    Raises:
        OptionError: not a positive number of tokens or a percentage in (0, 100].
    """
    if isinstance(budget, int) and not isinstance(budget, bool) and budget > _checks.MAX_COUNT:
        raise OptionError(f"budget is too large: {budget} (the largest accepted is {_checks.MAX_COUNT})")
    try:
        if isinstance(budget, str):
            text = budget.strip()
            if text.endswith("%"):
                share = float(text[:-1])
                if not 0 < share <= 100:
                    raise ValueError(text)
                return max(1, int(total * share / 100))
            budget = int(text.replace(",", "").replace("_", ""))
        if isinstance(budget, bool) or budget <= 0:
            raise ValueError(budget)
        return int(budget)
    except (ValueError, TypeError):
        raise OptionError(f"budget must be a positive number of tokens or a percentage, got {budget!r}") from None


def _conversation(conv: Any) -> Conversation:
    """``conv`` when it is a :class:`Conversation`, else an OptionError naming it."""
    if not isinstance(conv, Conversation):
        raise ArgumentTypeError(f"conv must be a Conversation, got {type(conv).__name__}")
    return conv


def _snapshot(conv: Any) -> Conversation:
    """A consistent copy of ``conv`` (one atomic slice): the ladder reads a conversation many times,
    and another thread may be extending the caller's meanwhile."""
    return _conversation(conv).slice(0)


def _system(system: Any) -> str | None:
    """``system`` (the agent's system prompt) when it is a string or None, else an error."""
    if system is not None and not isinstance(system, str):
        raise ArgumentTypeError(f"system must be a string or None, got {type(system).__name__}")
    return _checks.text("system", system) if system else None


def resolve_policy(strategy: str | CompactionPolicy | Preset) -> CompactionPolicy:
    """A policy, the policy of a :class:`~agentcontext.presets.Preset`, or the preset of that name.

    Raises:
        OptionError: no preset has that name.
    """
    if isinstance(strategy, CompactionPolicy):
        return strategy
    from agentcontext.presets import Preset

    if isinstance(strategy, Preset):
        return strategy.compaction
    if strategy not in PRESETS:
        raise OptionError(f"unknown strategy {strategy!r} (expected one of: {', '.join(PRESETS)})")
    return PRESETS[strategy]


#: The policy fields that are an optional share of something (None: off).
_SHARES = ("max_history_share", "sliding_window", "memory_warning")

#: A policy's context window when none is set (a :class:`~agentcontext.Session` replaces it with
#: its provider's).
DEFAULT_CONTEXT_WINDOW = 200_000

#: Room kept for the user marker that replaces dropped messages when the kept part would
#: otherwise open with the assistant.
DROP_MARKER_TOKENS = 48

#: Room kept for the header of the message that carries a summary (what it replaces, the recall id).
SUMMARY_HEADER_TOKENS = 48

#: The least a summary is cut to (tokens) when the last round does not fit beside it whole.
MIN_SUMMARY_TOKENS = 32


@dataclass(frozen=True)
class CompactionPolicy:
    """Everything the ladder needs to know. Sizes are tokens unless named ``_chars``; ``trigger``
    and ``target`` are tokens, or fractions of the context window when below 1.

    Every field can be overridden by an environment variable ``AGENTCONTEXT_COMPACT__<FIELD>``
    (for example ``AGENTCONTEXT_COMPACT__PRESERVE_RECENT_MESSAGES=20``) through :meth:`from_env`,
    which :class:`Compactor` applies by default.
    """

    name: str = "openharness"
    context_window: int = DEFAULT_CONTEXT_WINDOW
    reserved_output: int = 8_192
    safety_margin: int = 2_000
    #: Compact when the conversation is over this (auto mode).
    trigger: float = 0.85
    #: Aim below this, so one compaction buys many turns (hysteresis).
    target: float = 0.6
    preserve_recent_messages: int = 12
    preserve_recent_tools: int = 3
    #: Keep at least this many recent tokens raw as well (0: messages count only).
    keep_recent_tokens: int = 0
    manual_keep_messages: int = 2
    #: Stage (a): cut every tool result to this many chars (None: min(16,000, 30% of window)).
    result_budget_chars: int | None = None
    per_tool_budget_chars: Mapping[str, int] = field(default_factory=dict)
    tool_result_budgets: bool = True
    #: Stage (b).
    clear_tool_results: bool = True
    clear_at_least: int = 0
    #: Results of these tools are never cleared.
    exclude_tools: tuple[str, ...] = ()
    #: Also shorten the inputs of cleared calls.
    clear_tool_inputs: bool = False
    #: Keep the thinking blocks of unprotected assistant turns (False: drop them when clearing).
    keep_thinking: bool = True
    #: Stage (c).
    summarize: bool = True
    summary_max_tokens: int = 6_000
    #: The summarizer's own context window, for staging (c) when older history is larger.
    summarizer_window: int = 200_000
    #: Re-attach up to this many recently read files after a summary, within this many tokens.
    reattach_files: int = 5
    reattach_tokens: int = 20_000
    #: Stage (e).
    drop_oldest_groups: bool = True
    #: Anti-loop: auto compaction waits this many turns after the previous one.
    cooldown_turns: int = 0
    encoding: Encoding = "o200k_base"
    note: str = ""
    #: Stage (b)'s cache economics, off without prices: with a :class:`~agentcontext.pricing.Prices`
    #: or a model name (``"claude-sonnet-4-5"``, see :data:`~agentcontext.pricing.PRICES`), old
    #: results are cleared only when that pays (:func:`~agentcontext.pricing.clear_rung`): the
    #: tokens freed, read ``remaining_turns`` more times, cost more than writing the changed suffix
    #: to the cache again; otherwise the ladder stops while the conversation fits.
    prices: Prices | str | None = None
    remaining_turns: float = DEFAULT_REMAINING_TURNS
    #: OpenClaw's ``maxHistoryShare``: auto compaction triggers when the history (the
    #: conversation after its system messages) is over this share of the whole window; older
    #: history over it is split into chunks of equal token mass and the oldest are summarized
    #: first (:mod:`agentcontext.harnesses.openclaw`). None: ``trigger`` applies.
    max_history_share: float | None = None
    #: OpenClaw: before clearing, old tool results over this many chars are cut to head + tail.
    soft_trim_chars: int | None = None
    #: OpenClaw's cache TTL: results are not trimmed or cleared while the prompt cache holding
    #: them is warm, less than this many seconds since the last call (``idle_seconds``). 0: no TTL.
    cache_ttl_seconds: int = 0
    #: Letta's sliding window: summarize the oldest this share of the messages, +10% per step,
    #: until the rest is under the target (:mod:`agentcontext.harnesses.letta`).
    sliding_window: float | None = None
    #: Letta: the share of the window at which a memory-pressure reminder fires
    #: (:func:`agentcontext.harnesses.letta.memory_warning`).
    memory_warning: float | None = None
    # -- harness behaviours (agentcontext.harnesses), off by default ---------------------------
    #: Compact at ``available - trigger_margin`` at the latest (Claude Code: 13,000 tokens under
    #: the window less its output reservation).
    trigger_margin: int = 0
    #: When the summary request does not fit the summarizer's window, or its provider rejects it
    #: as too long: ``"stage"`` (parts of equal token share, then a merge), ``"drop_rounds"``
    #: (Claude Code: drop the oldest API-round groups, 20% or enough to close the gap, and retry)
    #: or ``"truncate"`` (Letta: tool results cut to 5,000 chars, then 30% head + 30% tail).
    summarizer_overflow: Literal["stage", "drop_rounds", "truncate"] = "stage"
    #: Pi: when the raw recent part starts inside a turn, the turn's prefix is summarized apart
    #: (the turn context) and joined to the summary of the history before it.
    split_turns: bool = False
    #: Codex: a summary rebuilds history as the user messages (newest first, up to this many
    #: tokens) followed by the summary of everything (0: off, the raw recent part is kept instead).
    keep_user_tokens: int = 0
    #: Alyx: stage (a) cuts each tool result over this many tokens to the largest head that fits
    #: (None: the char budgets apply).
    result_budget_tokens: int | None = None
    #: Alyx: over this many tokens, the memory flush turn runs as a forced checkpoint (the agent
    #: writes its state before history is trimmed), even when the compactor's flush is off (0: never).
    checkpoint_tokens: int = 0
    #: Alyx: results of these tools called again with the same input become stubs pointing to the
    #: latest call, which keeps the only preview.
    dedup_tools: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("trigger", "target"):
                _checks.number(f.name, value, low_open=True)
            elif f.name in _SHARES:
                if value is not None:
                    _checks.number(f.name, value, high=1.0, low_open=True)
            elif f.name == "summarizer_overflow":
                if value not in ("stage", "drop_rounds", "truncate"):
                    raise OptionError(
                        f"summarizer_overflow must be 'stage', 'drop_rounds' or 'truncate', got {value!r}"
                    )
            elif f.name == "dedup_tools":
                if not isinstance(value, tuple) or not all(isinstance(x, str) for x in value):
                    raise ArgumentTypeError(f"dedup_tools must be a tuple of tool names, got {value!r}")
            elif f.name in ("result_budget_chars", "soft_trim_chars", "result_budget_tokens"):
                _checks.optional_count(f.name, value, minimum=int(f.name == "result_budget_tokens"))
            elif f.name == "per_tool_budget_chars":
                object.__setattr__(self, f.name, _checks.count_map(f.name, value))
            elif f.name == "prices":
                object.__setattr__(self, f.name, None if value is None else resolve_prices(value))
            elif f.name == "remaining_turns":
                _checks.number(f.name, value)
            elif f.type in ("int", int):
                _checks.count(f.name, value)

    def _tokens(self, value: float) -> int:
        return int(value * self.context_window) if value <= 1 else int(value)

    @property
    def available(self) -> int:
        """The most the conversation may take: the window less reserved output and margin."""
        return max(0, self.context_window - self.reserved_output - self.safety_margin)

    @property
    def trigger_tokens(self) -> int:
        return min(self._tokens(self.trigger), max(0, self.available - self.trigger_margin))

    @property
    def target_tokens(self) -> int:
        return min(self._tokens(self.target), self.trigger_tokens)

    @property
    def result_budget(self) -> int:
        if self.result_budget_chars is not None:
            return self.result_budget_chars
        return min(16_000, int(0.3 * self.context_window * 4))

    def for_budget(self, budget: int) -> CompactionPolicy:
        """This policy with a hard token budget: the conversation must end up within ``budget``."""
        _checks.count("budget", budget, minimum=1)
        return replace(self, context_window=budget, reserved_output=0, safety_margin=0, trigger=budget, target=budget,
                       trigger_margin=0, result_budget_chars=self.result_budget_chars or min(16_000, max(1_000, budget)))  # fmt: skip

    def with_overhead(self, tokens: int) -> CompactionPolicy:
        """This policy for the conversation alone when ``tokens`` more travel with every request
        outside it (the system prompt, the tool definitions, output reserved beyond
        ``reserved_output``): they come off the window first, fractional ``trigger`` and ``target``
        apply to what remains, and absolute ones lose ``tokens``."""
        if _checks.count("tokens", tokens) == 0:
            return self

        def less(value: float) -> float:
            if value <= 1:
                return value
            rest = value - tokens
            # An absolute size of 1 token or less would read as a fraction: 0.0 is 0 tokens.
            return rest if rest > 1 else 0.0

        return replace(
            self,
            context_window=max(0, self.context_window - tokens),
            trigger=less(self.trigger),
            target=less(self.target),
        )

    def scaled(self, factor: float) -> CompactionPolicy:
        """This policy in local tokens when one local token is ``factor`` provider tokens (from a
        :class:`~agentcontext.calibration.Calibration`): every absolute size is divided by it."""
        _checks.number("factor", factor, low_open=True)
        if factor == 1.0:
            return self

        def s(v: int) -> int:
            return int(v / factor)

        return replace(
            self,
            context_window=s(self.context_window),
            reserved_output=s(self.reserved_output),
            safety_margin=s(self.safety_margin),
            trigger=self.trigger if self.trigger <= 1 else self.trigger / factor,
            target=self.target if self.target <= 1 else self.target / factor,
            keep_recent_tokens=s(self.keep_recent_tokens),
            clear_at_least=s(self.clear_at_least),
            trigger_margin=s(self.trigger_margin),
            keep_user_tokens=s(self.keep_user_tokens),
            checkpoint_tokens=s(self.checkpoint_tokens),
            result_budget_tokens=None if self.result_budget_tokens is None else max(1, s(self.result_budget_tokens)),
        )

    def from_env(self, environ: Mapping[str, str] | None = None) -> CompactionPolicy:
        """This policy with every ``AGENTCONTEXT_COMPACT__<FIELD>`` variable applied."""
        environ = os.environ if environ is None else environ
        changes: dict[str, Any] = {}
        for f in fields(self):
            raw = environ.get(ENV_PREFIX + f.name.upper())
            if raw is None:
                continue
            current = getattr(self, f.name)
            try:
                if isinstance(current, bool):
                    if raw.lower() not in ("1", "0", "true", "false", "yes", "no"):
                        raise ValueError(raw)
                    changes[f.name] = raw.lower() in ("1", "true", "yes")
                elif f.name in _SHARES:
                    changes[f.name] = None if raw.lower() in ("", "none") else float(raw)
                elif isinstance(current, int) and f.name not in ("trigger", "target"):
                    changes[f.name] = int(raw)
                elif f.name in ("trigger", "target", "remaining_turns"):
                    changes[f.name] = float(raw)
                elif f.name == "prices":
                    changes[f.name] = None if raw.lower() in ("", "none") else resolve_prices(raw)
                elif f.name in ("result_budget_chars", "soft_trim_chars", "result_budget_tokens"):
                    changes[f.name] = None if raw.lower() in ("", "none") else int(raw)
                elif isinstance(current, str):
                    changes[f.name] = raw
                elif isinstance(current, tuple):
                    # Name lists, comma-separated.
                    changes[f.name] = tuple(x.strip() for x in raw.split(",") if x.strip())
                else:
                    # Mappings (per-tool budgets) as JSON objects of integers.
                    value = json.loads(raw)
                    if not isinstance(value, dict) or not all(isinstance(v, int) for v in value.values()):
                        raise ValueError(raw)
                    changes[f.name] = value
            except (ValueError, json.JSONDecodeError) as exc:
                what = f": {exc}" if f.name == "prices" else f" is not a valid {type(current).__name__}"
                raise OptionError(f"{ENV_PREFIX}{f.name.upper()}={raw!r}{what}") from None
        return replace(self, **changes) if changes else self


#: Read-only tools whose repeated calls with the same input return the same preview (Alyx's
#: idempotent calls; the names the shared transcripts use for reads, searches and listings).
IDEMPOTENT_TOOLS: tuple[str, ...] = (
    "Read", "read", "read_file", "view", "cat", "Grep", "grep", "Glob", "glob", "find", "LS", "ls", "list_dir",
    "list_files", "search", "search_files", "search_dir", "search_file", "find_file", "open", "WebFetch", "fetch",
)  # fmt: skip


PRESETS: dict[str, CompactionPolicy] = {
    p.name: p
    for p in [
        CompactionPolicy(
            "openharness",
            trigger=0.85, target=0.6, preserve_recent_messages=12, preserve_recent_tools=3, manual_keep_messages=2,
            note="the seed design: clear old tool results first, then summarize all but the last 12 messages",
        ),
        CompactionPolicy(
            "pi",
            reserved_output=16_384, safety_margin=0, trigger=1.0, target=1.0, preserve_recent_messages=0,
            keep_recent_tokens=20_000, clear_tool_results=False, tool_result_budgets=False, split_turns=True,
            note="trigger at window - 16,384; keep the last ~20,000 tokens raw, splitting a turn larger than that "
            "(its prefix summarized as the turn context); summary as a user message",
        ),
        CompactionPolicy(
            "openclaw",
            trigger=0.5, target=0.4, preserve_recent_messages=12, preserve_recent_tools=3, summarizer_window=32_000,
            max_history_share=0.5, soft_trim_chars=4_000, cache_ttl_seconds=300,
            note="history over 50% of the window; the oldest equal-token chunks summarized first, then the rest "
            "(staged, merged); old results soft-trimmed then cleared, never while the cache is warm (5 min)",
        ),
        CompactionPolicy(
            "claude-code",
            reserved_output=20_000, safety_margin=0, trigger=1.0, target=1.0, trigger_margin=13_000,
            preserve_recent_messages=0, preserve_recent_tools=0, clear_tool_results=False, reattach_files=5,
            reattach_tokens=50_000, summarizer_overflow="drop_rounds",
            note="trigger at window - 20,000 output - 13,000 (167,000 on 200K); summary of all but the last round; "
            "re-attach up to 5 read files; a summary request too long drops the oldest API rounds and retries",
        ),
        CompactionPolicy(
            "codex",
            trigger=0.9, target=0.9, preserve_recent_messages=0, keep_user_tokens=20_000,
            clear_tool_results=False, result_budget_chars=40_000,
            note="auto-compact near 90%; history rebuilt as the user messages (newest ~20,000 tokens) + the summary",
        ),
        CompactionPolicy(
            "letta",
            trigger=0.9, target=0.7, preserve_recent_messages=0, keep_recent_tokens=0, result_budget_chars=5_000,
            clear_tool_results=False, sliding_window=0.3, memory_warning=0.75, summarizer_overflow="truncate",
            note="trigger at 90%, warning at 75%; tool returns cut to 5,000 chars; sliding window from 30% of "
            "messages, +10% a step, to under 70%; an overflowing summary request: tool returns cut to 5,000 "
            "chars, then 30% head + 30% tail",
        ),
        CompactionPolicy(
            "goose",
            trigger=0.8, target=0.5, preserve_recent_messages=2, clear_tool_results=False,
            note="auto-compact at 80%; keep the latest exchange raw",
        ),
        CompactionPolicy(
            "alyx",
            trigger=50_000, target=30_000, preserve_recent_messages=12, preserve_recent_tools=3, clear_tool_results=False,
            result_budget_tokens=10_000, checkpoint_tokens=50_000, dedup_tools=IDEMPOTENT_TOOLS,
            note="tool results cut to the largest head within 10,000 tokens (binary search); repeated idempotent "
            "calls keep only the latest preview; a forced checkpoint turn at 50,000 tokens before history is trimmed",
        ),
    ]
}  # fmt: skip


@dataclass(frozen=True)
class StageEvent:
    """One stage of the ladder: what it did and the tokens before and after."""

    #: ``flush``: the memory flush before a summary; ``fill``: results restored or raw messages
    #: added to fill the target; ``cut``: the oversized last round cut to fit; ``skip``: the
    #: ladder stopped without a change (under the target, or clearing does not pay at the
    #: policy's ``prices``: its detail holds the decision's numbers).
    stage: Literal["budgets", "clear", "flush", "summarize", "fill", "drop", "cut", "skip"]
    tokens_before: int
    tokens_after: int
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class CompactionResult:
    """The compiled working set and how it came about."""

    conversation: Conversation
    original: Conversation
    stages: list[StageEvent]
    tokens_before: int
    tokens_after: int
    budget: int
    fits: bool
    #: For each message of ``conversation``: its position in ``original``, or None when new or changed.
    provenance: list[int | None]
    summary: str | None = None
    #: With a summary: the first message of ``original`` after what the summary covers (the drop
    #: stage may then drop recent messages from there on; ``fates`` says which). Without: the first
    #: message kept after a drop.
    first_kept: int | None = None
    reason: str | None = None
    #: For each message of ``conversation``: the position in ``original`` of the message it is or
    #: was made from (kept, cut or cleared), or None when new (a summary, a marker, a re-attached
    #: file). Default: the positions themselves when nothing was removed, else ``provenance``.
    origins: list[int | None] | None = None
    #: The size the ladder aimed at (the budget when one was given, else the policy's target).
    target: int | None = None
    #: With a summary whose summarizer never saw some of the messages it replaces (dropped from
    #: its request as too long: its oldest rounds under ``summarizer_overflow="drop_rounds"``, the
    #: middle of its transcript under ``"truncate"``): ``(lo, hi)``, messages ``lo:hi`` of
    #: ``original``, counted by a drop marker and not by the summary's header. None: it saw them all.
    unseen: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if self.origins is None:
            same = self.summary is None and len(self.conversation) == len(self.original)
            object.__setattr__(self, "origins", list(range(len(self.original))) if same else list(self.provenance))

    @property
    def fill(self) -> float | None:
        """Output tokens / the target: how much of the room the working set uses."""
        return self.tokens_after / self.target if self.target else None

    @property
    def compacted(self) -> bool:
        return any(s.stage != "skip" for s in self.stages)

    def summary_in_output(self) -> bool:
        """Whether ``conversation`` holds a summary message (a new message that opens with the
        summary marker)."""
        from agentcontext.summarize import SUMMARY_MARKER

        origins = self.origins or []
        return any(
            origins[i] is None and str(self.conversation[i].get("content") or "").startswith(SUMMARY_MARKER)
            for i in range(len(self.conversation))
        )

    def fates(self) -> list[str]:
        """The fate of each original message, read from what ``conversation`` holds: ``kept``
        (unchanged), ``changed`` (cut or cleared), ``summarized`` (older than ``first_kept`` and
        covered by a summary message that is in the output) or ``dropped``."""
        kept = {q for q in self.provenance if q is not None}
        changed = {q for q in (self.origins or []) if q is not None} - kept
        summarized = self.summary_in_output() and self.first_kept is not None
        lo, hi = self.unseen or (0, 0)
        out = []
        for i in range(len(self.original)):
            if i in kept:
                out.append("kept")
            elif i in changed:
                out.append("changed")
            elif summarized and self.original.preamble <= i < (self.first_kept or 0) and not lo <= i < hi:
                out.append("summarized")
            else:
                out.append("dropped")
        return out

    def _repr_html_(self) -> str:
        from agentcontext.measure.display import result_repr_html

        return result_repr_html(self)

    def to_dict(self) -> dict[str, Any]:
        fates = self.fates()
        return {
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "budget": self.budget,
            "target": self.target,
            "fill": round(self.fill, 4) if self.fill is not None else None,
            "fits": self.fits,
            "reason": self.reason,
            "messages_before": len(self.original),
            "messages_after": len(self.conversation),
            "kept": fates.count("kept"),
            "changed": fates.count("changed"),
            "summarized": fates.count("summarized"),
            "dropped": fates.count("dropped"),
            "first_kept": self.first_kept,
            "summary": self.summary,
            "stages": [s.to_dict() for s in self.stages],
        }


class Compactor:
    """Runs the ladder. ``summarizer`` is used for stage (c) (default: the offline summarizer);
    ``fallback`` replaces it when it fails in auto mode (default: the offline summarizer; None for
    no fallback). ``files`` re-reads recently read files after a summary (None: no re-attach).

    ``memory``: the project's memory tools; with them, and a summarizer that has a ``provider``
    (an :class:`~agentcontext.summarize.LLMSummarizer`), auto mode runs the memory flush
    (:func:`~agentcontext.memory.flush.flush_memory`: one silent turn, output bounded by
    ``flush_max_tokens``, memory tools only) before older history is summarized; ``flush=False``
    turns it off, and it is off by default without ``memory``. ``anchors``: workspace files (a
    plan, notes, a TODO list) re-read and re-attached after every summary, within their own token
    budget (:class:`~agentcontext.memory.anchors.WorkspaceAnchors`)."""

    def __init__(
        self,
        policy: CompactionPolicy | str = "openharness",
        *,
        summarizer: Summarizer | None = None,
        fallback: Summarizer | None = OfflineSummarizer(),  # noqa: B008 - stateless default
        files: FileReader | None = None,
        environ: Mapping[str, str] | None = None,
        store: ResultStore | None = None,
        memory: MemoryTools | None = None,
        flush: bool | None = None,
        flush_max_tokens: int = 1_024,
        anchors: WorkspaceAnchors | None = None,
    ) -> None:
        self.policy = resolve_policy(policy).from_env(environ)
        #: Where the originals of what a compaction cuts, clears, summarizes or drops are kept,
        #: so that every id its markers name can be recalled (:class:`agentcontext.Recall`).
        #: Without one, the markers say that the originals are not stored.
        self.store = store
        self.summarizer: Summarizer = summarizer or OfflineSummarizer()
        self.fallback = fallback
        self.files = files
        if flush is not None and not isinstance(flush, bool):
            raise ArgumentTypeError(f"flush must be True, False or None, got {type(flush).__name__}")
        self.memory = memory
        self.flush = memory is not None if flush is None else flush
        self.flush_max_tokens = _checks.count("flush_max_tokens", flush_max_tokens, minimum=1)
        self.anchors = anchors
        self.last: CompactionResult | None = None
        self._turns_since = 0

    # -- auto ------------------------------------------------------------------------------

    def maybe_compact(
        self,
        conv: Conversation,
        *,
        scale: float = 1.0,
        overhead: int = 0,
        idle_seconds: float | None = None,
        system: str | None = None,
    ) -> CompactionResult | None:
        """Compact if the conversation is over the trigger, unless an anti-loop guard says no:
        the cooldown has not passed, or the previous compaction did not shrink the context and
        nothing has grown since. Call it before every model call. ``scale``: provider tokens per
        local token (see :meth:`CompactionPolicy.scaled`). ``overhead``: local tokens every
        request carries outside the conversation — system prompt, tool definitions (see
        :meth:`CompactionPolicy.with_overhead`). With ``max_history_share`` (OpenClaw) the trigger
        is the history's share of the whole window instead. ``idle_seconds``: seconds since the
        previous model call (None: unknown), for the policy's ``cache_ttl_seconds``. ``system``: the
        agent's system prompt, sent with the memory flush turn (see :meth:`compact`)."""
        _conversation(conv)
        _checks.number("scale", scale, low_open=True)
        _checks.count("overhead", overhead)
        if idle_seconds is not None:
            _checks.number("idle_seconds", idle_seconds)
        _system(system)
        self._turns_since += 1
        p = self.policy.scaled(scale).with_overhead(overhead)
        if self.policy.max_history_share is None and conv.tokens <= p.trigger_tokens:
            return None  # one read of the total: no copy needed to say no
        snap = conv.slice(0)
        over = openclaw.history_over_share(snap, self.policy.scaled(scale))
        if over is False or (over is None and snap.tokens <= p.trigger_tokens):
            return None
        last = self.last
        if last is not None:
            if self._turns_since <= p.cooldown_turns and snap.tokens <= p.available:
                return None
            if last.tokens_after >= last.tokens_before and snap.tokens <= last.tokens_after:
                return None
        result = self._compact(conv, snap, scale=scale, overhead=overhead, idle_seconds=idle_seconds, system=system)
        self.last = result
        self._turns_since = 0
        return result

    # -- the ladder ------------------------------------------------------------------------

    def compact(
        self,
        conv: Conversation,
        *,
        manual: bool = False,
        budget: int | str | None = None,
        scale: float = 1.0,
        overhead: int = 0,
        idle_seconds: float | None = None,
        instructions: str | None = None,
        system: str | None = None,
    ) -> CompactionResult:
        """Run the ladder on ``conv``. Auto mode (default) stops at the first stage that brings the
        conversation under the target and keeps the cleared conversation when summarizing fails;
        ``manual`` (a user's /compact) always summarizes, keeps only the last
        ``manual_keep_messages`` raw, and raises :class:`CompactionError` on failure, leaving the
        history unchanged. Token counts are recomputed after every stage. ``overhead``: local
        tokens every request carries outside the conversation (system prompt, tool definitions);
        they come off the window, or off ``budget``, before the conversation is fitted.

        ``budget``: the size of the working set to produce (tokens or a share of ``conv``). The
        ladder then fills it: after the summary is written, the raw recent part grows backwards
        by whole groups or rounds (a call never split from its result) until the system messages,
        summary, re-attached files, pinned messages and raw recent part reach the budget;
        ``preserve_recent_messages`` is the least kept raw, not the amount; the summary is capped
        by :func:`summary_cap`. The latest real user request is always in the result — raw,
        quoted in the summary, or cut head + marker + tail when it alone is larger than the room
        for it; when the last round alone exceeds the budget its oversized messages are cut that
        way (the originals under a recall id when the compactor has a store), and the result does
        not fit only when not even the markers and a head and tail of each do. Without
        ``budget`` (a live loop, :meth:`maybe_compact`) the trigger and target keep their
        meaning: the ladder stops under the target, keeps the policy's recent messages, and
        never cuts the last round (the caller refuses to send a request that cannot fit; the
        result says why). ``idle_seconds``: seconds since the previous model call, for the
        policy's ``cache_ttl_seconds`` (None: unknown, no TTL applies).

        The ladder reads one copy of ``conv`` taken when it starts (another thread may go on
        extending ``conv``): that copy is the result's ``original``; when nothing changed, the
        result's ``conversation`` is that copy too (``result.conversation is result.original``).

        ``instructions``: extra focus for the summary (Pi's and Claude Code's ``/compact focus on
        ...``), passed to the summarizer as :attr:`SummaryRequest.instructions`.

        With ``memory`` and a summarizer that has a provider, every summary (in auto and manual
        mode, on every rung that writes one) is preceded by the memory flush turn, a ``flush``
        stage event: it shows the model the originals of what the summary replaces (as given,
        not as this run cut or cleared them) with ``system``, the agent's system prompt."""
        snap = _snapshot(conv)
        _checks.number("scale", scale, low_open=True)
        _checks.count("overhead", overhead)
        if idle_seconds is not None:
            _checks.number("idle_seconds", idle_seconds)
        if instructions is not None and not isinstance(instructions, str):
            raise ArgumentTypeError(f"instructions must be a string or None, got {type(instructions).__name__}")
        if instructions is not None:
            _checks.text("instructions", instructions)
        return self._compact(
            conv, snap, manual=manual, budget=budget, scale=scale, overhead=overhead, idle_seconds=idle_seconds,
            instructions=instructions, system=system,
        )  # fmt: skip

    def _compact(
        self,
        conv: Conversation,
        snap: Conversation,
        *,
        manual: bool = False,
        budget: int | str | None = None,
        scale: float = 1.0,
        overhead: int = 0,
        idle_seconds: float | None = None,
        instructions: str | None = None,
        system: str | None = None,
    ) -> CompactionResult:
        """The ladder over ``snap``, a consistent copy of ``conv`` taken once (another thread may be
        extending ``conv`` meanwhile): the result's ``original`` is that copy, and a result that
        changes nothing has it as its ``conversation`` too."""
        if budget is not None:
            budget = parse_budget(budget, snap.tokens)
        p = (self.policy if budget is None else self.policy.for_budget(budget)).scaled(scale).with_overhead(overhead)
        run = _Run(self, snap, p, manual=manual, one_shot=budget is not None, idle_seconds=idle_seconds)
        run.instructions = instructions.strip() or None if instructions else None
        run.system = _system(system)
        return (
            run.skip() or run.budgets() or run.clear() or run.summarize() or run.clear_deferred() or run.last_resort()
        )

    def recompile(self, conv: Conversation, budget: int | str, *, system: str | None = None) -> CompactionResult:
        """The recovery from a provider's prompt-too-long error: the largest protocol-complete
        recent suffix that fits ``budget`` (less room for the summary) is kept raw and everything
        older is summarized (falling back as in auto mode; dropped only if no summary can be
        made). Never splits a round. ``system``: as for :meth:`compact` (the memory flush).

        Raises:
            CompactionError: the last round alone does not fit, or there is nothing older to
                summarize or drop.
        """
        snap = _snapshot(conv)
        budget = parse_budget(budget, snap.tokens)
        run = _Run(self, snap, self.policy.for_budget(budget), manual=False, one_shot=False)
        run.system = _system(system)
        outcome = run.refit()
        if outcome is not None:
            return outcome
        outcome = run.drop_unsummarized()
        if outcome is None:
            raise CompactionError(run.why)
        return outcome

    def _keep_results(self, original: Conversation, changed: list[Any]) -> None:
        """Store the original of every cut or cleared result (``changed``: the report entries, by
        message index and call id) under its call id, which its marker names."""
        if self.store is None or not changed:
            return
        for c in changed:
            i, call_id = c["index"], c["tool_use_id"]
            # The ladder's stages change contents, never positions: the index is the original's.
            items = original.slice(i, i + 1).to_jsonl() if i < len(original) else []
            found = [m for m in items if m.get("role") == "tool" and m.get("tool_call_id") == call_id]
            if found:
                self.store.put(result_text(found[-1].get("content")), alias=call_id)

    def _keep_span(self, conv: Conversation, start: int, stop: int, skip: tuple[int, int] | None = None) -> str | None:
        """Store messages ``start:stop`` of ``conv`` (JSON Lines in its format, one message a line),
        but for those in the range ``skip``, and return their recall id; None without a store."""
        if self.store is None:
            return None
        lo, hi = skip or (start, start)
        parts = [conv.slice(start, max(start, lo)), conv.slice(min(max(hi, start), stop), stop)]
        lines = [json.dumps(m, ensure_ascii=False) for part in parts for items in part._export_each() for m in items]
        return self.store.put("\n".join(lines) + "\n")

    def _run_summarizer(
        self, summarizer: Summarizer, request: SummaryRequest, p: CompactionPolicy, notes: dict[str, Any] | None = None
    ) -> tuple[str | None, str | None]:
        """The accepted summary, or None and why not. Staged (parts of equal token share, then a
        merge) when the older history does not fit a window-bound summarizer's window (or, under
        ``summarizer_overflow="drop_rounds"``, its oldest API rounds dropped); accepted only if
        non-empty and smaller than what it replaces, and cut to the size cap. ``notes`` receives
        what the harness behaviours did (rounds dropped, a split turn)."""
        # A summarizer that knows its own model's window (an LLM summarizer) plans with it.
        window = getattr(summarizer, "context_window", None) or p.summarizer_window
        room = window - p.reserved_output - count_tokens(HANDOFF_PROMPT)
        window_bound = getattr(summarizer, "window_bound", True)
        notes = {} if notes is None else notes

        def write(r: SummaryRequest) -> str:
            if p.summarizer_overflow == "truncate" and window_bound and r.tokens > room:
                return letta.summarize_overflowing(summarizer, r, room, notes)
            if p.summarizer_overflow == "drop_rounds":
                from agentcontext.harnesses import claude_code

                return claude_code.summarize_dropping_rounds(
                    summarizer.summarize, r, room if window_bound else None, notes
                )
            return self._write(summarizer, r, p, room if window_bound else None)

        try:
            if p.split_turns:
                from agentcontext.harnesses import pi

                raw = pi.summarize_split_turn(write, request, notes)
            else:
                raw = write(request)
        except Exception as exc:  # noqa: BLE001 - any summarizer failure is a reported fallback, not a crash
            return None, f"{type(exc).__name__}: {exc}"
        summary = strip_scratchpad(raw or "")
        if not summary:
            return None, "the summary was empty"
        tokens = count_tokens(summary, encoding=p.encoding)
        if tokens >= request.tokens:
            return None, f"the summary ({tokens:,} tokens) is not smaller than what it replaces ({request.tokens:,})"
        floor = summary_floor(request.tokens, request.max_tokens)
        if tokens < floor:
            return None, (
                f"the summary ({tokens:,} tokens) is under the floor of {floor:,} for {request.tokens:,} tokens replaced"
            )
        ask = latest_request(request)
        if ask is not None and not _holds_request(summary, ask):
            return None, "the summary lacks the latest user request"
        if tokens > request.max_tokens:
            summary = shrink_summary(summary, request.max_tokens, encoding=p.encoding)
        return summary, None

    def _write(self, summarizer: Summarizer, request: SummaryRequest, p: CompactionPolicy, room: int | None) -> str:
        """The summarizer's raw text for ``request``: one call when it fits ``room`` (None: no
        window to respect), else staged — parts of equal token share, then a merge."""
        if room is None or request.tokens <= room:
            return summarizer.summarize(request)
        older = request.older
        parts = older.split(max(2, math.ceil(request.tokens / max(room, 1))))
        partial = [
            summarizer.summarize(
                SummaryRequest(
                    older, lo, hi, request.previous_summary if k == 0 else None, request.max_tokens,
                    encoding=p.encoding, context={"part": k + 1, "parts": len(parts)},
                    instructions=request.instructions,
                )
            )
            for k, (lo, hi) in enumerate(parts)
        ]  # fmt: skip
        merged = Conversation(
            [{"role": "user", "content": join_summaries([strip_scratchpad(x) for x in partial])}],
            encoding=p.encoding,
        )
        return summarizer.summarize(
            SummaryRequest(
                merged, 0, 1, None, request.max_tokens, encoding=p.encoding, context={"merge": True},
                instructions=request.instructions,
            )
        )  # fmt: skip

    def _reattach(self, original: Conversation, start: int, stop: int, p: CompactionPolicy) -> list[dict[str, str]]:
        """Up to ``reattach_files`` files read in the older history, re-read now, within
        ``reattach_tokens``."""
        if self.files is None or p.reattach_files <= 0:
            return []
        out: list[dict[str, str]] = []
        used = 0
        for path in reversed(original.handoff(start, stop)["files_read"]):
            if len(out) >= p.reattach_files:
                break
            try:
                text = self.files.read(path)
            except (FileReadError, OSError):
                continue
            tokens = count_tokens(text, encoding=p.encoding)
            if used + tokens > p.reattach_tokens:
                continue
            used += tokens
            out.append(
                {"role": "user", "content": f"[Re-attached after compaction: current content of {path}]\n{text}"}
            )
        return out


def summary_cap(policy: CompactionPolicy, target: int) -> int:
    """The most tokens a summary may take when the working set is to be ``target`` tokens: a third
    of the target, at least 64 and at most the policy's ``summary_max_tokens`` (a 12,000-token
    budget allows a 4,000-token summary; 18,000 tokens and more allow the default cap of 6,000).
    The rest of the target goes to the raw recent part. Used when a budget is given; a live loop
    caps its summaries at ``summary_max_tokens``. (A fifth of the target filled the same but
    retained fewer probe facts on the shared corpus: 78.0% against 83.5% at 25%, openharness.)"""
    return max(64, min(policy.summary_max_tokens, target // 3))


#: How the placeholder of a cleared tool result opens.
_CLEARED = "[cleared: "

#: How a workspace anchor message opens (see :mod:`agentcontext.memory.anchors`).
_ANCHOR_HEADER = "[Re-attached after compaction: current content of workspace file "


def _runs(indices: list[int]) -> list[tuple[int, int]]:
    """Sorted ``indices`` as contiguous ``(start, stop)`` ranges."""
    out: list[tuple[int, int]] = []
    for i in indices:
        if out and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out


@dataclass
class _Summary:
    """A summary written over ``original[preamble:stop]``. It replaces ``original[preamble:covers]``:
    ``covers`` is ``stop`` until the raw recent part grows back into what the summary describes
    (filling the room a summary smaller than its cap left); the message header then names only
    the messages no longer kept raw."""

    text: str
    stop: int
    covers: int
    #: The summarize stage's event detail (recorded once the working set is built).
    detail: dict[str, Any]
    recorded: bool = False
    #: How many messages of ``original[preamble:stop]``, from its ``unseen_at``-th on, the
    #: summarizer never saw (dropped from its request as too long: the oldest rounds under
    #: ``summarizer_overflow="drop_rounds"``, the middle of the transcript under ``"truncate"``):
    #: the working set counts them by a drop marker before the summary, not in its header.
    unseen: int = 0
    unseen_at: int = 0


class _Run:
    """One run of the ladder over one conversation: the state every stage reads and advances
    (the working conversation, the provenance of its messages, the stage events) and one method
    per stage. A stage returns the finished result when the ladder stops there, else None."""

    def __init__(
        self,
        compactor: Compactor,
        conv: Conversation,
        p: CompactionPolicy,
        *,
        manual: bool,
        one_shot: bool,
        idle_seconds: float | None = None,
    ) -> None:
        self.compactor = compactor
        #: Seconds since the previous model call (None: unknown), for the cache TTL.
        self.idle_seconds = idle_seconds
        self.original = conv
        self.p = p
        self.manual = manual
        #: A working set of a given size is asked for (``budget``): fill it, and cut an oversized
        #: last round rather than give up. A live loop (no budget) aims under its target instead.
        self.one_shot = one_shot
        self.fill = one_shot and not manual
        #: The working set with the summary that the rungs after it try to shrink (their fallback).
        self.summarized: tuple[Conversation, list[int | None], _Summary] | None = None
        self.limit = p.available
        self.target = self.limit if manual else min(p.target_tokens, self.limit)
        self.before = conv.tokens
        self.stages: list[StageEvent] = []
        self.work = conv
        self.provenance: list[int | None] = list(range(len(conv)))
        self.pre = conv.preamble
        self.totals = conv.message_tokens()
        self.pre_tokens = sum(self.totals[: self.pre])
        self.deferred = False
        #: The original messages before this index were shown to a memory flush turn (or are the
        #: system messages).
        self.flushed_upto = conv.preamble
        #: The agent's system prompt, sent with the memory flush turn.
        self.system: str | None = None
        #: refit found no recent suffix that leaves its usual room for the summary.
        self.roomless = False
        #: Why the last rung that gave up did (for recompile's error).
        self.why = ""
        self._cuts: list[int] | None = None
        self._stale: set[int] | None = None
        #: The working set whose raw part ends in a cut round (see :mod:`agentcontext._fill`), and its origins.
        self._filled: tuple[Conversation, list[int | None]] | None = None
        #: The user's extra focus for the summary (``compact(instructions=...)``).
        self.instructions: str | None = None

    # -- results ---------------------------------------------------------------------------

    def finish(
        self,
        conv: Conversation,
        provenance: list[int | None],
        *,
        summary: _Summary | None = None,
        first_kept: int | None = None,
        reason: str | None = None,
        origins: list[int | None] | None = None,
    ) -> CompactionResult:
        fits = conv.tokens <= self.limit
        if origins is None and self._filled is not None and self._filled[0] is conv:
            origins = self._filled[1]
        if not fits and reason is None:
            reason = f"{conv.tokens:,} tokens remain over the budget of {self.limit:,}"
        lo, hi = self._unseen(summary) if summary is not None else (self.pre, self.pre)
        if lo < hi:
            # The summary in the output did not see some of its messages: the marker before it
            # counts those not in the output, and so does this event.
            present = {q for q in [*provenance, *(origins or [])] if q is not None}
            unseen = [i for i in range(lo, hi) if i not in present]
            totals = self.work.message_tokens()
            marker = Conversation([drop_marker(len(unseen), 0, None)], format="jsonl").to_format(self.original.format)
            marker_tokens = Conversation(marker, format=self.original.format, encoding=self.original.encoding).tokens
            self.event(
                "drop", conv.tokens - marker_tokens + sum(totals[i] for i in unseen), conv.tokens,
                dropped_messages=len(unseen),
                why=f"dropped from the summarizer's request as too long (summarizer_overflow={self.p.summarizer_overflow!r})",
            )  # fmt: skip
        return CompactionResult(
            conv, self.original, self.stages, self.before, conv.tokens, self.limit, fits, provenance,
            summary=summary.text if summary else None, reason=reason, origins=origins,
            first_kept=summary.covers if summary and first_kept is None else first_kept, target=self.target,
            unseen=(lo, hi) if lo < hi else None,
        )  # fmt: skip

    def event(self, stage: str, before: int, after: int, **detail: Any) -> None:
        self.stages.append(StageEvent(stage, before, after, detail))  # type: ignore[arg-type]

    # -- (a) and (b) -----------------------------------------------------------------------

    def skip(self) -> CompactionResult | None:
        if self.manual or self.before > self.target:
            return None
        self.event("skip", self.before, self.before, why="under the target")
        return self.finish(self.original, self.provenance)

    def budgets(self) -> CompactionResult | None:
        """(a) Cut every tool result over its budget."""
        p = self.p
        if p.dedup_tools or p.result_budget_tokens is not None:
            from agentcontext.harnesses import alyx

            if p.dedup_tools:
                alyx.dedup_idempotent(self)
            if p.result_budget_tokens is not None and p.tool_result_budgets:
                alyx.budget_results(self, p.result_budget_tokens)
            if self.stages and not self.manual and self.work.tokens <= self.target:
                return self.finish(self.work, self.provenance)
            if p.result_budget_tokens is not None:
                return None
        work = self.work
        per_tool = dict(p.per_tool_budget_chars)
        if not p.tool_result_budgets or not work.tool_results_over(p.result_budget, per_tool=per_tool):
            return None
        cut_conv, cut = work.truncate_tool_results(
            p.result_budget, per_tool=per_tool, recall_ids=self.compactor.store is not None
        )
        self.compactor._keep_results(self.original, cut)
        if not cut:
            return None
        changed = {c["index"] for c in cut}
        self.provenance = [None if i in changed else q for i, q in enumerate(self.provenance)]
        self.event("budgets", work.tokens, cut_conv.tokens, results_cut=len(cut))
        self.work = cut_conv
        if not self.manual and self.work.tokens <= self.target:
            return self.finish(self.work, self.provenance)
        return None

    def clear(self) -> CompactionResult | None:
        """(b) Clear old tool results; deferred when even clearing all of them cannot reach the
        target and the summarizer reads the originals anyway (then it is done only if the summary
        fails)."""
        p = self.p
        if not p.clear_tool_results or self.manual:
            return None
        warm = openclaw.cache_warm(p, self.idle_seconds)
        if warm is not None:
            self.deferred = True
            self.event("clear", self.work.tokens, self.work.tokens, deferred=warm)
            return None
        if openclaw.soft_trim(self) and self.work.tokens <= self.target:
            return self.finish(self.work, self.provenance)
        work = self.work
        floor = work.tokens - work.clearable_tokens(
            recent_messages=p.preserve_recent_messages,
            recent_tools=p.preserve_recent_tools,
            exclude_tools=list(p.exclude_tools),
        )
        if floor > self.target and p.summarize and not getattr(self.compactor.summarizer, "window_bound", True):
            self.deferred = True
            why = f"clearing every old result leaves at least {floor:,} tokens, over the target"
            self.event("clear", work.tokens, work.tokens, deferred=why)
            return None
        if not self._clear_now(priced=True):
            return self.finish(self.work, self.provenance)
        if self.work.tokens <= self.target:
            return self.finish(self.work, self.provenance)
        return None

    def clear_deferred(self) -> CompactionResult | None:
        if self.deferred and not (openclaw.soft_trim(self) and self.work.tokens <= self.target):
            self._clear_now()
        return None

    def _clear_now(self, *, priced: bool = False) -> bool:
        """Clear old tool results; False when ``priced`` and the policy's prices say that does not
        pay (:func:`~agentcontext.pricing.clear_rung`): then nothing changes and the ladder stops."""
        p, work = self.p, self.work
        cleared, report = work.clear_tool_results(
            recall_ids=self.compactor.store is not None,
            recent_messages=p.preserve_recent_messages,
            recent_tools=p.preserve_recent_tools,
            clear_at_least=p.clear_at_least,
            exclude_tools=list(p.exclude_tools),
            clear_tool_inputs=p.clear_tool_inputs,
            keep_thinking=p.keep_thinking,
        )
        if not report["cleared"]:
            return True
        changed = sorted({c["index"] for c in report["cleared"]})
        pays = clear_rung(p.prices, p.remaining_turns, before=work, after=cleared, first_changed=changed[0],
                          limit=self.limit, clear_at_least=p.clear_at_least,
                          seconds_since_last_call=self.idle_seconds) if priced else None  # fmt: skip
        if pays is not None and not pays[0]:
            self.event("skip", work.tokens, work.tokens, **pays[1])
            return False
        self.compactor._keep_results(self.original, report["cleared"])
        self.event(
            "clear", work.tokens, cleared.tokens,
            results_cleared=len(report["cleared"]), tokens_freed=report["tokens_freed"], **(pays[1] if pays else {}),
        )  # fmt: skip
        before_prov = self.provenance
        gone = set(changed)
        self.provenance = [None if i in gone else q for i, q in enumerate(before_prov)]
        self.work = cleared
        if self.fill and cleared.tokens <= self.target:
            self._restore_cleared(work, before_prov, changed)
        return True

    def _restore_cleared(self, uncleared: Conversation, before_prov: list[int | None], changed: list[int]) -> None:
        """Fill after clearing: the newest cleared messages get their results back while the
        conversation stays within the target."""
        room = self.target - self.work.tokens
        was, now = uncleared.message_tokens(), self.work.message_tokens()
        restore: set[int] = set()
        for i in reversed(changed):
            grow = was[i] - now[i]
            if grow <= room:
                restore.add(i)
                room -= grow
        if not restore:
            return
        parts: list[Conversation] = []
        at = 0
        for i in sorted(restore):
            parts += [self.work.slice(at, i), uncleared.slice(i, i + 1)]
            at = i + 1
        parts.append(self.work.slice(at))
        filled = Conversation.concat(parts)
        self.event("fill", self.work.tokens, filled.tokens, results_restored=len(restore))
        self.provenance = [before_prov[i] if i in restore else q for i, q in enumerate(self.provenance)]
        self.work = filled

    # -- (c) summarize ---------------------------------------------------------------------

    def summarize(self) -> CompactionResult | None:
        """(c) Summarize older history: everything before the raw recent part, which keeps at
        least the policy's recent messages and, when filling, as much more as leaves room for
        the summary within the target. The raw part then grows into the room the summary left."""
        p = self.p
        if not (p.summarize or self.manual):
            return None
        if p.keep_user_tokens:
            from agentcontext.harnesses import codex

            return codex.rebuild(self)
        keep = p.manual_keep_messages if self.manual else p.preserve_recent_messages
        start = self.work._recent_start(keep_messages=keep, keep_tokens=0 if self.manual else p.keep_recent_tokens)
        if p.sliding_window is not None and not self.manual:
            start = letta.sliding_window_start(self, start)
        cap = summary_cap(p, self.target) if self.one_shot else p.summary_max_tokens
        if self.fill:
            room = self.target - cap - SUMMARY_HEADER_TOKENS - self._pinned_tokens(start)
            fit = self._fill_start(room)
            # The policy's recent part is the least kept raw when it fits beside the summary;
            # when it does not (pi's 20,000 recent tokens under a 5,000-token budget), as many
            # whole rounds as fit, rather than a summary written for nothing and the refit rung.
            start = fit if fit < len(self.original) else start
        if start <= self.pre:
            why = "nothing older than the recent messages to summarize"
            if self.manual:
                raise CompactionError(why)
            self.event("summarize", self.work.tokens, self.work.tokens, failed=why)
            return None
        extras = [*self.compactor._reattach(self.original, self.pre, start, p), *self._anchors()]
        if self.fill:
            # Whole rounds rarely fill the target exactly: the summary may take the room the raw
            # part leaves, not only its third. (On the shared corpus at 25%, claude-code: pooled
            # retention 0.877 with the third alone.)
            raw = self.pre_tokens + sum(self.totals[start:]) + self._pinned_tokens(start)
            raw += Conversation(extras, format=self.original.format, encoding=self.original.encoding).tokens
            cap = self._summary_room(cap, raw)
        summary = self._summary(start, cap)
        if summary is None:
            return None
        conv, prov = self._grow(summary, extras, self.target if self.fill else None)
        if conv.tokens <= self.limit or not p.drop_oldest_groups:
            return self.finish(conv, prov, summary=summary)
        self.summarized = (conv, prov, summary)
        # The recent messages kept raw do not fit beside the summary: keep fewer of them,
        # summarizing the rest, before dropping anything unsummarized.
        return self.refit() or self.oversized(summary)

    def _summary_room(self, cap: int, kept: int) -> int:
        """The cap of a summary beside ``kept`` tokens (system messages, what stays raw, extras)
        under a one-shot target: the room they leave, at least ``cap``, at most the policy's
        ``summary_max_tokens``."""
        return max(cap, min(self.p.summary_max_tokens, self.target - kept - SUMMARY_HEADER_TOKENS))

    def _summary(self, stop: int, cap: int) -> _Summary | None:
        """A summary of ``original[preamble:stop]`` within ``cap`` tokens (the fallback summarizer
        when the summarizer fails in auto mode); None, with a failed stage event, when none was
        accepted (manual mode raises instead)."""
        self._flush(stop)
        p, work, c = self.p, self.work, self.compactor
        older_tokens = sum(work.message_tokens()[self.pre : stop])
        # Earlier summaries in the older part are updated, not nested.
        previous = next(reversed(work._summaries(self.pre, stop)), None)
        max_tokens = max(64, min(cap, older_tokens - 1))
        request = SummaryRequest(
            work, self.pre, stop, previous, max_tokens, encoding=p.encoding, original=self.original,
            instructions=self.instructions,
        )  # fmt: skip
        notes: dict[str, Any] = {}
        chunks = openclaw.chunks_first(self, request)
        text, failure = c._run_summarizer(chunks or c.summarizer, request, p, notes)
        used = type(c.summarizer).__name__
        if text is None and not self.manual and c.fallback is not None and c.fallback is not c.summarizer:
            notes.clear()
            text, fallback_failure = c._run_summarizer(c.fallback, request, p, notes)
            used = type(c.fallback).__name__
            failure = (
                f"{failure}; used the fallback" if text is not None else f"{failure}; fallback: {fallback_failure}"
            )
        if text is None:
            if self.manual:
                raise CompactionError(f"summary failed: {failure}; history unchanged")
            self.event("summarize", work.tokens, work.tokens, failed=failure)
            self.why = f"no summary could be made: {failure}"
            return None
        # The messages dropped from the summarizer's request are not in the summary: its oldest
        # (drop_rounds), or those wholly in the omitted middle of its transcript (truncate).
        at = min(int(notes.get("omitted_from", 0)), stop - self.pre - 1)
        unseen = min(int(notes.get("dropped_messages", notes.get("omitted_messages", 0))), stop - self.pre - 1 - at)
        totals = work.message_tokens()
        detail: dict[str, Any] = {
            "summarized_messages": stop - self.pre - unseen,
            "summarized_tokens": older_tokens - sum(totals[self.pre + at : self.pre + at + unseen]),
            "summary_tokens": count_tokens(text, encoding=p.encoding),
            "summary_cap": max_tokens,
            "summarizer": used,
            **notes,
        }
        if failure:
            detail["note"] = failure
        elif chunks is not None:
            detail.update(chunks.detail)
        return _Summary(text, stop, stop, detail, unseen=unseen, unseen_at=at)

    def _unseen(self, summary: _Summary) -> tuple[int, int]:
        """``(lo, hi)``: the messages ``lo:hi`` of the original among those ``summary``'s message
        covers that its summarizer never saw (counted by a marker instead); ``lo == hi``: none."""
        lo = min(self.pre + summary.unseen_at, summary.covers)
        return lo, min(lo + summary.unseen, summary.covers)

    def _summary_messages(self, summary: _Summary, *, store: bool) -> list[dict[str, str]]:
        """The message carrying ``summary``, its header naming what it replaces (with a recall id
        for the originals when ``store`` and the compactor has a store); before it, when its
        summarizer never saw some of those messages, a drop marker counting them instead."""
        covers, (lo, hi) = summary.covers, self._unseen(summary)
        recall_id = self.compactor._keep_span(self.original, self.pre, covers, (lo, hi)) if store else None
        totals = self.work.message_tokens()
        tokens = sum(totals[self.pre : covers]) - sum(totals[lo:hi])
        message = summary_message(
            summary.text, messages=covers - self.pre - (hi - lo), tokens=tokens, recall_id=recall_id
        )
        if lo == hi:
            return [message]
        return [self._drop_note(self.original, lo, hi, store=store), message]

    def _flush(self, stop: int) -> None:
        """The memory flush (#16): one silent turn before a summary replaces ``original[pre:stop]``,
        with a provider (the summarizer's), on every path that writes a summary. The model sees the
        originals of what leaves (not what this run cut or cleared; a result an earlier compaction
        cleared gets its text back from the compactor's store), after the system messages,
        with the agent's system prompt; the newest whole groups of it when all of it does not fit
        the provider's window. A later summary of the same run that replaces more gets a flush of
        the rest."""
        c = self.compactor
        provider = getattr(c.summarizer, "provider", None)
        from agentcontext.harnesses.alyx import CHECKPOINT_INSTRUCTION, checkpoint_due
        from agentcontext.memory.flush import FLUSH_INSTRUCTION, flush_memory

        first = self.flushed_upto
        if first >= stop or c.memory is None or provider is None:
            return
        checkpoint = checkpoint_due(self)
        if not (c.flush or checkpoint):
            return
        self.flushed_upto = stop
        tokens = self.work.tokens
        instruction = CHECKPOINT_INSTRUCTION if checkpoint else FLUSH_INSTRUCTION
        shown, detail = self._flush_view(provider, first, stop, instruction)
        detail["before_message"] = stop
        if checkpoint:
            detail["checkpoint"] = True
        if shown is None:
            self.event("flush", tokens, tokens, **detail)
            return
        try:
            report = flush_memory(
                provider, shown, c.memory, system=self.system, max_tokens=c.flush_max_tokens, instruction=instruction
            )
        except Exception as exc:  # noqa: BLE001 - a failed flush is reported and the ladder goes on
            self.event("flush", tokens, tokens, failed=f"{type(exc).__name__}: {exc}", **detail)
            return
        done = report.to_dict()
        done.pop("stage")
        self.event("flush", tokens, tokens, **done, **detail)

    def _flush_view(
        self, provider: Any, first: int, stop: int, instruction: str
    ) -> tuple[Conversation | None, dict[str, Any]]:
        """What the flush turn shows: the system messages and the originals of ``first:stop``
        (the newest whole groups that fit the provider's window beside the system prompt, the
        memory tools, the instruction and the output), and the event detail saying how much."""
        o, p = self.original, self.p
        first = max(first, self.pre)
        leaving = Conversation.concat([o.slice(0, self.pre), o.slice(first, stop)])
        c = self.compactor
        leaving, restored = self._uncleared(leaving)
        outside = count_tokens(
            (self.system or "") + instruction + json.dumps(c.memory.definitions("openai") if c.memory else []),
            encoding=p.encoding,
        )
        window = getattr(provider, "context_window", None) or p.summarizer_window
        # 10% slack: the provider's tokenizer is not ours.
        room = int(window * 0.9) - c.flush_max_tokens - outside
        detail: dict[str, Any] = {"leaving_messages": stop - first}
        if restored:
            detail["results_restored"] = restored
        if leaving.tokens <= room:
            detail["shown_messages"] = stop - first
            return leaving, detail
        s = leaving.recent_suffix(max(0, room))
        if s["overflow"] is not None or s["start"] >= len(leaving):
            detail["skipped"] = (
                f"the originals of what leaves ({leaving.tokens:,} tokens) do not fit the flush turn's room "
                f"({room:,} tokens of the provider's {window:,}), not even their last round"
            )
            return None, detail
        pre = leaving.preamble
        shown = Conversation.concat([leaving.slice(0, pre), leaving.slice(s["start"])])
        detail["shown_messages"] = len(leaving) - s["start"]
        detail["omitted_messages"] = s["start"] - pre
        return shown, detail

    def _uncleared(self, conv: Conversation) -> tuple[Conversation, int]:
        """``conv`` with every result an earlier compaction cleared given back its text from the
        compactor's store (kept there under its call id when it was cleared), and how many."""
        store = self.compactor.store
        if store is None:
            return conv, 0
        messages = conv.to_jsonl()
        restored = 0
        for m in messages:
            call_id = m.get("tool_call_id")
            if m.get("role") != "tool" or not isinstance(call_id, str):
                continue
            if not result_text(m.get("content")).startswith(_CLEARED):
                continue
            try:
                recall_id = store.alias(call_id)
                if recall_id is None:
                    continue
                m["content"] = store.get(recall_id)
            except (AgentContextError, OSError):
                continue  # not stored, or not readable: the placeholder stays
            restored += 1
        if not restored:
            return conv, 0
        return Conversation(messages, format="jsonl", encoding=conv.encoding), restored

    def _anchors(self) -> list[dict[str, Any]]:
        anchors = self.compactor.anchors
        return anchors.messages() if anchors is not None else []

    # -- filling ---------------------------------------------------------------------------

    def _pinned(self, stop: int) -> list[int]:
        """Pinned messages older than ``stop`` that travel beside a summary (not tool messages)."""
        o = self.original
        return [i for i in o.pinned if self.pre <= i < stop and not o[i].get("tool_calls") and o[i]["role"] != "tool"]

    def _pinned_tokens(self, stop: int) -> int:
        return sum(self.totals[i] for i in self._pinned(stop))

    def _fill_start(self, room: int) -> int:
        """The earliest cut point (start of a group or round, never between a call and its
        result) from which the raw recent part, with the system messages, fits ``room`` tokens;
        the number of messages when none does."""
        if self._cuts is None:
            self._cuts = [c for c in self.original._cut_points() if self.pre <= c < len(self.original)]
        budget = room - self.pre_tokens
        best = len(self.original)
        total = 0
        at = len(self.original)
        for c in reversed(self._cuts):
            total += sum(self.totals[c:at])
            at = c
            if total > budget:
                break
            best = c
        return best

    def _grow(
        self, summary: _Summary, extras: list[dict[str, Any]], fill_to: int | None
    ) -> tuple[Conversation, list[int | None]]:
        """The working set: system messages, the summary and ``extras`` (re-attached files,
        anchors), pinned older messages, then the raw recent part from where the summary ends —
        grown backwards by whole groups or rounds until the whole reaches ``fill_to`` (None: not
        grown). The summary then replaces only what is not kept raw."""
        o, stop = self.original, summary.stop
        summary.covers = stop
        head = [*self._summary_messages(summary, store=False), *extras]
        if fill_to is not None:
            fixed = Conversation(head, format=o.format, encoding=o.encoding).tokens + self._pinned_tokens(stop)
            summary.covers = min(stop, self._fill_start(fill_to - fixed))
        while True:
            head = [*self._summary_messages(summary, store=True), *extras]
            conv, prov = self._assemble(Conversation(head, format=o.format, encoding=o.encoding), summary.covers)
            if fill_to is None or summary.covers >= stop or conv.tokens <= fill_to:
                break
            # Counted apart, the parts came out larger together: the next cut point.
            summary.covers = next((c for c in self._cuts or [] if c > summary.covers), stop)
        # The summary as written, beside the raw part it was written for; then the fill.
        pinned = set(self._pinned(stop))
        unfilled = conv.tokens - sum(self.totals[i] for i in range(summary.covers, stop) if i not in pinned)
        if not summary.recorded:
            self.event("summarize", self.work.tokens, unfilled, **summary.detail, kept_raw=len(o) - stop)
            summary.recorded = True
        cut = _fill.cut_round(self, summary, extras, conv, fill_to) if fill_to is not None else None
        if cut is not None:
            conv, prov = cut.conversation, cut.provenance
            self._filled = (conv, cut.origins)
        if summary.covers < stop:
            lo, hi = self._unseen(summary)
            self.event("fill", unfilled, conv.tokens, raw_messages_added=stop - summary.covers,
                       summarized_messages=summary.covers - self.pre - (hi - lo),
                       **({"messages_cut": len(cut.cut)} if cut is not None else {}))  # fmt: skip
        return conv, prov

    def _assemble(self, head: Conversation, start: int) -> tuple[Conversation, list[int | None]]:
        o = self.original
        pinned = self._pinned(start)
        raw = [i for i in range(start, len(o)) if i not in self._stale_anchors()]
        runs = [o.slice(lo, hi) for lo, hi in _runs(raw)]
        parts = [o.slice(0, self.pre), head, *(o.slice(i, i + 1) for i in pinned), *runs]
        prov: list[int | None] = [*range(self.pre), *[None] * len(head), *pinned, *raw]
        return Conversation.concat(parts), prov

    def _stale_anchors(self) -> set[int]:
        """Anchor messages an earlier compaction attached, superseded by the ones attached now."""
        if self.compactor.anchors is None:
            return set()
        if self._stale is None:
            o, marker = self.original, _ANCHOR_HEADER
            self._stale = {
                i for i in range(self.pre, len(o))
                if o[i]["role"] == "user" and isinstance(c := o[i].get("content"), str) and c.startswith(marker)
            }  # fmt: skip
        return self._stale

    # -- the rungs after the summary -------------------------------------------------------

    def refit(self, *, least: bool = False) -> CompactionResult | None:
        """The largest recent suffix of the original that fits the budget with room for a
        summary is kept raw, and everything before it summarized. None (``why`` says why) when
        the last round alone does not fit, nothing is older, or no summary was made. ``least``:
        the room kept for the summary is the least one takes (:data:`MIN_SUMMARY_TOKENS` and its
        header), and the summary gets what the suffix leaves; None when it does not fit there."""
        p, limit = self.p, self.limit
        room = max(64, min(p.summary_max_tokens, limit // 4))
        pinned = self._pinned_tokens(len(self.original))
        start = self._fill_start(limit - room - SUMMARY_HEADER_TOKENS - pinned)
        if least:
            # The largest suffix that leaves the least a summary takes, which gets that room.
            start = self._fill_start(limit - MIN_SUMMARY_TOKENS - SUMMARY_HEADER_TOKENS - pinned)
            room = limit - self.pre_tokens - sum(self.totals[start:]) - pinned - SUMMARY_HEADER_TOKENS
            ask = self.original._latest_request(self.pre, start)
            if ask is not None and self.totals[ask[0]] > room:
                # So short a summary would hold only part of the latest request: the drop keeps it.
                self.why = f"the latest request ({self.totals[ask[0]]:,} tokens) is larger than the room for a summary"
                return None
        if start >= len(self.original):
            self.roomless = True
            s = self.original.recent_suffix(max(0, limit - room))
            lo, hi = s["overflow"] or (start, start)
            self.why = (
                f"the last round alone ({self.original.slice(lo, hi).tokens:,} tokens) is larger than the "
                f"{max(0, limit - room):,} tokens left of the budget of {limit:,} after {room:,} kept for the "
                "summary; a round is never split"
            )
            return None
        if start <= self.pre:
            self.why = (
                f"nothing older than the last round to remove ({self.original.tokens:,} tokens, budget {limit:,})"
            )
            return None
        summary = self._summary(start, room)
        if summary is None:
            return None
        summary.detail["kept"] = "the largest recent suffix that fits the budget with the summary"
        conv, prov = self._grow(summary, self._anchors(), min(self.target, limit) if self.fill else None)
        if conv.tokens > limit:
            conv, prov = self._grow(summary, [], None)
        if conv.tokens > limit:
            # Counted apart, the parts came out larger together: the summary gives way.
            shrunk = self._shrunk(summary, limit - (conv.tokens - self._summary_tokens(summary)))
            if shrunk is not None:
                summary = shrunk
                conv, prov = self._grow(summary, [], None)
        if conv.tokens <= limit:
            return self.finish(conv, prov, summary=summary)
        if least:
            # The shorter summary does not fit either: the last round stays whole (dropping
            # what is older, with a marker), rather than cut for it.
            self.why = f"no summary fits beside the last round ({sum(self.totals[start:]):,} tokens)"
            return None
        return self.oversized(summary)

    def _summary_tokens(self, summary: _Summary) -> int:
        """Tokens of the message carrying ``summary``."""
        messages = self._summary_messages(summary, store=False)
        return Conversation(messages, format=self.original.format, encoding=self.original.encoding).tokens

    def drop_unsummarized(self) -> CompactionResult | None:
        """Recompile's last step: no summary could be made, so everything before the largest
        recent suffix that fits beside a marker counting it is dropped. None when even the last
        round does not fit."""
        o = self.original
        s = o.recent_suffix(max(0, self.limit - DROP_MARKER_TOKENS))
        pre, start = s["preamble"], s["start"]
        if s["overflow"] is not None or start <= pre:
            return None
        kept, positions, dropped = self._dropping(o, list(range(start, len(o))))
        if kept.tokens > self.limit:
            return None
        self.event("drop", o.tokens, kept.tokens, dropped_messages=dropped)
        return self.finish(kept, positions, first_kept=start, origins=positions)

    def _drop_note(self, conv: Conversation, lo: int, hi: int, *, store: bool = True) -> dict[str, str]:
        """The user message that takes the place of messages ``lo:hi`` of ``conv`` when they are
        dropped: how many, their tokens, and the recall id of their originals (stored now when
        ``store`` and the compactor has a store)."""
        dropped = sum(conv.message_tokens()[lo:hi])
        span = self.compactor._keep_span(conv, lo, hi) if store else None
        return drop_marker(hi - lo, dropped, span)

    def _dropping(self, conv: Conversation, keep: list[int]) -> tuple[Conversation, list[int | None], int]:
        """The system messages of ``conv``, then its messages ``keep`` (sorted positions after
        them, ending with its last message) with a marker (:meth:`_drop_note`) where each run
        of the others was: the conversation, the position in ``conv`` of each of its messages
        (None for a marker) and how many messages were dropped."""
        parts, positions = [conv.slice(0, self.pre)], list[int | None](range(self.pre))
        at = self.pre
        for lo, hi in _runs(keep):
            if lo > at:
                note = self._drop_note(conv, at, lo)
                parts.append(Conversation([note], format=conv.format, encoding=conv.encoding))
                positions.append(None)
            parts.append(conv.slice(lo, hi))
            positions += range(lo, hi)
            at = hi
        return Conversation.concat(parts), positions, len(conv) - self.pre - len(keep)

    def last_resort(self) -> CompactionResult:
        """(e) Drop the oldest whole groups (after summarizing them when the policy summarizes
        and the usual split left nothing older to summarize); the oversized rung when even the
        last round does not fit."""
        p, work = self.p, self.work
        if not p.drop_oldest_groups or work.tokens <= self.limit:
            return self.finish(work, self.provenance)
        if p.summarize or self.manual:
            done = self.refit()
            if done is None and self.roomless:
                # What the drop would leave out is summarized in the room it would leave, when
                # a summary fits there: dropping unsummarized is the last resort.
                done = self.refit(least=True)
            if done is not None:
                return done
        return self.drop()

    def drop(self) -> CompactionResult:
        """Drop the oldest whole groups of the working conversation until it fits; the latest user
        request stays (cut when it alone is too large). A user marker takes the place of each
        run of dropped messages, saying how many and where their originals are (its room kept
        when fitting); when the last round does not fit beside the markers, the oversized rung
        decides."""
        work, limit = self.work, self.limit
        s = work.recent_suffix(max(0, limit - DROP_MARKER_TOKENS))
        if s["overflow"] is not None:
            return self.oversized(None)
        pre, start = s["preamble"], s["start"]
        found = self.original._latest_request()
        q = found[0] if found is not None and pre <= found[0] < start else None
        keep = list(range(start, len(work)))
        if q is not None:
            # The suffix that fits leaves out the latest request: it is kept, with the longest
            # suffix that fits beside it and the markers before and after it (else the last
            # round with it, cut as they must be).
            rest = work.recent_suffix(max(0, limit - work.message_tokens()[q] - 2 * DROP_MARKER_TOKENS))
            if rest["overflow"] is not None or rest["start"] <= q:
                return self.oversized(None)
            keep = [q, *range(rest["start"], len(work))]
        # Before a summary, positions in `work` are positions in the original.
        kept, origins, dropped = self._dropping(work, keep)
        if kept.tokens > limit:
            return self.oversized(None)
        new_prov = [None if i is None else self.provenance[i] for i in origins]
        self.event("drop", work.tokens, kept.tokens, dropped_messages=dropped,
                   **({"kept_request": q} if q is not None else {}))  # fmt: skip
        return self.finish(kept, new_prov, first_kept=keep[0], origins=origins)

    def oversized(self, summary: _Summary | None) -> CompactionResult:
        """The last rung: the last round alone (with the latest user request, when that comes
        before it) does not fit. Its oversized messages are cut head + marker + tail (equal
        shares of what is left for each, the original under a recall id), beside a summary of
        everything older when there is room for one (``summary`` when it covers exactly that,
        else one written again); without one, the latest request is kept and a marker counts
        each run of the messages dropped. Does not fit only when not even the markers and a
        head and tail of each message do."""
        o, limit = self.original, self.limit
        cuts = [c for c in o._cut_points() if self.pre <= c < len(o)]
        last = cuts[-1] if cuts else self.pre
        found = o._latest_request()
        q = found[0] if found is not None and self.pre <= found[0] < last else None
        # Kept raw: the last round, with the latest request when it opens that turn (and no
        # summary already covers it). A summary covers everything older: one written for
        # another raw part is written again (re-planned), so that nothing between it and the
        # raw part is dropped unsummarized.
        keep = list(range(last, len(o)))
        if q is not None and q + 1 == last and (summary is None or summary.stop <= q):
            keep.insert(0, q)
        # In a live loop a round is never cut: when it does not fit beside the system messages,
        # no summary can make room, and none is written again (a summarizer call for nothing).
        hopeless = not self.one_shot and self.pre_tokens + sum(self.totals[i] for i in keep) > limit
        replanned = summary is not None and summary.stop != keep[0] and not hopeless
        # The latest request, raw without a summary, is now in the one written.
        moved = q is not None and q not in keep and (summary is None or summary.stop <= q)
        if replanned:
            summary = None
        attempts: list[_Summary | None] = [None]
        if keep[0] > self.pre:
            if summary is None and (self.p.summarize or self.manual) and not hopeless:
                summary = self._summary(keep[0], max(64, min(self.p.summary_max_tokens, limit // 5)))
                if summary is not None and replanned:
                    summary.detail["replanned"] = "to cover what the earlier summary left between it and the last round"
            if summary is not None:
                summary.covers = summary.stop
                # The round whole beside the summary cut to the room left, then both cut.
                shrunk = self._shrunk(summary, limit - self.pre_tokens - sum(self.totals[i] for i in keep))
                if moved and shrunk is not None and found is not None and not _holds_request(shrunk.text, found[1]):
                    shrunk = None  # cut so short that it lost the latest request it took in
                attempts[:0] = [s for s in (shrunk, summary) if s is not None]
        for attempt in attempts:
            # Without a summary, the latest request itself (a marker counts what is dropped).
            raw = keep if attempt is not None or q is None or q in keep else [q, *keep]
            done = self._cut_round(raw, attempt)
            if done is not None:
                conv = done.conversation
                whole = self.pre_tokens + sum(self.totals[i] for i in raw)
                if attempt is not None and not attempt.recorded:
                    whole += sum(count_tokens(m["content"], encoding=o.encoding)
                                 for m in self._summary_messages(attempt, store=False))  # fmt: skip
                    self.event("summarize", self.work.tokens, whole, **attempt.detail, kept_raw=len(raw))
                if done.dropped:
                    whole += done.notes_tokens
                    self.event("drop", self.work.tokens, whole, dropped_messages=done.dropped, kept_from=raw[0])
                if done.cut:
                    self.event("cut", whole, conv.tokens, messages_cut=done.cut, kept_from=raw[0])
                elif not done.dropped:
                    self.event("drop", whole, conv.tokens, kept_from=raw[0])
                return self.finish(
                    conv,
                    done.provenance,
                    summary=attempt,
                    first_kept=None if attempt else raw[0],
                    origins=done.origins,
                )
        raw = keep if q is None or q in keep else [q, *keep]
        round_tokens = sum(self.totals[i] for i in raw)
        if self.one_shot:
            reason = (
                f"the last round ({round_tokens:,} tokens) does not fit the budget of {limit:,} even with its "
                f"messages cut to a head, a marker and a tail beside the system messages ({self.pre_tokens:,} tokens)"
            )
            if self.pre_tokens + round_tokens <= limit:
                dropped = len(o) - self.pre - len(raw)
                reason += f" and a summary or a marker counting the {dropped:,} earlier messages"
        else:
            reason = (
                f"the last round ({round_tokens:,} tokens) and the system messages ({self.pre_tokens:,} tokens) "
                f"are larger than the budget of {limit:,} beside any summary; a round is never split"
            )
        self.why = reason
        self.event("cut" if self.one_shot else "drop", self.work.tokens, self.work.tokens, failed=reason)
        if self.summarized is not None:
            conv, prov, kept = self.summarized
            return self.finish(conv, prov, summary=kept, reason=reason)
        return self.finish(self.work, self.provenance, reason=reason)

    def _shrunk(self, summary: _Summary, room: int) -> _Summary | None:
        """``summary`` cut (head and tail) so that its message takes at most ``room`` tokens; None
        when under :data:`MIN_SUMMARY_TOKENS` would be left of it."""
        enc = self.p.encoding
        overhead = sum(
            count_tokens(m["content"], encoding=enc) for m in self._summary_messages(summary, store=False)
        ) - count_tokens(summary.text, encoding=enc)
        left = room - overhead - 8
        if left < MIN_SUMMARY_TOKENS:
            return None
        if count_tokens(summary.text, encoding=enc) <= left:
            return summary
        # The offline sections are fitted again, the latest request first (any other text: head + tail).
        try:
            text = shrink_summary(summary.text, left, encoding=enc)
        except BudgetError:
            return None
        detail = {**summary.detail, "summary_cut_to_tokens": left}
        return _Summary(text, summary.stop, summary.covers, detail, unseen=summary.unseen, unseen_at=summary.unseen_at)

    def _cut_round(self, keep: list[int], summary: _Summary | None) -> _Cut | None:
        """Messages ``keep`` of the original after the system messages and ``summary`` (which
        covers everything before ``keep``), or with a marker (:meth:`_drop_note`) in the place of
        each run of the others when there is no summary; the largest texts cut to equal shares
        of the room left so that the whole fits the budget (None when it cannot)."""
        o, p = self.original, self.p
        head = self._summary_messages(summary, store=True) if summary else []
        head_conv = Conversation(head, format=o.format, encoding=o.encoding)
        # Before keep[k]: the marker of the messages dropped since the previous one kept.
        notes: dict[int, dict[str, str]] = {}
        at, dropped = summary.covers if summary else self.pre, 0
        for k, i in enumerate(keep):
            if i > at:
                notes[k] = self._drop_note(o, at, i)
                dropped += i - at
            at = i + 1
        notes_tokens = 0
        if notes:
            written = Conversation(list(notes.values()), format="jsonl").to_format(o.format)
            notes_tokens = Conversation(written, format=o.format, encoding=o.encoding).tokens
        neutral = [o.slice(i, i + 1).to_jsonl() for i in keep]
        texts = [[m["content"] if isinstance(m.get("content"), str) else "" for m in ms] for ms in neutral]
        flat = [(k, j) for k, ms in enumerate(texts) for j in range(len(ms))]
        sizes = {kj: count_tokens(texts[kj[0]][kj[1]], encoding=p.encoding) for kj in flat}
        room = self.limit - self.pre_tokens - head_conv.tokens - notes_tokens
        room -= sum(self.totals[i] for i in keep) - sum(sizes.values())
        # Equal shares, smallest first: a text under its share stays whole (water-filling).
        shares: dict[tuple[int, int], int] = {}
        left = room
        for n, kj in enumerate(sorted(flat, key=lambda kj: sizes[kj])):
            shares[kj] = min(sizes[kj], max(0, left // (len(flat) - n)))
            left -= shares[kj]
        recall: dict[tuple[int, int], str | None] = {}
        for _ in range(3):
            out = [[dict(m) for m in ms] for ms in neutral]
            for kj in flat:
                if shares[kj] >= sizes[kj]:
                    continue
                if not self.one_shot:
                    return None
                k, j = kj
                if kj not in recall:
                    # A tool result is recalled by its call id, as the budgets stage's markers are.
                    store, call_id = self.compactor.store, neutral[k][j].get("tool_call_id")
                    if store is not None:
                        stored = store.put(texts[k][j], alias=call_id if isinstance(call_id, str) else None)
                    recall[kj] = None if store is None else call_id if isinstance(call_id, str) else stored
                try:
                    done = truncate(
                        texts[k][j], shares[kj], unit="tokens", strategy="head_tail", head_share=0.5,
                        encoding=p.encoding, recall_id=recall[kj], not_stored=recall[kj] is None,
                    )  # fmt: skip
                except BudgetError:
                    return None
                if not (done.head_chars and done.tail_chars):
                    return None  # a marker alone is not a cut message: its head and tail must fit
                out[k][j]["content"] = done.text
            cut = sorted({keep[k] for k, _ in recall})
            body = Conversation(
                Conversation([m for k, ms in enumerate(out) for m in [*([notes[k]] if k in notes else []), *ms]],
                             format="jsonl").to_format(o.format),
                format=o.format, encoding=o.encoding,
            )  # fmt: skip
            conv = Conversation.concat([o.slice(0, self.pre), head_conv, body])
            over = conv.tokens - self.limit
            if over <= 0:
                same = len(body) == len(keep) + len(notes)
                prov: list[int | None] = [*range(self.pre), *[None] * len(head)]
                origins = list(prov)
                for k, i in enumerate(keep):
                    if not same:
                        break
                    if k in notes:
                        prov.append(None)
                        origins.append(None)
                    prov.append(None if i in cut else i)
                    origins.append(i)
                if not same:
                    prov += [None] * len(body)
                    origins += [None] * len(body)
                return _Cut(conv, prov, origins, cut, dropped, notes_tokens)
            # Counted apart, the parts came out larger together: the largest cut text gives way.
            cut_texts = [kj for kj in flat if shares[kj] < sizes[kj]]
            if not cut_texts:
                return None
            largest = max(cut_texts, key=lambda kj: shares[kj])
            if shares[largest] - over < 1:
                return None
            shares[largest] -= over
        return None


@dataclass
class _Cut:
    """A working set whose last round was cut to fit: its provenance, origins and the positions
    (in the original) of the messages cut; how many messages were dropped (each run counted by
    a marker) and the markers' tokens."""

    conversation: Conversation
    provenance: list[int | None]
    origins: list[int | None]
    cut: list[int]
    dropped: int = 0
    notes_tokens: int = 0


def drop_marker(messages: int, tokens: int, recall_id: str | None) -> dict[str, str]:
    """The user message that takes the place of ``messages`` dropped messages of ``tokens``
    tokens, naming the recall id of their originals (or saying they are not stored)."""
    where = f"recall id {recall_id} gives the originals" if recall_id else "the originals are not stored"
    text = (
        f"[agentcontext: {messages:,} earlier messages ({tokens:,} tokens) "
        f"were dropped to fit the context window; {where}.]"
    )
    return {"role": "user", "content": text}


def summary_floor(replaced_tokens: int, max_tokens: int) -> int:
    """The fewest tokens an accepted summary may have: 1/200 of what it replaces, at least 32,
    and never more than a quarter of its cap. A 20-token summary of 145,000 tokens is a collapse
    (a tag quoted from a message, an error line), not a handoff; the fallback runs instead."""
    return min(max_tokens // 4, max(32, replaced_tokens // 200))


def latest_request(request: SummaryRequest) -> str | None:
    """The latest real user request in the range a summary replaces (None when there is none)."""
    found = (request.original or request.source)._latest_request(request.start, request.stop)
    return found[1] if found else None


def _holds_request(summary: str, ask: str) -> bool:
    """Whether ``summary`` holds the user request ``ask``: its opening (up to 40 characters,
    whitespace folded), as a handoff quotes it."""
    opening = " ".join(ask.split())[:40]
    return opening in " ".join(summary.split())
