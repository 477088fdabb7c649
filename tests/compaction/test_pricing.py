"""Cache economics: the clearing decision's arithmetic and the cost of replayed requests."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.cli import main
from agentcontext.compaction import PRESETS, CompactionPolicy, Compactor
from agentcontext.compaction.pricing import (
    DEFAULT_REMAINING_TURNS,
    EVAL_PRICES,
    PRICES,
    Prices,
    clear_rung,
    clearing_pays,
    price_tables,
    prices_for,
    requests_cost,
)
from agentcontext.errors import ArgumentTypeError, OptionError
from agentcontext.measure import evaluation
from agentcontext.measure.metrics import Evaluation, evaluate, replay, summarize_evaluations
from tests import support

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


# -- the clear rung's decision in the ladder ---------------------------------------------------


def _session() -> ac.Conversation:
    return ac.Conversation(support.synthetic_session(300, seed=3))


def _live(conv: ac.Conversation, **changes: Any) -> CompactionPolicy:
    """openharness with a window the conversation is over the trigger of but still fits."""
    return replace(
        PRESETS["openharness"].compaction,
        context_window=int(conv.tokens / 0.9),
        reserved_output=0,
        safety_margin=0,
        **changes,
    )


def test_without_prices_the_clear_rung_is_unchanged() -> None:
    conv = _session()
    plain = Compactor(_live(conv)).maybe_compact(conv)
    assert plain is not None and [s.stage for s in plain.stages] == ["clear"]
    assert set(plain.stages[0].detail) == {"results_cleared", "tokens_freed"}


def test_clearing_that_does_not_pay_is_skipped_and_says_why() -> None:
    conv = _session()
    compactor = Compactor(_live(conv, prices="claude-sonnet-4-5", remaining_turns=1))
    result = compactor.maybe_compact(conv)
    assert result is not None
    (stage,) = result.stages
    assert stage.stage == "skip" and stage.tokens_before == stage.tokens_after == conv.tokens
    # The numbers, checked against the clearing the rung would have made.
    cleared, report = conv.clear_tool_results(recall_ids=False, recent_messages=12, recent_tools=3)
    first = min(c["index"] for c in report["cleared"])
    saved, rewritten = conv.tokens - cleared.tokens, sum(cleared.message_tokens()[first:])
    d = stage.detail
    assert (d["prices"], d["remaining_turns"], d["saved_tokens"], d["rewritten_tokens"]) == (
        "claude-sonnet-4-5",
        1,
        saved,
        rewritten,
    )
    assert d["keep_dollars"] == pytest.approx(saved * 0.30 / 1e6, abs=1e-6)
    assert d["clear_dollars"] == pytest.approx(rewritten * 3.45 / 1e6, abs=1e-6)
    assert d["why"].startswith("clearing does not pay: rewriting")
    # Nothing changed: the same conversation, not counted as a compaction, not retried until it grows.
    assert result.conversation is result.original and not result.compacted and result.fits
    assert result.conversation.to_openai() == conv.to_openai()
    assert compactor.maybe_compact(conv) is None


def test_clearing_that_pays_goes_ahead_with_its_numbers() -> None:
    conv = _session()
    plain = Compactor(_live(conv)).maybe_compact(conv)
    priced = Compactor(_live(conv, prices=PRICES["gpt-5"], remaining_turns=20)).maybe_compact(conv)
    assert plain is not None and priced is not None
    assert support.each_message(priced.conversation) == support.each_message(plain.conversation)
    (stage,) = priced.stages
    assert stage.stage == "clear" and stage.detail["prices"] == "gpt-5"
    saved = stage.detail["saved_tokens"]
    assert saved == stage.tokens_before - stage.tokens_after == stage.detail["tokens_freed"]
    assert stage.detail["keep_dollars"] == pytest.approx(20 * saved * 0.125 / 1e6, abs=1e-6)
    assert stage.detail["pays"].startswith(f"reading {saved:,} tokens for 20 more turns")


def test_over_the_limit_clearing_goes_ahead_even_when_it_does_not_pay() -> None:
    # A budget (as `agentcontext eval` compiles) leaves no room to keep: the conversation must shrink.
    conv = _session()
    budget = conv.tokens // 2
    plain = Compactor("openharness").compact(conv, budget=budget)
    policy = replace(PRESETS["openharness"].compaction, prices="claude-sonnet-4-5", remaining_turns=0)
    priced = Compactor(policy).compact(conv, budget=budget)
    assert support.each_message(priced.conversation) == support.each_message(plain.conversation)
    clear = next(s for s in priced.stages if s.stage == "clear")
    assert clear.detail["cleared_anyway"] == f"over the limit of {budget:,} tokens"
    assert clear.detail["does_not_pay"].startswith("rewriting")


def test_prices_from_the_environment_and_bad_values() -> None:
    env = {"AGENTCONTEXT_COMPACT__PRICES": "claude-haiku-4-5-20251001", "AGENTCONTEXT_COMPACT__REMAINING_TURNS": "3.5"}
    p = Compactor(environ=env).policy
    assert (p.prices, p.remaining_turns) == (PRICES["claude-haiku-4-5"], 3.5)
    assert CompactionPolicy().prices is None and CompactionPolicy().remaining_turns == DEFAULT_REMAINING_TURNS
    with pytest.raises(OptionError, match="AGENTCONTEXT_COMPACT__PRICES='llama': no prices for model 'llama'"):
        Compactor(environ={"AGENTCONTEXT_COMPACT__PRICES": "llama"})
    assert Compactor("openharness", environ={"AGENTCONTEXT_COMPACT__PRICES": "none"}).policy.prices is None
    with pytest.raises(ArgumentTypeError, match="prices must be a Prices or a model name, got int"):
        CompactionPolicy(prices=3)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="remaining_turns must be a finite number"):
        CompactionPolicy(remaining_turns=-1)


def test_a_cold_cache_clears_in_the_rung_whatever_the_turns() -> None:
    conv = _session()
    cleared, report = conv.clear_tool_results(recall_ids=False, recent_messages=12, recent_tools=3)
    first = min(c["index"] for c in report["cleared"])
    kw: dict[str, Any] = {"before": conv, "after": cleared, "first_changed": first, "limit": conv.tokens}
    assert clear_rung(None, 20, **kw) is None
    warm = clear_rung("claude-sonnet-4-5", 0, **kw)
    assert warm is not None and not warm[0]
    cold = clear_rung("claude-sonnet-4-5", 0, seconds_since_last_call=301, **kw)
    assert cold is not None and cold[0] and cold[1]["clear_dollars"] == 0.0 and "cold" in cold[1]["pays"]
    # Dollars too large for a float are left out of the event (JSON has no infinity), not reported as inf.
    huge = clear_rung("claude-sonnet-4-5", 1e308, **kw)
    assert huge is not None and huge[0] and huge[1]["keep_dollars"] is None
    json.dumps(huge[1], allow_nan=False)
    with pytest.raises(OptionError, match="first_changed 400 is not a message"):
        clear_rung("gpt-5", 1, **{**kw, "first_changed": 400})


# -- the cost of a replayed session --------------------------------------------------------------


def test_a_replay_priced_by_hand() -> None:
    # Three calls that only append: each request's prefix is the whole previous request.
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    for i in range(3):
        messages += [{"role": "user", "content": f"question {i} " * 50}, {"role": "assistant", "content": "ok"}]
    conv = ac.Conversation(messages)
    rep = replay(conv, Compactor(CompactionPolicy(context_window=10**6)))
    sizes = conv.message_tokens()
    r1, r2, r3 = sum(sizes[:2]), sum(sizes[:4]), sum(sizes[:6])
    assert rep.request_tokens == [r1, r2, r3] and rep.prefix_tokens == [0, r1, r2]
    cost = requests_cost(rep.request_tokens, rep.prefix_tokens, SONNET)
    assert (cost.read_tokens, cost.written_tokens) == (r1 + r2, r3)  # r1 + (r2 - r1) + (r3 - r2) written
    assert cost.read_dollars == pytest.approx((r1 + r2) * 0.30 / 1e6)
    assert cost.written_dollars == pytest.approx(r3 * 3.75 / 1e6)
    assert cost.dollars == pytest.approx(cost.read_dollars + cost.written_dollars)
    # An Evaluation of the same replay prices the same.
    ev = evaluate(conv, CompactionPolicy(context_window=10**6), 10**5)
    priced = ev.cost("claude-sonnet-4-5")
    assert priced is not None and priced.to_dict() == {**cost.to_dict()}


def _row(strategy: str, read: int, written: int, *, turns: int = 10, error: str | None = None) -> Evaluation:
    return Evaluation(
        transcript="t", strategy=strategy, budget=1, messages=1, tokens_before=1, tokens_after=1, fits=True,
        valid=True, violations=0, retention=1.0, retention_by_kind={}, probes=0, lost=[], summary_tokens=0,
        summarized_tokens=0, cache_stability=0.0, cache_write_tokens=written, compactions_per_100_turns=0.0,
        turns=turns, seconds=0.0, error=error, cached_tokens=read, request_tokens=read + written,
    )  # fmt: skip


def test_summarize_evaluations_pools_the_cost_per_price_table() -> None:
    rows = [
        _row("x", 1_000_000, 200_000),
        _row("x", 500_000, 100_000),
        _row("x", 9, 9, error="broken"),  # a failed run is not priced
        _row("baseline", 0, 0, turns=0),  # no replay: no cost
    ]
    by = {s["strategy"]: s for s in summarize_evaluations(rows)}
    assert list(by["x"]["cost"]) == ["claude-sonnet-4-5", "gpt-5"]  # the defaults: one Anthropic, one OpenAI
    sonnet, gpt5 = by["x"]["cost"]["claude-sonnet-4-5"], by["x"]["cost"]["gpt-5"]
    # 1.5M read, 0.3M written. Sonnet: 1.5 * 0.30 + 0.3 * 3.75 = 0.45 + 1.125; GPT-5: 0.1875 + 0.375.
    assert (sonnet["read_tokens"], sonnet["written_tokens"]) == (1_500_000, 300_000)
    assert (sonnet["read_dollars"], sonnet["written_dollars"]) == (pytest.approx(0.45), pytest.approx(1.125))
    assert sonnet["dollars"] == pytest.approx(1.575) and gpt5["dollars"] == pytest.approx(0.5625)
    assert by["baseline"]["cost"] == {"claude-sonnet-4-5": None, "gpt-5": None}
    assert rows[3].cost("gpt-5") is None and rows[2].cost("gpt-5") is None
    mine = Prices(2.0, 2.5, 0.2, name="mine")
    only = summarize_evaluations(rows, [mine])[0]["cost"]
    assert only["mine"]["dollars"] == pytest.approx(1.5 * 0.2 + 0.3 * 2.5)
    assert summarize_evaluations(rows, ())[0]["cost"] == {}
    assert [t.name for t in price_tables("gpt-5, claude-opus-4-5-20251101,gpt-5")] == ["gpt-5", "claude-opus-4-5"]
    assert price_tables("none") == [] and price_tables(None) == [PRICES[n] for n in EVAL_PRICES]
    with pytest.raises(OptionError, match="two different price tables are named 'gpt-5'"):
        price_tables([PRICES["gpt-5"], Prices(1, 1, 0.1, name="gpt-5")])


def test_the_cli_prints_cost_columns(transcripts: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = transcripts / "normalized" / "pi-mono"
    args = ["eval", str(folder), "--budget", "25%", "--strategy", "openharness,baseline-suffix-users",
            "--workers", "1", "--no-progress"]  # fmt: skip
    out = tmp_path / "r.json"
    assert main([*args, "--prices", "gpt-5-mini,claude-haiku-4-5-20251001", "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-5:] == ["cost", "gpt-5-mini", "cost", "claude-haiku-4-5", "time"]
    data = json.loads(out.read_text())
    assert data["prices"] == ["gpt-5-mini", "claude-haiku-4-5"]
    haiku = {s["strategy"]: s["cost"]["claude-haiku-4-5"] for s in data["strategies"]}
    assert haiku["baseline-suffix-users"] is None
    row = next(line for line in lines if line.startswith("openharness"))
    assert row.split()[-2] == f"${haiku['openharness']['dollars']:,.3f}"
    cost_at = lines.index(evaluation.COST_TITLE)
    assert lines[cost_at + 1].split() == ["strategy", "prices", "cache", "reads", "cache", "writes", "reads", "writes",
                                          "total"]  # fmt: skip
    assert [line.split()[:2] for line in lines[cost_at + 3 :]] == [
        ["openharness", "gpt-5-mini"], ["openharness", "claude-haiku-4-5"]
    ]  # fmt: skip
    # Markdown too; 'none' leaves the cost out.
    assert main([*args, "--markdown"]) == 0
    md = capsys.readouterr().out
    assert "| cost claude-sonnet-4-5 | cost gpt-5 |" in md
    assert "\n\n| strategy | prices | cache reads | cache writes | reads | writes | total |\n" in md
    assert main([*args, "--markdown", "--prices", "none"]) == 0
    assert "cost" not in capsys.readouterr().out
    assert main([*args, "--prices", "llama"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no prices for model 'llama'" in err[0]


def test_the_ladder_passes_its_idle_time_to_the_price_decision() -> None:
    # The clear rung asked clearing_pays without the time since the last call: a cache idle past
    # its TTL (cold, to be written again anyway) still kept old results it would pay to clear.
    conv = _session()
    policy = _live(conv, prices="claude-sonnet-4-5", remaining_turns=1)
    warm = Compactor(policy).maybe_compact(conv, idle_seconds=10)
    assert warm is not None and [s.stage for s in warm.stages] == ["skip"]
    cold = Compactor(policy).maybe_compact(conv, idle_seconds=3_600)
    assert cold is not None and cold.stages[0].stage == "clear"
    assert cold.stages[0].detail["pays"].startswith("the cache is cold (3600 s idle")
