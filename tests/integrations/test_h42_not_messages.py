"""An object that is not a LangChain message, in the list given to any path that keeps a memo
(``fit_messages`` with a cache, the middleware with or without compaction, the LangGraph hooks),
is an :class:`~agentcontext.errors.InvalidMessageError` naming its place and what to use for it,
as ``fit_messages`` without a cache says: not an ``AttributeError`` from reading its fields."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")

from langchain.agents.middleware.types import ModelRequest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import HumanMessage

from agentcontext.errors import ArgumentTypeError, InvalidMessageError, OptionError
from agentcontext.integrations.langchain import STATE_KEY, AgentContextMiddleware, converted, fit_messages
from agentcontext.integrations.langgraph import compact_hook, fit_hook

BAD: list[Any] = [{"role": "user", "content": "hi"}, ("user", "hi"), "hi", None]


def middleware(compaction: bool, stored: Any = None) -> Callable[[list[Any]], Any]:
    mw = AgentContextMiddleware(1000, compaction=compaction)
    model = GenericFakeChatModel(messages=iter([]))

    def call(messages: list[Any]) -> Any:
        state = {"messages": messages, STATE_KEY: stored}
        request = ModelRequest(model=model, messages=messages, system_message=None, tools=[], state=state)  # type: ignore[arg-type]
        return mw.compile_request(request)

    return call


PATHS: dict[str, Callable[[], Callable[[list[Any]], Any]]] = {
    "fit_messages cache": lambda: lambda ms: fit_messages(ms, 1000, cache=converted()),
    "middleware": lambda: middleware(False),
    "middleware compaction": lambda: middleware(True),
    "middleware compaction summary": lambda: middleware(
        True, {"summary": "s", "through": "h0", "messages": 3, "tokens": 1}
    ),
    "fit_hook": lambda: lambda ms: fit_hook(1000).invoke({"messages": ms}),
    "compact_hook": lambda: lambda ms: compact_hook(1000).invoke({"messages": ms}),
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("at", [0, 1])
@pytest.mark.parametrize("bad", BAD, ids=lambda b: type(b).__name__)
def test_an_object_that_is_not_a_message_is_named(path: str, at: int, bad: Any) -> None:
    messages: list[Any] = [HumanMessage("a", id="h0"), HumanMessage("b", id="h1")]
    messages.insert(at, bad)
    call = PATHS[path]()
    if path.endswith("summary") and at == 0:
        # Covered by the kept summary (through h0): not read, not sent.
        fitted, _ = call(messages)
        assert all(isinstance(m, HumanMessage) for m in fitted.messages)
        return
    with pytest.raises(InvalidMessageError, match=f"message {at}: .* is not a LangChain message"):
        call(messages)


@pytest.mark.parametrize(
    ("options", "error", "named"),
    [
        ({"beside": "3"}, ArgumentTypeError, "beside must be a non-negative integer"),
        ({"beside": -1}, OptionError, "beside must be a non-negative integer"),
        ({"cache": "memo"}, ArgumentTypeError, r"cache must be a memo made by the adapter's converted\(\)"),
        ({"recall": "bogus"}, OptionError, 'recall must be "call_id" or "none"'),
    ],
)
@pytest.mark.parametrize("cached", [False, True])
def test_fit_messages_arguments_of_the_wrong_kind_are_typed_errors(
    options: dict[str, Any], error: type[Exception], named: str, cached: bool
) -> None:
    messages = [HumanMessage("a", id="h0")]
    if cached and "cache" not in options:
        options = {**options, "cache": converted()}
    with pytest.raises(error, match=named):
        fit_messages(messages, 1000, **options)


@pytest.mark.parametrize("hook", [fit_hook, compact_hook])
@pytest.mark.parametrize("state", [{"msgs": []}, {"messages": None}, {"messages": "hi"}, "hi"], ids=repr)
def test_a_hook_given_a_state_without_messages_says_what_it_reads(hook: Any, state: Any) -> None:
    with pytest.raises(ArgumentTypeError, match="the hook reads the graph state's 'messages'"):
        hook(1000).invoke(state)


@pytest.mark.parametrize("hook", [fit_hook, compact_hook])
@pytest.mark.parametrize("tools", [5, "search", {"name": "search"}], ids=repr)
def test_a_hooks_tools_must_be_a_list(hook: Any, tools: Any) -> None:
    with pytest.raises(ArgumentTypeError, match="tools must be a list of the agent's tools"):
        hook(1000, tools=tools)
