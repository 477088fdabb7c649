"""Prompt-cache economics: what a request costs, and whether clearing old tool results pays.

Providers bill the tokens of a request three ways: a prefix equal to a recent request's is a
*cache read* (about a tenth of the input price), the rest is written to the cache (Anthropic
charges a premium for writing, 1.25* input for the 5-minute cache; OpenAI caches automatically at
the input price) or billed as plain input. Clearing old tool results makes every later request
smaller, but it changes the prefix at the first cleared message: everything after it is written
again once. :func:`clearing_pays` weighs the two:

    keep:  remaining_turns * saved * read          (the cleared tokens would be read every turn)
    clear: rewritten * (write - read)              (the changed suffix is written once, not read)

where ``saved`` is the tokens clearing removes and ``rewritten`` the tokens after the first edit
that remain. When the cached prefix has gone cold (more than the cache's TTL since the last call),
the suffix is written again anyway, so clearing costs nothing extra and always pays.

Prices are in US dollars per million tokens. :data:`PRICES` holds the published list prices of
common models (checked 2026-11; override them with your own :class:`Prices`).

The compaction ladder asks :func:`clear_rung` before its clear rung changes anything, when its
policy has ``prices`` (:class:`~agentcontext.CompactionPolicy`; off by default); ``agentcontext
eval`` prices each strategy's replayed requests under :data:`EVAL_PRICES` (``--prices``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from agentcontext import _checks
from agentcontext.errors import ArgumentTypeError, OptionError
from agentcontext.types import ClearDecision, CostDict

if TYPE_CHECKING:
    from agentcontext._core import Conversation

__all__ = [
    "DEFAULT_REMAINING_TURNS",
    "EVAL_PRICES",
    "PRICES",
    "ClearingDecision",
    "Cost",
    "Prices",
    "clear_rung",
    "clearing_pays",
    "price_tables",
    "prices_for",
    "requests_cost",
    "resolve_prices",
]

#: The further requests a session is expected to make when the clearing decision is given no
#: ``remaining_turns`` (:attr:`agentcontext.CompactionPolicy.remaining_turns`).
DEFAULT_REMAINING_TURNS = 20.0

#: The price tables ``agentcontext eval`` reports by default: one Anthropic, one OpenAI model.
EVAL_PRICES = ("claude-sonnet-4-5", "gpt-5")


@dataclass(frozen=True)
class Prices:
    """Per-million-token prices of one model, and how long its prompt cache stays warm."""

    input: float
    """Uncached input (also the write price where writing the cache costs nothing extra)."""
    cache_write: float
    cache_read: float
    output: float = 0.0
    cache_ttl_seconds: float = 300.0
    """How long a cached prefix stays readable after its last use."""
    name: str = ""

    def __post_init__(self) -> None:
        for field_name in ("input", "cache_write", "cache_read", "output"):
            _checks.number(field_name, getattr(self, field_name))
        _checks.number("cache_ttl_seconds", self.cache_ttl_seconds)
        if self.cache_read > self.cache_write:
            raise OptionError(
                f"cache_read ({self.cache_read}) must not exceed cache_write ({self.cache_write}): "
                "a cache that costs more to read than to write never pays"
            )

    def cost(self, *, read: int = 0, written: int = 0, output: int = 0) -> float:
        """Dollars for ``read`` cached input tokens, ``written`` input tokens written to the cache
        (or billed as plain input), and ``output`` output tokens."""
        read = _checks.count("read", read)
        written = _checks.count("written", written)
        output = _checks.count("output", output)
        return (read * self.cache_read + written * self.cache_write + output * self.output) / 1e6

    def one_hour(self) -> Prices:
        """This table with Anthropic's 1-hour cache: writes at 2* the input price, a 3,600 s TTL
        (named ``<name>@1h``; ``prices_for("claude-sonnet-4-5@1h")`` gives it).

        Raises:
            OptionError: a table without a write premium (OpenAI's: use ``@24h``, extended retention).
        """
        if self.cache_write <= self.input:
            raise OptionError(
                f"{self.name or 'this table'} has no cache-write premium: the 1-hour cache is Anthropic's"
            )
        return replace(self, cache_write=2 * self.input, cache_ttl_seconds=3_600.0, name=f"{self.name}@1h")

    def extended(self) -> Prices:
        """This table with OpenAI's extended prompt-cache retention (``prompt_cache_retention="24h"``):
        a 24-hour TTL, writes still at the input price (named ``<name>@24h``).

        Raises:
            OptionError: a table with a write premium (Anthropic's: use ``@1h``).
        """
        if self.cache_write > self.input:
            raise OptionError(f"{self.name or 'this table'} bills cache writes: its long cache is @1h")
        return replace(self, cache_ttl_seconds=86_400.0, name=f"{self.name}@24h")

    def breakdown(self, *, read: int = 0, written: int = 0, output: int = 0) -> Cost:
        """:meth:`cost` by part: what the cache reads, the writes and the output cost."""
        return Cost(
            self.name,
            _checks.count("read", read),
            _checks.count("written", written),
            _checks.count("output", output),
            read * self.cache_read / 1e6,
            written * self.cache_write / 1e6,
            output * self.output / 1e6,
        )


#: List prices (USD per million tokens) by model family. Anthropic's cache writes are the
#: 5-minute cache's (1.25* input); OpenAI writes at the input price and reads at its cached-input
#: price.
PRICES: dict[str, Prices] = {
    "claude-opus-4-5": Prices(5.00, 6.25, 0.50, 25.00, name="claude-opus-4-5"),
    "claude-sonnet-4-5": Prices(3.00, 3.75, 0.30, 15.00, name="claude-sonnet-4-5"),
    "claude-haiku-4-5": Prices(1.00, 1.25, 0.10, 5.00, name="claude-haiku-4-5"),
    "gpt-5": Prices(1.25, 1.25, 0.125, 10.00, name="gpt-5"),
    "gpt-5-mini": Prices(0.25, 0.25, 0.025, 2.00, name="gpt-5-mini"),
    "gpt-4.1": Prices(2.00, 2.00, 0.50, 8.00, name="gpt-4.1"),
    "gpt-4o": Prices(2.50, 2.50, 1.25, 10.00, name="gpt-4o"),
}


def prices_for(model: str) -> Prices:
    """The :data:`PRICES` entry whose name is the longest prefix of ``model`` (a dated model id
    such as ``claude-sonnet-4-5-20250929`` finds ``claude-sonnet-4-5``); ``@1h`` after it: the
    1-hour cache (:meth:`Prices.one_hour`), ``@24h``: OpenAI's extended retention (:meth:`Prices.extended`)."""
    if not isinstance(model, str):
        raise OptionError(f"model must be a string, got {type(model).__name__}")
    base, _, ttl = model.partition("@")
    if ttl:
        longer = {"1h": Prices.one_hour, "24h": Prices.extended}.get(ttl)
        if longer is None:
            raise OptionError(f"unknown cache TTL {ttl!r} in {model!r} (expected @1h or @24h)")
        return longer(prices_for(base))
    matches = [name for name in PRICES if model.startswith(name)]
    if not matches:
        raise OptionError(f"no prices for model {model!r}; known: {', '.join(PRICES)} (or pass your own Prices)")
    return PRICES[max(matches, key=len)]


def resolve_prices(prices: Prices | str) -> Prices:
    """``prices`` itself, or the :data:`PRICES` entry of a model name (see :func:`prices_for`)."""
    if isinstance(prices, Prices):
        return prices
    if isinstance(prices, str):
        return prices_for(prices)
    raise ArgumentTypeError(f"prices must be a Prices or a model name, got {type(prices).__name__}")


def price_tables(tables: str | Sequence[Prices | str] | None = None) -> list[Prices]:
    """Price tables: model names separated by commas (``"claude-sonnet-4-5,gpt-5"``; ``""`` or
    ``"none"``: no table), a sequence of model names and :class:`Prices`, or None for
    :data:`EVAL_PRICES`. A table named twice is listed once.

    Raises:
        OptionError: a model has no prices, or two different tables have the same name.
    """
    if tables is None:
        tables = EVAL_PRICES
    if isinstance(tables, str):
        tables = [] if tables.strip().lower() in ("", "none") else [t.strip() for t in tables.split(",") if t.strip()]
    if not isinstance(tables, Sequence):
        raise ArgumentTypeError(f"prices must be model names or Prices, got {type(tables).__name__}")
    out: dict[str, Prices] = {}
    for table in tables:
        resolved = resolve_prices(table)
        name = resolved.name or "custom"
        if name in out and out[name] != resolved:
            raise OptionError(f"two different price tables are named {name!r}: give each its own name")
        out[name] = resolved
    return list(out.values())


@dataclass(frozen=True)
class Cost:
    """What a sequence of requests cost under one price table (``prices``, its name): cached
    reads, writes (the cache-write price; where a provider has no write premium, as OpenAI, that
    is the uncached input price), output."""

    prices: str
    read_tokens: int
    written_tokens: int
    output_tokens: int
    read_dollars: float
    written_dollars: float
    output_dollars: float = 0.0

    @property
    def dollars(self) -> float:
        """The whole cost."""
        return self.read_dollars + self.written_dollars + self.output_dollars

    def to_dict(self) -> CostDict:
        return {
            "prices": self.prices,
            "read_tokens": self.read_tokens,
            "written_tokens": self.written_tokens,
            "output_tokens": self.output_tokens,
            "read_dollars": self.read_dollars,
            "written_dollars": self.written_dollars,
            "output_dollars": self.output_dollars,
            "dollars": self.dollars,
        }


def requests_cost(
    request_tokens: list[int], prefix_tokens: list[int], prices: Prices, *, output_tokens: int = 0
) -> Cost:
    """The cost of requests of ``request_tokens`` tokens, each of which shares ``prefix_tokens``
    with the previous one (as :class:`agentcontext.measure.metrics.Replay` measures them): the shared
    prefix is read from the cache, the rest written."""
    if len(request_tokens) != len(prefix_tokens):
        raise OptionError(
            f"request_tokens and prefix_tokens differ in length ({len(request_tokens)} vs {len(prefix_tokens)})"
        )
    read = sum(prefix_tokens)
    written = sum(r - p for r, p in zip(request_tokens, prefix_tokens, strict=True))
    if written < 0 or any(p > r for r, p in zip(request_tokens, prefix_tokens, strict=True)):
        raise OptionError("a request's cached prefix cannot be larger than the request")
    return prices.breakdown(read=read, written=written, output=output_tokens)


@dataclass(frozen=True)
class ClearingDecision:
    """Whether clearing now pays, with the two sides of the comparison in dollars."""

    clear: bool
    keep_dollars: float
    """What the tokens clearing would remove cost if kept: read from the cache every turn."""
    clear_dollars: float
    """What clearing costs: the changed suffix written again instead of read (0 when cold)."""
    reason: str

    @property
    def savings(self) -> float:
        """Dollars saved by the better choice over the other one."""
        return abs(self.keep_dollars - self.clear_dollars)


def clearing_pays(
    *,
    saved_tokens: int,
    rewritten_tokens: int,
    remaining_turns: float,
    prices: Prices,
    seconds_since_last_call: float | None = None,
    clear_at_least: int = 0,
) -> ClearingDecision:
    """Decide whether clearing tool results now is cheaper than keeping them.

    ``saved_tokens``: tokens the clearing removes. ``rewritten_tokens``: tokens after the first
    cleared message that remain (written to the cache again once). ``remaining_turns``: expected
    further requests in this session. ``seconds_since_last_call`` (None: warm) past the cache's TTL
    means the prefix is cold and will be written anyway. ``clear_at_least``: the smallest clearing
    worth making at all (Anthropic's ``clear_at_least``): below it, never clear.
    """
    saved = _checks.count("saved_tokens", saved_tokens)
    rewritten = _checks.count("rewritten_tokens", rewritten_tokens)
    turns = _checks.number("remaining_turns", remaining_turns)
    minimum = _checks.count("clear_at_least", clear_at_least)
    if not isinstance(prices, Prices):
        raise OptionError(f"prices must be a Prices, got {type(prices).__name__}")
    keep = turns * saved * prices.cache_read / 1e6
    if saved == 0 or saved < minimum:
        why = "nothing to clear" if saved == 0 else f"clears {saved:,} tokens, under clear_at_least {minimum:,}"
        return ClearingDecision(False, keep, math.inf, why)
    if seconds_since_last_call is not None:
        idle = _checks.number("seconds_since_last_call", seconds_since_last_call)
        if idle > prices.cache_ttl_seconds:
            return ClearingDecision(
                True, keep, 0.0, f"the cache is cold ({idle:.0f} s idle > {prices.cache_ttl_seconds:.0f} s TTL)"
            )
    cost = rewritten * (prices.cache_write - prices.cache_read) / 1e6
    if keep > cost:
        why = (
            f"reading {saved:,} tokens for {turns:g} more turn{'' if turns == 1 else 's'} costs ${keep:.4f}, "
            f"rewriting {rewritten:,} tokens once ${cost:.4f}"
        )
        return ClearingDecision(True, keep, cost, why)
    return ClearingDecision(
        False,
        keep,
        cost,
        f"rewriting {rewritten:,} tokens once costs ${cost:.4f}, more than reading {saved:,} tokens "
        f"for {turns:g} more turn{'' if turns == 1 else 's'} (${keep:.4f})",
    )


def clear_rung(
    prices: Prices | str | None,
    remaining_turns: float,
    *,
    before: Conversation,
    after: Conversation,
    first_changed: int,
    limit: int,
    clear_at_least: int = 0,
    seconds_since_last_call: float | None = None,
) -> tuple[bool, ClearDecision] | None:
    """The compaction ladder's clear rung asks this before clearing ``before`` into ``after``
    (whose first changed message is ``first_changed``): None without ``prices`` (clear, as
    without this hook); else whether to clear, and the detail of the stage event that says the
    decision and its numbers.

    :func:`clearing_pays` decides, with ``saved_tokens`` the tokens clearing frees and
    ``rewritten_tokens`` those of ``after`` from ``first_changed`` on. When it does not pay and
    ``before`` fits ``limit``, the answer is False: the rung leaves the conversation as it is, and
    the ladder stops there, since every later rung would change the cached prefix too. Over
    ``limit`` the conversation must shrink, so the answer is True whatever the prices (the detail
    says so).
    """
    if prices is None:
        return None
    table = resolve_prices(prices)
    sizes = after.message_tokens()
    if not 0 <= first_changed < len(sizes):
        raise OptionError(f"first_changed {first_changed} is not a message of the cleared conversation")
    saved = max(0, before.tokens - after.tokens)
    rewritten = sum(sizes[first_changed:])
    decision = clearing_pays(
        saved_tokens=saved,
        rewritten_tokens=rewritten,
        remaining_turns=remaining_turns,
        prices=table,
        seconds_since_last_call=seconds_since_last_call,
        clear_at_least=clear_at_least,
    )
    detail: ClearDecision = {
        "prices": table.name or "custom",
        "remaining_turns": remaining_turns,
        "saved_tokens": saved,
        "rewritten_tokens": rewritten,
        "keep_dollars": _rounded(decision.keep_dollars),
        "clear_dollars": _rounded(decision.clear_dollars),
    }
    if decision.clear:
        return True, {**detail, "pays": decision.reason}
    if before.tokens > limit:
        return True, {
            **detail,
            "does_not_pay": decision.reason,
            "cleared_anyway": f"over the limit of {limit:,} tokens",
        }
    return False, {**detail, "why": f"clearing does not pay: {decision.reason}"}


def _rounded(dollars: float) -> float | None:
    """Dollars to the micro-dollar for an event's detail; None when not finite (a clearing under
    ``clear_at_least``, or a product of huge numbers), which JSON cannot hold."""
    return round(dollars, 6) if math.isfinite(dollars) else None
