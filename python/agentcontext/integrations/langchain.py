"""LangChain v1: a middleware for ``create_agent`` that fits every model call into a budget.

    from langchain.agents import create_agent
    from agentcontext.integrations.langchain import AgentContextMiddleware

    agent = create_agent(model, tools, middleware=[AgentContextMiddleware(max_tokens=100_000)])

Each call the model receives the agent's messages fitted into ``max_tokens`` (the system message
counted in): old tool results cleared, then the latest user request and the longest recent suffix
kept, never a tool call without its result. The agent's state is not changed: the history stays
whole and the next call is fitted again from it (fast: token counts are memoized across calls).
The messages sent are the agent's own ``BaseMessage`` objects where nothing changed (ids,
``additional_kwargs``, ``usage_metadata``, ``response_metadata`` kept) and copies with the new
content where a result was cleared or the request cut. Tested with langchain 1.5 and
langchain-core 1.8 (``pip install 'agentcontext[langchain]'``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from agentcontext.errors import InvalidMessageError, MissingExtraError
from agentcontext.integrations._fit import Budget, fit, off_loop
from agentcontext.types import Encoding

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ChatMessage,
        FunctionMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
    )
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise MissingExtraError(
        "agentcontext.integrations.langchain needs LangChain v1: pip install 'agentcontext[langchain]'"
    ) from exc

if TYPE_CHECKING:
    from langchain.agents.middleware.types import ModelCallResult

__all__ = ["AgentContextMiddleware", "fit_messages", "to_openai"]


def to_openai(message: BaseMessage, index: int = 0) -> dict[str, Any]:
    """The OpenAI Chat dict the library reads for ``message`` (what it counts and fits)."""
    content: Any = message.content
    if isinstance(message, HumanMessage):
        return {"role": "user", "content": content}
    if isinstance(message, ToolMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}
    if isinstance(message, AIMessage):
        out: dict[str, Any] = {"role": "assistant", "content": content if content else None}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["args"], ensure_ascii=False)},
                }
                for call in message.tool_calls
            ]
        elif out["content"] is None:
            out["content"] = ""
        return out
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": content}
    if isinstance(message, ChatMessage) and message.role in ("user", "assistant", "system", "developer"):
        return {"role": message.role, "content": content}
    if isinstance(message, FunctionMessage):
        # The legacy function-calling answer: a tool result named after its function.
        return {"role": "tool", "tool_call_id": message.name, "content": content}
    raise InvalidMessageError(
        f"message {index}: {type(message).__module__}.{type(message).__qualname__} has no OpenAI Chat form "
        "(agentcontext.integrations.langchain reads SystemMessage, HumanMessage, AIMessage, ToolMessage and "
        "ChatMessage with a user, assistant, system or developer role)",
        index,
    )


def _rebuild(message: BaseMessage, parts: list[tuple[int, dict[str, Any] | None]]) -> BaseMessage:
    changed = parts[0][1]
    if changed is None or changed.get("content") == message.content:
        return message
    return message.model_copy(update={"content": changed["content"]})


def fit_messages(messages: Sequence[BaseMessage], budget: Budget) -> list[BaseMessage]:
    """``messages`` fitted into ``budget``: the caller's own objects where unchanged."""
    return fit(messages, budget, lambda m, i: [to_openai(m, i)], _rebuild, format="openai")


class AgentContextMiddleware(AgentMiddleware):
    """Fits the model input of every call into ``max_tokens`` (see the module docs); the other
    arguments are those of :func:`agentcontext.trim_messages`. The agent's state is not changed."""

    def __init__(
        self,
        max_tokens: int,
        *,
        encoding: Encoding = "o200k_base",
        clear: bool = True,
        recent_messages: int = 12,
        recent_tools: int = 3,
        clear_at_least: int = 0,
        reserved_output: int = 0,
        safety_margin: int = 0,
    ) -> None:
        super().__init__()
        self.budget = Budget(
            max_tokens,
            encoding=encoding,
            clear=clear,
            recent_messages=recent_messages,
            recent_tools=recent_tools,
            clear_at_least=clear_at_least,
            reserved_output=reserved_output,
            safety_margin=safety_margin,
        )

    def fit_request(self, request: ModelRequest) -> ModelRequest:
        """``request`` with its messages fitted (the system message counted in, and kept)."""
        system = request.system_message
        messages: list[BaseMessage] = [*([system] if system is not None else []), *request.messages]
        fitted = fit_messages(messages, self.budget)
        if system is not None:
            fitted = [m for m in fitted if m is not system]
        return request.override(messages=fitted)  # type: ignore[arg-type,unused-ignore]

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> ModelCallResult:
        return handler(self.fit_request(request))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelCallResult:
        fitted = await off_loop(len(request.messages), lambda: self.fit_request(request))
        return await handler(fitted)
