"""``json.loads`` for files the library reads, with one failure Python's parser reports badly made
a :class:`json.JSONDecodeError` like any other: an integer longer than Python converts from text
(``sys.get_int_max_str_digits()``, 4,300 digits by default) raised a bare ``ValueError`` with no
position, which escaped every reader's ``except json.JSONDecodeError`` as an untyped error. And
``json.dumps(value, ensure_ascii=False)`` for texts written on every call (:func:`dumps_text`)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["IntegerTooLongError", "dumps_text", "loads"]

#: A string (skipped) or an integer token (not the digits of a float: no ``.``, ``e`` after it).
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|(?<![0-9.eE+-])(-?[0-9]+)(?![0-9.eE])')


class IntegerTooLongError(json.JSONDecodeError):
    """A JSON integer with more digits than Python converts (the document is valid JSON)."""


def loads(data: str | bytes | bytearray) -> Any:
    """``json.loads(data)``; an integer over Python's digit limit raises
    :class:`IntegerTooLongError` (a :class:`json.JSONDecodeError`) at the integer's position."""
    try:
        return json.loads(data)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0
        if not limit or "integer string conversion" not in str(exc):
            raise
        text = data if isinstance(data, str) else bytes(data).decode("utf-8", "replace")
        for m in _TOKEN.finditer(text):
            digits = m.group(1)
            if digits is not None and len(digits.lstrip("-")) > limit:
                raise IntegerTooLongError(
                    f"an integer of {len(digits.lstrip('-')):,} digits (Python reads integers of at most "
                    f"{limit:,} digits)",
                    text,
                    m.start(1),
                ) from None
        raise IntegerTooLongError(f"an integer over Python's {limit:,}-digit limit", text, 0) from None


#: ``json.dumps(value, ensure_ascii=False)``'s encoder, made once.
_ENCODER = json.JSONEncoder(ensure_ascii=False)


def _c_encoder() -> Callable[[dict[Any, Any]], str] | None:
    """What ``_ENCODER.encode`` of a dict ends in, without its set-up in Python on every call:
    the C encoder made as ``iterencode`` makes it (a fresh ``markers`` dict each time, so the
    circular check is the same). None when this Python has no C encoder or it does not write
    what ``encode`` writes."""
    make = getattr(json.encoder, "c_make_encoder", None)
    text = getattr(json.encoder, "c_encode_basestring", None)
    if make is None or text is None:
        return None
    default, key, item = _ENCODER.default, _ENCODER.key_separator, _ENCODER.item_separator

    def encode(value: dict[Any, Any]) -> str:
        return "".join(make({}, default, text, None, key, item, False, False, True)(value, 0))

    try:
        probe = {"path": "a.py", "n": [1, 2.5, None, True, "\u00e9\n"], "o": {}}
        return encode if encode(probe) == _ENCODER.encode(probe) else None
    except Exception:  # noqa: BLE001 - another Python's encoder: the plain encode serves
        return None


_ENCODE_DICT = _c_encoder()


def dumps_text(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``; a dict (a tool call's arguments, converted for
    every new call of an agent) through the C encoder directly, 1-3 µs less per call."""
    if _ENCODE_DICT is not None and type(value) is dict:
        return _ENCODE_DICT(value)
    return _ENCODER.encode(value)
