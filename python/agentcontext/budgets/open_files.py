"""Open-file views: files an agent keeps open in its context, least recently used closed first."""

from __future__ import annotations

import html
from collections import OrderedDict

from agentcontext import _checks
from agentcontext._containment import one_line
from agentcontext._core import truncate
from agentcontext.errors import OptionError

__all__ = ["OpenFiles", "open_file_limits"]


def open_file_limits(context_window: int) -> tuple[int, int]:
    """``(chars per open file, max open files)`` for a context window in tokens, scaled the way
    Letta scales them: 8K → 5,000 chars and 3 files; 32K → 15,000 and 5; 128K → 25,000 and 10;
    200K and above → 40,000 and 15."""
    if context_window >= 200_000:
        return 40_000, 15
    if context_window >= 128_000:
        return 25_000, 10
    if context_window >= 32_000:
        return 15_000, 5
    return 5_000, 3


class OpenFiles:
    """Open-file views: files the agent keeps open, each shown up to a per-file character limit,
    at most ``max_open`` at a time, the least recently used closed first."""

    def __init__(
        self, context_window: int = 128_000, *, max_open: int | None = None, per_file_chars: int | None = None
    ) -> None:
        _checks.count("context_window", context_window)
        _checks.optional_count("max_open", max_open, minimum=1)
        _checks.optional_count("per_file_chars", per_file_chars)
        chars, count = open_file_limits(context_window)
        self.per_file_chars = per_file_chars or chars
        self.max_open = max_open or count
        if self.max_open < 1:
            raise OptionError(f"max_open must be at least 1, got {self.max_open} for a window of {context_window}")
        self._files: OrderedDict[str, str] = OrderedDict()

    def open(self, name: str, content: str) -> list[str]:
        """Open (or refresh) a file; returns the names closed to make room."""
        self._files[name] = content
        self._files.move_to_end(name)
        closed = []
        while len(self._files) > self.max_open:
            old, _ = self._files.popitem(last=False)
            closed.append(old)
        return closed

    def touch(self, name: str) -> None:
        """Mark a file as used now."""
        self._files.move_to_end(name)

    def close(self, name: str) -> None:
        self._files.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._files

    def __len__(self) -> int:
        return len(self._files)

    @property
    def names(self) -> list[str]:
        """Open files, least recently used first."""
        return list(self._files)

    def view(self, name: str) -> str:
        content = self._files[name]
        if len(content) <= self.per_file_chars:
            return content
        return truncate(content, self.per_file_chars, unit="chars", strategy="head", path=name).text

    def render(self) -> str:
        """All open files as one block for the context, most recently used last. A name is shown on
        one line with ``&``, ``<``, ``>`` and quotes escaped: it cannot end its ``<file>`` tag."""
        return "\n\n".join(
            f'<file name="{html.escape(one_line(name))}">\n{self.view(name)}\n</file>' for name in self._files
        )
