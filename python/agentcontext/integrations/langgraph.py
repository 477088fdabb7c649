"""LangGraph: ``pre_model_hook`` nodes that fit the model input into a budget.

    from langgraph.prebuilt import create_react_agent
    from agentcontext.integrations.langgraph import fit_hook, compact_hook

    agent = create_react_agent(model, tools, pre_model_hook=fit_hook(100_000))

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
from agentcontext.integrations._fit import Budget, as_budget, off_loop

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


def fit_hook(budget: int | Budget) -> RunnableLambda[Any, dict[str, Any]]:
    """A ``pre_model_hook`` returning ``{"llm_input_messages": fitted}`` (fitted into ``budget``:
    an int is the input budget, a :class:`~agentcontext.Budget` sets the options too); the state
    is unchanged."""
    fitted_into = as_budget(budget)
    return _node(lambda messages: {"llm_input_messages": fit_messages(messages, fitted_into)})


def compact_hook(budget: int | Budget) -> RunnableLambda[Any, dict[str, Any]]:
    """A ``pre_model_hook`` that replaces the state's messages with the ones fitted into
    ``budget`` (as for :func:`fit_hook`); nothing is written when they already fit unchanged."""
    fitted_into = as_budget(budget)

    def update(messages: list[BaseMessage]) -> dict[str, Any]:
        fitted = fit_messages(messages, fitted_into)
        if len(fitted) == len(messages) and all(a is b for a, b in zip(fitted, messages, strict=True)):
            return {}
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *fitted]}

    return _node(update)
