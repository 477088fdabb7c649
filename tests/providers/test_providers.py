"""Providers, the LLM summarizer, prompt-too-long recovery, usage calibration and server-side
context management, through the real SDK clients against the loopback server in
``tests/llm_server.py``."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.compaction import CompactionPolicy, Compactor
from agentcontext.compaction.check import SpanCheck
from agentcontext.compaction.llm import LLMSummarizer, identifiers_in, required_identifiers
from agentcontext.errors import ContextOverflowError, MissingExtraError, OptionError, SummaryError
from agentcontext.measure.calibration import Calibration, class_tokens
from agentcontext.providers import (
    AnthropicProvider,
    classify_overflow,
    context_window,
)
from agentcontext.providers.server_side import (
    COMPACT_BETA,
    CONTEXT_MANAGEMENT_BETA,
    anthropic_context_management,
    compaction_indices,
    openai_context_management,
    pin_compactions,
)
from agentcontext.sessions.log import SessionLog
from agentcontext.sessions.loop import Session
from tests import support
from tests.llm_server import CHAT_STYLES, HTTPError, LLMServer, Overflow, Recorded, Reply
from tests.measure.test_calibration import content_class

anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is a test extra: pip install -e '.[test]'")
openai = pytest.importorskip("openai", reason="the openai SDK is a test extra: pip install -e '.[test]'")


def make(kind: str, server: LLMServer, **kw: Any) -> Any:
    """A provider of ``kind`` talking to ``server``, closed when the server fixture ends."""
    return support.provider(kind, server, **kw)


KINDS = ["anthropic", "openai", "responses"]


def session_messages(n: int = 120, seed: int = 3) -> list[dict[str, Any]]:
    """A tool-heavy Chat session ending in a user ask with paths and an unresolved error."""
    msgs = support.synthetic_session(n, seed=seed)
    while msgs and msgs[-1]["role"] != "tool" and msgs[-1]["role"] != "user":
        msgs.pop()
    return msgs


def prompt_messages(recorded: Recorded) -> list[Any]:
    body = recorded.body
    return list(body.get("messages") or body.get("input") or [])


def last_user_text(recorded: Recorded) -> str:
    last = prompt_messages(recorded)[-1]
    content = last.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


# -- model windows and errors ----------------------------------------------------------------


def test_context_window_table_and_override() -> None:
    assert context_window("claude-sonnet-4-5-20250929") == 200_000
    assert context_window("gpt-4o-mini") == 128_000
    assert context_window("gpt-4.1-mini") == 1_047_576
    assert context_window("anything", 32_000) == 32_000
    with pytest.raises(OptionError, match="context_window"):
        context_window("my-local-model")
    with pytest.raises(OptionError):
        context_window("gpt-4o", 0)


@pytest.mark.parametrize(
    ("body", "tokens", "limit"),
    [
        (
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "prompt is too long: 208310 tokens > 200000 maximum",
                },
            },
            208_310,
            200_000,
        ),
        (
            {
                "error": {
                    "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens. Please reduce the length of the messages.",
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            },
            130_532,
            128_000,
        ),
        (
            {
                "error": {
                    "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
                    "type": "invalid_request_error",
                    "param": "input",
                    "code": "context_length_exceeded",
                }
            },
            None,
            None,
        ),
        (
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 5000,
                    "n_ctx": 4096,
                }
            },
            5_000,
            4_096,
        ),
        (
            {
                "error": {
                    "message": "The input token count (1234567) exceeds the maximum number of tokens allowed (1048576).",
                    "code": 400,
                }
            },
            1_234_567,
            1_048_576,
        ),
    ],
)
def test_classify_overflow_bodies(body: dict[str, Any], tokens: int | None, limit: int | None) -> None:
    err = classify_overflow(body, provider="p")
    assert isinstance(err, ContextOverflowError)
    assert (err.tokens, err.limit) == (tokens, limit)


@pytest.mark.parametrize(
    "body",
    [
        {
            "type": "error",
            "error": {
                "type": "rate_limit_error",
                "message": "Number of request tokens has exceeded your per-minute rate limit",
            },
        },
        {"error": {"message": "Invalid 'messages[2].tool_call_id': no such call", "code": "invalid_value"}},
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ],
)
def test_classify_overflow_leaves_other_errors(body: dict[str, Any]) -> None:
    assert classify_overflow(body) is None


@pytest.mark.parametrize("kind", KINDS)
def test_overflow_from_each_api_is_one_exception(server: LLMServer, kind: str) -> None:
    provider = make(kind, server)
    server.enqueue(Overflow(tokens=210_000, limit=200_000))
    conv = ac.Conversation([{"role": "user", "content": "hi"}], format="openai")
    with pytest.raises(ContextOverflowError) as info:
        provider.complete(conv)
    err = info.value
    assert err.status_code == 400
    assert isinstance(err.__cause__, anthropic.APIStatusError if kind == "anthropic" else openai.APIStatusError)
    if kind != "responses":  # the Responses wording carries no numbers
        assert (err.tokens, err.limit) == (210_000, 200_000)


@pytest.mark.parametrize("style", sorted(CHAT_STYLES))
def test_overflow_wordings_of_compatible_servers(server: LLMServer, style: str) -> None:
    provider = make("openai", server, max_output_tokens_param="max_tokens")
    server.enqueue(Overflow(tokens=5_000, limit=4_096, style=style))
    with pytest.raises(ContextOverflowError) as info:
        provider.complete(ac.Conversation([{"role": "user", "content": "hi"}]))
    assert info.value.limit in (4_096, None)
    assert info.value.tokens in (5_000, None)


def test_other_sdk_errors_propagate_unchanged(server: LLMServer) -> None:
    provider = make("anthropic", server)
    server.enqueue(HTTPError(429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}))
    with pytest.raises(anthropic.RateLimitError):
        provider.complete(ac.Conversation([{"role": "user", "content": "hi"}]))


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(MissingExtraError, match=r"agentcontext\[anthropic\]"):
        AnthropicProvider("claude-sonnet-4-5")


# -- completions -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_completion_text_tools_usage(server: LLMServer, kind: str) -> None:
    provider = make(kind, server)
    server.enqueue(
        Reply(
            "let me look", input_tokens=321, output_tokens=9, tool_calls=[{"name": "bash", "arguments": {"cmd": "ls"}}]
        )
    )
    conv = ac.Conversation([{"role": "user", "content": "list files"}])
    done = provider.complete(conv, max_output_tokens=100, system="be brief")
    assert done.text == "let me look"
    assert [(c.name, c.parsed()) for c in done.tool_calls] == [("bash", {"cmd": "ls"})]
    assert done.usage.input_tokens == 321 and done.usage.output_tokens == 9
    sent = server.last.body
    assert sent["model"] == provider.model
    if kind == "anthropic":
        assert sent["system"] == "be brief" and sent["max_tokens"] == 100
    elif kind == "openai":
        assert sent["messages"][0] == {"role": "system", "content": "be brief"}
    else:
        assert sent["instructions"] == "be brief" and sent["max_output_tokens"] == 100
    # The reply goes back into history in the provider's format and answers its tool call.
    history = ac.Conversation(provider.messages_of(conv), format=provider.format)
    history.extend(done.messages)
    history.extend(provider.tool_results([(done.tool_calls[0].id, "a.py b.py")]))
    assert history.validate() == []


# -- the LLM summarizer ----------------------------------------------------------------------


def policy_for(conv: ac.Conversation) -> CompactionPolicy:
    return replace(ac.PRESETS["openharness"].compaction, context_window=conv.tokens // 2, summary_max_tokens=2_000)


def asks(conv: ac.Conversation) -> str:
    """The user requests of ``conv`` as a summary section: a handoff the compactor accepts holds
    the latest user request of what it replaces (issue 13)."""
    texts = [m["content"] for m in conv.to_jsonl() if m["role"] == "user" and isinstance(m["content"], str)]
    return "\n\n## User requests (latest first)\n" + "\n".join(f"- {t}" for t in reversed(texts))


def good_summary(required: list[str], conv: ac.Conversation) -> str:
    # The probe facts of the history too: the compactor checks a summary for them (issue 27).
    facts = SpanCheck.of(conv, conv.preamble, len(conv), window=10**9).missing_texts("")
    return (
        "<analysis>thinking</analysis><summary>## Current state\n- working on "
        + ", ".join(required)
        + asks(conv)
        + "\n\n## Facts\n"
        + "\n".join(f"- {x}" for x in facts)
        + "</summary>"
    )


@pytest.mark.parametrize("kind", KINDS)
def test_full_compaction_with_llm_summarizer(server: LLMServer, kind: str) -> None:
    conv = ac.Conversation(session_messages())
    provider = make(kind, server, context_window=400_000)
    summarizer = LLMSummarizer(provider)
    compactor = Compactor(policy_for(conv), summarizer=summarizer)
    pre = compactor.policy
    # The raw tail: the last `recent_messages` and back to the cut point before them.
    cut = max((c for c in support.cut_points(conv) if len(conv) - c >= pre.recent_messages), default=conv.preamble)
    required = required_identifiers(ac.SummaryRequest(conv, conv.preamble, cut, None, 2_000))
    assert required, "the session's latest ask names paths"
    server.default = lambda request: Reply(good_summary(required, conv), input_tokens=5_000)
    result = compactor.compact(conv)
    assert result.summary is not None and result.summary.startswith("## Current state")
    assert "<analysis>" not in result.summary
    assert result.conversation.validate() == []
    assert result.tokens_after < result.tokens_before
    assert summarizer.events[-1]["outcome"] == "llm"
    # The last round does not fit beside the system messages (a live loop never cuts a round):
    # no second summary is written for nothing (the oversized rung re-planned one, unused).
    assert len(summarizer.events) == 1
    stage = next(s for s in result.stages if s.stage == "summarize")
    assert stage.detail["summarizer"] == "LLMSummarizer"
    # What went to the model: the older history as messages, the handoff request last, no tools.
    sent = server.last
    assert "handing this task over" in last_user_text(sent)
    body = sent.body
    if kind == "anthropic":
        assert body["tool_choice"] == {"type": "none"}
        assert {t["name"] for t in body["tools"]} == set(conv.slice(0, cut).tokens_by_tool())
    else:
        assert "tools" not in body
    fmt = {"anthropic": "anthropic", "openai": "openai", "responses": "responses"}[kind]
    sent_conv = ac.Conversation(prompt_messages(sent), format=fmt)  # type: ignore[arg-type]
    assert sent_conv.tool_calls == conv.slice(conv.preamble, cut).tool_calls
    assert sent_conv.validate() == []


def test_previous_summary_is_updated_not_nested(server: LLMServer) -> None:
    conv = ac.Conversation(session_messages())
    provider = make("openai", server, context_window=400_000)
    compactor = Compactor(policy_for(conv), summarizer=LLMSummarizer(provider, retry_missing=False))
    server.default = lambda request: Reply(f"<summary>## Current state\n- first pass{asks(conv)}</summary>")
    first = compactor.compact(conv)
    grown = first.conversation.slice(0)
    grown.extend(session_messages(80, seed=11)[1:])
    server.default = lambda request: Reply(f"<summary>## Current state\n- second pass{asks(grown)}</summary>")
    second = compactor.compact(grown)
    # The request is the conversation's cached prefix: the previous summary is in it (issue 29 item 4),
    # named by the handoff request.
    assert "previous summary" in last_user_text(server.last)
    assert "first pass" in json.dumps(server.last.body)
    texts = [m.get("content") or "" for m in second.conversation.to_jsonl()]
    assert sum(isinstance(t, str) and t.startswith(ac.compaction.summarize.SUMMARY_MARKER) for t in texts) == 1
    assert second.summary is not None and second.summary.startswith("## Current state\n- second pass")


def test_missing_identifier_triggers_one_retry(server: LLMServer) -> None:
    conv = ac.Conversation(session_messages())
    provider = make("anthropic", server, context_window=400_000)
    summarizer = LLMSummarizer(provider)
    compactor = Compactor(policy_for(conv), summarizer=summarizer)
    server.enqueue(Reply("<summary>## Current state\n- fixed something</summary>"))
    server.default = lambda request: Reply(good_summary(summarizer.events[-1]["required"], conv))
    result = compactor.compact(conv)
    event = summarizer.events[-1]
    assert event["attempts"] == 2 and event["outcome"] == "llm-retry"
    assert event["missing"] == event["required"]
    feedback = last_user_text(server.last)
    assert all(x in feedback for x in event["missing"])
    assert all(x in (result.summary or "") for x in event["required"])


def test_still_missing_after_retry_falls_back_to_offline(server: LLMServer) -> None:
    conv = ac.Conversation(session_messages())
    provider = make("openai", server, context_window=400_000)
    summarizer = LLMSummarizer(provider)
    server.default = lambda request: Reply("<summary>## Current state\n- vague</summary>")
    result = Compactor(policy_for(conv), summarizer=summarizer).compact(conv)
    event = summarizer.events[-1]
    assert event["attempts"] == 2 and event["outcome"] == "fallback"
    assert "after one retry" in event["failure"]
    assert result.summary is not None and "## User requests and constraints" in result.summary
    assert len(server.requests) == 2


def test_no_fallback_raises_and_auto_mode_keeps_the_cleared_conversation(server: LLMServer) -> None:
    conv = ac.Conversation(session_messages())
    provider = make("openai", server, context_window=400_000)
    summarizer = LLMSummarizer(provider, use_fallback=False)
    server.default = lambda request: HTTPError(500, {"error": {"message": "boom", "type": "server_error"}})
    with pytest.raises(SummaryError, match="InternalServerError"):
        summarizer.summarize(ac.SummaryRequest(conv, 1, 40, None, 1_000))
    result = Compactor(policy_for(conv), summarizer=summarizer, fallback=None).compact(conv)
    assert result.summary is None
    assert any(s.stage == "summarize" and "failed" in s.detail for s in result.stages)


def test_older_history_larger_than_the_summarizer_window_is_staged(server: LLMServer, tmp_path: Path) -> None:
    conv = ac.Conversation(session_messages(400))
    provider = make("openai", server, context_window=conv.tokens // 3)
    server.default = lambda request: Reply(f"<summary>## Current state\n- part{asks(conv)}</summary>")
    summarizer = LLMSummarizer(provider, retry_missing=False)
    # With a store, the cleared results' placeholders name their recall ids, and clearing alone
    # does not reach the target.
    store = ac.ResultStore(tmp_path)
    result = Compactor(policy_for(conv), summarizer=summarizer, store=store).compact(conv)
    assert result.summary is not None and result.summary.startswith("## Current state\n- part")
    assert len(server.requests) >= 3  # at least two parts and a merge
    assert "Merge these partial handoff summaries" in last_user_text(server.last)
    for request in server.requests:
        assert server.count_input_tokens(request) < provider.context_window


def test_identifiers_in() -> None:
    text = (
        "Fix `parse_config` in src/app/config.py so tests/test_cfg.py::test_empty passes (KeyError, JIRA-42, 9f3a2b1)."
    )
    found = identifiers_in(text)
    for expected in [
        "parse_config",
        "src/app/config.py",
        "tests/test_cfg.py::test_empty",
        "KeyError",
        "JIRA-42",
        "9f3a2b1",
    ]:
        assert expected in found
    assert "passes" not in found


# -- prompt too long -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_overflow_recovers_exactly_once(server: LLMServer, kind: str) -> None:
    conv = ac.Conversation(session_messages(200))
    provider = make(kind, server, context_window=10 * conv.tokens)
    session = Session(provider, conversation=conv)
    window = conv.tokens // 2
    server.enqueue(Overflow(tokens=conv.tokens, limit=window), Reply("done"))
    done = session.send("Go on.")
    assert done.text == "done"
    assert len(server.requests) == 2
    assert len(session.compactions) == 1
    first, second = server.requests
    assert len(prompt_messages(second)) < len(prompt_messages(first))
    recompiled = session.compactions[0]
    assert recompiled.summary is not None and recompiled.fits
    # The Responses wording has no numbers: the target share of what was sent is aimed at.
    limit = window if kind != "responses" else conv.tokens * session.compactor.policy.target
    assert recompiled.conversation.tokens <= limit
    # The kept part is a protocol-complete suffix of the original, ending in the new ask.
    assert session.conversation.validate() == []
    assert session.conversation.to_jsonl()[-1]["role"] == "assistant"


def test_second_overflow_raises_without_further_deletion(server: LLMServer) -> None:
    conv = ac.Conversation(session_messages(200))
    provider = make("anthropic", server, context_window=10 * conv.tokens)
    session = Session(provider, conversation=conv)
    server.enqueue(Overflow(tokens=conv.tokens, limit=conv.tokens // 2), Overflow(tokens=90_000, limit=80_000))
    with pytest.raises(ContextOverflowError) as info:
        session.send("Go on.")
    assert info.value.recovered is True
    assert (info.value.tokens, info.value.limit) == (90_000, 80_000)
    assert len(server.requests) == 2
    assert len(session.compactions) == 1


def test_overflow_recovery_is_logged(server: LLMServer, tmp_path: Any) -> None:
    conv = ac.Conversation(session_messages(200))
    provider = make("openai", server, context_window=10 * conv.tokens)
    log = SessionLog(tmp_path / "s.jsonl", format="openai")
    session = Session(provider, conversation=conv, log=log)
    server.enqueue(Overflow(tokens=conv.tokens, limit=conv.tokens // 2), Reply("done"))
    session.send("Go on.")
    reread = SessionLog(tmp_path / "s.jsonl")
    assert len(reread.originals()) == len(conv) + 2
    assert reread.working_set().to_openai() == session.conversation.to_openai()


def test_tool_loop_compiles_before_every_call(server: LLMServer) -> None:
    provider = make("openai", server, context_window=6_000)
    policy = replace(
        ac.PRESETS["openharness"].compaction,
        context_window=6_000,
        reserved_output=500,
        safety_margin=0,
        recent_messages=2,
        recent_tools=1,
    )
    compactor = Compactor(policy)
    big = "x = 1\n" * 300
    session = Session(provider, compactor=compactor, functions={"read": lambda args: big}, max_output_tokens=500)
    server.enqueue(*[Reply("", tool_calls=[{"name": "read", "arguments": {"path": f"f{i}.py"}}]) for i in range(10)])
    server.enqueue(Reply("finished"))
    done = session.run("Read the files.")
    assert done.text == "finished"
    assert session.compactions, "the growing tool loop was compacted between calls"
    for request in server.requests:
        sent = ac.Conversation(request.body["messages"], format="openai")
        assert sent.validate() == []
        assert sent.tokens <= policy.available


# -- calibration -----------------------------------------------------------------------------


FACTORS = {"prose": 1.1, "code": 1.4, "json": 1.7, "cjk": 0.8}


def provider_count(tik: Any) -> Any:
    """A provider tokenizer that differs from o200k by content class."""

    def count(request: Recorded) -> int:
        total = 0
        for m in request.body.get("messages", []):
            content = m.get("content") or ""
            text = content if isinstance(content, str) else json.dumps(content)
            total += int(len(tik.encode(text)) * FACTORS[content_class(text)]) + 4
        return total

    return count


def test_calibration_lowers_estimate_error(server: LLMServer, tiktoken_encodings: dict[str, Any]) -> None:
    server.count_input_tokens = provider_count(tiktoken_encodings["o200k_base"])
    provider = make("openai", server, context_window=1_000_000)
    calibration = Calibration()
    session = Session(provider, calibration=calibration)
    samples = [
        "Please explain the design of the cache layer and why the eviction policy matters for latency. " * 6,
        "def handler(event):\n    for key, value in event.items():\n        cache[key] = transform(value)\n" * 8,
        json.dumps([{"id": i, "path": f"src/m{i}.py", "ok": i % 2 == 0} for i in range(60)]),
        "上下文压缩必须保留用户的指令和错误信息。" * 20,
    ]
    raw_errors, errors = [], []
    for turn in range(16):
        session.add_user(samples[turn % 4])
        local = session.conversation.tokens
        predicted = calibration.estimate(provider.model, class_tokens(session.conversation))
        server.enqueue(Reply("noted"))
        done = session.send()
        reported = done.usage.input_tokens
        raw_errors.append(abs(local - reported) / reported)
        errors.append(abs(predicted - reported) / reported)
    assert calibration.observations(provider.model) == 16
    # The per-message class cache agrees with classifying the whole conversation at once.
    assert session.class_totals() == class_tokens(session.conversation)
    # Before any observation the calibrated estimate is the local count.
    assert errors[0] == raw_errors[0]
    late_raw, late = sum(raw_errors[-4:]) / 4, sum(errors[-4:]) / 4
    assert late_raw > 0.15, raw_errors
    assert late < 0.05 and late < late_raw / 4, (errors, raw_errors)
    factors = calibration.factors(provider.model)
    assert factors["json"] > factors["prose"]


def test_calibration_scales_the_compaction_trigger(server: LLMServer) -> None:
    conv = ac.Conversation(session_messages(200))
    provider = make("openai", server, context_window=int(conv.tokens * 1.3))
    calibration = Calibration()
    # The provider counts twice what we count: after learning that, the session compacts
    # before sending, instead of overflowing.
    calibration.observe(provider.model, {"prose": 10_000}, 20_000)
    calibration.observe(provider.model, {"code": 10_000}, 20_000)
    calibration.observe(provider.model, {"json": 10_000}, 20_000)
    calibration.observe(provider.model, {"overhead": 10_000}, 20_000)
    session = Session(provider, conversation=conv, calibration=calibration)
    assert session.scale() > 1.5
    server.enqueue(Reply("ok"))
    session.send("continue")
    assert session.compactions and session.compactions[0].tokens_after * session.scale() < provider.context_window


def test_calibration_save_load_roundtrip(tmp_path: Any) -> None:
    cal = Calibration(decay=0.9)
    cal.observe("m", {"prose": 1_000, "code": 500}, 1_900)
    cal.observe("m", {"prose": 2_000, "json": 300}, 2_700)
    path = tmp_path / "cal.json"
    cal.save(path)
    back = Calibration.load(path)
    assert back.factors("m") == cal.factors("m")
    assert back.estimate("m", {"prose": 100, "json": 100}) == cal.estimate("m", {"prose": 100, "json": 100})
    assert back.observations("m") == 2 and back.decay == 0.9
    path.write_text('{"version": 2}')
    with pytest.raises(OptionError):
        Calibration.load(path)
    path.write_text("not json")
    with pytest.raises(OptionError):
        Calibration.load(path)
    with pytest.raises(OptionError, match="unknown content classes"):
        cal.observe("m", {"poetry": 10}, 10)


# -- server-side context management ----------------------------------------------------------


def test_anthropic_context_management_from_policy() -> None:
    policy = replace(
        ac.PRESETS["openharness"].compaction,
        context_window=200_000,
        clear_at_least=5_000,
        exclude_tools=("memory",),
        clear_tool_inputs=True,
    )
    cm, betas = anthropic_context_management(policy, clear_thinking=2, compact=True, pause_after_compaction=True)
    assert betas == [CONTEXT_MANAGEMENT_BETA, COMPACT_BETA]
    thinking, clear, compact = cm["edits"]
    assert thinking == {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}}
    assert clear == {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "input_tokens", "value": policy.trigger_tokens},
        "keep": {"type": "tool_uses", "value": 3},
        "clear_at_least": {"type": "input_tokens", "value": 5_000},
        "exclude_tools": ["memory"],
        "clear_tool_inputs": True,
    }
    assert compact == {
        "type": "compact_20260112",
        "trigger": {"type": "input_tokens", "value": policy.trigger_tokens},
        "pause_after_compaction": True,
    }
    assert openai_context_management(policy) == [{"type": "compaction", "compact_threshold": policy.trigger_tokens}]
    with pytest.raises(OptionError):
        anthropic_context_management(policy, clear_tool_uses=False)


def test_anthropic_compaction_block_round_trips_byte_identical(server: LLMServer) -> None:
    cm, betas = anthropic_context_management(compact=True, pause_after_compaction=True)
    provider = make("anthropic", server, context_management=cm, betas=betas)
    block = {
        "type": "compaction",
        "content": "Summary: the user asked to fix src/app.py; the fix is in.",
        "encrypted_content": "EncRypt3d+/==",
        "signature": "sig-abc",
    }
    server.enqueue(Reply("", content=[block], stop_reason="compaction"), Reply("continuing"), Reply("next"))
    session = Session(provider)
    done = session.send("Fix the bug.")
    assert done.text == "continuing"
    first, second = server.requests
    assert first.body["context_management"] == cm
    assert set(first.headers["anthropic-beta"].split(",")) == {CONTEXT_MANAGEMENT_BETA, COMPACT_BETA}
    # The paused reply's compaction block went back as the server sent it.
    sent_back = second.body["messages"][-1]["content"][0]
    assert json.dumps(sent_back) == json.dumps(block)
    assert compaction_indices(session.conversation) == [1]
    assert pin_compactions(session.conversation) == [1]
    session.send("And the tests?")
    third = server.requests[-1].body["messages"]
    assert json.dumps(third[1]["content"][0]) == json.dumps(block)


def test_responses_compaction_items_round_trip_byte_identical(server: LLMServer) -> None:
    provider = make("responses", server, context_management=openai_context_management())
    item = {"type": "compaction", "id": "cmp_0123", "encrypted_content": "gAAAAB-opaque=="}
    server.enqueue(Reply("answer", content=[item]), Reply("second"))
    session = Session(provider)
    session.send("first question")
    session.send("second question")
    first, second = server.requests
    assert first.body["context_management"] == openai_context_management()
    sent = [x for x in second.body["input"] if x.get("type") == "compaction"]
    assert [json.dumps(x) for x in sent] == [json.dumps(item)]
    # responses.compact: the server's items become the new history, kept opaque.
    conv = session.conversation
    before = conv.to_responses()
    compacted = provider.compact(conv)
    assert conv.to_responses() == before
    items = [x for x in compacted.to_responses() if x.get("type") == "compaction"]
    assert len(items) == 1 and server.last.endpoint == "compact"
    again = ac.Conversation(compacted.to_responses(), format="responses")
    assert json.dumps(again.to_responses()) == json.dumps(compacted.to_responses())
