"""Cache economics: the clearing decision's arithmetic and the cost of replayed requests."""

from __future__ import annotations

import math

import pytest

from agentcontext.errors import OptionError
from agentcontext.pricing import PRICES, Prices, clearing_pays, prices_for, requests_cost

SONNET = PRICES["claude-sonnet-4-5"]
GPT5 = PRICES["gpt-5"]


def test_clearing_pays_when_reads_outweigh_one_rewrite() -> None:
    # Sonnet: write - read = 3.45 $/M, read = 0.30 $/M. 20,000 saved for 10 turns: $0.06 kept;
    # rewriting 10,000 tokens once: $0.0345 -> clear.
    d = clearing_pays(saved_tokens=20_000, rewritten_tokens=10_000, remaining_turns=10, prices=SONNET)
    assert d.clear
    assert d.keep_dollars == pytest.approx(0.06)
    assert d.clear_dollars == pytest.approx(0.0345)
    assert d.savings == pytest.approx(0.0255)
    # The same clearing one turn before the end does not pay.
    d = clearing_pays(saved_tokens=20_000, rewritten_tokens=10_000, remaining_turns=1, prices=SONNET)
    assert not d.clear
    assert "more than reading" in d.reason


def test_the_break_even_point() -> None:
    # keep = clear exactly when turns * saved * read = rewritten * (write - read).
    rewritten, saved = 100_000, 11_500
    turns = rewritten * (SONNET.cache_write - SONNET.cache_read) / (saved * SONNET.cache_read)
    assert not clearing_pays(saved_tokens=saved, rewritten_tokens=rewritten, remaining_turns=turns, prices=SONNET).clear
    assert clearing_pays(
        saved_tokens=saved, rewritten_tokens=rewritten, remaining_turns=turns * 1.01, prices=SONNET
    ).clear


def test_providers_differ() -> None:
    # OpenAI has no write premium: a rewrite costs (1.25 - 0.125) $/M vs Anthropic's 3.45 $/M,
    # relative to a read of 0.125 vs 0.30. The same clearing pays on one and not the other.
    # Sonnet: keep 30 * 10,000 * 0.30 = $0.09 < rewrite 30,000 * 3.45 = $0.1035 -> keep.
    # GPT-5: keep 30 * 10,000 * 0.125 = $0.0375 > rewrite 30,000 * 1.125 = $0.03375 -> clear.
    sonnet = clearing_pays(saved_tokens=10_000, rewritten_tokens=30_000, remaining_turns=30, prices=SONNET)
    gpt5 = clearing_pays(saved_tokens=10_000, rewritten_tokens=30_000, remaining_turns=30, prices=GPT5)
    assert not sonnet.clear and sonnet.clear_dollars == pytest.approx(0.1035)
    assert gpt5.clear and gpt5.keep_dollars == pytest.approx(0.0375)


def test_a_cold_cache_always_pays_and_clear_at_least_is_a_floor() -> None:
    d = clearing_pays(
        saved_tokens=1_000, rewritten_tokens=10**6, remaining_turns=1, prices=SONNET, seconds_since_last_call=301
    )
    assert d.clear and d.clear_dollars == 0.0 and "cold" in d.reason
    warm = clearing_pays(
        saved_tokens=1_000, rewritten_tokens=10**6, remaining_turns=1, prices=SONNET, seconds_since_last_call=299
    )
    assert not warm.clear
    under = clearing_pays(
        saved_tokens=1_000, rewritten_tokens=0, remaining_turns=100, prices=SONNET, clear_at_least=5_000
    )
    assert not under.clear and "under clear_at_least 5,000" in under.reason
    nothing = clearing_pays(saved_tokens=0, rewritten_tokens=0, remaining_turns=100, prices=SONNET)
    assert not nothing.clear and nothing.clear_dollars == math.inf


def test_requests_cost() -> None:
    cost = requests_cost([1_000, 1_500, 800], [0, 1_000, 0], SONNET, output_tokens=100)
    assert (cost.read_tokens, cost.written_tokens) == (1_000, 2_300)
    assert cost.dollars == pytest.approx((1_000 * 0.30 + 2_300 * 3.75 + 100 * 15.0) / 1e6)
    with pytest.raises(OptionError, match="differ in length"):
        requests_cost([1], [], SONNET)
    with pytest.raises(OptionError, match="cannot be larger"):
        requests_cost([1], [2], SONNET)


def test_prices_for_dated_ids_and_bad_input() -> None:
    assert prices_for("claude-sonnet-4-5-20250929") is SONNET
    assert prices_for("gpt-5-mini-2025-08-07").name == "gpt-5-mini"  # the longest prefix wins
    with pytest.raises(OptionError, match="no prices for model 'llama'"):
        prices_for("llama")
    with pytest.raises(OptionError, match="input must be a finite number"):
        Prices(-1, 1, 0.1)
    with pytest.raises(OptionError, match="must not exceed cache_write"):
        Prices(1, 1, 2)
    with pytest.raises(OptionError, match="saved_tokens must be a non-negative integer"):
        clearing_pays(saved_tokens=-1, rewritten_tokens=0, remaining_turns=1, prices=SONNET)
    with pytest.raises(OptionError, match="remaining_turns must be a finite number"):
        clearing_pays(saved_tokens=1, rewritten_tokens=0, remaining_turns=math.nan, prices=SONNET)
    with pytest.raises(OptionError, match="prices must be a Prices"):
        clearing_pays(saved_tokens=1, rewritten_tokens=0, remaining_turns=1, prices="sonnet")  # type: ignore[arg-type]
