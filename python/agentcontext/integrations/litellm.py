"""LiteLLM: fit a ``messages`` list of dicts and LiteLLM/OpenAI message objects into a budget.

    import litellm
    from agentcontext.integrations.litellm import fit_messages

    messages.append(response.choices[0].message)          # LiteLLM's Message object, as it came
    response = litellm.completion(model, messages=fit_messages(messages, 100_000), tools=tools)
    # async: large lists are fitted in a worker thread, off the event loop
    response = await litellm.acompletion(model, messages=await afit_messages(messages, 100_000), tools=tools)

The list may mix dicts, any other ``Mapping`` and pydantic message objects (LiteLLM's ``Message``,
the OpenAI SDK's ``ChatCompletionMessage``): they are read through their ``model_dump``. What comes
back holds the caller's own objects where nothing changed, and, where a tool result was cleared or
the request cut, a copy with the new content (a dict for a dict, ``model_copy`` for a model).
Without this module the library's functions take those objects too (``trim_messages``,
``Conversation``...), returning dicts. Nothing here imports LiteLLM; tested with litellm 1.110.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from agentcontext.integrations._fit import Budget, as_dict, fit, off_loop
from agentcontext.types import Encoding

__all__ = ["afit_messages", "fit_messages", "to_dict"]

M = TypeVar("M")


def to_dict(message: Any, index: int = 0) -> dict[str, Any]:
    """The OpenAI Chat dict of ``message``: a dict as it is, a ``Mapping`` as a dict, a pydantic
    model as ``model_dump(mode="json", exclude_none=True)``."""
    return as_dict(
        message,
        index,
        "is neither a Mapping nor a pydantic model (agentcontext.integrations.litellm reads dicts, Mappings and "
        "objects with model_dump)",
    )


def _rebuild(message: Any, parts: list[tuple[int, dict[str, Any] | None]]) -> Any:
    changed = parts[0][1]
    if changed is None:
        return message
    new = changed.get("content")
    if isinstance(message, Mapping):
        return message if message.get("content") == new else {**message, "content": new}
    if getattr(message, "content", None) == new:
        return message
    return message.model_copy(update={"content": new})


def fit_messages(
    messages: Sequence[M],
    max_tokens: int,
    *,
    encoding: Encoding = "o200k_base",
    clear: bool = True,
    recent_messages: int = 12,
    recent_tools: int = 3,
    clear_at_least: int = 0,
    reserved_output: int = 0,
    safety_margin: int = 0,
) -> list[M]:
    """``messages`` fitted into ``max_tokens`` (the arguments are those of
    :func:`agentcontext.trim_messages`): the caller's own objects where unchanged."""
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
    return fit(messages, budget, lambda m, i: [to_dict(m, i)], _rebuild, format="openai")


async def afit_messages(
    messages: Sequence[M],
    max_tokens: int,
    *,
    encoding: Encoding = "o200k_base",
    clear: bool = True,
    recent_messages: int = 12,
    recent_tools: int = 3,
    clear_at_least: int = 0,
    reserved_output: int = 0,
    safety_margin: int = 0,
) -> list[M]:
    """:func:`fit_messages` for the async path (before ``await litellm.acompletion(...)``): a list
    of :data:`~agentcontext.integrations._fit.OFF_LOOP_MESSAGES` (256) messages or more is fitted in
    a worker thread, so the event loop keeps running meanwhile."""
    items = list(messages)
    return await off_loop(
        len(items),
        lambda: fit_messages(
            items,
            max_tokens,
            encoding=encoding,
            clear=clear,
            recent_messages=recent_messages,
            recent_tools=recent_tools,
            clear_at_least=clear_at_least,
            reserved_output=reserved_output,
            safety_margin=safety_margin,
        ),
    )
