"""``json.loads`` for files the library reads, with one failure Python's parser reports badly made
a :class:`json.JSONDecodeError` like any other: an integer longer than Python converts from text
(``sys.get_int_max_str_digits()``, 4,300 digits by default) raised a bare ``ValueError`` with no
position, which escaped every reader's ``except json.JSONDecodeError`` as an untyped error."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

__all__ = ["IntegerTooLongError", "loads"]

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
