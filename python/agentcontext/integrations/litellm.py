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

from agentcontext.integrations._fit import Budget, as_budget, as_dict, fit, off_loop

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


def fit_messages(messages: Sequence[M], budget: int | Budget) -> list[M]:
    """``messages`` fitted into ``budget`` (an int is the input budget, a :class:`~agentcontext.Budget`
    sets the options too): the caller's own objects where unchanged."""
    return fit(messages, as_budget(budget), lambda m, i: [to_dict(m, i)], _rebuild, format="openai")


async def afit_messages(messages: Sequence[M], budget: int | Budget) -> list[M]:
    """:func:`fit_messages` for the async path (before ``await litellm.acompletion(...)``): a list
    of :data:`~agentcontext.integrations._fit.OFF_LOOP_MESSAGES` (256) messages or more is fitted in
    a worker thread, so the event loop keeps running meanwhile."""
    items = list(messages)
    fitted_into = as_budget(budget)
    return await off_loop(len(items), lambda: fit_messages(items, fitted_into))
