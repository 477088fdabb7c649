"""Reading a provider's response body: each field the providers read is checked for its shape,
and a body whose field has another shape (a server bug, a proxy's rewrite, an OpenAI-compatible
server that answers its own way) is a :class:`~agentcontext.errors.ProviderResponseError` naming
the provider and the field, never an ``AttributeError``, ``KeyError`` or a wrong-typed
:class:`~agentcontext.providers.Usage` further on. A field that is absent (or ``null``) reads as
empty: no text, no calls, no tokens."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentcontext.errors import ProviderResponseError
from agentcontext.types import JsonDict

__all__ = ["Body"]


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool | int | float | str):
        shown = repr(value)
        return f"{type(value).__name__} {shown if len(shown) <= 40 else shown[:37] + '...'}"
    return type(value).__name__


class Body:
    """The fields of one response body of ``provider`` (its name, for the error messages)."""

    def __init__(self, provider: str, data: JsonDict) -> None:
        self.provider = provider
        self.data = data

    def fail(self, where: str, what: str, value: Any) -> ProviderResponseError:
        return ProviderResponseError(
            f"{self.provider} answered with a malformed body: {where} must be {what}, got {_kind(value)}"
        )

    def object(self, value: Any, where: str) -> JsonDict:
        """``value`` as a JSON object (absent: an empty one)."""
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(where, "an object", value)
        return dict(value)

    def objects(self, value: Any, where: str) -> list[JsonDict]:
        """``value`` as a list of JSON objects (absent: none)."""
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(where, "a list", value)
        for i, item in enumerate(value):
            if not isinstance(item, Mapping):
                raise self.fail(f"{where}[{i}]", "an object", item)
        return value

    def text(self, value: Any, where: str) -> str:
        """``value`` as text (absent: empty)."""
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.fail(where, "a string", value)
        return value

    def optional_text(self, value: Any, where: str) -> str | None:
        """``value`` as text, or None when absent (a stop reason, a status)."""
        return None if value is None else self.text(value, where)

    def name(self, value: Any, where: str) -> str:
        """``value`` as a non-empty string (a tool's name, a call's id)."""
        if not isinstance(value, str) or not value:
            raise self.fail(where, "a non-empty string", value)
        return value

    def arguments(self, value: Any, where: str) -> str:
        """A tool call's arguments as JSON text (absent: ``{}``; an object, as some compatible
        servers send them: its JSON)."""
        if value is None or value == "":
            return "{}"
        if isinstance(value, Mapping):
            return json.dumps(dict(value), ensure_ascii=False)
        if not isinstance(value, str):
            raise self.fail(where, "a JSON string", value)
        return value

    def tokens(self, usage: Mapping[str, Any], key: str, where: str) -> int:
        """``usage[key]`` as a token count (absent: 0)."""
        value = usage.get(key)
        if value is None:
            return 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(f"{where}.{key}", "a non-negative integer", value)
        return value

    def model(self, default: str) -> str:
        """The model the body names (absent: ``default``, the one asked for)."""
        value = self.data.get("model")
        return default if value is None else self.name(value, "model")
