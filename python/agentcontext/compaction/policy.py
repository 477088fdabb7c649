"""The compaction policy: everything the ladder needs to know, in one frozen object with one
harness-options object (:class:`~agentcontext.compaction.harness.Harness`), and the budget parser."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol

from agentcontext import _checks
from agentcontext.budgets.windows import model_window
from agentcontext.compaction.harness import Harness, parse_option
from agentcontext.compaction.pricing import DEFAULT_REMAINING_TURNS, Prices, resolve_prices
from agentcontext.errors import ArgumentTypeError, OptionError
from agentcontext.types import Encoding

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "DROP_MARKER_TOKENS",
    "MIN_SUMMARY_TOKENS",
    "SUMMARY_HEADER_TOKENS",
    "CompactionPolicy",
    "parse_budget",
    "resolve_policy",
    "summary_cap",
]

ENV_PREFIX = "AGENTCONTEXT_COMPACT__"


def parse_budget(budget: str | int, total: int) -> int:
    """A token budget given as tokens (``8000``, ``"8,000"``) or as a share of ``total`` tokens
    (``"25%"``): the one parser of the CLI's ``--budget`` and of :meth:`Compactor.compact`. A float
    is taken only when it is a whole number (``8000.0``): ``0.5`` is not read as a share.

    Raises:
        OptionError: not a positive number of tokens or a percentage in (0, 100].
    """
    given: object = budget  # typed str | int; a caller may still pass a float (0.5, tokens * 0.25)
    if isinstance(given, float):
        if not given.is_integer():
            raise OptionError(
                f"budget {given!r} is not a whole number of tokens; give a share of the transcript as a "
                f"string such as '{given * 100:g}%'"
                if 0 < given < 1
                else f"budget must be a whole number of tokens or a percentage such as '25%', got {given!r}"
            )
        budget = int(given)
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
        raise OptionError(
            f"budget must be a positive number of tokens or a percentage in (0, 100], got {budget!r}"
        ) from None


class HasPolicy(Protocol):
    """Anything that carries a compaction policy (a :class:`~agentcontext.compaction.presets.Preset`)."""

    @property
    def compaction(self) -> CompactionPolicy: ...


def resolve_policy(strategy: str | CompactionPolicy | HasPolicy) -> CompactionPolicy:
    """A policy, the policy of a :class:`~agentcontext.compaction.presets.Preset`, or the preset of that name.

    Raises:
        OptionError: no preset has that name.
    """
    if isinstance(strategy, CompactionPolicy):
        return strategy
    # A Preset (its class wires the harnesses in, which the generic policy does not import).
    policy = getattr(strategy, "compaction", None)
    if isinstance(policy, CompactionPolicy):
        return policy
    if strategy not in _POLICIES:
        raise OptionError(f"unknown strategy {strategy!r} (expected one of: {', '.join(_POLICIES)})")
    return _POLICIES[strategy]


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
    (for example ``AGENTCONTEXT_COMPACT__RECENT_MESSAGES=20``) through :meth:`from_env`,
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
    recent_messages: int = 12
    recent_tools: int = 3
    #: Keep at least this many recent tokens raw as well (0: messages count only).
    recent_tokens: int = 0
    manual_recent_messages: int = 2
    #: Stage (a): cut every tool result to this many chars (None: min(16,000, 30% of window)).
    result_max_chars: int | None = None
    per_tool_max_chars: Mapping[str, int] = field(default_factory=dict)
    tool_result_budgets: bool = True
    #: Stage (b).
    clear_tool_results: bool = True
    clear_at_least: int = 0
    #: Results of these tools are never cleared.
    exclude_tools: tuple[str, ...] = ()
    #: Also replace the arguments of old calls (the calls whose results may be cleared: outside
    #: the protected set, tool not excluded; whether or not their results are cleared) by
    #: ``{"cleared": "[cleared: arguments of write(path=a.py, ...), 1,234 tokens; ...]"}``. Off
    #: in every preset: none of their harnesses clears call arguments.
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
    #: The task ledger (:mod:`agentcontext.compaction.ledger`): a message beside every summary that
    #: carries the live request, the user's rules verbatim, the files touched, commands, open
    #: errors and the plan across compactions, built by code; within a tenth of the target, at
    #: most ``ledger_max_tokens``. Off in the presets that reproduce another harness.
    ledger: bool = True
    ledger_max_tokens: int = 2_000
    #: Stage (e).
    drop_oldest_groups: bool = True
    #: Anti-loop: auto compaction waits this many turns after the previous one.
    cooldown_turns: int = 0
    encoding: Encoding = "o200k_base"
    note: str = ""
    #: Stage (b)'s cache economics, off without prices: with a :class:`~agentcontext.compaction.pricing.Prices`
    #: or a model name (``"claude-sonnet-4-5"``, see :data:`~agentcontext.compaction.pricing.PRICES`), old
    #: results are cleared only when that pays (:func:`~agentcontext.compaction.pricing.clear_rung`): the
    #: tokens freed, read ``remaining_turns`` more times, cost more than writing the changed suffix
    #: to the cache again; otherwise the ladder stops while the conversation fits.
    prices: Prices | str | None = None
    remaining_turns: float = DEFAULT_REMAINING_TURNS
    #: The harness whose compaction this policy reproduces: its own options and the hooks through
    #: which it changes rungs of the ladder (:class:`~agentcontext.compaction.harness.Harness`;
    #: the presets wire theirs in, :mod:`agentcontext.compaction.harnesses`). The base class: none.
    harness: Harness = Harness()  # noqa: RUF009 - frozen, shared safely

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("trigger", "target"):
                _checks.number(f.name, value, low_open=True)
            elif f.name == "result_max_chars":
                _checks.optional_count(f.name, value)
            elif f.name == "per_tool_max_chars":
                object.__setattr__(self, f.name, _checks.count_map(f.name, value))
            elif f.name == "prices":
                object.__setattr__(self, f.name, None if value is None else resolve_prices(value))
            elif f.name == "remaining_turns":
                _checks.number(f.name, value)
            elif f.name == "harness":
                if not isinstance(value, Harness):
                    raise ArgumentTypeError(f"harness must be a Harness, got {type(value).__name__}")
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
        return min(self._tokens(self.trigger), max(0, self.harness.trigger_limit(self.available)))

    @property
    def target_tokens(self) -> int:
        return min(self._tokens(self.target), self.trigger_tokens)

    @property
    def default_result_max_chars(self) -> int:
        if self.result_max_chars is not None:
            return self.result_max_chars
        return min(16_000, int(0.3 * self.context_window * 4))

    def for_budget(self, budget: int) -> CompactionPolicy:
        """This policy with a hard token budget: the conversation must end up within ``budget``."""
        _checks.count("budget", budget, minimum=1)
        return replace(self, context_window=budget, reserved_output=0, safety_margin=0, trigger=budget, target=budget,
                       harness=self.harness.for_budget(), result_max_chars=self.result_max_chars or min(16_000, max(1_000, budget)))  # fmt: skip

    def for_model(self, model: str, *, windows: Mapping[str, Any] | None = None) -> CompactionPolicy:
        """This policy for ``model``: its context window and counter from the window table
        (:func:`agentcontext.budgets.model_window`; ``windows`` maps names or prefixes to windows
        ahead of it), the output reserve no larger than the model's output limit when known.

        Raises:
            UnknownModelError: the model is neither in ``windows`` nor in the table.
        """
        entry = model_window(model, windows=windows)
        reserve = (
            self.reserved_output
            if entry.max_output_tokens is None
            else min(self.reserved_output, entry.max_output_tokens)
        )
        return replace(self, context_window=entry.context_window, encoding=entry.encoding, reserved_output=reserve)

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
        :class:`~agentcontext.measure.calibration.Calibration`): every absolute size is divided by it."""
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
            recent_tokens=s(self.recent_tokens),
            clear_at_least=s(self.clear_at_least),
            harness=self.harness.scaled(factor),
        )

    def from_env(self, environ: Mapping[str, str] | None = None) -> CompactionPolicy:
        """This policy with every ``AGENTCONTEXT_COMPACT__<FIELD>`` variable applied (a field of the
        policy or an option of its harness)."""
        environ = os.environ if environ is None else environ
        changes: dict[str, Any] = {}
        for f in fields(self):
            raw = environ.get(ENV_PREFIX + f.name.upper())
            if raw is not None and f.name != "harness":
                changes[f.name] = _env_value(f.name, raw, getattr(self, f.name))
        options: dict[str, Any] = {}
        for f in fields(self.harness):
            raw = environ.get(ENV_PREFIX + f.name.upper())
            if raw is None:
                continue
            try:
                options[f.name] = parse_option(f, raw)
            except ValueError:
                current = getattr(self.harness, f.name)
                raise OptionError(
                    f"{ENV_PREFIX}{f.name.upper()}={raw!r} is not a valid {type(current).__name__}"
                ) from None
        if options:
            changes["harness"] = replace(self.harness, **options)
        return replace(self, **changes) if changes else self


def _env_value(name: str, raw: str, current: Any) -> Any:
    """The value of policy field ``name`` (now ``current``) written as ``raw``."""
    try:
        if isinstance(current, bool):
            if raw.lower() not in ("1", "0", "true", "false", "yes", "no"):
                raise ValueError(raw)
            return raw.lower() in ("1", "true", "yes")
        if isinstance(current, int) and name not in ("trigger", "target"):
            return int(raw)
        if name in ("trigger", "target", "remaining_turns"):
            return float(raw)
        if name == "prices":
            return None if raw.lower() in ("", "none") else resolve_prices(raw)
        if name == "result_max_chars":
            return None if raw.lower() in ("", "none") else int(raw)
        if isinstance(current, str):
            return raw
        if isinstance(current, tuple):
            # Name lists, comma-separated.
            return tuple(x.strip() for x in raw.split(",") if x.strip())
        # Mappings (per-tool budgets) as JSON objects of integers.
        value = json.loads(raw)
        if not isinstance(value, dict) or not all(isinstance(v, int) for v in value.values()):
            raise ValueError(raw)
        return value
    except (ValueError, json.JSONDecodeError) as exc:
        what = f": {exc}" if name == "prices" else f" is not a valid {type(current).__name__}"
        raise OptionError(f"{ENV_PREFIX}{name.upper()}={raw!r}{what}") from None


def summary_cap(policy: CompactionPolicy, target: int) -> int:
    """The most tokens a summary may take when the working set is to be ``target`` tokens: a third
    of the target, at least 64 and at most the policy's ``summary_max_tokens`` (a 12,000-token
    budget allows a 4,000-token summary; 18,000 tokens and more allow the default cap of 6,000).
    The rest of the target goes to the raw recent part. Used when a budget is given; a live loop
    caps its summaries at ``summary_max_tokens``. (A fifth of the target filled the same but
    retained fewer probe facts on the shared corpus: 78.0% against 83.5% at 25%, openharness.)"""
    return max(64, min(policy.summary_max_tokens, target // 3))


#: Every preset's policy by name, internal (the order of :mod:`agentcontext.compaction.presets`,
#: which fills it when the package is imported: the presets wire the harnesses in, which this
#: module does not import; the public table is :data:`agentcontext.compaction.PRESETS`).
_POLICIES: dict[str, CompactionPolicy] = {}
