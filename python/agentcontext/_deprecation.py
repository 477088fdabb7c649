"""Old names that keep working for one release, each with a :class:`DeprecationWarning`.

Every rename of issue #14 that a caller could have used by name goes through here, so the list of
old names is in one place (and :data:`RENAMED` is what the tests walk).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: ``"qualified name"`` -> ``{old keyword: new keyword}``, for every callable decorated by :func:`renamed`.
RENAMED: dict[str, dict[str, str]] = {}


def warn(message: str, *, stacklevel: int = 3) -> None:
    """A DeprecationWarning pointing at the caller's caller (the user's line, by default)."""
    warnings.warn(
        f"{message} (the old form stops working in the next release)", DeprecationWarning, stacklevel=stacklevel
    )


def renamed(qualified: str, **old_to_new: str) -> Callable[[F], F]:
    """A decorator: the keyword ``old`` is accepted as ``new`` with a DeprecationWarning; passing
    both is an :class:`~agentcontext.errors.ArgumentTypeError`. The signature shown
    (``inspect.signature``, ``help``) is the new one."""
    RENAMED[qualified] = dict(old_to_new)

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in old_to_new.items():
                if old in kwargs:
                    if new in kwargs:
                        from agentcontext.errors import ArgumentTypeError

                        raise ArgumentTypeError(f"{qualified}: pass {new}= only ({old}= is its old name)")
                    warn(f"{qualified}: the keyword {old}= is deprecated, use {new}=")
                    kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
