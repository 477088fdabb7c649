"""What an adapter is given, read and checked: a list of messages (:func:`as_list`), tool texts
(:func:`tool_texts`), one message as its JSON dict (:func:`as_dict`), and a call's arguments the
fit left as text, as an object (:func:`arguments_object`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentcontext.errors import ArgumentTypeError, InvalidMessageError


def as_list(objects: Any, what: str) -> Sequence[Any]:
    """``objects``, the messages or items an adapter is given, as a sequence: a list or another
    sequence as it is, another iterable (a generator) listed.

    Raises:
        ArgumentTypeError: a str, bytes or Mapping (one message, not a list of them), or anything
            that is not iterable (None, a number).
    """
    if isinstance(objects, Sequence) and not isinstance(objects, str | bytes | bytearray):
        return objects
    if isinstance(objects, str | bytes | bytearray | Mapping) or not isinstance(objects, Iterable):
        one = " (one message: put it in a list)" if isinstance(objects, Mapping) else ""
        raise ArgumentTypeError(f"{what} must be a list, got {type(objects).__name__}{one}")
    return list(objects)


def tool_texts(tools: Any, what: str) -> Sequence[str]:
    """``tools``, the texts of tool definitions an adapter counts in, checked.

    Raises:
        ArgumentTypeError: ``tools`` not a list of str (a str alone, None, a number, a list
            holding something else).
    """
    if isinstance(tools, str | bytes | bytearray | Mapping) or not isinstance(tools, Sequence):
        raise ArgumentTypeError(f"{what} must be a list of tool definition texts (str), got {type(tools).__name__}")
    for tool in tools:
        if not isinstance(tool, str):
            raise ArgumentTypeError(
                f"{what} must be a list of tool definition texts (str), holding {type(tool).__name__}"
            )
    return tools


#: The packages whose message objects have ``model_dump`` but are no Chat message or Responses
#: item (their dumps have no ``role``, or pass as an unknown item type), and the adapter for them.
_FRAMEWORKS = (
    ("langchain_core.", "agentcontext.integrations.langchain"),
    ("pydantic_ai.", "agentcontext.integrations.pydantic_ai"),
)


def as_dict(obj: Any, index: int, refusal: str) -> dict[str, Any]:
    """The JSON dict of a message or item: a dict as it is, a ``Mapping`` as a dict, a pydantic
    model (an object with ``model_dump``) as ``model_dump(mode="json", exclude_none=True)``.

    Raises:
        InvalidMessageError: anything else, or a LangChain or Pydantic AI message (naming the
            adapter for it), naming its type, then ``refusal`` (what the adapter reads).
    """
    if isinstance(obj, dict):
        return obj
    if isinstance(obj, Mapping):
        return dict(obj)
    module = type(obj).__module__ + "."
    for package, adapter in _FRAMEWORKS:
        if module.startswith(package):
            raise InvalidMessageError(
                f"message {index}: {type(obj).__module__}.{type(obj).__qualname__} is another framework's "
                f"message: {adapter} fits those",
                index,
            )
    dump = getattr(obj, "model_dump", None)
    if callable(dump) and not isinstance(obj, type):
        out = dump(mode="json", exclude_none=True)
        if isinstance(out, dict):
            return out
    raise InvalidMessageError(
        f"message {index}: {type(obj).__module__}.{type(obj).__qualname__} {refusal}",
        index,
    )


def arguments_object(text: str) -> dict[str, Any]:
    """The arguments of a call whose JSON text the fit left as ``text`` (cleared or cut), as an
    object: the one ``text`` parses to, else (not a JSON object: a cleared free-form input)
    ``text`` under ``"cleared"``."""
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"cleared": text}
