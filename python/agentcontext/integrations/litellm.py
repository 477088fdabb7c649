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
the request cut, a copy with the new content and, where ``clear_tool_inputs`` cleared old calls,
their arguments as the fit left them (a dict for a dict, ``model_copy`` for a model).
Without this module the library's functions take those objects too (``trim_messages``,
``Conversation``...), returning dicts. Pass the ``tools=`` and ``response_format=`` you give
``completion`` to count them in. The ``thinking_blocks`` LiteLLM keeps on an assistant message (and
sends back to a model that reads them) are counted in, those of every message kept (a list
that holds any is fitted twice: once to find what is kept, once with their tokens). Each message is converted once and reused across calls (recognised by
identity: a list that grew by one message costs one conversion). ``on_event=`` is called with
each fit's events (:mod:`agentcontext.observe`: a compaction of kind ``fit``, policy ``litellm``).
Nothing here imports LiteLLM; tested with litellm 1.110.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from operator import attrgetter, is_
from typing import Any, TypeVar, cast

from agentcontext._core import _any_field, _plain_dicts, count_tokens
from agentcontext.errors import ArgumentTypeError, BudgetError
from agentcontext.integrations._beside import beside_tokens, tool_text
from agentcontext.integrations._converted import Converted
from agentcontext.integrations._direct import Kept, fit_each
from agentcontext.integrations._fit import Budget, as_budget, fit_or_cut, off_loop
from agentcontext.integrations._given import as_dict, as_list
from agentcontext.observe.compaction import reporting_fits
from agentcontext.observe.emit import EventCallback, check_callback

__all__ = ["afit_messages", "fit_messages", "to_dict"]

M = TypeVar("M")


def _key(message: Any) -> tuple[Any, ...]:
    """What tells ``message`` unchanged since its conversion (a field of these set anew converts
    it again): of a Mapping (other than a plain dict, read afresh on every call) every key and
    value, as its conversion copies them all; of an object its ``content``, ``tool_calls`` and
    ``role`` (not its other fields, such as LiteLLM's extra ``name``: read on every call they
    would cost more than the fit; the docs say so)."""
    if isinstance(message, Mapping):
        return (*message.keys(), *message.values())
    return (getattr(message, "content", None), getattr(message, "tool_calls", None), getattr(message, "role", None))


#: The messages converted by earlier calls (by identity; see ``Converted``).
_CONVERTED = Converted(_key)


_ATTRS = attrgetter("content", "tool_calls", "role")


def _keys(objects: list[Any]) -> list[Any]:
    """What the conversion reads of each of ``objects`` (at C speed for message objects): each
    one's :func:`_key`, whatever else the list holds (the keys of a list are kept as they come)."""
    if not any(issubclass(cls, Mapping) for cls in set(map(type, objects))):
        try:
            return list(map(_ATTRS, objects))  # (the same as _key for an object that is no Mapping)
        except AttributeError:
            pass
    return list(map(_key, objects))


def _attrs(cls: type) -> tuple[str, ...] | None:
    """The attributes that hold :func:`_key` of every object of ``cls``: ``content``,
    ``tool_calls`` and ``role`` of a pydantic message model that declares them; None for anything
    else (a ``Mapping`` is keyed by its items and size, another object by attributes it may lack)."""
    fields = getattr(cls, "model_fields", None)
    names = ("content", "tool_calls", "role")
    if issubclass(cls, Mapping) or not isinstance(fields, dict) or not set(names) <= fields.keys():
        return None
    return names


#: The last call's dicts (see ``Kept``).
_KEPT = Kept(_keys, _attrs)


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
    """``message`` as the fit changed its dict: a copy (a dict for a Mapping, ``model_copy`` for a
    model) with the new content and, in ``tool_calls``, the arguments the fit left (cleared by
    ``clear_tool_inputs``); ``message`` itself when neither differs."""
    changed = parts[0][1]
    if changed is None:
        return message
    mapping = isinstance(message, Mapping)
    update: dict[str, Any] = {}
    new = changed.get("content")
    if (message.get("content") if mapping else getattr(message, "content", None)) != new:
        update["content"] = new
    calls = message.get("tool_calls") if mapping else getattr(message, "tool_calls", None)
    now = _with_arguments(calls, changed.get("tool_calls"))
    if now is not calls:
        update["tool_calls"] = now
    if not update:
        return message
    return {**message, **update} if mapping else message.model_copy(update=update)


def _with_arguments(calls: Any, now: Any) -> Any:
    """``calls`` (a message's ``tool_calls``: dicts or LiteLLM/OpenAI objects) with the arguments
    text of ``now`` (the fitted dict's ``tool_calls``, in the same order) where it differs: a
    copy of each such call and of its ``function``; ``calls`` itself when none differs."""
    if not isinstance(calls, list) or not isinstance(now, list) or len(calls) != len(now):
        return calls
    out: list[Any] = []
    for call, fitted in zip(calls, now, strict=True):
        function_now = fitted.get("function") if isinstance(fitted, dict) else None
        text = function_now.get("arguments") if isinstance(function_now, dict) else None
        if isinstance(call, Mapping):
            function = call.get("function")
            if isinstance(text, str) and isinstance(function, Mapping) and function.get("arguments") != text:
                call = {**call, "function": {**function, "arguments": text}}
        else:
            own: Any = getattr(call, "function", None)
            if isinstance(text, str) and hasattr(own, "model_copy") and own.arguments != text:
                call = call.model_copy(update={"function": own.model_copy(update={"arguments": text})})
        out.append(call)
    return calls if all(map(is_, out, calls)) else out


def _tools_text(tools: Sequence[Any] | None) -> list[str]:
    if tools is None:
        return []
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Sequence):
        raise ArgumentTypeError(
            f"tools must be the list given to litellm.completion(tools=...), got {type(tools).__name__}"
        )
    out = []
    for tool in tools:
        spec = tool.get("function", tool) if isinstance(tool, Mapping) else tool
        if not isinstance(spec, Mapping):
            raise ArgumentTypeError(f"each tool must be a dict (an OpenAI tool definition), got {type(tool).__name__}")
        out.append(tool_text(str(spec.get("name", "")), spec.get("description"), spec.get("parameters")))
    return out


def _format_text(response_format: Any) -> list[str]:
    """The text the ``response_format`` given to ``completion`` is counted as: a dict (OpenAI's
    ``{"type": "json_schema", ...}``) as its JSON, a pydantic model class as its JSON schema;
    none for None.

    Raises:
        ArgumentTypeError: anything else.
    """
    if response_format is None:
        return []
    if isinstance(response_format, Mapping):
        return [json.dumps(response_format, ensure_ascii=False, default=str)]
    schema = getattr(response_format, "model_json_schema", None)
    if isinstance(response_format, type) and callable(schema):
        return [json.dumps(schema(), ensure_ascii=False, default=str)]
    raise ArgumentTypeError(
        "response_format must be what litellm.completion(response_format=...) takes (a dict or a pydantic "
        f"model class), got {type(response_format).__name__}"
    )


def _convert(message: Any, index: int) -> list[dict[str, Any]]:
    return [to_dict(message, index)]


def _dict_of(message: Any, index: int) -> dict[str, Any] | None:
    """None for a plain dict (fitted as it is), else the object's marked dict (held across calls)."""
    if type(message) is dict:
        return None
    return _CONVERTED.entry(message, index, _convert)[1][0]


def _with_changes(message: Any, changes: tuple[Any, Any]) -> Any:
    content, calls = changes
    return _rebuild(message, [(0, {"content": content, "tool_calls": calls})])


def _rebuild_one(message: Any, changed: dict[str, Any]) -> Any:
    # (The copy held for an object is made again when any field it holds was set anew: it is
    # made of all of them. Bounded with the memo, by ``_CONVERTED.settle``.)
    return _CONVERTED.rebuilt(message, (changed.get("content"), changed.get("tool_calls")), _with_changes)


def _fit(messages: Sequence[M], budget: Budget, beside: int, on_event: EventCallback | None) -> list[M]:
    if type(messages) is list and _plain_dicts(messages):
        # Plain dicts only: nothing to convert or map back (the core gives back each dict that
        # is unchanged as it is), so the list is fitted as ``trim_messages`` fits it, without
        # the memo's bookkeeping (which made this path 1.2x ``trim_messages``).
        dicts = cast("list[dict[str, Any]]", messages)
        return cast(
            "list[M]", reporting_fits(on_event, "litellm", lambda: fit_or_cut(dicts, budget, "openai", beside=beside))
        )
    fitted = reporting_fits(
        on_event, "litellm", lambda: fit_each(messages, budget, _dict_of, _rebuild_one, beside=beside, kept=_KEPT)
    )
    _CONVERTED.settle(messages)
    return fitted


def _blocks(message: Any) -> Any:
    return message.get("thinking_blocks") if isinstance(message, Mapping) else getattr(message, "thinking_blocks", None)


def _thinking(message: Any) -> list[str]:
    """The texts of ``message``'s ``thinking_blocks`` (LiteLLM's field on an assistant message,
    which it sends back to a model that reads them: Anthropic's thinking blocks): each block's
    ``thinking``, or a redacted block's ``data``."""
    blocks = _blocks(message)
    out: list[str] = []
    for block in blocks if isinstance(blocks, list) else ():
        for key in ("thinking", "data"):
            text = block.get(key) if isinstance(block, Mapping) else getattr(block, key, None)
            if isinstance(text, str) and text:
                out.append(text)
                break
    return out


def _fit_thinking(messages: Sequence[M], budget: Budget, beside: int, on_event: EventCallback | None) -> list[M]:
    """:func:`_fit`, the ``thinking_blocks`` of the messages it keeps counted in. When any message
    holds some: a room ``r`` for thinking is searched for (at most 16 fits) such that the fit with
    ``r`` tokens beside keeps messages whose thinking takes at most ``r``: first the thinking of
    what a fit without it keeps (a larger room keeps no more: that is enough, unless the newest
    messages alone then do not fit), else by halving between too little and too much.
    ``BudgetError`` when no room works (the newest round and its thinking do not fit)."""
    # Thinking counts only in the messages a fit keeps: when those of a fit without it hold none,
    # that fit is the answer (the search below would return it). A reporting fit is made once:
    # with ``on_event``, the list is looked through first (a fit reported, then thrown away,
    # would be two events).
    # (Looked for in the core: a pydantic message without the field raises from __getattr__.)
    if on_event is not None and not _any_field(
        messages if type(messages) is list else list(messages), "thinking_blocks"
    ):
        return _fit(messages, budget, beside, on_event)
    first = _fit(messages, budget, beside, None)
    if on_event is None and not _any_field(first, "thinking_blocks"):
        return first

    def need(kept: list[M]) -> int:
        return sum(count_tokens(t, encoding=budget.encoding) for m in kept for t in _thinking(m))

    low, room = 0, need(first)
    high: int | None = None
    failure: BudgetError | None = None
    for _ in range(16):
        try:
            kept = _fit(messages, budget, beside + room, None)
        except BudgetError as exc:
            failure, high = exc, room
        else:
            if need(kept) <= room:
                return _fit(messages, budget, beside + room, on_event)
            low = room + 1
        if high is not None and low >= high:
            break
        room = (low + high) // 2 if high is not None else max(room * 2, low)
    if failure is not None:
        raise failure
    raise BudgetError(
        f"the thinking blocks of the messages kept ({room:,} tokens) do not fit the budget of {budget.max_tokens:,}",
        budget.max_tokens + room,
    )


def fit_messages(
    messages: Sequence[M],
    budget: int | Budget,
    *,
    tools: Sequence[Any] | None = None,
    response_format: Any = None,
    on_event: EventCallback | None = None,
) -> list[M]:
    """``messages`` fitted into ``budget`` (an int is the input budget, a :class:`~agentcontext.Budget`
    sets the options too), the definitions of ``tools`` and the ``response_format`` (as given to
    ``completion``) and the ``thinking_blocks`` of the messages kept counted in: the caller's own
    objects where unchanged. ``on_event``: called with the fit's events (a
    callback that raises is logged and the fit goes on).

    Raises:
        InvalidMessageError: a message that is neither a Mapping nor a pydantic model.
        ArgumentTypeError: ``messages`` not a list of messages, ``tools`` not a list of tool
            definitions, ``response_format`` neither a dict nor a pydantic model class, or
            ``on_event`` not callable.
        BudgetError: the system messages, the latest request and the newest round do not fit
            even with its long tool results cut.
    """
    on_event = check_callback(on_event, "litellm.fit_messages")
    messages = as_list(messages, "fit_messages(messages)")
    fitted_into = as_budget(budget)
    beside = beside_tokens(None, [*_tools_text(tools), *_format_text(response_format)], fitted_into.encoding)
    return _fit_thinking(messages, fitted_into, beside, on_event)


async def afit_messages(
    messages: Sequence[M],
    budget: int | Budget,
    *,
    tools: Sequence[Any] | None = None,
    response_format: Any = None,
    on_event: EventCallback | None = None,
) -> list[M]:
    """:func:`fit_messages` for the async path (before ``await litellm.acompletion(...)``): a list
    of :data:`~agentcontext.integrations._fit.OFF_LOOP_MESSAGES` (256) messages or more is fitted in
    a worker thread, so the event loop keeps running meanwhile (``on_event`` is called there)."""
    on_event = check_callback(on_event, "litellm.afit_messages")
    items = list(as_list(messages, "afit_messages(messages)"))
    fitted_into = as_budget(budget)
    beside = beside_tokens(None, [*_tools_text(tools), *_format_text(response_format)], fitted_into.encoding)
    return await off_loop(len(items), lambda: _fit_thinking(items, fitted_into, beside, on_event))
