"""When to compact, priced by the prompt cache's state (:class:`CacheSchedule`).

A compaction rewrites the request from its first changed message: everything after it is
written to the cache again instead of read. When the cache has gone cold (more than the price
table's TTL since the previous call) the whole request is written anyway, so compacting then costs
nothing extra and the smaller request is what gets written. When the cache is warm, a compaction
throws away what the previous request just wrote. The schedule therefore:

- compacts early while the cache is cold: over ``idle_share`` of the trigger, the ladder runs
  (idle time before the TTL would expire anyway is the cheapest moment there is);
- defers a compaction the trigger asks for while the cache is warm, unless it pays:

      compact now:  target * (write - read)                the compacted set written, not read
      defer:        (tokens - target) * read * warm_turns   the extra tokens read until it goes cold

  where ``warm_turns`` is how many more calls the cache is expected to stay warm (learned from
  the calls seen: the mean length of a warm run, :data:`DEFAULT_WARM_TURNS` before any ended);
- never defers past the point where the next turn, growing as the last one did, would not fit.

The price table decides the TTL and the two prices: a 5-minute cache (Anthropic's default,
OpenAI's), the 1-hour cache (``"claude-sonnet-4-5@1h"``: writes at 2* input).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from agentcontext import _checks
from agentcontext.compaction.pricing import Prices, resolve_prices

__all__ = ["DEFAULT_WARM_TURNS", "CacheSchedule", "Decision"]

#: Warm calls expected before the cache goes cold, until the schedule has seen a warm run end.
DEFAULT_WARM_TURNS = 5.0


@dataclass(frozen=True)
class Decision:
    """What the schedule says about one call: ``compact`` now (True), not now (False), or no
    opinion (None: the policy's trigger decides), and why."""

    compact: bool | None
    why: str


class CacheSchedule:
    """Compaction scheduled by the cache's state under ``prices`` (a :class:`Prices` or a model
    name); ``idle_share``: the share of the trigger over which a cold cache compacts early;
    ``warm_turns``: the expected warm calls left (None: learned from the calls seen). One
    schedule follows one conversation (a :class:`~agentcontext.Compactor` holds it)."""

    def __init__(self, prices: Prices | str, *, idle_share: float = 0.75, warm_turns: float | None = None) -> None:
        self.prices = resolve_prices(prices)
        self.idle_share = _checks.number("idle_share", idle_share, high=1.0, low_open=True)
        self.warm_turns = None if warm_turns is None else _checks.number("warm_turns", warm_turns, low_open=True)
        self._lock = threading.Lock()
        self._run = 0  # warm calls since the cache was last cold
        self._runs: list[int] = []  # lengths of the warm runs that ended
        self._last_tokens: int | None = None

    def expected_warm_turns(self) -> float:
        """The warm calls expected from now on before the cache goes cold (at least 1)."""
        if self.warm_turns is not None:
            return self.warm_turns
        mean = sum(self._runs) / len(self._runs) if self._runs else DEFAULT_WARM_TURNS
        return max(1.0, mean - self._run)

    def decide(self, tokens: int, *, trigger: int, target: int, limit: int, idle_seconds: float | None) -> Decision:
        """The decision for a call whose request is ``tokens`` long, ``idle_seconds`` after the
        previous one (None: unknown, taken as warm); ``trigger``, ``target`` and ``limit`` are the
        policy's. Call it once per model call: it learns how long the cache stays warm."""
        p = self.prices
        cold = idle_seconds is not None and idle_seconds > p.cache_ttl_seconds
        with self._lock:
            growth = 0 if self._last_tokens is None else max(0, tokens - self._last_tokens)
            self._last_tokens = tokens
            if cold:
                if self._run:
                    self._runs.append(self._run)
                self._run = 0
            else:
                self._run += 1
            turns = self.expected_warm_turns()
        if tokens + growth > limit:
            return Decision(True, f"the next turn (+{growth:,} tokens) would not fit {limit:,}")
        if cold:
            if tokens > max(target, int(trigger * self.idle_share)):
                idle = f"{idle_seconds:.0f} s idle > {p.cache_ttl_seconds:.0f} s TTL"
                return Decision(True, f"the cache is cold ({idle}): compacting rewrites nothing extra")
            return Decision(None, "cold, under the early share of the trigger")
        if tokens <= trigger:
            return Decision(None, "under the trigger")
        now = target * (p.cache_write - p.cache_read) / 1e6
        defer = (tokens - target) * p.cache_read * turns / 1e6
        if defer > now:
            return Decision(True, f"reading the extra tokens for {turns:g} warm turns (${defer:.4f}) costs more "
                                  f"than rewriting the compacted set (${now:.4f})")  # fmt: skip
        return Decision(False, f"the cache is warm: rewriting the compacted set (${now:.4f}) costs more than reading "
                               f"the extra tokens for {turns:g} warm turns (${defer:.4f})")  # fmt: skip
