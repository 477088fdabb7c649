"""The eval's cost under a model of time, without and with the cache schedule (issue #29, item 5)."""

from __future__ import annotations

import pytest

from agentcontext import Conversation
from agentcontext.compaction.pricing import PRICES, prices_for
from agentcontext.errors import OptionError
from agentcontext.measure.evaluation import format_table
from agentcontext.measure.metrics import evaluate, summarize_evaluations
from agentcontext.measure.timing import TOOL_IDLE_SECONDS, USER_IDLE_SECONDS, call_idle, timed_tokens
from tests import support

CALL = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}


def test_call_idle_models_user_turns_apart_and_tool_turns_close() -> None:
    conv = Conversation(
        [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "list the files"},
            {"role": "assistant", "content": "", "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
            {"role": "assistant", "content": "a.py"},
            {"role": "user", "content": "thanks, now b"},
            {"role": "assistant", "content": "done"},
        ],
        format="jsonl",
    )
    assert call_idle(conv) == [USER_IDLE_SECONDS, TOOL_IDLE_SECONDS, USER_IDLE_SECONDS]


def test_a_call_after_the_ttl_reads_nothing() -> None:
    five, hour = PRICES["claude-sonnet-4-5"], prices_for("claude-sonnet-4-5@1h")
    sizes, prefixes, idle = [100, 150, 220], [0, 100, 150], [600.0, 10.0, 600.0]
    assert timed_tokens(sizes, prefixes, idle, five) == (100, 370)  # the third call is cold
    assert timed_tokens(sizes, prefixes, idle, hour) == (250, 220)  # an hour's cache stays warm
    with pytest.raises(OptionError):
        timed_tokens(sizes, prefixes, idle[:2], five)


def test_eval_reports_the_cost_with_and_without_the_schedule() -> None:
    conv = Conversation(support.synthetic_session(messages=60, seed=3), format="jsonl")
    tables = ("claude-sonnet-4-5", "gpt-5@24h")
    row = evaluate(conv, "openharness", "30%", name="s", prices=tables, schedule=True)
    assert set(row.timed) == set(row.scheduled) == set(tables)
    for t in tables:
        warm, timed, scheduled = (row.cost(t, timing) for timing in ("warm", "timed", "scheduled"))
        assert warm is not None and timed is not None and scheduled is not None
        assert timed.read_tokens + timed.written_tokens == warm.read_tokens + warm.written_tokens
    # Cold calls read nothing: past the 5-minute TTL the same replay costs more; a day's cache stays warm.
    five, day = (row.cost(t, "timed") for t in tables)
    assert five is not None and five.read_tokens < row.cached_tokens and five.dollars > row.cost(tables[0]).dollars  # type: ignore[union-attr]
    assert day == row.cost(tables[1])
    plain = evaluate(conv, "openharness", "30%", name="s", prices=tables)
    assert plain.timed == row.timed and plain.scheduled == {} and plain.cost("gpt-5@24h", "scheduled") is None
    summary = summarize_evaluations([row], tables)[0]
    assert summary["scheduled_cost"]["gpt-5@24h"] is not None and summary["timed_cost"]["gpt-5@24h"] is not None
    text = format_table([row], tables)
    header = next(line for line in text.splitlines() if line.startswith("strategy") and "scheduled" in line)
    assert header.split()[-2:] == ["timed", "scheduled"]
    assert f"${summary['scheduled_cost']['gpt-5@24h']['dollars']:,.3f}" in text
