"""Harness fidelity (issue 20): the Claude Code, Pi, Codex and Alyx presets behave like the
harnesses they are named after — the trigger arithmetic, round dropping when the summary request
is too long, split turns, /compact focus instructions, Codex's user-message history, Alyx's
token budgets, idempotent-call dedup and forced checkpoint — on constructed edge cases, over the
loopback LLM server, and on the shared corpus."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext import count_tokens
from agentcontext.budgets import ResultStore
from agentcontext.compaction import PRESETS, CompactionPolicy, Compactor
from agentcontext.compaction.harnesses import claude_code, codex, pi
from agentcontext.compaction.harnesses.alyx import CHECKPOINT_INSTRUCTION, Alyx
from agentcontext.compaction.harnesses.claude_code import ClaudeCode
from agentcontext.compaction.llm import LLMSummarizer
from agentcontext.compaction.summarize import SUMMARY_MARKER, SummaryRequest
from agentcontext.errors import ArgumentTypeError, ContextOverflowError, OptionError
from agentcontext.memory import MemoryStore, MemoryTools
from agentcontext.memory.flush import FLUSH_INSTRUCTION
from tests import support
from tests.llm_server import LLMServer, Overflow, Reply

BUDGET_PRESETS = {name: preset.budgets for name, preset in PRESETS.items() if preset.budgets is not None}

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu",
         "xi", "omicron", "rho", "sigma", "tau"]  # fmt: skip


def _text(n_words: int, seed: int) -> str:
    return " ".join(f"{WORDS[(seed * 7 + i) % len(WORDS)]}{(seed + i) % 97}" for i in range(n_words))


def _turn(ask: str, rounds: int, result_words: int, seed: int, tool: str = "bash") -> list[dict[str, Any]]:
    """A user ask, then ``rounds`` assistant calls each with a result of ``result_words`` words."""
    out: list[dict[str, Any]] = [{"role": "user", "content": ask}]
    for r in range(rounds):
        cid = f"call_{seed}_{r}"
        args = json.dumps({"cmd": f"step {seed}.{r}"})
        out.append(
            {
                "role": "assistant",
                "content": f"Running step {seed}.{r}.",
                "tool_calls": [{"id": cid, "type": "function", "function": {"name": tool, "arguments": args}}],
            }
        )
        out.append({"role": "tool", "tool_call_id": cid, "content": _text(result_words, seed * 100 + r)})
    out.append({"role": "assistant", "content": f"Turn {seed} done."})
    return out


def _conv(messages: list[dict[str, Any]]) -> ac.Conversation:
    return ac.Conversation(messages, format="openai")


def _summary_reply(conv: ac.Conversation) -> Reply:
    asks = [t for m in conv.to_jsonl() if m["role"] == "user" and isinstance(t := m.get("content"), str)]
    state = "\n".join(f"- step {k}: checked module m{k} and its tests" for k in range(40))
    return Reply(f"<summary>## Current state\n{state}\n\n## User requests\n" + "\n".join(reversed(asks)) + "</summary>")


def _sent_texts(server: LLMServer, k: int) -> str:
    return json.dumps(server.requests[k].body, ensure_ascii=False)


# -- Claude Code: the trigger arithmetic -----------------------------------------------------------


def test_claude_code_triggers_at_window_less_output_less_13000() -> None:
    p = PRESETS["claude-code"].compaction
    # 200,000 - 20,000 reserved for the summary's output - the 13,000 buffer (187,000 before).
    assert p.trigger_tokens == 167_000
    assert replace(p, context_window=100_000).trigger_tokens == 67_000
    assert replace(p, context_window=1_000_000).trigger_tokens == 967_000
    # The system prompt and tools travelling outside the conversation come off the window first.
    assert p.with_overhead(5_000).trigger_tokens == 162_000
    # A hard budget means the budget, not the budget less the buffer.
    assert p.for_budget(50_000).trigger_tokens == 50_000
    # Provider tokens per local token scale the buffer too.
    assert p.scaled(2.0).trigger_tokens == 83_500
    # A window smaller than the reservations gives 0, never a negative size.
    assert replace(p, context_window=30_000).trigger_tokens == 0
    assert p.from_env({"AGENTCONTEXT_COMPACT__TRIGGER_MARGIN": "3000"}).trigger_tokens == 177_000
    with pytest.raises(OptionError):
        p.from_env({"AGENTCONTEXT_COMPACT__TRIGGER_MARGIN": "lots"})


def test_claude_code_compacts_a_live_loop_over_167000_tokens() -> None:
    """A conversation of ~175,000 tokens is compacted by the live loop (it was not: the trigger was 187,000)."""
    msgs: list[dict[str, Any]] = []
    seed = 0
    total = 0
    while total < 172_000:
        turn = _turn(f"Task {seed}: look into module m{seed}.", 2, 600, seed)
        total += _conv(turn).tokens
        msgs += turn
        seed += 1
    conv = _conv(msgs)
    assert 167_000 < conv.tokens < 187_000
    result = Compactor("claude-code").maybe_compact(conv)
    assert result is not None and result.compacted and result.summary
    assert result.tokens_after < 167_000 and result.conversation.validate() == []
    smaller = _conv(msgs[: len(msgs) // 2])
    assert smaller.tokens < 167_000 and Compactor("claude-code").maybe_compact(smaller) is None


# -- Claude Code: the compaction call itself too long ----------------------------------------------


def _long_session() -> ac.Conversation:
    msgs: list[dict[str, Any]] = []
    for s in range(6):
        msgs += _turn(f"Request {s}: fix src/mod{s}.py", 5, 400, s)
    msgs.append({"role": "user", "content": "Now run the tests in tests/test_final.py and report."})
    msgs += _turn("", 1, 50, 99)[1:]
    return _conv(msgs)


def test_api_rounds_and_dropping_twenty_percent_or_the_gap() -> None:
    conv = _long_session()
    request = SummaryRequest(conv, 0, len(conv) - 4, None, 2_000)
    rounds = claude_code.api_rounds(request)
    assert rounds[0][0] == 0 and rounds[-1][1] == request.stop
    assert all(a[1] == b[0] for a, b in itertools.pairwise(rounds))
    # Never between a call and its result: every round after the first opens with an assistant or user turn.
    assert all(conv[lo]["role"] != "tool" for lo, _ in rounds)
    shorter, what = claude_code.drop_oldest_rounds(request, None) or (None, {})
    assert shorter is not None
    assert what["dropped_rounds"] == math.ceil(0.2 * len(rounds))
    gap = 5_000
    by_gap, what = claude_code.drop_oldest_rounds(request, gap) or (None, {})
    assert by_gap is not None and what["dropped_tokens"] >= gap
    totals = conv.message_tokens()
    k = what["dropped_rounds"]
    assert sum(totals[rounds[0][0] : rounds[k - 1][0]]) < gap  # one round fewer would not close it
    # The new request opens with a user message that says what was dropped.
    first = by_gap.source.to_jsonl()[0]
    assert first["role"] == "user" and "dropped from this summary request" in first["content"]
    one = SummaryRequest(conv, 0, 1, None, 100)
    assert claude_code.drop_oldest_rounds(one, None) is None


def test_the_latest_request_survives_dropped_rounds() -> None:
    """One long turn: its request is in the oldest rounds; the shorter request opens with it."""
    conv = _conv(_turn("Migrate the billing schema in db/billing.sql to v2", 12, 300, 5))
    request = SummaryRequest(conv, 0, len(conv) - 1, None, 1_000, original=conv)
    shorter, _ = claude_code.drop_oldest_rounds(request, None) or (None, {})
    assert shorter is not None
    opening = shorter.source.to_jsonl()[0]["content"]
    assert opening.startswith("Migrate the billing schema in db/billing.sql to v2")


def test_claude_code_drops_the_oldest_rounds_when_the_provider_says_too_long(server: LLMServer) -> None:
    from tests.providers.test_providers import make

    conv = _long_session()
    provider = make("openai", server, context_window=400_000)
    older = conv.tokens
    server.enqueue(Overflow(tokens=older + 10_000, limit=older + 10_000 - 3_000))
    server.default = lambda request: _summary_reply(conv)
    compactor = Compactor("claude-code", summarizer=LLMSummarizer(provider, use_fallback=False), fallback=None)
    result = compactor.compact(conv, manual=True)
    summarize = next(s for s in result.stages if s.stage == "summarize")
    assert summarize.detail["summarizer"] == "LLMSummarizer" and "note" not in summarize.detail
    assert summarize.detail["overflow_retries"] == 1 and summarize.detail["dropped_rounds"] >= 1
    assert summarize.detail["dropped_tokens"] >= 3_000
    first, second = (len(server.requests[k].body["messages"]) for k in (0, 1))
    assert second < first
    # The oldest request was dropped from the retry; the latest one is still asked about.
    assert "Request 0: fix src/mod0.py" in _sent_texts(server, 0)
    assert "Request 0: fix src/mod0.py" not in _sent_texts(server, 1)
    assert result.summary and result.conversation.validate() == []


def test_claude_code_gives_up_after_three_retries_and_falls_back(server: LLMServer) -> None:
    from tests.providers.test_providers import make

    conv = _long_session()
    provider = make("openai", server, context_window=400_000)
    # A token over each time: each retry drops one more API round (there are always more to drop).
    server.enqueue(*[Overflow(tokens=800_001 + k, limit=800_000 + k) for k in range(4)])
    compactor = Compactor("claude-code", summarizer=LLMSummarizer(provider, use_fallback=False))
    result = compactor.compact(conv, budget=conv.tokens // 3)
    summarize = next(s for s in result.stages if s.stage == "summarize")
    assert len(server.requests) == 4 and server.pending == 0
    assert summarize.detail["summarizer"] == "OfflineSummarizer" and "ContextOverflowError" in summarize.detail["note"]
    assert result.fits and result.summary


def test_claude_code_gives_up_when_only_the_last_round_is_left(server: LLMServer) -> None:
    """Rejected 100,000 tokens over: the first retry drops every round but the last; the second
    has nothing left to drop, so the provider's error stands (the request is not sent again with
    only the note of an earlier try dropped) and the fallback writes the summary."""
    from tests.providers.test_providers import make

    conv = _long_session()
    provider = make("openai", server, context_window=400_000)
    server.enqueue(*[Overflow(tokens=900_000, limit=800_000 + k) for k in range(4)])
    compactor = Compactor("claude-code", summarizer=LLMSummarizer(provider, use_fallback=False))
    result = compactor.compact(conv, budget=conv.tokens // 3)
    summarize = next(s for s in result.stages if s.stage == "summarize")
    assert len(server.requests) == 2 and server.pending == 2
    assert summarize.detail["summarizer"] == "OfflineSummarizer" and "ContextOverflowError" in summarize.detail["note"]
    assert result.fits and result.summary


def test_claude_code_drops_rounds_instead_of_staging_when_over_the_summarizers_window(server: LLMServer) -> None:
    """The request is larger than the summarizer's window: Claude Code drops rounds (one call);
    the other presets stage it (parts, then a merge)."""
    from tests.providers.test_providers import make

    conv = _long_session()
    server.default = lambda request: _summary_reply(conv)
    small = make("openai", server, context_window=20_000 + conv.tokens // 2)
    result = Compactor("claude-code", summarizer=LLMSummarizer(small)).compact(conv, manual=True)
    summarize = next(s for s in result.stages if s.stage == "summarize")
    assert len(server.requests) == 1 and summarize.detail["dropped_rounds"] >= 1
    assert summarize.detail["overflow_retries"] == 1
    sent = sum(count_tokens(json.dumps(m)) for m in server.requests[0].body["messages"])
    assert sent < conv.tokens
    before = len(server.requests)
    smaller = make("openai", server, context_window=8_192 + conv.tokens // 2)
    Compactor("openharness", summarizer=LLMSummarizer(smaller)).compact(conv, manual=True)
    assert len(server.requests) - before >= 3  # parts and a merge


def test_the_summarizer_overflow_is_the_harness_s() -> None:
    assert PRESETS["claude-code"].compaction.harness.summarizer_overflow == "drop_rounds"
    assert PRESETS["letta"].compaction.harness.summarizer_overflow == "truncate"
    assert PRESETS["openharness"].compaction.harness.summarizer_overflow == "stage"
    with pytest.raises(ArgumentTypeError, match="harness must be a Harness"):
        CompactionPolicy("x", harness="claude-code")  # type: ignore[arg-type]
    policy = PRESETS["claude-code"].compaction.from_env({"AGENTCONTEXT_COMPACT__TRIGGER_MARGIN": "3000"})
    assert policy.harness == ClaudeCode(trigger_margin=3_000)
    assert (
        PRESETS["claude-code"].compaction.from_env({"AGENTCONTEXT_COMPACT__SLIDING_WINDOW": "0.5"})
        == PRESETS["claude-code"].compaction
    )


# -- Pi: split turns ---------------------------------------------------------------------------------


def _pi_session() -> ac.Conversation:
    """An earlier small turn, then one turn (~45,000 tokens) larger than Pi's kept 20,000."""
    msgs = _turn("First, read the config in conf/app.toml.", 2, 200, 1)
    msgs += _turn("Refactor the parser in src/parse.rs and keep the tests green.", 30, 1_100, 2)
    return _conv(msgs)


def test_pi_splits_a_turn_larger_than_the_kept_budget() -> None:
    conv = _pi_session()
    policy = replace(PRESETS["pi"].compaction, context_window=conv.tokens + 10_000)  # trigger at window - 16,384
    assert conv.tokens > policy.trigger_tokens
    turn_start = next(i for i, m in enumerate(conv.to_jsonl()) if str(m.get("content")).startswith("Refactor"))
    result = Compactor(policy).maybe_compact(conv)
    assert result is not None and result.summary
    summarize = next(s for s in result.stages if s.stage == "summarize")
    split = summarize.detail["split_turn"]
    assert split["turn_start"] == turn_start and split["kept_from"] > turn_start
    # The summary: the history before the turn, then the turn's prefix under Pi's heading, with its request.
    history, _, turn = result.summary.partition(pi.TURN_CONTEXT_HEADING)
    assert turn and "First, read the config" in history and "Refactor the parser in src/parse.rs" in turn
    # The kept part is the end of the turn: it opens with the assistant, right after the summary.
    out = result.conversation.to_jsonl()
    assert out[0]["content"].startswith(SUMMARY_MARKER) and out[1]["role"] == "assistant"
    kept = [q for q in result.provenance if q is not None]
    assert kept == list(range(split["kept_from"], len(conv)))
    assert sum(conv.message_tokens()[split["kept_from"] :]) >= 20_000
    assert result.conversation.validate() == []


def test_pi_without_a_split_summarizes_as_before() -> None:
    """A cut that falls between turns gives one summary, without the turn-context heading."""
    msgs: list[dict[str, Any]] = []
    for s in range(8):
        msgs += _turn(f"Request {s}", 1, 1_400, s)
    conv = _conv(msgs)
    request = SummaryRequest(conv, 0, len(msgs) - 4 * 3, None, 1_000)
    assert conv[request.stop]["role"] == "user" and pi.split_turn_start(request) is None
    notes: dict[str, Any] = {}
    assert pi.summarize_split_turn(lambda r: f"{r.start}:{r.stop}", request, notes) == f"0:{request.stop}"
    assert notes == {}


def test_pi_split_turn_at_the_start_gets_the_whole_cap() -> None:
    conv = _conv(_turn("One long task", 20, 300, 3))
    request = SummaryRequest(conv, 0, 21, None, 900)
    seen: list[SummaryRequest] = []

    def write(r: SummaryRequest) -> str:
        seen.append(r)
        return "the prefix"

    notes: dict[str, Any] = {}
    text = pi.summarize_split_turn(write, request, notes)
    assert text == "the prefix"  # nothing before the turn: one summary, no heading
    assert len(seen) == 1 and seen[0].max_tokens == 900 and notes["split_turn"]["turn_start"] == 0
    assert seen[0].context["split_turn"] == "prefix" and (seen[0].start, seen[0].stop) == (0, 21)


# -- Pi: /compact with focus instructions -------------------------------------------------------------


def test_compact_instructions_reach_the_llm_summarizer(server: LLMServer) -> None:
    from tests.providers.test_providers import make

    conv = _long_session()
    provider = make("anthropic", server, context_window=400_000)
    server.default = lambda request: _summary_reply(conv)
    focus = "Focus on the database migration and the failing test_final."
    result = Compactor("pi", summarizer=LLMSummarizer(provider)).compact(conv, manual=True, instructions=focus)
    assert result.summary and all(focus in _sent_texts(server, k) for k in range(len(server.requests)))
    before = len(server.requests)
    Compactor("pi", summarizer=LLMSummarizer(provider)).compact(conv, manual=True)
    assert all("Additional instructions" not in _sent_texts(server, k) for k in range(before, len(server.requests)))


def test_compact_instructions_offline_and_checked() -> None:
    conv = _long_session()
    plain = Compactor("pi").compact(conv, manual=True)
    focused = Compactor("pi").compact(conv, manual=True, instructions="focus on tests")
    assert focused.summary == plain.summary  # the offline summarizer extracts the same facts
    with pytest.raises(ArgumentTypeError, match="instructions"):
        Compactor("pi").compact(conv, manual=True, instructions=42)  # type: ignore[arg-type]
    assert Compactor("pi").compact(conv, manual=True, instructions="   ").summary == plain.summary


def test_cli_compact_instructions(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in _long_session().to_jsonl()), encoding="utf-8")
    args = [sys.executable, "-m", "agentcontext", "compact", str(path), "--budget", "30%", "--strategy", "pi"]
    done = subprocess.run(
        [*args, "--instructions", "focus on src/mod3.py", "--json"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["summary"]
    bad = subprocess.run([*args, "--instructions"], capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and "--instructions" in bad.stderr


# -- Codex: user messages + the summary ----------------------------------------------------------------


def test_codex_rebuilds_history_as_user_messages_and_the_summary() -> None:
    msgs: list[dict[str, Any]] = []
    for s in range(5):
        msgs += _turn(f"Request {s}: update docs/page{s}.md", 3, 500, s)
    conv = _conv([{"role": "system", "content": "You are Codex."}, *msgs])
    result = Compactor("codex").compact(conv, manual=True)
    out = result.conversation.to_jsonl()
    assert out[0] == {"role": "system", "content": "You are Codex."}
    assert [m["content"] for m in out[1:-1]] == [f"Request {s}: update docs/page{s}.md" for s in range(5)]
    assert out[-1]["role"] == "user" and out[-1]["content"].startswith(SUMMARY_MARKER)
    assert all(m["role"] in ("system", "user") for m in out)  # no tool call, result or assistant text stays
    fates = result.fates()
    users = [i for i, m in enumerate(conv.to_jsonl()) if m["role"] == "user"]
    assert all(fates[i] == "kept" for i in users)
    assert all(fates[i] == "summarized" for i in range(1, len(conv)) if i not in users)
    summarize = next(s for s in result.stages if s.stage == "summarize")
    assert summarize.detail["kept_user_messages"] == 5 and summarize.tokens_after == result.tokens_after
    assert result.conversation.validate() == []


def test_codex_keeps_the_newest_user_messages_within_20000_tokens() -> None:
    msgs: list[dict[str, Any]] = []
    for s in range(8):
        msgs += _turn(f"Request {s}: " + _text(3_500, s), 1, 200, s)
    conv = _conv(msgs)
    result = Compactor("codex").compact(conv, manual=True)
    out = result.conversation.to_jsonl()
    users = out[:-1]
    assert sum(count_tokens(m["content"]) for m in users) <= 20_000
    # The newest whole, in order; the one crossing the limit cut head + marker + tail; older ones gone.
    assert users[-1]["content"] == msgs[-(1 + 3)]["content"]
    assert [m["content"][:9] for m in users] == [f"Request {s}" for s in range(8 - len(users), 8)]
    summarize = next(s for s in result.stages if s.stage == "summarize")
    assert summarize.detail["user_messages_cut"] == 1
    assert "Request 0" not in " ".join(m["content"][:12] for m in users)
    assert result.fates().count("changed") == 1


def test_codex_under_a_budget_fits_and_keeps_the_latest_ask() -> None:
    msgs: list[dict[str, Any]] = []
    for s in range(6):
        msgs += _turn(f"Request {s}: " + _text(400, s), 3, 600, s)
    conv = _conv(msgs)
    result = Compactor("codex").compact(conv, budget=conv.tokens // 5)
    assert result.fits and result.tokens_after <= conv.tokens // 5
    assert f"Request 5: {_text(400, 5)}" in [m["content"] for m in result.conversation.to_jsonl()]


def test_codex_skips_earlier_summaries() -> None:
    conv = _long_session()
    first = Compactor("codex").compact(conv, manual=True).conversation
    again = ac.Conversation([*first.to_jsonl(), *_turn("Request 9: one more thing", 2, 300, 9)], format="openai")
    positions = codex.user_messages(again)
    assert all(not str(again[i]["content"]).startswith(SUMMARY_MARKER) for i in positions)
    second = Compactor("codex").compact(again, manual=True)
    out = second.conversation.to_jsonl()
    assert sum(1 for m in out if str(m.get("content")).startswith(SUMMARY_MARKER)) == 1


# -- Alyx --------------------------------------------------------------------------------------------


def test_alyx_is_a_preset_everywhere() -> None:
    assert "alyx" in PRESETS and "alyx" in BUDGET_PRESETS and "alyx" in ac.PRESETS
    policy = ac.PRESETS["alyx"].compaction
    alyx = policy.harness
    assert isinstance(alyx, Alyx) and alyx.result_max_tokens == 10_000 and alyx.checkpoint_tokens == 50_000
    assert policy.trigger_tokens == 50_000 and "read_file" in alyx.dedup_tools
    with pytest.raises(ArgumentTypeError, match="dedup_tools"):
        Alyx(dedup_tools=["read_file"])  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="result_max_tokens"):
        Alyx(result_max_tokens=0)


def test_alyx_cuts_each_result_to_the_largest_head_within_10000_tokens(tmp_path: Path) -> None:
    big = "\n".join(f"row {i}: " + _text(12, i) for i in range(4_000))
    assert count_tokens(big) > 30_000
    msgs = [
        {"role": "user", "content": "Explore the traces table."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "q1", "type": "function", "function": {"name": "query", "arguments": "{\"sql\": \"select *\"}"}}]},
        {"role": "tool", "tool_call_id": "q1", "content": big},
        {"role": "assistant", "content": "Seen it."},
        {"role": "user", "content": "And now?"},
    ]  # fmt: skip
    conv = _conv(msgs)
    store = ResultStore(tmp_path / "store")
    result = Compactor("alyx", store=store).compact(conv, budget=conv.tokens // 2)
    budgets = next(s for s in result.stages if s.stage == "budgets")
    assert budgets.detail["results_cut"] == 1 and budgets.detail["result_budget_tokens"] == 10_000
    cut = next(m["content"] for m in result.conversation.to_jsonl() if m["role"] == "tool")
    assert count_tokens(cut) <= 10_000
    head = cut[: cut.index("\n[")] if "\n[" in cut else cut
    assert big.startswith(head)
    # The largest head: the next line would not have fit beside the marker.
    marker_tokens = count_tokens(cut) - count_tokens(head)
    next_line = big[: big.index("\n", len(head) + 1)]
    assert count_tokens(next_line) + marker_tokens > 10_000 or count_tokens(head) > 9_800
    recall_id = store.alias("q1")  # the call id resolves to the original
    assert recall_id is not None and recall_id in cut and store.get(recall_id) == big


def test_alyx_keeps_only_the_latest_preview_of_repeated_calls() -> None:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "Look at the schema."}]
    for k in range(3):
        cid = f"r{k}"
        msgs += [
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"s.sql\"}"}}]},
            {"role": "tool", "tool_call_id": cid, "content": _text(3_000, 7)},
        ]  # fmt: skip
    msgs.append({"role": "assistant", "content": "Done."})
    conv = _conv(msgs)
    result = Compactor("alyx").compact(conv, budget=conv.tokens // 2)
    budgets = [s for s in result.stages if s.stage == "budgets"]
    assert budgets[0].detail["repeated_calls_stubbed"] == 2
    tools = [m["content"] for m in result.conversation.to_jsonl() if m["role"] == "tool"]
    assert tools[-1] == _text(3_000, 7) and all(len(t) < 300 for t in tools[:-1])
    assert result.fits and result.conversation.validate() == []
    # Other presets do not dedup.
    other = Compactor("openharness").compact(conv, budget=conv.tokens // 2)
    assert all(s.detail.get("repeated_calls_stubbed") is None for s in other.stages)


def test_alyx_forces_a_checkpoint_at_50000_tokens(server: LLMServer, tmp_path: Path) -> None:
    from tests.providers.test_providers import make

    msgs: list[dict[str, Any]] = []
    for s in range(14):
        msgs += _turn(f"Query {s}: count spans by service", 2, 1_500, s, tool="query")
    conv = _conv(msgs)
    assert conv.tokens > 50_000
    store = MemoryStore(directory=tmp_path / "mem")
    provider = make("openai", server, context_window=400_000)
    write = {
        "name": "memory_write",
        "arguments": {"name": "checkpoint", "type": "project", "description": "State of the exploration",
                      "body": "Counting spans by service; 14 queries run."},
    }  # fmt: skip
    server.enqueue(Reply("", tool_calls=[write], output_tokens=30), Reply("saved", output_tokens=2))
    server.default = lambda request: _summary_reply(conv)
    compactor = Compactor("alyx", summarizer=LLMSummarizer(provider), memory=MemoryTools(store), flush=False)
    result = compactor.maybe_compact(conv)
    assert result is not None
    stages = [s.stage for s in result.stages]
    assert stages.index("flush") < stages.index("summarize")
    flush = result.stages[stages.index("flush")]
    assert flush.detail["checkpoint"] is True and flush.detail["written"] == ["checkpoint"]
    assert CHECKPOINT_INSTRUCTION[:50] in _sent_texts(server, 0) and FLUSH_INSTRUCTION[:50] not in _sent_texts(
        server, 0
    )
    assert store.get("checkpoint")["type"] == "project"
    assert CHECKPOINT_INSTRUCTION[:50] not in json.dumps(result.conversation.to_jsonl())


def test_no_checkpoint_under_50000_tokens_or_for_other_presets(server: LLMServer, tmp_path: Path) -> None:
    from tests.providers.test_providers import make

    msgs: list[dict[str, Any]] = []
    for s in range(6):
        msgs += _turn(f"Query {s}", 2, 1_200, s, tool="query")
    conv = _conv(msgs)
    assert 20_000 < conv.tokens < 50_000
    provider = make("openai", server, context_window=400_000)
    server.default = lambda request: _summary_reply(conv)
    tools = MemoryTools(MemoryStore(directory=tmp_path / "mem"))
    for name in ("alyx", "openharness"):
        compactor = Compactor(name, summarizer=LLMSummarizer(provider), memory=tools, flush=False)
        result = compactor.compact(conv, budget=conv.tokens // 4)
        assert "flush" not in [s.stage for s in result.stages]
    assert all(CHECKPOINT_INSTRUCTION[:50] not in _sent_texts(server, k) for k in range(len(server.requests)))


# -- the shared corpus ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["claude-code", "pi", "codex", "alyx"])
def test_the_presets_on_the_shared_corpus(name: str, transcripts: Path) -> None:
    """Every transcript at 25%: protocol-valid, the latest request kept (raw or in the summary),
    and each harness's shape: Codex keeps only user messages beside the summary, Pi's split
    summaries carry the turn context, Alyx's results are within 10,000 tokens."""
    splits = rebuilt = 0
    for path in support.normalized_files():
        conv = ac.Conversation.from_file(path)
        budget = max(1, conv.tokens // 4)
        result = Compactor(name).compact(conv, budget=budget)
        assert result.conversation.validate() == [], path
        ask = support.latest_request(conv)
        if result.fits and ask is not None:
            # Raw, quoted in the summary, or cut head + marker + tail (as the ladder's tests check it).
            index, text = ask
            out = result.conversation.to_jsonl()
            opening = " ".join(text.split())[:40]
            origins = result.origins or []
            cut = index in origins and text.startswith(str(out[origins.index(index)].get("content"))[:20])
            quoted = opening in " ".join(" ".join(str(m.get("content")) for m in out).split())
            assert index in result.provenance or quoted or cut, path
        summarize = [s for s in result.stages if s.stage == "summarize" and "failed" not in s.detail]
        if name == "codex" and summarize and result.summary_in_output():
            rebuilt += 1
            roles = {m["role"] for m in result.conversation.to_jsonl()[conv.preamble :]}
            assert roles <= {"user"}, path
        split = summarize[-1].detail.get("split_turn") if summarize else None
        if name == "pi" and split and split["turn_start"] > conv.preamble:
            splits += 1
            assert result.summary and pi.TURN_CONTEXT_HEADING in result.summary, path
        if name == "alyx":
            for m in result.conversation.to_jsonl():
                if m["role"] == "tool" and isinstance(m.get("content"), str):
                    assert count_tokens(m["content"]) <= 10_000, path
    if name == "codex":
        assert rebuilt > 0
    if name == "pi":
        assert splits > 0


def test_harness_errors_are_typed() -> None:
    with pytest.raises(ContextOverflowError):
        claude_code.summarize_dropping_rounds(
            lambda r: "never", SummaryRequest(_conv(_turn("x", 1, 50, 1)), 0, 1, None, 10), 1, {}
        )


def test_codex_with_a_budget_gives_the_summary_the_room_the_user_messages_leave() -> None:
    # The summary was capped at a third of the target while the user messages took a few hundred
    # tokens: a 12,000-token budget came out at 38% (pooled retention at 25%: 0.844, now 0.921).
    conv = ac.Conversation(support.synthetic_session(400, seed=11), format="openai")
    result = Compactor("codex").compact(conv, budget=12_000)
    (summary,) = [s for s in result.stages if s.stage == "summarize"]
    assert summary.detail["summary_cap"] > 12_000 // 3
    assert result.fits and result.conversation.validate() == [] and (result.fill or 0) > 0.45
