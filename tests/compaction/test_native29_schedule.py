"""Compaction scheduled by the prompt cache's state (issue #29, item 5): early while the cache is
cold, deferred while it is warm unless that pays or the next turn would not fit; the 1-hour and
24-hour price tables."""

from __future__ import annotations

import pytest

from agentcontext import Conversation
from agentcontext.compaction import CompactionPolicy, Compactor
from agentcontext.compaction.pricing import PRICES, prices_for
from agentcontext.compaction.schedule import DEFAULT_WARM_TURNS, CacheSchedule
from agentcontext.errors import OptionError

LIMIT = {"trigger": 10_000, "target": 6_000, "limit": 20_000}


def test_a_cold_cache_compacts_early_and_a_warm_one_defers() -> None:
    s = CacheSchedule("claude-sonnet-4-5")
    # Cold (600 s > the 5-minute TTL): over 75% of the trigger, compact now; under, no opinion.
    assert s.decide(8_000, idle_seconds=600, **LIMIT).compact is True
    assert s.decide(7_000, idle_seconds=600, **LIMIT).compact is None
    # Warm, over the trigger: rewriting 6,000 tokens at (3.75 - 0.30) costs more than reading the
    # 4,000 extra at 0.30 for the expected warm turns: defer.
    d = s.decide(10_500, idle_seconds=10, **LIMIT)
    assert d.compact is False and "warm" in d.why
    assert s.decide(9_000, idle_seconds=10, **LIMIT).compact is None  # under the trigger
    # The next turn, growing as the last did, would not fit: compact whatever the cache.
    assert s.decide(15_000, idle_seconds=10, **LIMIT).compact is True
    # Unknown idle time counts as warm.
    assert s.decide(15_500, idle_seconds=None, **LIMIT).compact is False


def test_a_warm_compaction_that_pays_is_not_deferred() -> None:
    s = CacheSchedule("claude-sonnet-4-5", warm_turns=50)
    # 50 warm turns reading 12,000 extra tokens cost more than rewriting 6,000 once.
    assert s.decide(18_000, idle_seconds=1, **LIMIT).compact is True


def test_the_warm_run_length_is_learned() -> None:
    s = CacheSchedule("gpt-5")
    assert s.expected_warm_turns() == DEFAULT_WARM_TURNS
    for idle in [600, 1, 1, 600, 1, 1, 600]:  # two warm runs of two calls each
        s.decide(100, idle_seconds=idle, **LIMIT)
    assert s.expected_warm_turns() == 2.0
    s.decide(100, idle_seconds=1, **LIMIT)
    assert s.expected_warm_turns() == 1.0


def test_the_compactor_follows_the_schedule() -> None:
    policy = CompactionPolicy(
        context_window=20_000, reserved_output=0, safety_margin=0, trigger=0.5, target=0.3, recent_messages=2
    )
    text = "x " * 1_400
    conv = Conversation(
        [{"role": "user" if i % 2 == 0 else "assistant", "content": f"{i} {text}"} for i in range(6)], format="jsonl"
    )
    assert policy.target_tokens < policy.trigger_tokens * 0.75 < conv.tokens < policy.trigger_tokens
    plain = Compactor(policy)
    assert plain.maybe_compact(conv, idle_seconds=900) is None  # under the trigger
    early = Compactor(policy, schedule=CacheSchedule("claude-sonnet-4-5"))
    result = early.maybe_compact(conv, idle_seconds=900)
    assert result is not None and result.compacted and result.tokens_after < conv.tokens
    big = Conversation([*conv.to_jsonl(), {"role": "user", "content": text}, {"role": "assistant", "content": text}])
    assert big.tokens > policy.trigger_tokens
    warm = Compactor(policy, schedule=CacheSchedule("claude-sonnet-4-5"))
    assert warm.maybe_compact(big, idle_seconds=5) is None  # deferred: the cache is warm
    assert plain.maybe_compact(big, idle_seconds=5) is not None


def test_one_hour_and_extended_price_tables() -> None:
    hour = prices_for("claude-sonnet-4-5-20250929@1h")
    base = PRICES["claude-sonnet-4-5"]
    assert (hour.cache_write, hour.cache_ttl_seconds, hour.name) == (2 * base.input, 3_600, "claude-sonnet-4-5@1h")
    assert hour.cache_read == base.cache_read
    day = prices_for("gpt-5@24h")
    assert day.cache_write == PRICES["gpt-5"].input and day.cache_ttl_seconds == 86_400
    for bad in ("gpt-5@1h", "claude-sonnet-4-5@24h", "gpt-5@2h"):
        with pytest.raises(OptionError):
            prices_for(bad)
    # A 600 s pause is cold for the 5-minute cache, warm for the hour's.
    assert CacheSchedule(hour).decide(8_000, idle_seconds=600, **LIMIT).compact is None
