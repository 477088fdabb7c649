"""The exception hierarchy of agentcontext.

Every exception the library raises on purpose derives from :class:`AgentContextError`. Errors
about bad input also derive from :class:`ValueError` (or :class:`OSError` for unreadable files)
and carry where the problem is: the message index, the file and line.

This module must not import the compiled core: the core raises these classes.
"""

from __future__ import annotations

__all__ = [
    "AgentContextError",
    "BudgetError",
    "ConversionError",
    "FileReadError",
    "InvalidMessageError",
    "MessageIndexError",
    "OptionError",
    "RecallError",
    "TranscriptError",
    "TranscriptReadError",
]


class AgentContextError(Exception):
    """Base class of every agentcontext error."""


class InvalidMessageError(AgentContextError, ValueError):
    """A message does not have the shape its format requires.

    ``index`` is the position of the offending message in the list that was passed in.
    """

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message, index)
        self.index = index

    def __str__(self) -> str:
        return str(self.args[0])


class ConversionError(AgentContextError, ValueError):
    """A valid message has no representation in the requested format.

    For example an Anthropic request cannot hold a system message after the conversation started.
    """

    def __init__(self, message: str, index: int, format: str) -> None:
        super().__init__(message, index, format)
        self.index = index
        self.format = format

    def __str__(self) -> str:
        return str(self.args[0])


class TranscriptError(AgentContextError, ValueError):
    """A transcript file could not be parsed.

    ``line`` is the 1-based line (JSON Lines files and JSON syntax errors); ``index`` the message
    index (JSON arrays). One of them is set.
    """

    def __init__(self, message: str, path: str, line: int | None = None, index: int | None = None) -> None:
        super().__init__(message, path, line, index)
        self.path = path
        self.line = line
        self.index = index

    def __str__(self) -> str:
        return str(self.args[0])


class TranscriptReadError(AgentContextError, OSError):
    """A transcript file could not be read (missing, a directory, no permission)."""

    def __init__(self, errno: int, message: str, path: str) -> None:
        super().__init__(errno, message, path)
        self.path = path

    def __str__(self) -> str:
        return str(self.args[1])

    def __reduce__(self) -> tuple[type[TranscriptReadError], tuple[int, str, str]]:
        return (type(self), (self.errno or 0, self.args[1], self.path))


class OptionError(AgentContextError, ValueError):
    """An option has a value that is not one of the accepted names (encoding, format, ...)."""


class MessageIndexError(AgentContextError, IndexError):
    """A message index outside the conversation."""


class BudgetError(AgentContextError, ValueError):
    """A budget too small to hold the truncation marker; ``needed`` is the smallest that works."""

    def __init__(self, message: str, needed: int) -> None:
        super().__init__(message, needed)
        self.needed = needed

    def __str__(self) -> str:
        return str(self.args[0])


class FileReadError(AgentContextError):
    """A file read that was refused or failed.

    The message is written for the model, as the read tool's answer: it says what happened and
    what to do instead. ``kind`` is one of ``"too_large"`` (over the byte gate), ``"token_gate"``,
    ``"binary"``, ``"not_utf8"``, ``"offset_past_end"``, ``"directory"`` or ``"io"``.
    """

    def __init__(self, message: str, path: str, kind: str) -> None:
        super().__init__(message, path, kind)
        self.path = path
        self.kind = kind

    def __str__(self) -> str:
        return str(self.args[0])


class RecallError(AgentContextError, KeyError):
    """A recall id that the store does not hold."""

    def __init__(self, message: str, recall_id: str) -> None:
        super().__init__(message, recall_id)
        self.recall_id = recall_id

    def __str__(self) -> str:
        return str(self.args[0])
