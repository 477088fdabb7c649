"""Provider-native compaction as the ladder's first rung (issue #29, item 3), over the loopback
server for both providers: the opaque block or item kept byte for byte, the library's readable
summary and ledger kept beside it, the fallback to the local ladder, and the circuit breaker."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentcontext import Conversation
from agentcontext.compaction import CompactionPolicy, Compactor, NativeCompaction
from agentcontext.compaction.summarize import SUMMARY_MARKER
from agentcontext.providers.server_side import COMPACT, COMPACT_BETA
from agentcontext.sessions.loop import Session
from tests import support
from tests.llm_server import HTTPError, LLMServer, Reply

pytest.importorskip("anthropic", reason="the anthropic SDK is a test extra")
pytest.importorskip("openai", reason="the openai SDK is a test extra")

POLICY = CompactionPolicy(context_window=200_000, trigger=0.2, target=0.1, recent_messages=2)
#: OpenAI's compaction has no least size: a smaller session (cheaper tests).
SMALL = CompactionPolicy(context_window=40_000, trigger=0.2, target=0.1, recent_messages=2)

#: An opaque block as Anthropic returns it (fields the library does not read, kept as sent).
BLOCK = {
    "type": "compaction",
    "content": "Summary: parser fixed in src/parse.py.",
    "encrypted_content": "E+/==",
    "z": 1,
}
ITEM = {"type": "compaction", "id": "cmp_0042", "encrypted_content": "gAAAAB-opaque=="}


def history(fmt: str, filler_words: int = 11_000) -> Conversation:
    """A session over 50,000 tokens: an old request, a large tool result, the latest request."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the parser bug in src/parse.py; never touch tests/."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path": "src/parse.py"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "def parse(x):\n" + "    token = next(x)\n" * filler_words},
        {"role": "assistant", "content": "The loop never ends: fixed in src/parse.py."},
        {"role": "user", "content": "Now add a test for the empty input."},
    ]  # fmt: skip
    conv = Conversation(messages, format="jsonl")
    return Conversation(conv.to_format(fmt), format=fmt)


def opaque(conv: Conversation) -> list[dict[str, Any]]:
    return [
        part
        for m in conv.to_jsonl()
        if isinstance(m.get("content"), list)
        for part in m["content"]
        if isinstance(part, dict) and part.get("type") == "compaction"
    ]


def assert_readable(result: Any, conv: Conversation) -> None:
    """The library's own compaction beside the provider's: a summary with the user's rule, no opaque part."""
    twin = result.readable
    assert twin is not None and twin.conversation.validate() == []
    assert not opaque(twin.conversation)
    text = json.dumps(twin.conversation.to_jsonl())
    assert result.summary == twin.summary and twin.summary_in_output()
    assert SUMMARY_MARKER in text
    assert "never touch tests/" in text and "src/parse.py" in text
    assert twin.original is result.original and result.stages[-1].detail["readable_tokens"] == twin.tokens_after


def test_anthropic_native_keeps_the_block_and_a_readable_twin(server: LLMServer) -> None:
    provider = support.provider("anthropic", server, context_window=200_000)
    conv = history("anthropic")
    assert conv.tokens > 50_000
    server.enqueue(Reply("", content=[BLOCK], stop_reason="compaction"))
    result = Compactor(POLICY, native=NativeCompaction(provider)).maybe_compact(conv)
    assert result is not None and [s.stage for s in result.stages] == ["native"]
    sent = server.last.body
    assert sent["context_management"]["edits"] == [
        {"type": COMPACT, "trigger": {"type": "input_tokens", "value": 50_000}, "pause_after_compaction": True}
    ]
    assert COMPACT_BETA in server.last.headers["anthropic-beta"]
    # The working set: the system prompt, then the block as the API sent it, byte for byte.
    out = result.conversation
    assert out.format == "anthropic" and out.preamble == 1 and len(out) == 2
    assert json.dumps(out.to_jsonl()[1]["content"][0]) == json.dumps(BLOCK)
    assert out.pinned == [1]  # a later local compaction keeps it
    assert result.tokens_after < 1_000 < result.tokens_before and result.fits
    assert_readable(result, conv)


def test_anthropic_session_sends_the_server_compaction_on(server: LLMServer) -> None:
    """The server compacts (its own block, not scripted); the next request carries it first."""
    provider = support.provider("anthropic", server, context_window=200_000)
    session = Session(
        provider, compactor=Compactor(POLICY, native=NativeCompaction()), conversation=history("anthropic")
    )
    assert session.compactor.native is not None and session.compactor.native.provider is provider
    done = session.send("And the docs?")
    compact_request, answer = server.requests
    assert "context_management" in compact_request.body and done.text == "ok"
    block = answer.body["messages"][0]["content"][0]
    assert block["type"] == "compaction" and "And the docs?" in block["content"]
    assert "context_management" not in answer.body
    assert session.compactions[-1].readable is not None


def test_responses_native_keeps_the_item_and_a_readable_twin(server: LLMServer) -> None:
    provider = support.provider("responses", server, context_window=200_000, prompt_cache_key="session-7")
    conv = history("responses", 2_000)
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Now add a test."}]}
    server.enqueue(Reply(content=[user, ITEM]))
    result = Compactor(SMALL, native=NativeCompaction(provider)).compact(conv, system="Be brief.")
    assert server.last.endpoint == "compact"
    sent = server.last.body
    assert sent["instructions"] == "Be brief." and sent["prompt_cache_key"] == "session-7"
    assert all(item.get("role") != "system" for item in sent["input"])  # the preamble stays local
    items = result.conversation.to_responses(request=True)
    assert items[0]["role"] == "system" and json.dumps(items[-1]) == json.dumps(ITEM)
    assert result.stages[-1].stage == "native" and result.stages[-1].detail["opaque"] == 1
    assert_readable(result, conv)


def test_a_provider_without_native_compaction_runs_the_ladder(server: LLMServer) -> None:
    chat = support.provider("openai", server, context_window=200_000)
    result = Compactor(POLICY, native=NativeCompaction(chat)).maybe_compact(history("openai"))
    assert result is not None and not server.requests
    first, *rest = result.stages
    assert first.stage == "native" and "no native compaction" in first.detail["skipped"]
    assert [s.stage for s in rest] == ["budgets"] and result.tokens_after <= POLICY.target_tokens
    assert result.readable is None and not opaque(result.conversation)
    # Under Anthropic's 50,000-token minimum: the ladder too, without a request.
    small = support.provider("anthropic", server, context_window=200_000)
    result = Compactor(POLICY, native=NativeCompaction(small)).compact(history("anthropic", 3_000), manual=True)
    assert "under the 50,000" in result.stages[0].detail["skipped"] and not server.requests


def test_a_failed_native_compaction_falls_back_to_the_ladder(server: LLMServer) -> None:
    provider = support.provider("responses", server, context_window=200_000)
    server.enqueue(HTTPError(500, {"error": {"message": "compaction unavailable", "type": "server_error"}}))
    native = NativeCompaction(provider)
    result = Compactor(SMALL, native=native).maybe_compact(history("responses", 2_000))
    assert result is not None and result.fits
    first = result.stages[0]
    assert first.stage == "native" and "compaction unavailable" in first.detail["failed"]
    assert first.detail["consecutive_failures"] == 1 and native.failures == 1
    assert result.stages[1].stage == "budgets" and result.tokens_after <= SMALL.target_tokens
    assert result.readable is None and not opaque(result.conversation)


def test_the_circuit_breaker_opens_after_three_failures_and_a_success_resets_it(server: LLMServer) -> None:
    provider = support.provider("responses", server, context_window=200_000)
    native = NativeCompaction(provider)
    compactor = Compactor(SMALL, native=native)
    conv = history("responses", 2_000)
    fail = HTTPError(503, {"error": {"message": "overloaded", "type": "server_error"}})

    def auto() -> Any:
        compactor.last = None  # each call a fresh over-trigger turn (no anti-loop guard)
        return compactor.maybe_compact(conv)

    # Two failures, a success (it resets the count), two failures: still trying.
    ok = Reply(content=[ITEM])
    server.enqueue(fail, fail, ok, fail, fail)
    for _ in range(5):
        auto()
    assert native.attempts == 5 and native.failures == 2 and not native.open
    # The third consecutive failure opens the breaker: no fourth attempt.
    server.enqueue(fail)
    auto()
    assert native.open and native.attempts == 6
    sent = len(server.requests)
    result = auto()
    assert len(server.requests) == sent and native.attempts == 6
    assert "circuit open" in result.stages[0].detail["skipped"] and result.stages[1].stage == "budgets"
    # A manual compaction still asks; its success closes the breaker.
    server.enqueue(ok)
    result = compactor.compact(conv, manual=True)
    assert native.attempts == 7 and native.failures == 0 and result.stages[-1].stage == "native"
    server.enqueue(ok)
    assert auto().stages[-1].stage == "native" and native.attempts == 8
