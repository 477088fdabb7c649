"""Pydantic AI: a history processor that fits each model request into a budget.

    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ProcessHistory
    from agentcontext.integrations.pydantic_ai import history_processor

    agent = Agent(model, tools=[...], capabilities=[ProcessHistory(history_processor(100_000))])

Pydantic AI keeps what a history processor returns as the run's history, so the history is
compacted as it goes: old tool returns cleared, then the latest user prompt and the longest recent
suffix kept, never a tool call without its return. Messages are the run's own ``ModelRequest`` and
``ModelResponse`` objects where nothing changed; a request some of whose parts were cleared, cut or
dropped is a copy (``dataclasses.replace``) holding its other parts as they were, and so is a
response whose old tool calls' arguments were cleared (``Budget(clear_tool_inputs=True)``: each
such ``ToolCallPart`` a copy with the cleared ``args``, a str still a str). Parts the model
does not read as text (instruction and capability deltas) stay with their message. Everything
else the model receives is counted in: the system prompt parts, the instructions (static and
dynamic: the latest request's ``instructions``) and the tool definitions of the run step. Each
message is converted once and reused across calls (recognised by identity). The processor is
synchronous: Pydantic AI runs it in a worker thread, off the event loop. ``on_event=`` is called
with each fit's events (:mod:`agentcontext.observe`: a compaction of kind ``fit``, policy
``pydantic_ai``; the counts are of the Chat messages the parts stand for). Tested with
pydantic-ai-slim 2.68 (``pip install 'agentcontext[pydantic-ai]'``).
"""

from __future__ import annotations

import base64
import dataclasses
import itertools
import json
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentcontext._core import _Prints
from agentcontext.errors import ArgumentTypeError, InvalidMessageError, MissingExtraError
from agentcontext.integrations._beside import beside_tokens, text_of_type, tool_text
from agentcontext.integrations._converted import Converted, InCore, held_fields, in_core_default, members_in_core
from agentcontext.integrations._fit import Budget, as_budget, factory_budget, fit
from agentcontext.integrations._given import arguments_object, as_list, tool_texts
from agentcontext.observe.compaction import reporting_fits
from agentcontext.observe.emit import EventCallback, check_callback
from agentcontext.observe.events import Event  # noqa: F401 - resolves EventCallback in the signatures Pydantic AI reads

try:
    from pydantic_ai import RunContext
    from pydantic_ai.messages import (
        BaseToolCallPart,
        BaseToolReturnPart,
        BinaryContent,
        ImageUrl,
        ModelMessage,
        ModelRequest,
        ModelResponse,
        NativeToolCallPart,
        NativeToolReturnPart,
        RetryFeedbackPart,
        RetryPromptPart,
        SystemPromptPart,
        TextContent,
        TextPart,
        ThinkingPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_core import PydanticSerializationError
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise MissingExtraError(
        "agentcontext.integrations.pydantic_ai needs Pydantic AI: pip install 'agentcontext[pydantic-ai]'"
    ) from exc

__all__ = ["fit_messages", "history_processor"]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        return "\n".join(_item_text(item) for item in content)
    return json.dumps(content, ensure_ascii=False, default=str)


def _item_text(item: Any) -> str:
    """The text of one item of a user prompt's content: a str or a ``TextContent``'s text, else
    a marker naming its type (a file the model reads in its own way)."""
    if isinstance(item, str):
        return item
    if isinstance(item, TextContent):
        return item.content
    return f"[{type(item).__name__}]"


#: Of an inline image, the bytes given to the counter: its header (where its size is) is in them.
IMAGE_HEAD = 48 * 1024


def _image_part(item: Any) -> dict[str, Any] | None:
    """The OpenAI image part an image of a user prompt is counted as (the counter reads an inline
    image's size from its header, so only its first bytes are encoded); None for another item."""
    if isinstance(item, ImageUrl):
        return {"type": "image_url", "image_url": {"url": item.url}}
    if isinstance(item, BinaryContent) and item.is_image:
        head = base64.b64encode(item.data[:IMAGE_HEAD]).decode("ascii")
        return {"type": "image_url", "image_url": {"url": f"data:{item.media_type};base64,{head}"}}
    return None


def _returned(part: BaseToolReturnPart) -> Any:
    """A tool return's content as the Chat message counts it: its text, or with images (which
    Pydantic AI sends to the model after the return) its text and image parts."""
    text = part.model_response_str()
    files = part.files
    images = [image for image in map(_image_part, files) if image is not None] if files else None
    return [{"type": "text", "text": text}, *images] if images else text


def _returned_as(part: BaseToolReturnPart, content: Any) -> Any:
    """The content of a copy of ``part`` whose counted content the fit changed to ``content``:
    a text as it is; text and image parts (its text cut, its images left) as the text followed
    by the part's own files."""
    if isinstance(content, str):
        return content
    text = "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return [text, *part.files]


def _user_content(content: Any) -> Any:
    """A user prompt's content as the Chat message counts it: its text, or with images the
    text and image parts (each image costs what the model charges for one, not a marker's
    few tokens)."""
    if isinstance(content, str) or not isinstance(content, Sequence) or isinstance(content, bytes | bytearray):
        return _text(content)
    images = [_image_part(item) for item in content]
    if not any(images):
        return _text(content)
    return [
        image if image is not None else {"type": "text", "text": _item_text(item)}
        for item, image in zip(content, images, strict=True)
    ]


def _prompt_as(content: Sequence[Any], cut: Any) -> Any:
    """The user prompt ``content`` (a list with images) whose Chat parts (:func:`_user_content`,
    one per item) came back as ``cut``: each item whose text part came back changed is its text
    as cut, the others (images) as they are; ``content`` itself when the parts do not match."""
    if not isinstance(cut, list) or len(cut) != len(content):
        return content
    return [
        got["text"]
        if isinstance(got, dict) and got.get("type") == "text" and got.get("text") != _item_text(item)
        else item
        for item, got in zip(content, cut, strict=True)
    ]


def _request_part(part: Any) -> dict[str, Any] | None:
    if isinstance(part, SystemPromptPart):
        return {"role": "system", "content": part.content}
    if isinstance(part, UserPromptPart):
        return {"role": "user", "content": _user_content(part.content)}
    if isinstance(part, BaseToolReturnPart) and not isinstance(part, NativeToolReturnPart):
        return {"role": "tool", "tool_call_id": part.tool_call_id, "content": _returned(part)}
    if isinstance(part, RetryPromptPart):
        if part.tool_name is not None:
            return {"role": "tool", "tool_call_id": part.tool_call_id, "content": part.model_response()}
        return {"role": "user", "content": part.model_response()}
    if isinstance(part, RetryFeedbackPart):
        return {"role": "user", "content": _text(part.content)}
    return None


def _response(message: ModelResponse) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, BaseToolCallPart) and not isinstance(part, NativeToolCallPart):
            calls.append(
                {
                    "id": part.tool_call_id,
                    "type": "function",
                    "function": {"name": part.tool_name, "arguments": part.args_as_json_str()},
                }
            )
        elif isinstance(part, (TextPart, ThinkingPart)):
            texts.append(part.content)
        else:
            # Server-side tool calls and returns, files: counted as what they hold.
            texts.append(_text(getattr(part, "content", None) or getattr(part, "args", None) or ""))
    out: dict[str, Any] = {"role": "assistant", "content": "\n".join(t for t in texts if t) or None}
    if calls:
        out["tool_calls"] = calls
    elif out["content"] is None:
        out["content"] = ""
    return out


def _dicts(message: ModelMessage, index: int) -> list[dict[str, Any]]:
    if isinstance(message, ModelRequest | ModelResponse) and not isinstance(message.parts, Sequence):
        raise InvalidMessageError(
            f"message {index}: its parts must be a list of parts, got {type(message.parts).__name__}", index
        )
    if isinstance(message, ModelResponse):
        try:
            return [_response(message)]
        except PydanticSerializationError as exc:  # (a call's args holding an object JSON has no form for)
            raise InvalidMessageError(
                f"message {index}: a tool call's args cannot be written as JSON ({exc}): give it JSON values", index
            ) from None
    if not isinstance(message, ModelRequest):
        hint = (
            "for OpenAI Chat dicts use agentcontext.trim_messages or agentcontext.integrations.litellm.fit_messages"
            if isinstance(message, dict)
            else "pass the run's messages (result.all_messages())"
        )
        raise InvalidMessageError(
            f"message {index}: {type(message).__module__}.{type(message).__qualname__} is not a Pydantic AI "
            f"ModelRequest or ModelResponse (agentcontext.integrations.pydantic_ai reads those; {hint})",
            index,
        )
    return [d for d in (_request_part(p) for p in message.parts) if d is not None]


def _calls(message: ModelResponse) -> list[Any]:
    """The parts of ``message`` that :func:`_response` writes as its ``tool_calls``, in order."""
    return [p for p in message.parts if isinstance(p, BaseToolCallPart) and not isinstance(p, NativeToolCallPart)]


def _with_args(part: Any, text: str) -> Any:
    """A copy of the tool call ``part`` with the arguments ``text`` (their JSON text, as the fit
    left them): ``args`` a str stays a str; else the object ``text`` parses to (a text that is
    not a JSON object under ``"cleared"``, as the fit writes a cleared free-form input)."""
    if isinstance(part.args, str):
        return dataclasses.replace(part, args=text)
    return dataclasses.replace(part, args=arguments_object(text))


def _rebuild_response(message: ModelResponse, changed: dict[str, Any] | None) -> ModelResponse:
    """``message`` as the fit changed its dict: a copy whose tool calls carry the arguments the
    fit left them (cleared by ``clear_tool_inputs``) where they differ from the part's own,
    every other part as it is; ``message`` itself when none differ."""
    now = changed.get("tool_calls") if changed is not None else None
    calls = _calls(message)
    if not isinstance(now, list) or len(now) != len(calls):
        return message
    new: dict[int, Any] = {}
    for part, call in zip(calls, now, strict=True):
        text = call.get("function", {}).get("arguments")
        # (By place, not by id: the fit renames a reused call id, ``call_0#2``.)
        if isinstance(text, str) and text != part.args_as_json_str():
            new[id(part)] = _with_args(part, text)
    if not new:
        return message
    return dataclasses.replace(message, parts=[new.get(id(p), p) for p in message.parts])


def _rebuild(message: ModelMessage, kept: list[tuple[int, dict[str, Any] | None]]) -> ModelMessage | None:
    if isinstance(message, ModelResponse):
        return _rebuild_response(message, kept[0][1] if kept else None)
    changes = dict(kept)
    parts: list[Any] = []
    k = 0
    for part in message.parts:
        if _request_part(part) is None:
            parts.append(part)
            continue
        if k in changes:
            changed = changes[k]
            if changed is None:
                parts.append(part)
            elif isinstance(part, BaseToolReturnPart) and part.outcome in ("failed", "retried"):
                # Counted as the model reads it, wrapped in {"error": ...}: the fitted text is that
                # wrapper cleared or cut, which the part would wrap again; it goes out as it is.
                parts.append(
                    dataclasses.replace(part, content=_returned_as(part, changed["content"]), outcome="success")
                )
            elif isinstance(part, BaseToolReturnPart):
                parts.append(dataclasses.replace(part, content=_returned_as(part, changed["content"])))
            elif isinstance(part, UserPromptPart) and isinstance(part.content, str):
                parts.append(dataclasses.replace(part, content=changed["content"]))
            elif isinstance(part, UserPromptPart) and not isinstance(changed["content"], str):
                # Counted in parts (with its images): the texts cut, item for item, the images kept.
                parts.append(dataclasses.replace(part, content=_prompt_as(part.content, changed["content"])))
            elif isinstance(part, UserPromptPart):
                # Text cut, everything else (images, files) kept.
                rest = [item for item in part.content if not isinstance(item, str)]
                parts.append(dataclasses.replace(part, content=[changed["content"], *rest]))
            elif isinstance(part, RetryPromptPart) and part.tool_name is not None:
                parts.append(_retry_as(part, changed["content"]))
            else:
                parts.append(part)
        k += 1
    if not any(_request_part(p) is not None for p in parts):
        return None
    return dataclasses.replace(message, parts=parts)


def _retry_as(part: RetryPromptPart, text: str) -> ToolReturnPart:
    """The tool retry ``part`` whose answer the fit cleared or cut to ``text``, as a part the model
    reads as exactly ``text``: a tool return of it (a retry's ``model_response()`` adds its own
    tail, and ``RetryPromptPart`` is deprecated: making one warns)."""
    return ToolReturnPart(
        tool_name=part.tool_name or "", content=text, tool_call_id=part.tool_call_id, timestamp=part.timestamp
    )


def _instructions(messages: Sequence[ModelMessage]) -> str | None:
    """The instructions the model receives: the latest request's (static and dynamic rendered)."""
    for message in reversed(messages):
        if isinstance(message, ModelRequest) and message.instructions:
            return message.instructions
    return None


def _tools(ctx: RunContext[Any] | None) -> list[str]:
    """The tool definitions of the run step (as their counted text), none outside a run, and
    the agent's structured output schema when it is not sent as a tool (:func:`_output_text`)."""
    manager = getattr(ctx, "tool_manager", None)
    if manager is None or getattr(manager, "tools", None) is None:
        return []
    out = [tool_text(t.name, t.description, t.parameters_json_schema) for t in manager.tool_defs]
    schema = _output_text(getattr(getattr(ctx, "agent", None), "output_type", None))
    if schema is not None:
        out.append(schema)
    return out


#: Per output type, the text its schema is counted as (None: not sent apart from the tools).
_OUTPUT_TEXTS: dict[Any, str | None] = {}


def _output_text(output_type: Any) -> str | None:
    """The text the model receives for a ``NativeOutput`` (the JSON schema, as the response
    format) or a ``PromptedOutput`` (the schema in the instructions Pydantic AI adds, with its
    default template); None for any other output (text, or the output tools counted with the
    tools)."""
    return text_of_type(_OUTPUT_TEXTS, output_type, _output_text_of)


def _output_text_of(output_type: Any) -> str | None:
    text = None
    try:
        from pydantic_ai import _output
        from pydantic_ai.profiles import DEFAULT_PROMPTED_OUTPUT_TEMPLATE

        schema = _output.OutputSchema.build(output_type)
        if isinstance(schema, _output.PromptedOutputSchema) and schema.object_def is not None:
            text = schema.build_instructions(schema.template or DEFAULT_PROMPTED_OUTPUT_TEMPLATE, schema.object_def)
        elif isinstance(schema, _output.NativeOutputSchema) and schema.object_def is not None:
            text = json.dumps(schema.object_def.json_schema, ensure_ascii=False)
    except Exception:  # noqa: BLE001 - Pydantic AI's own schema making (a private module): counted as nothing
        text = None
    return text


def _key(message: ModelMessage) -> tuple[Any, ...]:
    """What the conversion reads of ``message``: its parts, each part, and each part's fields (a
    list set anew, a part replaced in it, added or removed, or a part's field set anew, such as
    its ``content``, converts it again)."""
    parts = getattr(message, "parts", None)
    if type(parts) is not list:
        return (parts,)
    return (parts, len(parts), *itertools.chain.from_iterable(held_fields(p, _no_fields) for p in parts))


def _fields(message: ModelMessage) -> tuple[Any, ...]:
    """What a copy of ``message`` is made from: its fields and each of its parts' fields (see
    :func:`~agentcontext.integrations._converted.held_fields`)."""
    parts = getattr(message, "parts", None)
    own = held_fields(message, _key)
    if not isinstance(parts, list):
        return own
    return (*own, *itertools.chain.from_iterable(held_fields(p, _no_fields) for p in parts))


def _in_core(message: ModelMessage) -> InCore | None:
    """How ``_core._Held`` reads what :func:`_fields` reads, None where it cannot."""
    own = in_core_default(message)
    if own is None:
        return None
    parts = getattr(message, "parts", None)
    if not isinstance(parts, list):
        return own
    return (own[0], "parts") if members_in_core(parts) else None


def _no_fields(part: Any) -> tuple[Any, ...]:
    return ()


_PARTS = operator.attrgetter("parts")


def _part_names(cls: type) -> tuple[str, ...]:
    """The names of the fields of a part of class ``cls`` (a Pydantic AI part is a dataclass)."""
    return tuple(getattr(cls, "__dataclass_fields__", ()))


class _PartPrints:
    """The :class:`~agentcontext.integrations._converted.Prints` of the last call's messages
    (what :func:`_key` reads, told in two passes of the core, ``_core._Prints``, rather than a
    key per message and call): each message by identity, class and ``parts`` (the same list or
    an equal one, as long), then every part of them in order by identity, class and each of its
    dataclass fields (the same object or an equal one)."""

    def __init__(self) -> None:
        self._messages = _Prints()
        self._parts = _Prints()
        self._names: dict[type, tuple[str, ...]] = {}
        self._part_names: dict[type, tuple[str, ...]] = {}

    def same(self, objects: list[Any]) -> bool:
        n = len(self._messages)
        if not self._messages.same(objects):
            return False
        parts = list(itertools.chain.from_iterable(map(_PARTS, objects[:n])))
        return len(parts) == len(self._parts) and self._parts.same(parts)

    def keep(self, objects: list[Any], keys: list[tuple[Any, ...]], start: int) -> None:
        for cls in set(map(type, objects[start:])) - self._names.keys():
            self._names[cls] = ("parts",)
        # (The parts of the first ``start`` messages are the kept ones when those are the kept
        # messages; the core keeps fewer when fewer begin the list.)
        at = len(self._parts) if 0 < start == len(self._messages) else 0
        parts = list(itertools.chain.from_iterable(map(_PARTS, objects)))
        for cls in set(map(type, parts)) - self._part_names.keys():
            self._part_names[cls] = _part_names(cls)
        self._messages.keep(objects, start, self._names)
        self._parts.keep(parts, at, self._part_names)


def converted() -> Converted:
    """A memo of the conversions across calls (see :class:`~agentcontext.integrations._fit.Converted`):
    a message is converted again when its ``parts`` list, a part in it or a field of a part
    was set anew (told for the last call's messages by :class:`_PartPrints`)."""
    return Converted(_key, prints=_PartPrints, fields=_fields, in_core=_in_core, trims=False)


def fit_messages(
    messages: Sequence[ModelMessage],
    budget: int | Budget,
    *,
    tools: Sequence[str] = (),
    cache: Converted | None = None,
    on_event: EventCallback | None = None,
) -> list[ModelMessage]:
    """``messages`` fitted into ``budget`` (an int is the input budget, a :class:`~agentcontext.Budget`
    sets the options too), the latest request's instructions and ``tools`` (texts of tool
    definitions) counted in: the caller's own messages where unchanged. With ``cache`` (from
    :func:`converted`) a message converted by an earlier call is not converted again. A newest
    tool return over the budget by itself is cut head + marker + tail (the history keeps only
    the cut: Pydantic AI stores what the processor returns). ``on_event``: called with the fit's
    events (a callback that raises is logged and the fit goes on).

    Raises:
        InvalidMessageError: an object that is not a ``ModelRequest`` or ``ModelResponse`` (naming
            the adapter for it).
        ArgumentTypeError: ``messages`` not a list of messages, ``tools`` not a list of str,
            ``cache`` not a memo from :func:`converted`, or ``on_event`` not callable.
        BudgetError: the instructions, tools, the latest prompt and the newest round do not fit
            even with its long returns cut.
    """
    on_event = check_callback(on_event, "pydantic_ai.fit_messages")
    messages = as_list(messages, "fit_messages(messages)")
    tools = tool_texts(tools, "fit_messages(tools=)")
    if cache is not None and not isinstance(cache, Converted):
        raise ArgumentTypeError(
            f"fit_messages(cache=) must be a memo from converted() or None, got {type(cache).__name__}"
        )
    fitted_into = as_budget(budget)
    beside = beside_tokens(_instructions(messages), tools, fitted_into.encoding)
    return reporting_fits(
        on_event,
        "pydantic_ai",
        lambda: fit(
            messages,
            fitted_into,
            _dicts,
            _rebuild,
            format="openai",
            beside=beside,
            cache=cache,
            recall="none",
            made=_made,
        ),
    )


def _made(message: dict[str, Any], names: Mapping[str, str]) -> ModelMessage:
    """The request of a Chat dict the fit's repair made: a tool message (the result given to a
    call whose result is missing) as a tool return, a user message (a result whose call is
    missing) as a user prompt."""
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    if message.get("role") == "tool":
        call_id = message.get("tool_call_id", "")
        return ModelRequest(
            parts=[ToolReturnPart(tool_name=names.get(call_id, ""), content=text, tool_call_id=call_id)]
        )
    return ModelRequest(parts=[UserPromptPart(content=text)])


def history_processor(
    budget: int | Budget, *, on_event: EventCallback | None = None
) -> Callable[[RunContext[Any], list[ModelMessage]], list[ModelMessage]]:
    """A history processor for ``ProcessHistory`` (see the module docs) fitting into ``budget``
    (as for :func:`fit_messages`; the run step's tool definitions counted in), each fit's events
    to ``on_event``. It keeps the messages it converted across calls.

    Raises:
        OptionError: a budget with an unknown encoding (here, not in the first model call).
        ArgumentTypeError: ``budget`` neither an int nor a :class:`~agentcontext.Budget`, or
            ``on_event`` not callable.
    """
    on_event = check_callback(on_event, "pydantic_ai.history_processor")
    # (Given uncalled, ``ProcessHistory(history_processor)``, it is called with the messages.)
    fitted_into = factory_budget(
        "history_processor",
        budget,
        lambda b: isinstance(b, list | RunContext),
        "ProcessHistory(history_processor(budget))",
    )
    cache = converted()

    def process(ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:
        return fit_messages(messages, fitted_into, tools=_tools(ctx), cache=cache, on_event=on_event)

    return process
