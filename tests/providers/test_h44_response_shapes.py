"""A 200 answer whose JSON object has fields of another shape (a list where an object belongs, a
string token count, a negative one, a tool call without a name) is a ProviderResponseError naming
the provider and the field, through the real SDKs against the loopback server; before, each was
an AttributeError, KeyError or TypeError from deep in the provider, or a Usage holding a string
or a negative count that every report then summed."""

from __future__ import annotations

from typing import Any

import pytest

import agentcontext as ac
from agentcontext.errors import ProviderResponseError
from tests import support
from tests.llm_server import HTTPError, LLMServer

pytest.importorskip("anthropic", reason="the anthropic SDK is a test extra: pip install -e '.[test]'")
pytest.importorskip("openai", reason="the openai SDK is a test extra: pip install -e '.[test]'")

CONV = [{"role": "user", "content": "hi"}]

MALFORMED: list[tuple[str, dict[str, Any], str]] = [
    ("anthropic", {"content": "x"}, "content must be a list"),
    ("anthropic", {"content": ["x"]}, r"content\[0\] must be an object"),
    ("anthropic", {"content": [{"type": "tool_use", "id": "t1"}]}, r"content\[0\]\.name must be a non-empty string"),
    ("anthropic", {"content": [], "usage": "x"}, "usage must be an object"),
    ("anthropic", {"content": [], "usage": {"input_tokens": "12"}}, "usage.input_tokens must be a non-negative"),
    ("anthropic", {"content": [], "usage": {"output_tokens": -5}}, "usage.output_tokens must be a non-negative"),
    ("anthropic", {"content": [], "usage": {"cache_read_input_tokens": 1.5}}, "cache_read_input_tokens"),
    ("anthropic", {"content": [{"type": "text", "text": 7}]}, r"content\[0\]\.text must be a string"),
    ("openai", {"choices": "x"}, "choices must be a list"),
    ("openai", {"choices": [None]}, r"choices\[0\] must be an object"),
    ("openai", {"choices": [{"message": "x"}]}, r"choices\[0\]\.message must be an object"),
    ("openai", {"choices": [{"message": {"tool_calls": [{"id": "a"}]}}]}, r"tool_calls\[0\]\.function\.name"),
    ("openai", {"choices": [], "usage": {"prompt_tokens": "5"}}, "usage.prompt_tokens must be a non-negative"),
    ("openai", {"choices": [], "usage": {"completion_tokens": True}}, "usage.completion_tokens"),
    ("openai", {"choices": [], "usage": {"prompt_tokens_details": "x"}}, "usage.prompt_tokens_details must be"),
    ("responses", {"output": "x"}, "output must be a list"),
    ("responses", {"output": ["x"]}, r"output\[0\] must be an object"),
    ("responses", {"output": [{"type": "function_call", "name": "f"}]}, r"output\[0\]\.call_id"),
    ("responses", {"output": [], "usage": {"input_tokens_details": 5}}, "usage.input_tokens_details must be"),
    ("responses", {"output": [{"type": "message", "content": "abc"}]}, r"output\[0\]\.content must be a list"),
]


@pytest.mark.parametrize(("kind", "body", "what"), MALFORMED)
def test_a_malformed_body_is_a_provider_response_error(kind: str, body: dict[str, Any], what: str) -> None:
    conv = ac.Conversation(CONV, format="openai")
    with LLMServer() as server:
        provider = support.provider(kind, server)
        server.enqueue(HTTPError(200, body))
        with pytest.raises(ProviderResponseError, match=what) as caught:
            provider.complete(conv)
    assert str(caught.value).startswith(f"{provider.name} answered with a malformed body: ")


def test_well_formed_variants_still_read() -> None:
    """What compatible servers send that is not OpenAI's own shape but means the same: a Chat
    content as a list of text parts, tool arguments as an object; absent fields read as empty."""
    conv = ac.Conversation(CONV, format="openai")
    with LLMServer() as server:
        chat = support.provider("openai", server)
        server.enqueue(
            HTTPError(
                200,
                {
                    "choices": [
                        {
                            "message": {
                                "role": "assistant",
                                "content": [{"type": "text", "text": "he"}, {"type": "text", "text": "llo"}],
                                "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": {"a": 1}}}],
                            },
                            "finish_reason": "tool_calls",
                        }
                    ],
                    "usage": {"prompt_tokens": 9, "completion_tokens": 2},
                },
            )
        )
        got = chat.complete(conv)
        assert got.text == "hello"
        assert got.tool_calls[0].parsed() == {"a": 1}
        assert (got.usage.input_tokens, got.usage.output_tokens, got.usage.total_tokens) == (9, 2, 11)
        anthropic = support.provider("anthropic", server)
        server.enqueue(HTTPError(200, {"content": [{"type": "text", "text": None}]}))
        empty = anthropic.complete(conv)
        assert (empty.text, empty.usage.total_tokens, empty.model) == ("", 0, "claude-test")


@pytest.mark.parametrize(("output", "what"), [("x", "output must be a list"), ([5], r"output\[0\] must be an object")])
def test_a_malformed_responses_compaction_is_a_provider_response_error(output: Any, what: str) -> None:
    """``responses.compact``'s answer: before, a string output blamed the caller's argument
    (ArgumentTypeError 'messages must be a list'), a non-object item was an InvalidMessageError."""
    with LLMServer() as server:
        provider = support.provider("responses", server)
        server.enqueue(HTTPError(200, {"output": output}))
        with pytest.raises(ProviderResponseError, match=what):
            provider.compact(ac.Conversation(CONV, format="openai"))
