"""Prompt-cache fields through the providers (issue #29, item 5): OpenAI's ``prompt_cache_key``
sent with every request and compaction, and the cache writes each API reports read into ``Usage``."""

from __future__ import annotations

import pytest

from agentcontext import Conversation
from agentcontext.errors import ArgumentTypeError
from tests import support
from tests.llm_server import LLMServer, Reply

pytest.importorskip("openai", reason="the openai SDK is a test extra")
pytest.importorskip("anthropic", reason="the anthropic SDK is a test extra")

CONV = Conversation([{"role": "user", "content": "hello"}], format="jsonl")


@pytest.mark.parametrize("kind", ["openai", "responses"])
def test_prompt_cache_key_goes_with_every_request_and_a_call_may_replace_it(server: LLMServer, kind: str) -> None:
    provider = support.provider(kind, server, prompt_cache_key="session-42")
    provider.complete(Conversation(CONV.to_format(provider.format), format=provider.format))
    assert server.last.body["prompt_cache_key"] == "session-42"
    provider.complete(Conversation(CONV.to_format(provider.format), format=provider.format), prompt_cache_key="other")
    assert server.last.body["prompt_cache_key"] == "other"
    plain = support.provider(kind, server)
    plain.complete(Conversation(CONV.to_format(plain.format), format=plain.format))
    assert "prompt_cache_key" not in server.last.body
    with pytest.raises(ArgumentTypeError):
        support.provider(kind, server, prompt_cache_key="")


def test_responses_compact_sends_the_prompt_cache_key(server: LLMServer) -> None:
    provider = support.provider("responses", server, prompt_cache_key="session-42")
    provider.compact(Conversation(CONV.to_responses(), format="responses"))
    assert server.last.endpoint == "compact" and server.last.body["prompt_cache_key"] == "session-42"


@pytest.mark.parametrize("kind", ["anthropic", "openai", "responses"])
def test_cache_writes_are_read_into_usage(server: LLMServer, kind: str) -> None:
    provider = support.provider(kind, server)
    server.enqueue(Reply("ok", input_tokens=1_000, cached_tokens=30, cache_write_tokens=50))
    done = provider.complete(Conversation(CONV.to_format(provider.format), format=provider.format))
    assert done.usage.cache_write_tokens == 50 and done.usage.cache_read_tokens == 30
    assert done.usage.input_tokens >= 80
