"""LangGraph: ``pre_model_hook`` nodes that fit the model input into a budget.

    from langgraph.prebuilt import create_react_agent
    from agentcontext.integrations.langgraph import fit_hook, compact_hook

    agent = create_react_agent(model, tools, pre_model_hook=fit_hook(max_tokens=100_000))

:func:`fit_hook` returns ``llm_input_messages``: the model sees the fitted messages, the graph's
state keeps the whole history (view-only). :func:`compact_hook` rewrites the state instead
(``RemoveMessage(REMOVE_ALL_MESSAGES)`` then the fitted messages): what was dropped or cleared is
gone from the history, so later calls start from the compacted one. Either way the messages are
the graph's own ``BaseMessage`` objects where nothing changed and copies with the new content
where a result was cleared or the request cut. Both work as sync and async nodes (``invoke`` and
``ainvoke``). Tested with langgraph 1.2 and langchain-core 1.8 (``pip install
'agentcontext[langgraph]'``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentcontext.errors import MissingExtraError
from agentcontext.integrations._fit import Budget, off_loop
from agentcontext.types import Encoding

try:
    from langchain_core.messages import BaseMessage, RemoveMessage
    from langchain_core.runnables import RunnableLambda
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise MissingExtraError(
        "agentcontext.integrations.langgraph needs LangGraph: pip install 'agentcontext[langgraph]'"
    ) from exc

from agentcontext.integrations.langchain import fit_messages

__all__ = ["compact_hook", "fit_hook"]


def _messages(state: Any) -> list[BaseMessage]:
    messages = state["messages"] if isinstance(state, dict) else state.messages
    return list(messages)


def _node(update: Callable[[list[BaseMessage]], dict[str, Any]]) -> RunnableLambda[Any, dict[str, Any]]:
    def sync(state: Any) -> dict[str, Any]:
        return update(_messages(state))

    async def async_(state: Any) -> dict[str, Any]:
        messages = _messages(state)
        return await off_loop(len(messages), lambda: update(messages))

    return RunnableLambda(sync, afunc=async_, name="agentcontext")


def fit_hook(
    max_tokens: int,
    *,
    encoding: Encoding = "o200k_base",
    clear: bool = True,
    recent_messages: int = 12,
    recent_tools: int = 3,
    clear_at_least: int = 0,
    reserved_output: int = 0,
    safety_margin: int = 0,
) -> RunnableLambda[Any, dict[str, Any]]:
    """A ``pre_model_hook`` returning ``{"llm_input_messages": fitted}``; the state is unchanged.
    The arguments are those of :func:`agentcontext.trim_messages`."""
    budget = Budget(
        max_tokens,
        encoding=encoding,
        clear=clear,
        recent_messages=recent_messages,
        recent_tools=recent_tools,
        clear_at_least=clear_at_least,
        reserved_output=reserved_output,
        safety_margin=safety_margin,
    )
    return _node(lambda messages: {"llm_input_messages": fit_messages(messages, budget)})


def compact_hook(
    max_tokens: int,
    *,
    encoding: Encoding = "o200k_base",
    clear: bool = True,
    recent_messages: int = 12,
    recent_tools: int = 3,
    clear_at_least: int = 0,
    reserved_output: int = 0,
    safety_margin: int = 0,
) -> RunnableLambda[Any, dict[str, Any]]:
    """A ``pre_model_hook`` that replaces the state's messages with the fitted ones (nothing is
    written when they already fit unchanged). The arguments are those of
    :func:`agentcontext.trim_messages`."""
    budget = Budget(
        max_tokens,
        encoding=encoding,
        clear=clear,
        recent_messages=recent_messages,
        recent_tools=recent_tools,
        clear_at_least=clear_at_least,
        reserved_output=reserved_output,
        safety_margin=safety_margin,
    )

    def update(messages: list[BaseMessage]) -> dict[str, Any]:
        fitted = fit_messages(messages, budget)
        if len(fitted) == len(messages) and all(a is b for a, b in zip(fitted, messages, strict=True)):
            return {}
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *fitted]}

    return _node(update)
