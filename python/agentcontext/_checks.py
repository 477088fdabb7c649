"""Argument checks for the Python half of the API: a value of the wrong type or out of range is an
:class:`~agentcontext.errors.OptionError` that names the argument and the value, as the compiled
core does for its own arguments (never ``TypeError``, ``OverflowError`` or a bare ``ValueError``).
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Mapping
from typing import Any

from agentcontext.errors import ArgumentTypeError, OptionError

#: The largest count the compiled core accepts (``usize`` on 64-bit platforms).
MAX_COUNT = 2**64 - 1


def _shown(value: Any) -> str:
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    if value is None or isinstance(value, bool | int | float):
        return text
    return f"{type(value).__name__} {text}"


def count(name: str, value: Any, *, minimum: int = 0) -> int:
    """``value`` as an int of at least ``minimum`` (0 or 1) and at most :data:`MAX_COUNT`."""
    what = "a non-negative integer" if minimum == 0 else "a positive integer"
    if isinstance(value, bool | float | str | bytes):
        raise ArgumentTypeError(f"{name} must be {what}, got {_shown(value)}")
    try:
        number = operator.index(value)
    except TypeError:
        raise ArgumentTypeError(f"{name} must be {what}, got {_shown(value)}") from None
    if number < minimum:
        raise OptionError(f"{name} must be {what}, got {number}")
    if number > MAX_COUNT:
        raise OptionError(f"{name} is too large: {number} (the largest accepted is {MAX_COUNT})")
    return number


def optional_count(name: str, value: Any, *, minimum: int = 0) -> int | None:
    """:func:`count`, or None."""
    return None if value is None else count(name, value, minimum=minimum)


def number(name: str, value: Any, *, low: float = 0.0, high: float = math.inf, low_open: bool = False) -> float:
    """``value`` as a finite number in ``[low, high]`` (``(low, high]`` with ``low_open``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArgumentTypeError(f"{name} must be a number, got {_shown(value)}")
    result = float(value) if not isinstance(value, int) or abs(value) < 2**1023 else math.inf
    if not math.isfinite(result) or result < low or result > high or (low_open and result == low):
        bounds = f"{'over' if low_open else 'at least'} {low:g}" + (f" and at most {high:g}" if high < math.inf else "")
        raise OptionError(f"{name} must be a finite number {bounds}, got {value!r}")
    return result


def count_map(name: str, value: Any) -> dict[str, int]:
    """A mapping of names to non-negative ints, each value checked as ``name['key']``."""
    if not isinstance(value, Mapping):
        raise ArgumentTypeError(f"{name} must be a mapping of names to integers, got {_shown(value)}")
    out: dict[str, int] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise ArgumentTypeError(f"{name} keys must be names (str), got {_shown(key)}")
        out[key] = count(f"{name}[{key!r}]", item)
    return out


def file_name(name: str, value: Any) -> Any:
    """``value``, a path (``str`` or ``os.PathLike``), checked to be a name the file system can take:
    one holding a lone surrogate (outside surrogateescape's range) is an :class:`OptionError`
    naming the argument (every ``os`` call on it raises a bare ``UnicodeEncodeError``). A value of
    another type is returned as it is, for the caller's own type check."""
    try:
        os.fsencode(value)
    except UnicodeEncodeError:
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise OptionError(f"{name} is not a valid file name: it holds a lone surrogate, got {shown}") from None
    except TypeError:
        pass
    return value
