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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from agentcontext import _checks
from agentcontext.errors import OptionError

__all__ = ["PRICES", "ClearingDecision", "Cost", "Prices", "clearing_pays", "prices_for", "requests_cost"]


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
    such as ``claude-sonnet-4-5-20250929`` finds ``claude-sonnet-4-5``)."""
    if not isinstance(model, str):
        raise OptionError(f"model must be a string, got {type(model).__name__}")
    matches = [name for name in PRICES if model.startswith(name)]
    if not matches:
        raise OptionError(f"no prices for model {model!r}; known: {', '.join(PRICES)} (or pass your own Prices)")
    return PRICES[max(matches, key=len)]


@dataclass(frozen=True)
class Cost:
    """What a sequence of requests cost: cached reads, writes (or uncached input), output."""

    read_tokens: int
    written_tokens: int
    output_tokens: int
    dollars: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "read_tokens": self.read_tokens,
            "written_tokens": self.written_tokens,
            "output_tokens": self.output_tokens,
            "dollars": self.dollars,
        }


def requests_cost(
    request_tokens: list[int], prefix_tokens: list[int], prices: Prices, *, output_tokens: int = 0
) -> Cost:
    """The cost of requests of ``request_tokens`` tokens, each of which shares ``prefix_tokens``
    with the previous one (as :class:`agentcontext.metrics.Replay` measures them): the shared
    prefix is read from the cache, the rest written."""
    if len(request_tokens) != len(prefix_tokens):
        raise OptionError(
            f"request_tokens and prefix_tokens differ in length ({len(request_tokens)} vs {len(prefix_tokens)})"
        )
    read = sum(prefix_tokens)
    written = sum(r - p for r, p in zip(request_tokens, prefix_tokens, strict=True))
    if written < 0 or any(p > r for r, p in zip(request_tokens, prefix_tokens, strict=True)):
        raise OptionError("a request's cached prefix cannot be larger than the request")
    return Cost(read, written, output_tokens, prices.cost(read=read, written=written, output=output_tokens))


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
            f"reading {saved:,} tokens for {turns:g} more turns costs ${keep:.4f}, "
            f"rewriting {rewritten:,} tokens once ${cost:.4f}"
        )
        return ClearingDecision(True, keep, cost, why)
    return ClearingDecision(
        False,
        keep,
        cost,
        f"rewriting {rewritten:,} tokens once costs ${cost:.4f}, more than reading {saved:,} tokens "
        f"for {turns:g} more turns (${keep:.4f})",
    )
