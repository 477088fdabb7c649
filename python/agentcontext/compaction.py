"""The compaction engine: one ladder from the cheapest step to the most lossy, driven by one
policy, with an event per stage.

(a) tool-result budgets → (b) clear old tool results → (c) summarize older history (staged when
the summarizer's own window is too small) → (e) drop the oldest whole groups as a last resort.
Each stage stops the ladder once the conversation is under the target. Recent messages are kept
raw, taken from the original conversation; the originals of everything that leaves stay in the
session log.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Literal

from agentcontext import _checks
from agentcontext._core import Conversation, count_tokens, truncate
from agentcontext.budgets import FileReader, ResultStore, result_text
from agentcontext.errors import (
    ArgumentTypeError,
    BudgetError,
    CompactionError,
    FileReadError,
    OptionError,
)
from agentcontext.summarize import (
    HANDOFF_PROMPT,
    OfflineSummarizer,
    Summarizer,
    SummaryRequest,
    join_summaries,
    strip_scratchpad,
    summary_message,
)
from agentcontext.types import Encoding

if TYPE_CHECKING:
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


#: Room kept for the user marker that replaces dropped messages when the kept part would
#: otherwise open with the assistant.
DROP_MARKER_TOKENS = 48

#: The least a summary is cut to (tokens) when the last round does not fit beside it whole.
MIN_SUMMARY_TOKENS = 32


def _results_only(message: Mapping[str, Any]) -> bool:
    """A user message that only carries tool results (Anthropic), not a request."""
    content = message.get("content")
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


@dataclass(frozen=True)
class CompactionPolicy:
    """Everything the ladder needs to know. Sizes are tokens unless named ``_chars``; ``trigger``
    and ``target`` are tokens, or fractions of the context window when below 1.

    Every field can be overridden by an environment variable ``AGENTCONTEXT_COMPACT__<FIELD>``
    (for example ``AGENTCONTEXT_COMPACT__PRESERVE_RECENT_MESSAGES=20``) through :meth:`from_env`,
    which :class:`Compactor` applies by default.
    """

    name: str = "openharness"
    context_window: int = 200_000
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

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("trigger", "target"):
                _checks.number(f.name, value, low_open=True)
            elif f.name == "result_budget_chars":
                _checks.optional_count(f.name, value)
            elif f.name == "per_tool_budget_chars":
                object.__setattr__(self, f.name, _checks.count_map(f.name, value))
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
        return min(self._tokens(self.trigger), self.available)

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
                       result_budget_chars=self.result_budget_chars or min(16_000, max(1_000, budget)))  # fmt: skip

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
                elif isinstance(current, int) and f.name not in ("trigger", "target"):
                    changes[f.name] = int(raw)
                elif f.name in ("trigger", "target"):
                    changes[f.name] = float(raw)
                elif f.name == "result_budget_chars":
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
            except (ValueError, json.JSONDecodeError):
                raise OptionError(
                    f"{ENV_PREFIX}{f.name.upper()}={raw!r} is not a valid {type(current).__name__}"
                ) from None
        return replace(self, **changes) if changes else self


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
            keep_recent_tokens=20_000, clear_tool_results=False, tool_result_budgets=False,
            note="trigger at window - 16,384; keep the last ~20,000 tokens raw; summary as a user message",
        ),
        CompactionPolicy(
            "openclaw",
            trigger=0.5, target=0.4, preserve_recent_messages=12, preserve_recent_tools=3, summarizer_window=32_000,
            note="history over 50% of the window; an LLM summarizer gets older history in equal-token-share parts, then merges",
        ),
        CompactionPolicy(
            "claude-code",
            reserved_output=13_000, safety_margin=0, trigger=1.0, target=1.0, preserve_recent_messages=0,
            preserve_recent_tools=0, clear_tool_results=False, reattach_files=5, reattach_tokens=50_000,
            note="trigger at window - 13,000; summary of all but the last round; re-attach up to 5 read files",
        ),
        CompactionPolicy(
            "codex",
            trigger=0.9, target=0.9, preserve_recent_messages=0, keep_recent_tokens=20_000,
            clear_tool_results=False, result_budget_chars=40_000,
            note="auto-compact near 90%; summary replaces history, the last ~20,000 tokens stay",
        ),
        CompactionPolicy(
            "letta",
            trigger=0.9, target=0.7, preserve_recent_messages=0, keep_recent_tokens=0, result_budget_chars=5_000,
            clear_tool_results=False,
            note="trigger at 90%, target 70%; tool returns cut to 5,000 chars",
        ),
        CompactionPolicy(
            "goose",
            trigger=0.8, target=0.5, preserve_recent_messages=2, clear_tool_results=False,
            note="auto-compact at 80%; keep the latest exchange raw",
        ),
    ]
}  # fmt: skip


@dataclass(frozen=True)
class StageEvent:
    """One stage of the ladder: what it did and the tokens before and after."""

    stage: Literal["budgets", "clear", "summarize", "drop", "skip"]
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

    def __post_init__(self) -> None:
        if self.origins is None:
            same = self.summary is None and len(self.conversation) == len(self.original)
            object.__setattr__(self, "origins", list(range(len(self.original))) if same else list(self.provenance))

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
        start = self.original.preamble
        out = []
        for i in range(len(self.original)):
            if i in kept:
                out.append("kept")
            elif i in changed:
                out.append("changed")
            elif summarized and start <= i < (self.first_kept or 0):
                out.append("summarized")
            else:
                out.append("dropped")
        return out

    def _repr_html_(self) -> str:
        from agentcontext.display import result_repr_html

        return result_repr_html(self)

    def to_dict(self) -> dict[str, Any]:
        fates = self.fates()
        return {
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "budget": self.budget,
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
    no fallback). ``files`` re-reads recently read files after a summary (None: no re-attach)."""

    def __init__(
        self,
        policy: CompactionPolicy | str = "openharness",
        *,
        summarizer: Summarizer | None = None,
        fallback: Summarizer | None = OfflineSummarizer(),  # noqa: B008 - stateless default
        files: FileReader | None = None,
        environ: Mapping[str, str] | None = None,
        store: ResultStore | None = None,
    ) -> None:
        self.policy = resolve_policy(policy).from_env(environ)
        #: Where the originals of what a compaction cuts, clears, summarizes or drops are kept,
        #: so that every id its markers name can be recalled (:class:`agentcontext.Recall`).
        #: Without one, the markers say that the originals are not stored.
        self.store = store
        self.summarizer: Summarizer = summarizer or OfflineSummarizer()
        self.fallback = fallback
        self.files = files
        self.last: CompactionResult | None = None
        self._turns_since = 0

    # -- auto ------------------------------------------------------------------------------

    def maybe_compact(self, conv: Conversation, *, scale: float = 1.0, overhead: int = 0) -> CompactionResult | None:
        """Compact if the conversation is over the trigger, unless an anti-loop guard says no:
        the cooldown has not passed, or the previous compaction did not shrink the context and
        nothing has grown since. Call it before every model call. ``scale``: provider tokens per
        local token (see :meth:`CompactionPolicy.scaled`). ``overhead``: local tokens every
        request carries outside the conversation — system prompt, tool definitions (see
        :meth:`CompactionPolicy.with_overhead`)."""
        _conversation(conv)
        _checks.number("scale", scale, low_open=True)
        _checks.count("overhead", overhead)
        self._turns_since += 1
        p = self.policy.scaled(scale).with_overhead(overhead)
        if conv.tokens <= p.trigger_tokens:
            return None
        last = self.last
        if last is not None:
            if self._turns_since <= p.cooldown_turns and conv.tokens <= p.available:
                return None
            if last.tokens_after >= last.tokens_before and conv.tokens <= last.tokens_after:
                return None
        result = self.compact(conv, scale=scale, overhead=overhead)
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
    ) -> CompactionResult:
        """Run the ladder on ``conv``. Auto mode (default) stops at the first stage that brings the
        conversation under the target and keeps the cleared conversation when summarizing fails;
        ``manual`` (a user's /compact) always summarizes, keeps only the last
        ``manual_keep_messages`` raw, and raises :class:`CompactionError` on failure, leaving the
        history unchanged. Token counts are recomputed after every stage. ``overhead``: local
        tokens every request carries outside the conversation (system prompt, tool definitions);
        they come off the window, or off ``budget``, before the conversation is fitted."""
        _conversation(conv)
        _checks.number("scale", scale, low_open=True)
        _checks.count("overhead", overhead)
        if budget is not None:
            budget = parse_budget(budget, conv.tokens)
        p = (self.policy if budget is None else self.policy.for_budget(budget)).scaled(scale).with_overhead(overhead)
        limit = p.available
        target = limit if manual else p.target_tokens
        before = conv.tokens
        stages: list[StageEvent] = []
        work = conv
        provenance: list[int | None] = list(range(len(conv)))

        def done(result_conv: Conversation, prov: list[int | None], **kw: Any) -> CompactionResult:
            fits = result_conv.tokens <= limit
            reason = kw.pop("reason", None)
            if not fits and reason is None:
                reason = f"{result_conv.tokens:,} tokens remain over the budget of {limit:,}"
            return CompactionResult(
                result_conv, conv, stages, before, result_conv.tokens, limit, fits, prov, reason=reason, **kw
            )

        if not manual and before <= target:
            stages.append(StageEvent("skip", before, before, {"why": "under the target"}))
            return done(conv, provenance)

        # (a) tool-result budgets
        if p.tool_result_budgets and work.tool_results_over(p.result_budget, per_tool=dict(p.per_tool_budget_chars)):
            cut_conv, cut = work.truncate_tool_results(
                p.result_budget, per_tool=dict(p.per_tool_budget_chars), recall_ids=self.store is not None
            )
            self._keep_results(conv, cut)
            if cut:
                changed = {c["index"] for c in cut}
                provenance = [None if i in changed else provenance[i] for i in range(len(cut_conv))]
                stages.append(StageEvent("budgets", work.tokens, cut_conv.tokens, {"results_cut": len(cut)}))
                work = cut_conv
                if not manual and work.tokens <= target:
                    return done(work, provenance)

        # (b) clear old tool results
        def clear(work: Conversation, provenance: list[int | None]) -> tuple[Conversation, list[int | None]]:
            cleared_conv, report = work.clear_tool_results(
                recall_ids=self.store is not None,
                recent_messages=p.preserve_recent_messages,
                recent_tools=p.preserve_recent_tools,
                clear_at_least=p.clear_at_least,
                exclude_tools=list(p.exclude_tools),
                clear_tool_inputs=p.clear_tool_inputs,
                keep_thinking=p.keep_thinking,
            )
            self._keep_results(conv, report["cleared"])
            if not report["cleared"]:
                return work, provenance
            changed = {c["index"] for c in report["cleared"]}
            stages.append(
                StageEvent(
                    "clear",
                    work.tokens,
                    cleared_conv.tokens,
                    {"results_cleared": len(report["cleared"]), "tokens_freed": report["tokens_freed"]},
                )
            )
            return cleared_conv, [None if i in changed else provenance[i] for i in range(len(cleared_conv))]

        deferred_clear = False
        if p.clear_tool_results and not manual:
            # When even clearing every old result cannot reach the target and the summarizer
            # reads the originals anyway, clearing would change nothing in the result: it is
            # done only if the summary fails.
            floor = work.tokens - work.clearable_tokens(
                recent_messages=p.preserve_recent_messages,
                recent_tools=p.preserve_recent_tools,
                exclude_tools=list(p.exclude_tools),
            )
            if floor > target and p.summarize and not getattr(self.summarizer, "window_bound", True):
                deferred_clear = True
                stages.append(
                    StageEvent(
                        "clear",
                        work.tokens,
                        work.tokens,
                        {"deferred": f"clearing every old result leaves at least {floor:,} tokens, over the target"},
                    )
                )
            else:
                work, provenance = clear(work, provenance)
                if work.tokens <= target:
                    return done(work, provenance)

        # (c) summarize older history
        if p.summarize or manual:
            outcome = self._summarize(conv, work, provenance, p, manual, stages, target)
            if outcome is not None:
                summarized, summarized_prov, summary, first_kept = outcome
                if summarized.tokens <= limit or not p.drop_oldest_groups:
                    return done(summarized, summarized_prov, summary=summary, first_kept=first_kept)
                # The recent messages kept raw do not fit beside the summary: keep fewer of them,
                # summarizing the rest, before dropping anything unsummarized.
                refit = self._refit(conv, p, limit, stages, done, drop_unsummarized=False)
                if not isinstance(refit, str):
                    return refit
                return self._drop(
                    conv, summarized, summarized_prov, p, limit, stages, done, summary=summary, first_kept=first_kept
                )
        if deferred_clear:
            work, provenance = clear(work, provenance)

        # (e) last resort: drop the oldest whole groups (after summarizing them, when the policy
        # summarizes and the usual split left nothing older to summarize)
        if p.drop_oldest_groups and work.tokens > limit:
            if p.summarize or manual:
                refit = self._refit(conv, p, limit, stages, done, drop_unsummarized=False)
                if not isinstance(refit, str):
                    return refit
            return self._drop(conv, work, provenance, p, limit, stages, done, summary=None)
        return done(work, provenance)

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

    def _keep_span(self, conv: Conversation, start: int, stop: int) -> str | None:
        """Store messages ``start:stop`` of ``conv`` (JSON Lines in its format, one message a line)
        and return their recall id; None without a store."""
        if self.store is None:
            return None
        lines = [json.dumps(m, ensure_ascii=False) for items in conv.slice(start, stop)._export_each() for m in items]
        return self.store.put("\n".join(lines) + "\n")

    def _summarize(
        self,
        original: Conversation,
        work: Conversation,
        provenance: list[int | None],
        p: CompactionPolicy,
        manual: bool,
        stages: list[StageEvent],
        target: int,
        cut: int | None = None,
        reattach: bool = True,
    ) -> tuple[Conversation, list[int | None], str, int] | None:
        preamble = work.preamble
        keep = p.manual_keep_messages if manual else p.preserve_recent_messages
        if cut is None:
            cut = work._recent_start(keep_messages=keep, keep_tokens=0 if manual else p.keep_recent_tokens)
        if cut <= preamble:
            why = "nothing older than the recent messages to summarize"
            if manual:
                raise CompactionError(why)
            stages.append(StageEvent("summarize", work.tokens, work.tokens, {"failed": why}))
            return None
        totals = work.message_tokens()
        older_tokens = sum(totals[preamble:cut])
        # Earlier summaries in the older part are updated, not nested.
        previous = next(reversed(work._summaries(preamble, cut)), None)
        max_tokens = max(64, min(p.summary_max_tokens, older_tokens - 1))
        request = SummaryRequest(work, preamble, cut, previous, max_tokens, encoding=p.encoding, original=original)
        summary, failure = self._run_summarizer(self.summarizer, request, p)
        used = type(self.summarizer).__name__
        if summary is None and not manual and self.fallback is not None and self.fallback is not self.summarizer:
            summary, fallback_failure = self._run_summarizer(self.fallback, request, p)
            used = type(self.fallback).__name__
            failure = failure if summary is None else f"{failure}; used the fallback"
            if summary is None:
                failure = f"{failure}; fallback: {fallback_failure}"
        if summary is None:
            if manual:
                raise CompactionError(f"summary failed: {failure}; history unchanged")
            stages.append(StageEvent("summarize", work.tokens, work.tokens, {"failed": failure}))
            return None
        # The new working set: system messages, the summary, re-attached files, pinned messages
        # from the older part, then the recent messages taken from the ORIGINAL conversation.
        # The ladder's earlier stages change contents, never positions: `cut` is also the
        # position in the original.
        first_kept = cut
        recent = original.slice(first_kept)
        message = summary_message(
            summary, messages=cut - preamble, tokens=older_tokens, recall_id=self._keep_span(original, preamble, cut)
        )
        head = [message, *(self._reattach(original, preamble, cut, p) if reattach else [])]
        parts = [original.slice(0, preamble), Conversation(head, format=work.format, encoding=work.encoding)]
        new_prov: list[int | None] = list(range(preamble)) + [None] * len(head)
        for i in original.pinned:
            if preamble <= i < first_kept and not original[i].get("tool_calls") and original[i]["role"] != "tool":
                parts.append(original.slice(i, i + 1))
                new_prov.append(i)
        parts.append(recent)
        new_prov += list(range(first_kept, len(original)))
        new = Conversation.concat(parts)
        detail = {
            "summarized_messages": cut - preamble,
            "summarized_tokens": older_tokens,
            "summary_tokens": count_tokens(summary, encoding=p.encoding),
            "summarizer": used,
            "kept_raw": len(recent),
        }
        if failure:
            detail["note"] = failure
        stages.append(StageEvent("summarize", work.tokens, new.tokens, detail))
        return new, new_prov, summary, first_kept

    def recompile(self, conv: Conversation, budget: int | str) -> CompactionResult:
        """The recovery from a provider's prompt-too-long error: the largest protocol-complete
        recent suffix that fits ``budget`` (less room for the summary) is kept raw and everything
        older is summarized (falling back as in auto mode; dropped only if no summary can be
        made). Never splits a round.

        Raises:
            CompactionError: the last round alone does not fit, or there is nothing older to
                summarize or drop.
        """
        budget = parse_budget(budget, _conversation(conv).tokens)
        stages: list[StageEvent] = []
        before = conv.tokens

        def done(result_conv: Conversation, prov: list[int | None], **kw: Any) -> CompactionResult:
            fits = result_conv.tokens <= budget
            reason = kw.pop("reason", None) or (
                None if fits else f"{result_conv.tokens:,} tokens remain over {budget:,}"
            )
            return CompactionResult(
                result_conv, conv, stages, before, result_conv.tokens, budget, fits, prov, reason=reason, **kw
            )

        outcome = self._refit(conv, self.policy, budget, stages, done, drop_unsummarized=True)
        if isinstance(outcome, str):
            raise CompactionError(outcome)
        return outcome

    def _refit(
        self,
        conv: Conversation,
        p: CompactionPolicy,
        budget: int,
        stages: list[StageEvent],
        done: Callable[..., CompactionResult],
        *,
        drop_unsummarized: bool,
    ) -> CompactionResult | str:
        """Keep the largest recent suffix of the original that fits ``budget`` with room for a
        summary, and summarize everything before it. Returns why not when the last round alone
        does not fit, nothing is older, or (unless ``drop_unsummarized``) no summary was made."""
        room = max(64, min(p.summary_max_tokens, budget // 4))
        s = conv.recent_suffix(max(0, budget - room))
        if s["overflow"] is not None:
            lo, hi = s["overflow"]
            left = max(0, budget - room)
            return (
                f"the last round alone ({conv.slice(lo, hi).tokens:,} tokens) is larger than the {left:,} tokens "
                f"left of the budget of {budget:,} after {room:,} kept for the summary; a round is never split"
            )
        pre, start = s["preamble"], s["start"]
        if start <= pre:
            return f"nothing older than the last round to remove ({conv.tokens:,} tokens, budget {budget:,})"
        provenance: list[int | None] = list(range(len(conv)))
        tight = replace(p, summary_max_tokens=room)
        outcome = self._summarize(conv, conv, provenance, tight, False, stages, budget, cut=start, reattach=False)
        if outcome is not None:
            work, prov, summary, first_kept = outcome
            stages[-1].detail["kept"] = "the largest recent suffix that fits the budget with the summary"
            if work.tokens <= budget:
                return done(work, prov, summary=summary, first_kept=first_kept)
            return self._drop(conv, work, prov, p, budget, stages, done, summary=summary, first_kept=first_kept)
        if not drop_unsummarized:
            return "no summary could be made"
        kept = Conversation.concat([conv.slice(0, pre), conv.slice(start)])
        stages.append(StageEvent("drop", conv.tokens, kept.tokens, {"dropped_messages": start - pre}))
        return done(kept, provenance[:pre] + provenance[start:], first_kept=start)

    def _run_summarizer(
        self, summarizer: Summarizer, request: SummaryRequest, p: CompactionPolicy
    ) -> tuple[str | None, str | None]:
        """The accepted summary, or None and why not. Staged (parts of equal token share, then a
        merge) when the older history does not fit a window-bound summarizer's window; accepted
        only if non-empty and smaller than what it replaces, and cut to the size cap."""
        # A summarizer that knows its own model's window (an LLM summarizer) plans with it.
        window = getattr(summarizer, "context_window", None) or p.summarizer_window
        room = window - p.reserved_output - count_tokens(HANDOFF_PROMPT)
        window_bound = getattr(summarizer, "window_bound", True)
        try:
            if not window_bound or request.tokens <= room:
                raw = summarizer.summarize(request)
            else:
                older = request.older
                parts = older.split(max(2, math.ceil(request.tokens / max(room, 1))))
                partial = [
                    summarizer.summarize(
                        SummaryRequest(
                            older, lo, hi, request.previous_summary if k == 0 else None, request.max_tokens,
                            encoding=p.encoding, context={"part": k + 1, "parts": len(parts)},
                        )
                    )
                    for k, (lo, hi) in enumerate(parts)
                ]  # fmt: skip
                merged = Conversation(
                    [{"role": "user", "content": join_summaries([strip_scratchpad(x) for x in partial])}],
                    encoding=p.encoding,
                )
                raw = summarizer.summarize(
                    SummaryRequest(merged, 0, 1, None, request.max_tokens, encoding=p.encoding, context={"merge": True})
                )
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
            summary = truncate(
                summary, request.max_tokens, unit="tokens", strategy="head_tail", head_share=0.7, encoding=p.encoding
            ).text
        return summary, None

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

    def _drop(
        self,
        original: Conversation,
        work: Conversation,
        provenance: list[int | None],
        p: CompactionPolicy,
        limit: int,
        stages: list[StageEvent],
        done: Callable[..., CompactionResult],
        summary: str | None,
        first_kept: int | None = None,
    ) -> CompactionResult:
        if summary is not None and first_kept is not None:
            return self._drop_beside_summary(original, work, provenance, p, limit, stages, done, summary, first_kept)
        s = work.recent_suffix(limit)
        overflow = s["overflow"]
        if overflow is not None:
            lo, hi = overflow
            need = work.slice(lo, hi).tokens
            stages.append(StageEvent("drop", work.tokens, work.tokens, {"failed": "the last round does not fit"}))
            return done(
                work,
                provenance,
                summary=summary,
                reason=f"the last round alone ({need:,} tokens) is larger than the budget of {limit:,}; it is never split",
            )
        pre, start = s["preamble"], s["start"]
        marker: list[Conversation] = []
        if pre < start < len(work) and work[start]["role"] != "user":
            # A kept part that opens with the assistant leaves the model without the request it
            # answers, and Anthropic rejects it ("first message must use the user role"): a user
            # marker says what was dropped, with the suffix fitted to leave room for it. When
            # even that does not fit, fitting the budget comes first.
            refit = work.recent_suffix(max(0, limit - DROP_MARKER_TOKENS))
            if refit["overflow"] is None and refit["start"] > pre:
                at = refit["start"]
                dropped = sum(work.message_tokens()[pre:at])
                span = self._keep_span(work, pre, at)
                where = f"recall id {span} gives the originals" if span else "the originals are not stored"
                text = (
                    f"[agentcontext: {at - pre:,} earlier messages ({dropped:,} tokens) "
                    f"were dropped to fit the context window; {where}.]"
                )
                note = Conversation([{"role": "user", "content": text}], format=work.format, encoding=work.encoding)
                if work.tokens - dropped + note.tokens <= limit:
                    start, marker = at, [note]
        kept = Conversation.concat([work.slice(0, pre), *marker, work.slice(start)])
        new_prov = provenance[:pre] + [None] * len(marker) + provenance[start:]
        # Before a summary, positions in `work` are positions in the original.
        origins: list[int | None] = [*range(pre), *[None] * len(marker), *range(start, len(work))]
        stages.append(StageEvent("drop", work.tokens, kept.tokens, {"dropped_messages": start - pre}))
        first = next((q for q in origins[pre:] if q is not None), len(original))
        return done(kept, new_prov, summary=summary, first_kept=first, origins=origins)

    def _drop_beside_summary(
        self,
        original: Conversation,
        work: Conversation,
        provenance: list[int | None],
        p: CompactionPolicy,
        limit: int,
        stages: list[StageEvent],
        done: Callable[..., CompactionResult],
        summary: str,
        first_kept: int,
    ) -> CompactionResult:
        """The drop stage after a summary: the summary is never dropped. Re-attached files go
        first, then the oldest recent raw messages (the latest user request is kept while the
        rounds after it fit beside it); when even the last round does not fit beside the summary,
        the summary is cut to the room left."""
        pre = work.preamble
        totals = work.message_tokens()
        n = len(work)
        # The summary sits right after the preamble; re-attached files follow it; pinned messages
        # of the older part, then the recent messages, taken unchanged from the original.
        recent_at = next((i for i in range(pre + 1, n) if (provenance[i] or -1) >= first_kept), n)
        fixed = [*range(pre), pre, *(i for i in range(pre + 1, recent_at) if provenance[i] is not None)]
        fixed_tokens = sum(totals[i] for i in fixed)
        recent = work.slice(recent_at)
        s = recent.recent_suffix(max(0, limit - fixed_tokens))
        detail: dict[str, Any] = {}
        head = work.slice(pre, pre + 1)
        if s["overflow"] is None:
            start = recent_at + s["start"]
            keep = [*fixed, *range(start, n)]
            # The latest user request, when the suffix left it out, is kept beside the rounds
            # after it that fit.
            request = next(
                (
                    i
                    for i in range(n - 1, recent_at - 1, -1)
                    if work[i]["role"] == "user" and not _results_only(work[i])
                ),
                None,
            )
            if request is not None and request < start:
                s2 = recent.recent_suffix(max(0, limit - fixed_tokens - totals[request]))
                if s2["overflow"] is None and recent_at + s2["start"] > request:
                    keep = [*fixed, request, *range(recent_at + s2["start"], n)]
        else:
            lo = recent_at + s["overflow"][0]
            keep = [*fixed, *range(lo, n)]
            # The last round does not fit beside the summary: cut the summary to the room left.
            content = str(work[pre].get("content") or "")
            header = content.split("\n\n", 1)[0]
            others = sum(totals[i] for i in keep) - totals[pre]
            overhead = totals[pre] - count_tokens(summary, encoding=p.encoding)
            room = limit - others - overhead
            cut: str | None = None
            if room >= MIN_SUMMARY_TOKENS:
                for _ in range(3):
                    try:
                        cut = truncate(
                            summary, room, unit="tokens", strategy="head_tail", head_share=0.7, encoding=p.encoding
                        ).text
                    except BudgetError:
                        # Less room than the truncation marker takes: the last cut that fit stays.
                        break
                    message = {"role": "user", "content": f"{header}\n\n{cut}"}
                    head = Conversation([message], format=work.format, encoding=work.encoding)
                    over = others + head.tokens - limit
                    if over <= 0:
                        break
                    room -= over
            if cut is not None:
                summary = cut
                detail["summary_cut_to_tokens"] = count_tokens(cut, encoding=p.encoding)
        parts = [work.slice(0, pre), head, *(work.slice(i, i + 1) for i in keep[pre + 1 :])]
        kept = Conversation.concat(parts)
        new_prov = [provenance[i] if i != pre else None for i in keep]
        detail = {"dropped_messages": n - len(keep), **detail}
        stages.append(StageEvent("drop", work.tokens, kept.tokens, detail))
        reason = None
        if kept.tokens > limit:
            reason = (
                f"the last round and pinned messages ({sum(totals[i] for i in keep[pre + 1 :]):,} tokens), the system "
                f"messages and the summary ({head.tokens:,} tokens) are larger than the budget of {limit:,}; "
                "a round is never split"
            )
        return done(kept, new_prov, summary=summary, first_kept=first_kept, reason=reason)


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
