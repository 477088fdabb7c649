"""OpenAI Agents SDK: a ``call_model_input_filter`` that fits each model call into a budget, and a
``Session`` wrapper that keeps what it stores within one.

    from agents import Runner, RunConfig, SQLiteSession
    from agentcontext.integrations.openai_agents import CompactingSession, input_filter

    config = RunConfig(call_model_input_filter=input_filter(max_tokens=100_000))
    result = await Runner.run(agent, "...", run_config=config)

    session = CompactingSession(SQLiteSession("user-1", "chat.db"), max_tokens=200_000)
    result = await Runner.run(agent, "...", session=session)

Both work on the SDK's Responses items as they are: an item the library did not change is the
caller's own item (every field kept, ids and reasoning included); a cleared function call output
or a cut request is a copy with only ``output`` or ``content`` replaced. The instructions are
counted in and left as they are. :func:`input_filter` changes only what the model receives this
call; :class:`CompactingSession` rewrites the wrapped session's items after each ``add_items``
that brings them over the budget. Tested with openai-agents 0.24 (``pip install
'agentcontext[openai-agents]'``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from agentcontext.errors import InvalidMessageError, MissingExtraError
from agentcontext.integrations._fit import Budget, fit, off_loop
from agentcontext.types import Encoding

try:
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise MissingExtraError(
        "agentcontext.integrations.openai_agents needs the OpenAI Agents SDK: pip install 'agentcontext[openai-agents]'"
    ) from exc

__all__ = ["CompactingSession", "fit_items", "input_filter"]

#: Stands for the instructions in the list that is fitted (they count, and are always kept).
_INSTRUCTIONS = object()


def _item(item: Any, index: int) -> dict[str, Any]:
    if isinstance(item, dict):
        return item
    if isinstance(item, Mapping):
        return dict(item)
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        out = dump(mode="json", exclude_none=True)
        if isinstance(out, dict):
            return out
    raise InvalidMessageError(
        f"message {index}: {type(item).__module__}.{type(item).__qualname__} is not a Responses input item "
        "(agentcontext.integrations.openai_agents reads dicts and the SDK's pydantic items)",
        index,
    )


def _rebuild(item: Any, parts: list[tuple[int, dict[str, Any] | None]]) -> Any:
    changed = parts[0][1]
    if changed is None:
        return item
    base = _item(item, 0)
    update = {k: changed[k] for k in ("output", "content") if k in changed and changed[k] != base.get(k)}
    return {**base, **update} if update else item


def fit_items(items: Sequence[Any], budget: Budget, instructions: str | None = None) -> list[Any]:
    """Responses ``items`` fitted into ``budget`` (``instructions`` counted in): the caller's own
    items where unchanged."""
    objects: list[Any] = [*([_INSTRUCTIONS] if instructions else []), *items]

    def to_dicts(obj: Any, i: int) -> list[dict[str, Any]]:
        if obj is _INSTRUCTIONS:
            return [{"type": "message", "role": "system", "content": instructions}]
        return [_item(obj, i - (1 if instructions else 0))]

    return [o for o in fit(objects, budget, to_dicts, _rebuild, format="responses") if o is not _INSTRUCTIONS]


def input_filter(
    max_tokens: int,
    *,
    encoding: Encoding = "o200k_base",
    clear: bool = True,
    recent_messages: int = 12,
    recent_tools: int = 3,
    clear_at_least: int = 0,
    reserved_output: int = 0,
    safety_margin: int = 0,
) -> Callable[[CallModelData[Any]], Awaitable[ModelInputData]]:
    """A ``call_model_input_filter`` (async; large lists are fitted off the event loop). The
    arguments are those of :func:`agentcontext.trim_messages`."""
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

    async def call_model_input_filter(data: CallModelData[Any]) -> ModelInputData:
        model_data = data.model_data
        items = list(model_data.input)
        fitted = await off_loop(len(items), lambda: fit_items(items, budget, model_data.instructions))
        return ModelInputData(input=fitted, instructions=model_data.instructions)

    return call_model_input_filter


class CompactingSession:
    """A ``Session`` over ``session`` (any SDK session: ``SQLiteSession``, ``RedisSession``...)
    whose stored items stay within ``max_tokens``: after ``add_items``, when they no longer fit,
    the wrapped session's items are replaced by the fitted ones (unchanged items stored as they
    were). ``get_items``, ``pop_item`` and ``clear_session`` are the wrapped session's. The other
    arguments are those of :func:`agentcontext.trim_messages`.

    The replacement clears the wrapped session and adds the fitted items back: two calls, not one
    transaction, so two writers sharing one session id must not use it at once."""

    def __init__(
        self,
        session: Any,
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
        self.session = session
        self.session_id: str = session.session_id
        self.session_settings = getattr(session, "session_settings", None)
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
        #: How many times the stored items were replaced by fitted ones.
        self.compactions = 0

    async def get_items(self, limit: int | None = None) -> list[Any]:
        items: list[Any] = await self.session.get_items(limit)
        return items

    async def add_items(self, items: list[Any]) -> None:
        await self.session.add_items(items)
        stored: list[Any] = await self.session.get_items()
        fitted = await off_loop(len(stored), lambda: fit_items(stored, self.budget))
        if len(fitted) == len(stored) and all(a is b for a, b in zip(fitted, stored, strict=True)):
            return
        await self.session.clear_session()
        await self.session.add_items(fitted)
        self.compactions += 1

    async def pop_item(self) -> Any:
        return await self.session.pop_item()

    async def clear_session(self) -> None:
        await self.session.clear_session()
