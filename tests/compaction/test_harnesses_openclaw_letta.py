"""The OpenClaw and Letta preset behaviours (agentcontext.compaction.harnesses): OpenClaw's history-share
trigger, oldest chunks summarized first, soft trim before hard clear and the cache TTL; Letta's
sliding window, memory-pressure warning and overflowing summarizer request. Real components only:
the ladder, the offline summarizer (a subclass that records what it is asked and, like an LLM
summarizer, has a window), the compiler, the loopback LLM server."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.compaction import PRESETS, CompactionPolicy, Compactor
from agentcontext.compaction.harnesses import letta, openclaw
from agentcontext.compaction.harnesses.letta import Letta
from agentcontext.compaction.harnesses.openclaw import OpenClaw
from agentcontext.compaction.summarize import HANDOFF_PROMPT, OfflineSummarizer, SummaryRequest
from agentcontext.compiler import Compiler, Reminders, WorkingSet
from agentcontext.errors import AgentContextError, OptionError
from tests import support

ASK = "Please make the parser accept tabs in tests/test_parser.py and keep the public API stable"


class Recording(OfflineSummarizer):
    """The offline summarizer with a window (as an LLM summarizer has), recording each request."""

    window_bound = True

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []
        self.outputs: list[str] = []

    def summarize(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        text = super().summarize(request)
        self.outputs.append(text)
        return text


def session(rounds: int, result_chars: int = 2_000, *, system: str = "You are a coding agent.") -> ac.Conversation:
    """A system prompt, the ask, then ``rounds`` rounds of a bash call and its result."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": ASK}]
    for i in range(rounds):
        messages.append(
            {
                "role": "assistant",
                "content": f"Step {i}: running the tests again.",
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"cmd": f"pytest -k case_{i}"})},
                    }
                ],
            }
        )
        body = f"case_{i} output line\n" * (result_chars // 20)
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": body[:result_chars]})
    return ac.Conversation(messages)


def results(conv: ac.Conversation) -> list[str]:
    return [m["content"] for m in conv.to_jsonl() if m["role"] == "tool"]


# -- OpenClaw ----------------------------------------------------------------------------------


def test_openclaw_triggers_on_the_history_share_of_the_whole_window() -> None:
    conv = session(6, system="You are a coding agent. " + "Rules of the house. " * 1_500)
    history = openclaw.history_tokens(conv)
    system = conv.tokens - history
    assert system > history  # the system prompt is the larger part
    exact = dataclasses.replace(PRESETS["openclaw"].compaction, context_window=2 * history)
    # The whole conversation is far over half the window; the history is exactly half: no compaction,
    # with or without tool definitions outside the conversation.
    assert conv.tokens > 0.5 * exact.context_window
    assert Compactor(exact).maybe_compact(conv) is None
    assert Compactor(exact).maybe_compact(conv, overhead=history // 2) is None
    # One token more of history than the share: it compacts.
    over = dataclasses.replace(exact, context_window=2 * history - 2)
    assert openclaw.history_over_share(conv, over) is True
    assert Compactor(over).maybe_compact(conv) is not None
    # The same policy without the history share triggers on the whole conversation (trigger 0.5).
    plain = with_options(exact, max_history_share=None)
    assert openclaw.history_over_share(conv, plain) is None
    assert Compactor(plain).maybe_compact(conv) is not None


def test_openclaw_summarizes_the_oldest_chunks_first_then_merges_the_rest() -> None:
    conv = session(40)
    recording = Recording()
    policy = dataclasses.replace(
        PRESETS["openclaw"].compaction, context_window=conv.tokens // 2, reserved_output=0, safety_margin=0,
        clear_tool_results=False, summarizer_window=conv.tokens,
    )  # fmt: skip
    result = Compactor(policy, summarizer=recording).compact(conv)
    summarize = next(s for s in result.stages if s.stage == "summarize")
    stop = 1 + summarize.detail["summarized_messages"]
    lo = 1 + summarize.detail["chunk_messages"]
    assert summarize.detail["chunks_summarized_first"] >= 1
    # Two requests: the oldest chunks, then the rest with their summary as the previous one.
    first, rest = recording.requests
    assert (first.start, first.stop) == (1, lo) and first.previous_summary is None
    assert (rest.start, rest.stop) == (lo, stop) and rest.previous_summary == recording.outputs[0]
    # The chunk boundary never separates a call from its result, and the rest is under the share.
    assert lo in support.cut_points(conv) and conv[lo]["role"] == "assistant"
    totals = conv.message_tokens()
    assert sum(totals[lo:stop]) <= int(options(policy).max_history_share * policy.context_window)
    assert summarize.detail["chunk_tokens"] == sum(totals[1:lo])
    # Equal token mass: the last chunk set apart is about the size of what was left after it.
    assert result.summary is not None and ASK in result.summary
    assert result.conversation.validate() == []


def test_openclaw_chunk_summaries_are_staged_with_a_merge_when_over_the_summarizer_window() -> None:
    conv = session(40)
    recording = Recording()
    policy = dataclasses.replace(
        PRESETS["openclaw"].compaction, context_window=conv.tokens // 2, reserved_output=0, safety_margin=0,
        clear_tool_results=False, summarizer_window=conv.tokens // 6,
    )  # fmt: skip
    result = Compactor(policy, summarizer=recording).compact(conv)
    contexts = [r.context for r in recording.requests]
    assert any("part" in c for c in contexts) and {"merge": True} in contexts
    assert result.summary is not None and ASK in result.summary
    assert result.conversation.validate() == []


def test_equal_token_chunks_on_the_corpus_never_split_a_pair() -> None:
    for path in support.normalized_files()[:20]:
        conv = ac.Conversation.from_file(path)
        result = Compactor("openclaw").compact(conv, budget="25%")
        assert result.conversation.validate() == [], path
        for s in result.stages:
            if "chunk_messages" in s.detail:
                lo = conv.preamble + s.detail["chunk_messages"]
                assert lo in support.cut_points(conv), path


def options(policy: CompactionPolicy) -> Any:
    """The options of ``policy``'s harness."""
    return policy.harness


def with_options(policy: CompactionPolicy, **changes: Any) -> CompactionPolicy:
    """``policy`` with these options of its harness changed."""
    return dataclasses.replace(policy, harness=dataclasses.replace(policy.harness, **changes))


def openclaw_policy(conv: ac.Conversation, target: float) -> CompactionPolicy:
    return dataclasses.replace(
        PRESETS["openclaw"].compaction, context_window=conv.tokens, reserved_output=0, safety_margin=0, trigger=0.9,
        target=target, summarize=False, drop_oldest_groups=False,
    )  # fmt: skip


def test_openclaw_soft_trims_old_results_before_clearing_them() -> None:
    conv = session(20, result_chars=12_000)
    store_dir_result = Compactor(openclaw_policy(conv, 0.6)).compact(conv)
    stages = [(s.stage, s.detail) for s in store_dir_result.stages]
    # Trimming alone reaches the target: nothing is cleared.
    assert [s for s, _ in stages] == ["clear"] and stages[0][1]["results_soft_trimmed"] > 0
    after = results(store_dir_result.conversation)
    before = results(conv)
    protected = set(conv.protected(recent_messages=12, recent_tools=3))
    tool_positions = [i for i in range(len(conv)) if conv[i]["role"] == "tool"]
    for i, old, new in zip(tool_positions, before, after, strict=True):
        if i in protected:
            assert new == old
        else:
            assert len(new) <= 4_000 < len(old)
            assert new.startswith(old[:200]) and new.endswith(old[-200:])  # head and tail
            assert "[cleared" not in new
    # When trimming is not enough, results are then cleared, after the trim.
    tight = Compactor(openclaw_policy(conv, 0.05)).compact(conv)
    kinds = [("trim" if "results_soft_trimmed" in s.detail else "clear") for s in tight.stages if s.stage == "clear"]
    assert kinds == ["trim", "clear"]
    assert any("[cleared" in r for r in results(tight.conversation))
    assert tight.conversation.validate() == []


def test_openclaw_keeps_results_while_the_cache_is_warm(tmp_path: Path) -> None:
    conv = session(20, result_chars=12_000)
    policy = dataclasses.replace(openclaw_policy(conv, 0.6), summarize=True, drop_oldest_groups=True)
    assert options(policy).cache_ttl_seconds == 300
    # Warm: no result is trimmed or cleared; the ladder goes on to the summary instead.
    warm = Compactor(policy).compact(conv, idle_seconds=299.5)
    assert warm.stages[0].stage == "clear" and "warm" in warm.stages[0].detail["deferred"]
    assert not any(s.detail.get("results_soft_trimmed") or s.detail.get("results_cleared") for s in warm.stages)
    assert warm.summary is not None
    kept = results(warm.conversation)
    assert kept and all(r in results(conv) for r in kept)  # every result left is the original
    for idle in (300, 3_600, None):  # expired, or unknown
        cold = Compactor(policy).compact(conv, idle_seconds=idle)
        assert cold.stages[0].detail.get("results_soft_trimmed"), idle
        assert cold.summary is None
    # No TTL: the idle time does not matter.
    no_ttl = Compactor(with_options(policy, cache_ttl_seconds=0)).compact(conv, idle_seconds=1)
    assert no_ttl.stages[0].detail.get("results_soft_trimmed")
    # With nothing else to bring it under the target (no summary), the deferred trim runs last.
    only_clear = Compactor(openclaw_policy(conv, 0.6)).compact(conv, idle_seconds=5)
    assert [s.stage for s in only_clear.stages] == ["clear", "clear"]
    assert only_clear.stages[0].detail.get("deferred") and only_clear.stages[1].detail.get("results_soft_trimmed")
    # maybe_compact passes the idle time on.
    result = Compactor(policy).maybe_compact(conv, idle_seconds=5)
    assert result is not None and result.stages[0].detail.get("deferred")
    # The originals of trimmed results are recalled by their call id.
    store = ac.ResultStore(tmp_path / "store")
    trimmed = Compactor(policy, store=store).compact(conv)
    assert trimmed.stages[0].detail["results_soft_trimmed"] > 0
    assert store.get(store.alias("call_0") or "") == results(conv)[0]


def test_the_ttl_and_history_share_options_are_checked() -> None:
    with pytest.raises(OptionError):
        Compactor("openclaw").compact(session(2), idle_seconds=-1)
    with pytest.raises(AgentContextError):
        Compactor("openclaw").compact(session(2), idle_seconds="soon")  # type: ignore[arg-type]
    for harness, bad in ((OpenClaw, {"max_history_share": 1.5}), (OpenClaw, {"max_history_share": 0}),
                         (Letta, {"sliding_window": -0.1}), (Letta, {"memory_warning": 2}),
                         (OpenClaw, {"soft_trim_chars": -1}), (OpenClaw, {"cache_ttl_seconds": -5})):  # fmt: skip
        with pytest.raises(AgentContextError):
            harness(**bad)
    with pytest.raises(AgentContextError):
        CompactionPolicy(harness="letta")  # type: ignore[arg-type]
    env = {"AGENTCONTEXT_COMPACT__MAX_HISTORY_SHARE": "0.4", "AGENTCONTEXT_COMPACT__CACHE_TTL_SECONDS": "60",
           "AGENTCONTEXT_COMPACT__SLIDING_WINDOW": "none"}  # fmt: skip
    # The options of the policy's harness are set; those of other harnesses do not apply.
    assert PRESETS["openclaw"].compaction.from_env(env).harness == OpenClaw(max_history_share=0.4, cache_ttl_seconds=60)
    assert PRESETS["letta"].compaction.from_env(env).harness == Letta(sliding_window=None)
    with pytest.raises(OptionError):
        PRESETS["openclaw"].compaction.from_env({"AGENTCONTEXT_COMPACT__MAX_HISTORY_SHARE": "half"})


def test_other_presets_have_none_of_these_behaviours() -> None:
    for name, preset in PRESETS.items():
        policy = preset.compaction
        if name not in ("openclaw", "letta"):
            assert not isinstance(policy.harness, (OpenClaw, Letta)), name
            assert policy.harness.summarizer_overflow != "truncate", name  # claude-code drops rounds instead


# -- Letta -------------------------------------------------------------------------------------


def letta_policy(conv: ac.Conversation) -> CompactionPolicy:
    return dataclasses.replace(
        PRESETS["letta"].compaction, context_window=conv.tokens, reserved_output=0, safety_margin=0, trigger=0.9, target=0.45,
        summary_max_tokens=200,
    )  # fmt: skip


def test_letta_evicts_from_30_percent_of_messages_in_10_percent_steps() -> None:
    conv = session(30, result_chars=1_200)
    policy = letta_policy(conv)
    result = Compactor(policy).compact(conv)
    summarize = next(s for s in result.stages if s.stage == "summarize")
    start = 1 + summarize.detail["summarized_messages"]
    n, totals = len(conv) - 1, conv.message_tokens()
    cuts = [c for c in support.cut_points(conv) if 1 < c < len(conv)]
    room = policy.target_tokens - totals[0] - policy.summary_max_tokens - 48

    def cut_at(share: float) -> int:
        return max(c for c in cuts if c <= 1 + round(share * n))

    steps = [0.3 + 0.1 * k for k in range(8)]
    fitting = [s for s in steps if sum(totals[cut_at(s) :]) <= room]
    # The raw part starts at the first step that gets under the target, not at 30% and not later.
    assert fitting and fitting[0] > 0.3
    assert start == cut_at(fitting[0])
    assert result.tokens_after <= policy.target_tokens
    assert result.conversation.validate() == [] and result.summary is not None and ASK in result.summary
    # Without the window, the same policy keeps only the last round raw.
    plain = Compactor(with_options(policy, sliding_window=None)).compact(conv)
    assert next(s for s in plain.stages if s.stage == "summarize").detail["summarized_messages"] > start - 1


def test_letta_window_gives_up_to_the_last_round_when_no_step_fits() -> None:
    conv = session(6, result_chars=6_000)
    policy = dataclasses.replace(letta_policy(conv), target=0.2)
    result = Compactor(policy).compact(conv)
    assert result.conversation.validate() == []
    assert result.summary is not None and result.fits


def test_letta_memory_warning_is_a_pressure_reminder_at_75_percent() -> None:
    rule = letta.memory_warning(PRESETS["letta"].compaction)
    assert rule is not None and rule.on == "pressure" and rule.share == 0.75
    assert letta.memory_warning(PRESETS["openclaw"].compaction) is None
    reminders = Reminders([rule])
    reminders.pressure(74_000, 100_000)
    assert reminders.take() == []
    reminders.pressure(76_000, 100_000)
    assert [text for _, text in reminders.take()] == [letta.MEMORY_WARNING]
    reminders.pressure(80_000, 100_000)  # once per crossing
    assert reminders.take() == []


@pytest.fixture
def providers() -> Iterator[list[Any]]:
    opened: list[Any] = []
    yield opened
    for provider in opened:
        provider.close()


def test_a_letta_session_warns_before_it_compacts(providers: list[Any]) -> None:
    pytest.importorskip("openai", reason="the openai SDK is a test extra")
    from agentcontext.providers import OpenAIChatProvider
    from agentcontext.sessions.loop import Session
    from tests.llm_server import LLMServer, Reply

    compiler = Compiler(WorkingSet())
    with LLMServer() as server:
        provider = OpenAIChatProvider(
            "gpt-test", base_url=server.url + "/v1", api_key="k", max_retries=0, context_window=100_000
        )
        providers.append(provider)
        session = Session(provider, compactor="letta", compiler=compiler, max_output_tokens=256)
        assert letta.memory_warning(session.compactor.policy) in compiler.reminders.rules
        server.enqueue(Reply("ok"), Reply("ok"))
        session.send("short question")
        session.send("a long paste: " + "word " * 77_000)  # about 77% of the window, under the 90% trigger
        bodies = [json.dumps(r.body) for r in server.requests]
    assert letta.MEMORY_WARNING not in bodies[0]
    assert letta.MEMORY_WARNING in bodies[1]
    assert not session.compactions  # a warning, not yet a compaction (90%)


def test_a_warm_cache_keeps_a_session_from_trimming(providers: list[Any]) -> None:
    pytest.importorskip("openai", reason="the openai SDK is a test extra")
    from agentcontext.providers import OpenAIChatProvider
    from agentcontext.sessions.loop import Session
    from tests.llm_server import LLMServer, Reply

    with LLMServer() as server:
        provider = OpenAIChatProvider(
            "gpt-test", base_url=server.url + "/v1", api_key="k", max_retries=0, context_window=200_000
        )
        providers.append(provider)
        conv = session(20, result_chars=12_000)
        policy = dataclasses.replace(
            with_options(openclaw_policy(conv, 0.6), max_history_share=0.0001),
            context_window=200_000,
            target=conv.tokens * 0.6,
        )
        s = Session(provider, compactor=Compactor(policy), conversation=conv.slice(1), result_policy=False)
        server.enqueue(Reply("first"), Reply("second"))
        s.send()  # no call before it: the idle time is unknown, so results may be trimmed
        assert s.compactions and s.compactions[-1].stages[0].detail.get("results_soft_trimmed")
        s.add_user("and now this log: " + "line of the log\n" * 8_000)  # over the target again
        s.send()  # right after a call: the cache is warm
    assert s.compactions[-1].stages[0].detail.get("deferred", "").startswith("the prompt cache is warm")


def test_letta_cuts_tool_returns_when_the_summary_request_overflows() -> None:
    conv = session(12, result_chars=20_000)
    recording = Recording()
    cut, _ = conv.truncate_tool_results(letta.TOOL_RETURN_CHARS)
    room_needed = sum(cut.message_tokens()[1:])
    assert sum(conv.message_tokens()[1:]) > 3 * room_needed
    policy = dataclasses.replace(
        letta_policy(conv), summarizer_window=room_needed + 8_192 + ac.count_tokens(HANDOFF_PROMPT),
        target=0.1, summary_max_tokens=400, tool_result_budgets=False,  # results enter whole
    )  # fmt: skip
    result = Compactor(policy, summarizer=recording).compact(conv)
    asked = recording.requests[0]
    assert asked.context == {"overflow": "tool returns cut to 5,000 chars"}
    assert all(len(m["content"]) <= letta.TOOL_RETURN_CHARS for m in asked.older.to_jsonl() if m["role"] == "tool")
    assert len(recording.requests) == 1  # not staged
    assert result.summary is not None and result.conversation.validate() == []


def test_letta_keeps_head_and_tail_of_the_transcript_when_still_too_large() -> None:
    conv = session(60, result_chars=6_000)
    recording = Recording()
    policy = dataclasses.replace(letta_policy(conv), summarizer_window=8_192 + 2_000, summary_max_tokens=400)
    room = policy.summarizer_window - policy.reserved_output - ac.count_tokens(HANDOFF_PROMPT)
    Compactor(policy, summarizer=recording).compact(conv)
    asked = recording.requests[0]
    assert asked.context["overflow"].startswith("transcript kept as 30% head + 30% tail")
    assert len(asked.older) == 1
    text = asked.older[0]["content"]
    assert ac.count_tokens(text) <= int(0.6 * room)
    assert text.startswith("user: " + ASK)  # the head
    assert "case_" in text[-2_000:]  # the tail: the last results
    assert len(recording.requests) == 1


def test_soft_trim_reaches_results_the_budgets_stage_already_cut() -> None:
    conv = session(20, result_chars=30_000)  # over the 16,000-char result budget
    result = Compactor(openclaw_policy(conv, 0.3)).compact(conv)
    assert [s.stage for s in result.stages][:2] == ["budgets", "clear"]
    assert result.stages[1].detail["results_soft_trimmed"] > 0
    old = [r for r in results(result.conversation) if "[cleared" not in r]
    assert any(len(r) <= 4_000 for r in old)
