"""Wrong-typed arguments to the providers' constructors, to ``complete`` and to LLMSummarizer are
an AgentContextError naming the argument and its owner, at the call: before, ``betas`` given as
one string was sent as one beta per character, ``context_management`` of the wrong shape was a
bare ValueError or TypeError, a non-string ``max_output_tokens_param``, ``system`` or model went
into the request body, and an LLMSummarizer without a provider failed only at its first summary
(and then fell back silently)."""

from __future__ import annotations

from typing import Any

import pytest

import agentcontext as ac
from agentcontext.compaction.llm import LLMSummarizer
from agentcontext.errors import AgentContextError, ArgumentTypeError, OptionError
from agentcontext.providers import (
    AnthropicProvider,
    OpenAIChatProvider,
    OpenAIResponsesProvider,
    ScriptedAnthropicProvider,
    ScriptedChatProvider,
)

pytest.importorskip("anthropic", reason="the anthropic SDK is a test extra: pip install -e '.[test]'")
pytest.importorskip("openai", reason="the openai SDK is a test extra: pip install -e '.[test]'")

KEY = {"api_key": "test-key"}

BAD: list[tuple[Any, dict[str, Any], type[Exception], str]] = [
    (AnthropicProvider, {"betas": "context-management-2025-06-27", **KEY}, ArgumentTypeError, "betas of AnthropicProvider"),
    (AnthropicProvider, {"betas": ["ok", 3], **KEY}, ArgumentTypeError, "betas of AnthropicProvider"),
    (AnthropicProvider, {"context_management": "edits", **KEY}, ArgumentTypeError, "context_management of AnthropicProvider"),
    (AnthropicProvider, {"context_management": [1, 2], **KEY}, ArgumentTypeError, "context_management of AnthropicProvider"),
    (AnthropicProvider, {"model": 123, **KEY}, ArgumentTypeError, "model of AnthropicProvider"),
    (OpenAIChatProvider, {"max_output_tokens_param": 5, **KEY}, ArgumentTypeError, "max_output_tokens_param"),
    (OpenAIChatProvider, {"max_output_tokens_param": "", **KEY}, ArgumentTypeError, "max_output_tokens_param"),
    (OpenAIResponsesProvider, {"context_management": {"type": "compaction"}, **KEY}, ArgumentTypeError, "context_management of OpenAIResponsesProvider"),
    (OpenAIResponsesProvider, {"context_management": "compaction", **KEY}, ArgumentTypeError, "context_management of OpenAIResponsesProvider"),
    (ScriptedChatProvider, {"script": ["a"], "model": None}, ArgumentTypeError, "model of ScriptedChatProvider"),
    (ScriptedAnthropicProvider, {"script": ["a"], "model": ""}, OptionError, "model of ScriptedAnthropicProvider"),
]  # fmt: skip


@pytest.mark.parametrize(("cls", "kw", "error", "names"), BAD)
def test_a_wrong_constructor_argument_is_named(
    cls: Any, kw: dict[str, Any], error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=names) as caught:
        cls(**kw)
    assert isinstance(caught.value, AgentContextError)


def test_betas_as_a_list_are_kept() -> None:
    provider = AnthropicProvider(betas=("b-1", "b-2"), **KEY)
    assert provider.betas == ["b-1", "b-2"]


@pytest.mark.parametrize(
    ("kw", "names"),
    [({"system": 5}, "system of ScriptedChatProvider.complete"), ({"tools": "abc"}, "tools of ScriptedChatProvider.complete"),
     ({"tools": {"name": "f"}}, "tools of ScriptedChatProvider.complete"), ({"tools": ["f"]}, r"tools of ScriptedChatProvider.complete\[0\]")],
)  # fmt: skip
def test_a_wrong_complete_argument_is_named_and_nothing_is_sent(kw: dict[str, Any], names: str) -> None:
    provider = ScriptedChatProvider(["a"])
    with pytest.raises(ArgumentTypeError, match=names):
        provider.complete(ac.Conversation([{"role": "user", "content": "hi"}]), **kw)
    assert provider.requests == []


@pytest.mark.parametrize(
    ("kw", "names"),
    [({"provider": None}, "provider of LLMSummarizer"), ({"tools": "abc"}, "tools of LLMSummarizer"),
     ({"retry_missing": "no"}, "retry_missing"), ({"use_fallback": 1}, "use_fallback"), ({"fallback": 5}, "fallback of LLMSummarizer")],
)  # fmt: skip
def test_llm_summarizer_arguments_are_checked(kw: dict[str, Any], names: str) -> None:
    args = {"provider": ScriptedChatProvider(["a"]), **kw}
    with pytest.raises(ArgumentTypeError, match=names):
        LLMSummarizer(**args)


@pytest.mark.parametrize("conversation", [[{"role": "user", "content": "hi"}], "hi", None])
def test_complete_takes_a_conversation(conversation: Any) -> None:
    provider = ScriptedChatProvider(["a"])
    with pytest.raises(
        ArgumentTypeError, match=r"conversation of ScriptedChatProvider.complete must be a Conversation"
    ):
        provider.complete(conversation)
    assert provider.requests == []


@pytest.mark.parametrize(
    ("kw", "names"),
    [({"provider": None}, "provider of Session"), ({"system": 5}, "system of Session"), ({"tools": "x"}, "tools of Session"),
     ({"tools": ["x"]}, r"tools\[0\] of Session"), ({"functions": 5}, "functions of Session"),
     ({"functions": {"ls": "not callable"}}, r"functions\['ls'\] of Session")],
)  # fmt: skip
def test_session_arguments_are_checked(kw: dict[str, Any], names: str) -> None:
    from agentcontext.sessions.loop import Session

    args = {"provider": ScriptedChatProvider(["a"]), **kw}
    with pytest.raises(ArgumentTypeError, match=names):
        Session(**args)


def test_a_user_message_of_the_wrong_type_is_named_and_not_sent() -> None:
    from agentcontext.sessions.loop import Session

    provider = ScriptedChatProvider(["a"])
    session = Session(provider)
    with pytest.raises(ArgumentTypeError, match="a user message must be text"):
        session.send(5)  # type: ignore[arg-type]
    assert provider.requests == [] and len(session.conversation) == 0
