"""The exception hierarchy of agentcontext.

Every exception the library raises on purpose derives from :class:`AgentContextError`. Errors
about bad input also derive from :class:`ValueError` (or :class:`OSError` for unreadable files)
and carry where the problem is: the message index, the file and line.

:func:`failure_text` is how the library writes a failure it reports (to the model, in a stage
event, in the session log): the exception's text with the credentials it knows masked.

This module must not import the compiled core: the core raises these classes.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from typing import Any

__all__ = [
    "AgentContextError",
    "ArgumentTypeError",
    "BudgetError",
    "ContextOverflowError",
    "ConversionError",
    "FileReadError",
    "InvalidMessageError",
    "MessageIndexError",
    "MissingCredentialsError",
    "MissingExtraError",
    "OptionError",
    "RecallError",
    "SummaryError",
    "TranscriptError",
    "TranscriptReadError",
    "UnknownModelError",
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
    """A transcript file could not be read (missing, a directory, not a regular file, over the size
    limit, no permission)."""

    def __init__(self, errno: int, message: str, path: str) -> None:
        super().__init__(errno, message, path)
        self.path = path

    def __str__(self) -> str:
        return str(self.args[1])

    def __reduce__(self) -> tuple[type[TranscriptReadError], tuple[int, str, str]]:
        return (type(self), (self.errno or 0, self.args[1], self.path))


class OptionError(AgentContextError, ValueError):
    """An argument with a value that is not accepted: an unknown name (encoding, format, ...), a
    negative or too large count, a share outside [0, 1], NaN. The message starts with the
    argument's name (or says which option), then the value."""


class ArgumentTypeError(OptionError, TypeError):
    """An argument of the wrong type (``None`` or a string where a count goes, an int where a list
    of messages goes): an :class:`OptionError` naming the argument and the value, and a
    :class:`TypeError` as Python code expects of a wrong type."""


class UnknownModelError(OptionError):
    """A model name the window table (:data:`agentcontext.budgets.MODEL_WINDOWS`) does not know:
    ``model`` is the name as given, ``close_matches`` the nearest known names (maybe none). Pass
    the window yourself or register the model (:func:`agentcontext.budgets.register_model`)."""

    def __init__(self, message: str, model: str, close_matches: list[str]) -> None:
        super().__init__(message, model, close_matches)
        self.model = model
        self.close_matches = close_matches

    def __str__(self) -> str:
        return str(self.args[0])


class MissingCredentialsError(OptionError):
    """A provider built its SDK client without an API key: neither ``api_key=`` nor the
    environment variable (``variable``) that the SDK reads was set."""

    def __init__(self, message: str, variable: str) -> None:
        super().__init__(message, variable)
        self.variable = variable

    def __str__(self) -> str:
        return str(self.args[0])


class MessageIndexError(AgentContextError, IndexError):
    """A message index outside the conversation."""


class BudgetError(AgentContextError, ValueError):
    """A budget too small for what must fit in it (a truncation marker; for ``trim_messages`` the
    system messages, the reserve and the last round, which is never split); the message says what
    was compared and ``needed`` is the smallest budget that works."""

    def __init__(self, message: str, needed: int) -> None:
        super().__init__(message, needed)
        self.needed = needed

    def __str__(self) -> str:
        return str(self.args[0])


class FileReadError(AgentContextError):
    """A file read that was refused or failed.

    The message is written for the model, as the read tool's answer: it says what happened and
    what to do instead. ``kind`` is one of ``"too_large"`` (over the byte gate), ``"token_gate"``,
    ``"binary"``, ``"not_utf8"``, ``"offset_past_end"``, ``"directory"``, ``"not_regular"`` (a FIFO,
    a device or a socket, refused before it is opened for reading), ``"outside_root"`` (a
    :class:`~agentcontext.FileReader` with a ``root`` was asked for a file whose real path lies
    outside it) or ``"io"``; a session log search (``search_log``) also raises ``"too_large"``
    (over ``max_bytes``) and ``"not_a_session_log"`` (the file does not start with a session
    log's header).
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


class ContextOverflowError(AgentContextError):
    """The provider rejected a request as longer than the model's context window ("prompt is too
    long", ``context_length_exceeded``, "exceeds the context window" and the wordings of
    OpenAI-compatible servers), classified from the SDK's error.

    ``tokens`` and ``limit`` are the prompt size and the window the provider reported, when it
    reported them; ``provider`` names the API; ``recovered`` is True when the request had already
    been recompiled once after an earlier overflow (no further deletion is attempted). The SDK's
    own exception is ``__cause__``.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        tokens: int | None = None,
        limit: int | None = None,
        status_code: int | None = None,
        recovered: bool = False,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.tokens = tokens
        self.limit = limit
        self.status_code = status_code
        self.recovered = recovered

    def __str__(self) -> str:
        return str(self.args[0])

    def recovered_with(self, note: str) -> ContextOverflowError:
        """This error after the one recompile it allows: same numbers, ``note`` added to the
        message, ``recovered`` set."""
        return ContextOverflowError(
            f"{self}{note}",
            provider=self.provider,
            tokens=self.tokens,
            limit=self.limit,
            status_code=self.status_code,
            recovered=True,
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_overflow,
            (self.args[0], self.provider, self.tokens, self.limit, self.status_code, self.recovered),
        )


def _rebuild_overflow(
    message: str, provider: str, tokens: int | None, limit: int | None, status: int | None, recovered: bool
) -> ContextOverflowError:
    return ContextOverflowError(
        message, provider=provider, tokens=tokens, limit=limit, status_code=status, recovered=recovered
    )


class SummaryError(AgentContextError):
    """An LLM summarizer could not produce an acceptable summary (and had no fallback)."""


class CompactionError(AgentContextError):
    """A manual compaction that could not be done; the history is left unchanged.

    (Also importable as ``agentcontext.compaction.CompactionError``.)"""


class ProviderResponseError(AgentContextError, ValueError):
    """A provider answered with a body that is not JSON, JSON that is not an object, or an object
    whose fields the provider reads have another shape (the message names the field)."""


class MissingExtraError(AgentContextError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class UnknownFormatError(TranscriptError):
    """A transcript file in none of the formats that were tried; ``tried`` lists them (format ids)."""

    def __init__(self, message: str, path: str, tried: tuple[str, ...] = ()) -> None:
        super().__init__(message, path)
        self.tried = tuple(tried)

    def __reduce__(self) -> tuple[type[UnknownFormatError], tuple[str, str, tuple[str, ...]]]:
        return (type(self), (str(self.args[0]), self.path, self.tried))


class SessionSelectionError(TranscriptError):
    """A file that holds several sessions was asked for one without saying which, or for one it does
    not hold; ``names`` lists the sessions it holds, in file order."""

    def __init__(self, message: str, path: str, names: tuple[str, ...] = ()) -> None:
        super().__init__(message, path)
        self.names = tuple(names)

    def __reduce__(self) -> tuple[type[SessionSelectionError], tuple[str, str, tuple[str, ...]]]:
        return (type(self), (str(self.args[0]), self.path, self.names))


class MemoryRecordError(AgentContextError, ValueError):
    """A memory record that cannot be read, written or found.

    ``name`` is the record; ``kind`` is one of ``"not_found"``, ``"exists"``, ``"invalid"`` (its
    front matter, with the reason), ``"too_large"``, ``"symlink"`` or ``"io"``.
    """

    def __init__(self, message: str, name: str, kind: str) -> None:
        super().__init__(message, name, kind)
        self.name = name
        self.kind = kind

    def __str__(self) -> str:
        return str(self.args[0])


class SnapshotError(AgentContextError, ValueError):
    """A session snapshot that cannot be read or written.

    ``path`` is the file or directory; ``kind`` is one of ``"not_found"``, ``"version"``,
    ``"invalid"`` (with the reason), ``"too_large"``, ``"symlink"`` or ``"io"``.
    """

    def __init__(self, message: str, path: str, kind: str) -> None:
        super().__init__(message, path, kind)
        self.path = path
        self.kind = kind

    def __str__(self) -> str:
        return str(self.args[0])


__all__ += [
    "CompactionError",
    "MemoryRecordError",
    "ProviderResponseError",
    "SessionSelectionError",
    "SnapshotError",
    "UnknownFormatError",
]


# ---------------------------------------------------------------------------------------------
# Failure texts: credentials kept out of what the library writes about a failure.
#
# An exception's text is written where the library reports a failure: into the prompt (a tool
# that raised, a subagent that failed: the model is told), into stage events and the session log
# (a summarizer whose model call failed), into :class:`ContextOverflowError`.
# A provider or a proxy may echo the credential it was sent in its error ("Incorrect API key
# provided: sk-..."), an HTTP client the URL it called (with a password in it): :func:`failure_text`
# writes an exception as ``"<type>: <text>"`` with every credential it knows replaced by
# :data:`MASK`:
#
# - the values of the environment variables whose names say they hold one (``*_API_KEY``,
#   ``*_TOKEN``, ``*_SECRET``, ``*PASSWORD*``, ...), read when the text is written;
# - the keys of the SDK clients the library's providers use (:func:`remember_credentials`);
# - strings shaped like the well-known key formats (OpenAI and Anthropic ``sk-...``, AWS access
#   key ids, GitHub and Slack tokens, Google API keys, ``Bearer`` tokens) and the password of a
#   URL (``https://user:password@host``).
#
# A value shorter than :data:`MIN_LENGTH` characters is not taken for a credential (it would mask
# common words). Only the texts of failures are masked: what a tool returns is the caller's.

#: What a credential is replaced with.
MASK = "[redacted]"

#: The shortest value taken for a credential.
MIN_LENGTH = 8

#: Environment variable names that say they hold a credential.
_CREDENTIAL_NAME = re.compile(
    r"(?i)(?:^|_)(?:API_?KEY|ACCESS_?KEY|SECRET(?:_?ACCESS)?_?KEY|SECRET|TOKEN|AUTH_?TOKEN|PASSWORD|PASSWD|"
    r"CREDENTIALS?|PRIVATE_?KEY)(?:$|_)"
)

#: Strings shaped like well-known credentials, and a URL's password (its group 1 kept).
_SHAPES = re.compile(
    r"\bsk-[A-Za-z0-9_\-]{16,}"  # OpenAI, Anthropic (sk-ant-...), OpenRouter, many proxies
    r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key id
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}"  # GitHub tokens
    r"|\bgithub_pat_[A-Za-z0-9_]{30,}"
    r"|\bxox[abposr]-[A-Za-z0-9\-]{10,}"  # Slack tokens
    r"|\bAIza[0-9A-Za-z_\-]{35}"  # Google API keys
)
#: A bearer token and a URL's password, after what names them (group 1, kept).
_NAMED = re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/\-]{16,}=*|(://[^/\s:@]{0,256}:)[^/\s@]{1,256}(?=@)")

_lock = threading.Lock()
#: The credentials the providers' clients were given (see :func:`remember_credentials`).
_remembered: set[str] = set()


def remember_credentials(*values: object) -> None:
    """Keep ``values`` (a provider client's keys; anything not a str of at least
    :data:`MIN_LENGTH` characters is passed over) to mask from every failure text from now on."""
    kept = {v for v in values if isinstance(v, str) and len(v.strip()) >= MIN_LENGTH}
    if kept:
        with _lock:
            _remembered.update(kept)


def _known(extra: Iterable[str]) -> list[str]:
    """Every credential known now, longest first (a key that holds another is masked whole)."""
    values = {v for name, v in os.environ.items() if _CREDENTIAL_NAME.search(name)}
    with _lock:
        values |= _remembered
    values.update(extra)
    return sorted((v for v in values if isinstance(v, str) and len(v.strip()) >= MIN_LENGTH), key=len, reverse=True)


def mask_credentials(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with every credential known (see the module) and ``extra`` replaced by :data:`MASK`."""
    for value in _known(extra):
        if value in text:
            text = text.replace(value, MASK)
    text = _SHAPES.sub(MASK, text)
    return _NAMED.sub(lambda m: (m.group(1) or m.group(2)) + MASK, text)


def failure_text(exc: BaseException, extra: Iterable[str] = ()) -> str:
    """``"<type>: <text>"`` of ``exc``, :func:`mask_credentials` (an exception whose ``str`` itself fails is
    named by its type alone)."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not hide the failure it reports
        text = "(its text could not be read)"
    return mask_credentials(f"{type(exc).__name__}: {text}", extra)
