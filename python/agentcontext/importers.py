"""Import real agent session files as :class:`~agentcontext.Conversation` objects.

Coding agents write their sessions in their own formats. The importers here read them and build
conversations in the library's own JSONL format (``{"role", "content", "tool_calls": [{"id",
"name", "arguments"}], "tool_call_id"}``), ready to count, compact and convert::

    from agentcontext import importers

    conv = importers.load("~/.claude/projects/x/0f3c.jsonl")   # one conversation
    for item in importers.import_file("output.jsonl"):         # every session of a file
        print(item.name, item.format, len(item.conversation), item.meta.get("model"))

Supported formats (:data:`FORMATS`; :func:`detect` tells them apart by content, not by file name):

``claude-code-jsonl``
    Claude Code session JSONL. One API response is written as several ``assistant`` lines (one
    per content block) sharing ``message.id``; they are merged back into one message, across the
    ``user`` lines that carry their ``tool_result`` blocks. ``isSidechain`` entries (subagent
    turns) are skipped when the file also holds main-chain entries. ``isMeta`` user lines are kept.
    Signed thinking blocks are kept as Anthropic ``thinking`` blocks (first in their message). An
    assistant response that holds only thinking (the user interrupted it before any text or call)
    is dropped, as the shared corpus drops it; ``meta["dropped"]["thinking_only"]`` counts them.
    A ``system`` entry of subtype ``compact_boundary`` adds no message: it is recorded as a
    ``"compaction"`` key on the next message (the compaction summary that Claude Code writes
    after it) and in ``meta["compactions"]``; only when nothing follows it does it become a user
    message of its own. Other ``system`` entries, ``summary`` titles (kept in
    ``meta["titles"]``), file-history snapshots, queue operations and progress are dropped.
``codex-rollout-jsonl``
    Codex CLI rollout JSONL. ``session_meta.base_instructions`` becomes the first system message
    and the ``developer`` role becomes ``system``. Calls that follow an assistant item with no
    result in between join its message. ``custom_tool_call`` input becomes ``{"input": ...}``.
    A ``web_search_call`` (a hosted tool) gets a placeholder result that says so. User turns come
    from ``event_msg/user_message`` when the rollout has no ``response_item`` user message.
    Encrypted reasoning, token counts and other events are dropped.
``pi-session-jsonl``
    pi coding-agent session JSONL. ``bashExecution`` entries (commands the user ran) become user
    messages in pi's own wording; a ``compaction`` entry becomes a user message holding pi's
    summary with a ``"compaction"`` key. Assistant turns with no text and no call (aborted or
    failed) are dropped; aborted turns with calls keep them with synthesized results.
``swe-agent-traj``
    SWE-agent ``.traj`` files, from ``history``. Function-calling configs keep their calls; in
    text-action configs the action becomes a call named after its first word with arguments
    ``{"command": action}`` and id ``swe-<n>``, and the next user message is its result.
``mini-swe-agent-1`` and ``mini-swe-agent-1.1``
    mini-swe-agent ``.traj.json``. Version 1.1 has native calls; in version 1 the single
    ``mswea_bash_command`` block of an assistant message becomes a ``bash`` call with id
    ``mini-<n>`` and the next user message its result. The final ``exit`` message is the result
    of the submit call (or, with no call waiting, ``meta["submission"]``).
``openhands-events`` and ``openhands-events-legacy``
    OpenHands event streams: evaluation or resolver output JSONL (one instance per line, so one
    conversation per line), a bare ``history`` array, or an object with ``history``. The N action
    events of one model response are merged into one assistant message with N calls, built from
    the recorded model response (the ``finish`` call never has a result, so one is synthesized).
    Actions with no native call (legacy events, with no ids and no ``source``, and text-parsed
    actions) become calls with ids ``oh-<n>`` answered by the observation that follows (or names
    the action as its ``cause``); their ``finish`` is a plain assistant message. An ``error``
    observation that answers no call becomes a user message, as OpenHands shows it to the model.
    Recall, agent-state, condensation and null events are dropped.
``gemini-cli-json``
    Gemini CLI session JSON. Results stored inside each call follow their assistant message;
    thoughts, token counts and ``info``/``error`` UI messages are dropped.
``aider-chat-history-md``
    aider ``.aider.chat.history.md``: one conversation per ``# aider chat started at`` session
    that has any message, named ``<file>--<start time>`` (``:`` and spaces made ``_``); messages
    before the first header (the end of a session whose start is not in the file) are the session
    ``<file>--preamble``. ``####`` lines are user input; ``>`` console entries (which may span
    several lines, up to one that ends with two spaces) were never sent to the model and are
    dropped; everything else is the assistant's reply.

Rules applied to every format (those of the shared transcript corpus): every call is answered by
exactly one ``tool`` message placed right after its assistant message; a call with no recorded
result gets one with the content :data:`NO_RESULT`; ids reused within a transcript are renamed
``<id>#2``, ``<id>#3``, ... with their results; ``arguments`` is always a JSON string; images
become ``[image]``. A result whose call is not in the transcript (none was seen in practice)
becomes a user message that says so, rather than being dropped. Every conversation built here has
``conversation.validate() == []``. Content is kept as text (``"content"`` a string), except an
assistant message with signed thinking, whose content is a list of blocks.

``meta`` keys, where the source has them: ``model``, ``cwd``, ``session_id``, ``version``... and
always ``dropped`` (source entries left out, by kind: they were not sent to the model, or they are
reasoning, telemetry or UI events); ``synthesized_results``, ``renamed_ids``, ``orphan_results``
and ``compactions`` (``[{"index": message index, ...}]``) when there are any.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Union, cast

from agentcontext._core import Conversation
from agentcontext.errors import (
    InvalidMessageError,
    OptionError,
    SessionSelectionError,
    TranscriptError,
    TranscriptReadError,
    UnknownFormatError,
)
from agentcontext.types import Format

__all__ = [
    "FORMATS",
    "LIBRARY_FORMATS",
    "NO_RESULT",
    "Imported",
    "detect",
    "import_file",
    "import_files",
    "load",
]

JsonDict = dict[str, Any]
PathLike = Union[str, "os.PathLike[str]"]

#: The largest transcript file read unless ``max_bytes`` allows more: 1 GiB, as
#: :meth:`Conversation.from_file`. (The largest real session in the test corpus is 4 MB; parsed, a
#: transcript takes several times its size in memory.)
MAX_TRANSCRIPT_BYTES: Final = 1 << 30

#: Format ids of the importers, in the order :func:`detect` tries them.
FORMATS: Final[tuple[str, ...]] = (
    "claude-code-jsonl",
    "codex-rollout-jsonl",
    "pi-session-jsonl",
    "swe-agent-traj",
    "mini-swe-agent-1",
    "mini-swe-agent-1.1",
    "openhands-events",
    "openhands-events-legacy",
    "gemini-cli-json",
    "aider-chat-history-md",
)

#: The library's own formats, read by :meth:`Conversation.from_file`; :func:`load` accepts them too.
LIBRARY_FORMATS: Final[tuple[str, ...]] = ("jsonl", "openai", "anthropic", "responses")

#: The content of a result synthesized for a call that has none in the source.
NO_RESULT: Final = "[no tool result recorded in source transcript]"

_WEB_SEARCH_RESULT = "[web_search_call status={status}; hosted tool, result not recorded in rollout]"


@dataclass(frozen=True)
class Imported:
    """One conversation read from an agent session file.

    ``name`` is the transcript name: the file name without its format suffix (with the run folder
    in front for SWE-bench output laid out as ``<run>/<instance>/<instance>.traj.json``), plus
    ``--<session>`` for files that hold several sessions (OpenHands output lines, aider sessions).
    :func:`import_files` also puts the parent folder in front of names whose files share a name.
    ``format`` is one of :data:`FORMATS`. ``meta`` holds what the source says about the session
    (model, cwd, session id, version, ...) where it says it, and ``dropped``: how many source
    entries of each kind were left out.
    """

    name: str
    format: str
    conversation: Conversation
    path: Path
    meta: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# Public functions


def detect(path: PathLike, *, max_bytes: int = MAX_TRANSCRIPT_BYTES) -> str | None:
    """The importer format of a file (one of :data:`FORMATS`), or None when it is in none of them.

    Detection reads the content, not the name. A file that holds several sessions is named by its
    first one (an OpenHands output file of legacy instances is ``openhands-events-legacy``).

    Raises:
        TranscriptReadError: the file cannot be read (missing, a directory, not a regular file,
            over ``max_bytes``).
        TranscriptError: the file is JSON or JSON Lines with a syntax error (``line`` says where).
    """
    src = _Source.read(Path(os.fspath(path)), max_bytes)
    return _detect(src)


def import_file(path: PathLike, *, format: str = "auto", max_bytes: int = MAX_TRANSCRIPT_BYTES) -> list[Imported]:
    """Every conversation in an agent session file, in file order.

    ``format`` is one of :data:`FORMATS` or ``"auto"`` (detect it from the content). Only the
    importer formats are read here; :func:`load` also reads the library's own formats.

    Only a regular file is read (a symlink to one is followed): a FIFO, device or socket is
    refused before any byte is read, and so is a file over ``max_bytes`` (default 1 GiB).

    Raises:
        UnknownFormatError: ``format="auto"`` and the file is in none of the formats (the message
            lists every format tried).
        TranscriptError: the content is malformed for its format; the message names the file and
            the line (JSON Lines) or entry index, also set as ``line`` / ``index``.
        TranscriptReadError: the file cannot be read.
        OptionError: an unknown ``format`` name.
    """
    p = Path(os.fspath(path))
    if format != "auto" and format not in FORMATS:
        raise OptionError(f"unknown importer format {format!r} (expected one of {', '.join(FORMATS)} or 'auto')")
    src = _Source.read(p, max_bytes)
    fmt = _detect(src) if format == "auto" else format
    if fmt is None:
        raise _unknown(src, FORMATS)
    return _IMPORTERS[fmt](src)


def import_files(
    paths: Iterable[PathLike], *, format: str = "auto", max_bytes: int = MAX_TRANSCRIPT_BYTES
) -> list[Imported]:
    """:func:`import_file` over several files, with names made unique across them.

    Files that share a name (``output.jsonl`` in two folders, one ``<instance>.traj`` per run
    folder) get their parent folder in front of their names (``examples--output--<instance>``),
    more folders if needed, until every name is unique.
    """
    files = [Path(os.fspath(p)) for p in paths]
    per_file = [import_file(p, format=format, max_bytes=max_bytes) for p in files]
    bases = [_base_name(p) for p in files]
    prefixes = _disambiguate(files, bases)
    out: list[Imported] = []
    for items, base, prefix in zip(per_file, bases, prefixes, strict=True):
        for item in items:
            if prefix:
                rest = item.name[len(base) :] if item.name.startswith(base) else "--" + item.name
                item = Imported(prefix + "--" + base + rest, item.format, item.conversation, item.path, item.meta)
            out.append(item)
    return out


def load(
    path: PathLike, *, format: str = "auto", session: str | int | None = None, max_bytes: int = MAX_TRANSCRIPT_BYTES
) -> Conversation:
    """One conversation from any transcript file: an agent session file or one of the library's
    own formats (native JSONL, OpenAI Chat, Anthropic, Responses).

    With ``format="auto"`` the agent formats are detected first, by content, and anything else is
    read by :meth:`Conversation.from_file`. (Agent files come first because some of them are also
    valid in a library format, with less meaning: a mini-swe-agent v1 trajectory is a valid OpenAI
    message list whose commands would stay plain text.) ``format`` may also name one of
    :data:`FORMATS` or :data:`LIBRARY_FORMATS`.

    ``session`` picks one conversation of a file that holds several, by name or by index; it is
    required for such files.

    Only a regular file is read (a symlink to one is followed): a FIFO, device or socket is
    refused before any byte is read, and so is a file over ``max_bytes`` (default 1 GiB).

    Raises:
        SessionSelectionError: the file holds several sessions and ``session`` is None, or it has
            no session by that name or index (``names`` lists them).
        UnknownFormatError: the file is in none of the formats (the message lists every one tried
            and why the library's reader refused it).
        TranscriptError: the content is malformed (line or entry index in the message).
        TranscriptReadError: the file cannot be read.
        OptionError: an unknown ``format`` name.
    """
    p = Path(os.fspath(path))
    if format in LIBRARY_FORMATS:
        return _pick([_library_file(p, format, max_bytes=max_bytes)], session, p)
    if format != "auto" and format not in FORMATS:
        raise OptionError(
            f"unknown format {format!r} (expected one of {', '.join(FORMATS + LIBRARY_FORMATS)} or 'auto')"
        )
    src = _Source.read(p, max_bytes)
    fmt = _detect(src) if format == "auto" else format
    if fmt is not None:
        return _pick(_IMPORTERS[fmt](src), session, p)
    try:
        conv = Conversation.from_file(p, max_bytes=max_bytes)
    except TranscriptError as err:
        raise _unknown(src, FORMATS + LIBRARY_FORMATS, library_error=err) from err
    return _pick([_library_file(p, conv.format, conv)], session, p)


# ---------------------------------------------------------------------------------------------
# Reading and detection

#: What a file that is not a regular file is, by its ``stat`` type.
_SPECIAL = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_transcript_bytes(path: PathLike, max_bytes: int = MAX_TRANSCRIPT_BYTES) -> bytes:
    """The bytes of a transcript file, read as :meth:`Conversation.from_file` reads them: only a
    regular file (a symlink to one is followed; a FIFO, device or socket is refused before a byte
    is read, and the open does not wait for a FIFO's writer), of at most ``max_bytes`` bytes
    (checked before reading, and while reading for a file that grows or does not report its size).

    Raises:
        TranscriptReadError: missing, a directory, not a regular file, over ``max_bytes``, no
            permission; the message names the path.
    """
    shown = os.fspath(path)

    def refuse(code: int, why: str) -> TranscriptReadError:
        return TranscriptReadError(code, f"{shown}: {why}", shown)

    def regular(mode: int) -> None:
        if stat.S_ISDIR(mode):
            raise refuse(errno.EISDIR, "is a directory")
        if stat.S_ISREG(mode):
            return
        what = next((name for test, name in _SPECIAL if test(mode)), "not a regular file")
        raise refuse(0, f"is {what}, not a regular file; only regular files are read as transcripts")

    def too_large(size: str) -> TranscriptReadError:
        return refuse(
            errno.EFBIG,
            f"is {size}, over the {_human(max_bytes)} ({max_bytes} bytes) limit for a transcript; pass a larger "
            "max_bytes (Conversation.from_file, agentcontext.load) or --max-bytes (CLI) to read it",
        )

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        mode = os.stat(shown).st_mode
    except OSError as err:
        raise refuse(err.errno or 0, str(err.strerror or err)) from None
    regular(mode)
    try:
        fd = os.open(shown, flags)
    except OSError as err:
        raise refuse(err.errno or 0, str(err.strerror or err)) from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        regular(info.st_mode)
        if info.st_size > max_bytes:
            raise too_large(f"{_human(info.st_size)} ({info.st_size} bytes)")
        # Read in the size the file reports (one read for a regular file), then in 1 MiB pieces for
        # one that grows or reports 0 (/proc), never more than max_bytes + 1 in all.
        parts: list[bytes] = []
        got, want, piece = 0, max_bytes + 1, info.st_size + 1
        try:
            while got < want and (chunk := f.read(min(piece, want - got))):
                parts.append(chunk)
                got += len(chunk)
                piece = 1 << 20
        except OSError as err:
            raise refuse(err.errno or 0, str(err.strerror or err)) from None
        data = b"".join(parts)
    if len(data) > max_bytes:
        raise too_large("larger than that (it grew while being read)")
    return data


def _human(size: int) -> str:
    """A size as :func:`agentcontext.read_page` writes it: ``512 KB``, ``3.2 MB``, ``5.0 GB``."""
    if size >= 1 << 30:
        return f"{size / (1 << 30):.1f} GB"
    if size >= 1 << 20:
        return f"{size / (1 << 20):.1f} MB"
    return f"{-(-size // 1024)} KB"


class _Source:
    """A file read once: its text and, when it is JSON or JSON Lines, the parsed values."""

    __slots__ = ("doc", "entries", "path", "text")

    def __init__(self, path: Path, text: str, doc: Any, entries: list[tuple[int, Any]] | None) -> None:
        self.path = path
        self.text = text
        #: The whole file parsed as one JSON value (None when it is not one).
        self.doc = doc
        #: ``(line number, value)`` of each non-empty line when the file is JSON Lines, else None.
        self.entries = entries

    @staticmethod
    def read(path: Path, max_bytes: int = MAX_TRANSCRIPT_BYTES) -> _Source:
        data = read_transcript_bytes(path, max_bytes)
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            line = data[: err.start].count(b"\n") + 1
            raise TranscriptError(f"{path}: line {line}: not valid UTF-8", str(path), line=line) from None
        stripped = text.lstrip()
        if not stripped or stripped[0] not in "[{":
            return _Source(path, text, None, None)
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as err:
            return _Source(path, text, None, _json_lines(path, text, err))
        except RecursionError:
            raise _too_deep(path, text, 1) from None
        entries = None
        if isinstance(doc, dict) and text.strip().count("\n") == 0:
            entries = [(text[: len(text) - len(stripped)].count("\n") + 1, doc)]
        return _Source(path, text, doc, entries)

    def fail(self, message: str, *, line: int | None = None, index: int | None = None) -> TranscriptError:
        where = (f"line {line}: " if line is not None else "") + (f"entry {index}: " if index is not None else "")
        return TranscriptError(f"{self.path}: {where}{message}", str(self.path), line=line, index=index)


def _json_lines(path: Path, text: str, whole: json.JSONDecodeError) -> list[tuple[int, Any]]:
    """Parse JSON Lines, or raise the syntax error of a file that is neither JSON nor JSON Lines."""
    lines = text.split("\n")
    first = next(i for i, line in enumerate(lines) if line.strip())
    if whole.msg != "Extra data":
        # A JSON document broken somewhere: JSON Lines only if its first line stands on its own.
        try:
            json.loads(lines[first])
        except RecursionError:
            raise _too_deep(path, lines[first], first + 1) from None
        except json.JSONDecodeError:
            msg = f"{path}: line {whole.lineno}: not valid JSON: {whole.msg} (column {whole.colno})"
            raise TranscriptError(msg, str(path), line=whole.lineno) from None
    out: list[tuple[int, Any]] = []
    for n, line in enumerate(lines[first:], start=first + 1):
        if not line.strip():
            continue
        try:
            out.append((n, json.loads(line)))
        except RecursionError:
            raise _too_deep(path, line, n) from None
        except json.JSONDecodeError as err:
            msg = f"{path}: line {n}: not valid JSON: {err.msg} (column {err.colno})"
            raise TranscriptError(msg, str(path), line=n) from None
    return out


def _too_deep(path: Path, text: str, first_line: int) -> TranscriptError:
    """A JSON value nested deeper than Python's parser can go (it raised RecursionError): the
    message names the line where the nesting is deepest, and how deep it is."""
    depth = deepest = 0
    line = deepest_line = first_line
    in_string = escaped = False
    for ch in text:
        if ch == "\n":
            line += 1
        elif in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest, deepest_line = depth, line
        elif ch in "]}":
            depth -= 1
    return TranscriptError(
        f"{path}: line {deepest_line}: JSON nested {deepest:,} levels deep, more than Python's JSON parser reads "
        f"(recursion limit {sys.getrecursionlimit():,})",
        str(path),
        line=deepest_line,
    )


def _unknown(src: _Source, tried: tuple[str, ...], library_error: Exception | None = None) -> UnknownFormatError:
    """The file is in none of ``tried``. The reason comes first: what the library's own reader
    objected to (when the file got that far), then the list of formats tried."""
    if not src.text.strip():
        msg = f"{src.path}: the file is empty; tried: {', '.join(tried)}"
    elif library_error is not None:
        msg = (
            f"{library_error} (read by Conversation.from_file); not in any other known format either "
            f"(tried: {', '.join(tried)})"
        )
    else:
        msg = f"{src.path}: not a transcript in a known format; tried: {', '.join(tried)}"
    return UnknownFormatError(msg, str(src.path), tried)


def _library_file(
    path: Path, fmt: str, conv: Conversation | None = None, *, max_bytes: int = MAX_TRANSCRIPT_BYTES
) -> Imported:
    if conv is None:
        conv = Conversation.from_file(path, format=cast(Format, fmt), max_bytes=max_bytes)
    return Imported(_base_name(path), conv.format, conv, path, {})


def _pick(items: list[Imported], session: str | int | None, path: Path) -> Conversation:
    names = tuple(item.name for item in items)
    if session is None:
        if len(items) == 1:
            return items[0].conversation
        shown = ", ".join(names[:20]) + (f", ... ({len(names)} in all)" if len(names) > 20 else "")
        raise SessionSelectionError(
            f"{path}: holds {len(items)} sessions; pass session=<name or index>: {shown}", str(path), names
        )
    if isinstance(session, int) and not isinstance(session, bool):
        if -len(items) <= session < len(items):
            return items[session].conversation
        raise SessionSelectionError(f"{path}: no session {session} (it holds {len(items)})", str(path), names)
    for item in items:
        if item.name == session:
            return item.conversation
    raise SessionSelectionError(f"{path}: no session named {session!r}", str(path), names)


def _obj(value: Any) -> JsonDict:
    """``value`` when it is an object, else an empty one."""
    return value if isinstance(value, dict) else {}


def _is_dict_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _detect(src: _Source) -> str | None:
    entries = src.entries
    if entries:
        values = [v for _, v in entries if isinstance(v, dict)]
        head = values[:200]
        if any(_is_claude_entry(v) for v in head):
            return "claude-code-jsonl"
        if any(v.get("type") in _CODEX_TYPES and isinstance(v.get("payload"), dict) for v in head):
            return "codex-rollout-jsonl"
        if any(v.get("type") == "session" for v in head[:3]) and any(
            v.get("type") == "message" and isinstance(v.get("message"), dict) for v in values
        ):
            return "pi-session-jsonl"
        if values and all(_is_openhands_history(v.get("history")) for v in values):
            return _openhands_kind(values[0]["history"])
    doc = src.doc
    if isinstance(doc, dict):
        history = doc.get("history")
        if isinstance(history, list) and _is_dict_list(history):
            if all("role" in e for e in history):
                return "swe-agent-traj"
            if _is_openhands_history(history):
                return _openhands_kind(history)
        messages = doc.get("messages")
        if isinstance(messages, list):
            if "sessionId" in doc and all(isinstance(m, dict) and "type" in m for m in messages):
                return "gemini-cli-json"
            tf = doc.get("trajectory_format")
            if isinstance(tf, str) and tf.startswith("mini-swe-agent"):
                return "mini-swe-agent-1.1" if tf != "mini-swe-agent-1" else "mini-swe-agent-1"
            if _is_dict_list(messages) and _looks_mini(messages):
                return "mini-swe-agent-1"
    elif _is_dict_list(doc):
        if all("role" in m for m in doc) and _looks_mini(doc):
            return "mini-swe-agent-1"
        if _is_openhands_history(doc):
            return _openhands_kind(doc)
    if src.doc is None and src.entries is None and _AIDER_START.search(src.text):
        return "aider-chat-history-md"
    return None


_CLAUDE_TYPES: Final = frozenset({"user", "assistant", "system", "summary", "file-history-snapshot"})
_CODEX_TYPES: Final = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_MINI_BLOCK: Final = re.compile(r"```mswea_bash_command\s*\n(.*?)\n?```", re.DOTALL)


def _is_claude_entry(v: JsonDict) -> bool:
    t = v.get("type")
    if t == "summary" and "leafUuid" in v:
        return True
    return t in _CLAUDE_TYPES and ("uuid" in v or "sessionId" in v) and ("message" in v or t != "assistant")


def _looks_mini(messages: list[JsonDict]) -> bool:
    for m in messages:
        if m.get("role") == "exit":
            return True
        if m.get("role") == "assistant" and isinstance(m.get("content"), str) and _MINI_BLOCK.search(m["content"]):
            return True
    return False


def _is_openhands_history(history: Any) -> bool:
    """An OpenHands event list: actions and observations, no chat roles (an empty one too)."""
    if not isinstance(history, list) or not all(isinstance(e, dict) for e in history):
        return False
    return not any("role" in e for e in history) and (
        not history or any("action" in e or "observation" in e for e in history)
    )


def _openhands_kind(history: list[Any]) -> str:
    events = [e for e in history if isinstance(e, dict)]
    if events and not any("source" in e or "id" in e for e in events):
        return "openhands-events-legacy"
    return "openhands-events"


# ---------------------------------------------------------------------------------------------
# Names


_SUFFIXES: Final = (".traj.json", ".jsonl", ".json", ".traj", ".md")


def _stem(path: Path) -> str:
    name = path.name
    for suffix in _SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return path.stem or name


def _base_name(path: Path) -> str:
    """The file's transcript name: its stem, with the run folder in front for SWE-bench output laid
    out as ``<run>/<instance>/<instance>.<ext>``."""
    stem = _stem(path)
    parent = path.parent
    if parent.name == stem and parent.parent.name and parent.parent != parent:
        return f"{parent.parent.name}--{stem}"
    return stem


def _disambiguate(files: list[Path], bases: list[str]) -> list[str]:
    """A folder prefix per file ('' when its name is unique) so that no two files share a name."""
    groups: dict[str, list[int]] = {}
    for i, base in enumerate(bases):
        groups.setdefault(base, []).append(i)
    prefixes = [""] * len(files)
    for members in groups.values():
        if len({files[i].resolve() for i in members}) < 2:
            continue
        for depth in range(1, 33):
            candidates = {i: "--".join(_folders_above(files[i], bases[i], depth)) for i in members}
            if len(set(candidates.values())) == len(members):
                break
        for i, prefix in candidates.items():
            prefixes[i] = prefix
    return prefixes


def _folders_above(path: Path, base: str, depth: int) -> list[str]:
    """The names of the ``depth`` folders above the file, outermost first (above the run folder
    when ``base`` already holds it)."""
    parents = list(path.resolve().parents)
    skip = 2 if base != _stem(path) else 0
    return [p.name for p in parents[skip : skip + depth] if p.name][::-1]


# ---------------------------------------------------------------------------------------------
# Building messages


class _Builder:
    """Collects messages in source order; ``finish`` applies the pairing rules."""

    def __init__(self, src: _Source) -> None:
        self.src = src
        self.messages: list[JsonDict] = []
        self.dropped: Counter[str] = Counter()
        #: The assistant message that calls join, while nothing else came after it.
        self._open: JsonDict | None = None
        self._pending_extra: JsonDict = {}
        self._pending_text = ""

    def _add(self, message: JsonDict) -> JsonDict:
        if self._pending_extra:
            message.update(self._pending_extra)
            self._pending_extra = {}
        self.messages.append(message)
        self._open = message if message["role"] == "assistant" else None
        return message

    def annotate_next(self, key: str, value: Any, text: str = "") -> None:
        """Put ``key: value`` on the next message added; with none after it, on a user message
        holding ``text`` at the end."""
        self._pending_extra[key] = value
        self._pending_text = text

    def system(self, text: str) -> None:
        self._add({"role": "system", "content": text})

    def user(self, text: str) -> JsonDict:
        return self._add({"role": "user", "content": text})

    def assistant(self, content: str | list[JsonDict] = "", calls: Sequence[JsonDict] = ()) -> JsonDict:
        message: JsonDict = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = list(calls)
        return self._add(message)

    def call(self, call_id: str, name: str, arguments: str) -> None:
        """A call that joins the open assistant message (one with nothing after it), else a new one."""
        call = {"id": call_id, "name": name, "arguments": arguments}
        if self._open is not None:
            self._open.setdefault("tool_calls", []).append(call)
        else:
            self.assistant("", [call])

    def tool(self, call_id: str, text: str, *, is_error: bool = False) -> None:
        message: JsonDict = {"role": "tool", "content": text, "tool_call_id": call_id}
        if is_error:
            message["is_error"] = True
        self._add(message)

    def finish(self) -> tuple[list[JsonDict], dict[str, int]]:
        if self._pending_extra:
            # A marker with nothing after it (a compaction at the very end) stands on its own.
            self._add({"role": "user", "content": self._pending_text})
        return _pair(self.messages)

    def build(self, name: str, fmt: str, meta: JsonDict) -> Imported:
        messages, counts = self.finish()
        meta = {k: v for k, v in meta.items() if v is not None}
        meta["dropped"] = dict(self.dropped)
        meta.update({k: v for k, v in counts.items() if v})
        compactions = [
            {"index": i, **m["compaction"]} for i, m in enumerate(messages) if isinstance(m.get("compaction"), dict)
        ]
        if compactions:
            meta["compactions"] = compactions
        try:
            conv = Conversation(messages, format="jsonl")
        except InvalidMessageError as err:
            if "surrogate" not in str(err):
                raise self.src.fail(f"session {name!r}: {err}") from err
            # Half of a UTF-16 pair (an output cut in the middle of an emoji): valid JSON, but no
            # text. Each one becomes U+FFFD.
            fixed = [0]
            messages = [_replace_surrogates(m, fixed) for m in messages]
            meta["replaced_lone_surrogates"] = fixed[0]
            conv = Conversation(messages, format="jsonl")
        return Imported(name, fmt, conv, self.src.path, meta)


_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _replace_surrogates(value: Any, count: list[int]) -> Any:
    if isinstance(value, str):
        fixed, n = _LONE_SURROGATE.subn("\ufffd", value)
        count[0] += n
        return fixed
    if isinstance(value, list):
        return [_replace_surrogates(v, count) for v in value]
    if isinstance(value, dict):
        return {k: _replace_surrogates(v, count) for k, v in value.items()}
    return value


def _pair(messages: list[JsonDict]) -> tuple[list[JsonDict], dict[str, int]]:
    """Rename reused call ids, put every result right after its call's message, synthesize the
    missing ones and turn results without a call into user messages."""
    counts = {"synthesized_results": 0, "renamed_ids": 0, "orphan_results": 0}
    # 1. Reused ids: the k-th call with an id becomes id#k; results follow their call (first in,
    #    first out), a result after all its calls were answered goes to the latest.
    seen: Counter[str] = Counter()
    waiting: dict[str, deque[str]] = {}
    latest: dict[str, str] = {}
    taken: set[str] = set()
    for m in messages:
        calls = m.get("tool_calls")
        if calls:
            for call in calls:
                original = call["id"]
                seen[original] += 1
                new = original
                if seen[original] > 1 or original in taken:
                    k = max(seen[original], 2)
                    while f"{original}#{k}" in taken:
                        k += 1
                    new = f"{original}#{k}"
                    call["id"] = new
                    counts["renamed_ids"] += 1
                taken.add(new)
                waiting.setdefault(original, deque()).append(new)
                latest[original] = new
        elif m["role"] == "tool":
            original = m["tool_call_id"]
            queue = waiting.get(original)
            if queue:
                m["tool_call_id"] = queue.popleft()
            elif original in latest:
                m["tool_call_id"] = latest[original]
    # 2. Results right after their calls.
    owner: dict[str, int] = {}
    for i, m in enumerate(messages):
        for call in m.get("tool_calls") or ():
            owner[call["id"]] = i
    results: dict[int, list[int]] = {}
    orphans: set[int] = set()
    answered: set[str] = set()
    for j, m in enumerate(messages):
        if m["role"] != "tool":
            continue
        cid = m["tool_call_id"]
        at = owner.get(cid)
        if at is None or at > j or cid in answered:
            orphans.add(j)
        else:
            answered.add(cid)
            results.setdefault(at, []).append(j)
    out: list[JsonDict] = []
    for j, m in enumerate(messages):
        if m["role"] == "tool":
            if j in orphans:
                counts["orphan_results"] += 1
                text = m.get("content") or ""
                note = f"[tool result for call {m['tool_call_id']}, which is not in the source transcript]"
                extra = {k: v for k, v in m.items() if k not in ("role", "content", "tool_call_id", "is_error")}
                out.append({"role": "user", "content": f"{note}\n{text}" if text else note, **extra})
            continue
        out.append(m)
        calls = m.get("tool_calls")
        if not calls:
            continue
        got = results.get(j, [])
        out.extend(messages[k] for k in got)
        have = {messages[k]["tool_call_id"] for k in got}
        for call in calls:
            if call["id"] not in have:
                out.append({"role": "tool", "content": NO_RESULT, "tool_call_id": call["id"]})
                counts["synthesized_results"] += 1
    return out, counts


_IMAGE = "[image]"


def _text(content: Any, sep: str = "\n") -> str:
    """The text of a content value: a string, or a list of text/image blocks in any provider's
    vocabulary. Unknown blocks are kept as their JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return json.dumps(content, ensure_ascii=False)
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif not isinstance(block, dict):
            parts.append(json.dumps(block, ensure_ascii=False))
        elif block.get("type") in ("image", "input_image", "image_url") or (
            "type" not in block and ("image_url" in block or "inlineData" in block)
        ):
            parts.append(_IMAGE)
        elif isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") == "tool_result" or "content" in block:
            parts.append(_text(block.get("content"), sep))
        else:
            parts.append(json.dumps(block, ensure_ascii=False))
    return sep.join(parts)


def _args(value: Any) -> str:
    """Tool-call arguments as a JSON string (strings are kept as they are)."""
    if isinstance(value, str):
        return value
    return json.dumps({} if value is None else value, ensure_ascii=False)


def _chat_calls(src: _Source, calls: Any, index: int) -> list[JsonDict]:
    """The OpenAI Chat ``tool_calls`` of message ``index`` (``{id, function: {name, arguments}}``,
    or the function fields inline) as the library's calls."""
    out = []
    for call in _get_list(src, calls, "`tool_calls`", index=index):
        call = _get_dict(src, call, "a tool call", index=index)
        fn = _obj(call.get("function")) or call
        cid = _get_str(src, call.get("id"), "tool call `id`", index=index)
        name = _get_str(src, fn.get("name"), "tool call `name`", index=index)
        out.append({"id": cid, "name": name, "arguments": _args(fn.get("arguments"))})
    return out


def _thinking_block(block: JsonDict) -> JsonDict | None:
    """An Anthropic thinking block, or None when the block cannot be replayed (no signature)."""
    if block.get("type") == "redacted_thinking" and isinstance(block.get("data"), str):
        return {"type": "redacted_thinking", "data": block["data"]}
    signature = block.get("signature", block.get("thinkingSignature"))
    if isinstance(block.get("thinking"), str) and isinstance(signature, str) and signature:
        return {"type": "thinking", "thinking": block["thinking"], "signature": signature}
    return None


def _with_thinking(thinking: list[JsonDict], texts: list[str], sep: str) -> str | list[JsonDict]:
    if not thinking:
        return sep.join(texts)
    return [*thinking, *({"type": "text", "text": t} for t in texts if t)]


def _get_dict(src: _Source, value: Any, what: str, *, line: int | None = None, index: int | None = None) -> JsonDict:
    if not isinstance(value, dict):
        raise src.fail(f"{what} must be an object, got {type(value).__name__}", line=line, index=index)
    return value


def _get_list(src: _Source, value: Any, what: str, *, line: int | None = None, index: int | None = None) -> list[Any]:
    if not isinstance(value, list):
        raise src.fail(f"{what} must be a list, got {type(value).__name__}", line=line, index=index)
    return value


def _get_str(
    src: _Source,
    value: Any,
    what: str,
    *,
    line: int | None = None,
    index: int | None = None,
    default: str | None = None,
) -> str:
    if value is None and default is not None:
        return default
    if not isinstance(value, str):
        raise src.fail(f"{what} must be a string, got {type(value).__name__}", line=line, index=index)
    return value


def _document(src: _Source, what: str) -> Any:
    """The file as one JSON document."""
    if src.doc is None:
        kind = "JSON Lines" if src.entries is not None else "text"
        raise src.fail(f"{kind}, not one JSON document ({what})")
    return src.doc


def _require(src: _Source, found: bool, what: str) -> None:
    """Fail on a file where a forced format recognised nothing."""
    if not found:
        raise src.fail(f"no {what} in the file (is it in this format?)")


def _entries(src: _Source) -> list[tuple[int, JsonDict]]:
    """The JSON Lines entries of a file, each an object."""
    if src.entries is None:
        raise src.fail("not a JSON Lines file")
    out = []
    for line, value in src.entries:
        if not isinstance(value, dict):
            raise src.fail(f"an entry must be an object, got {type(value).__name__}", line=line)
        out.append((line, value))
    return out


# ---------------------------------------------------------------------------------------------
# Claude Code


def _import_claude(src: _Source) -> list[Imported]:
    entries = _entries(src)
    _require(src, any(_is_claude_entry(e) for _, e in entries), "Claude Code entries")
    # A subagent file holds only sidechain entries: keep them there.
    has_main = any(e.get("type") in ("user", "assistant") and not e.get("isSidechain") for _, e in entries)
    b = _Builder(src)
    meta: JsonDict = {}
    titles: list[str] = []
    # The assistant message that later lines of the same API response (same message.id) join:
    # only tool results may come in between.
    open_id: str | None = None
    open_msg: JsonDict | None = None
    parts: dict[int, tuple[list[JsonDict], list[str]]] = {}  # id(message) -> (thinking, texts)
    for line, e in entries:
        kind = e.get("type")
        if kind in ("user", "assistant") and e.get("isSidechain") and has_main:
            b.dropped["sidechain"] += 1
            continue
        for key, name in (
            ("sessionId", "session_id"),
            ("cwd", "cwd"),
            ("version", "version"),
            ("gitBranch", "git_branch"),
        ):
            if key in e and name not in meta:
                meta[name] = e[key]
        if kind == "user":
            message = _get_dict(src, e.get("message"), "`message`", line=line)
            content = message.get("content")
            if isinstance(content, str):
                b.user(content)
                open_id = None
                continue
            texts: list[str] = []
            for block in _get_list(src, content, "`message.content`", line=line):
                block = _get_dict(src, block, "a content block", line=line)
                if block.get("type") == "tool_result":
                    cid = _get_str(src, block.get("tool_use_id"), "`tool_use_id`", line=line)
                    b.tool(cid, _text(block.get("content")), is_error=block.get("is_error") is True)
                else:
                    texts.append(_text([block]))
            if texts:
                b.user("\n".join(texts))
                open_id = None
        elif kind == "assistant":
            message = _get_dict(src, e.get("message"), "`message`", line=line)
            mid = message.get("id")
            blocks = message.get("content")
            if isinstance(blocks, str):
                blocks = [{"type": "text", "text": blocks}]
            blocks = _get_list(src, blocks, "`message.content`", line=line)
            model = message.get("model")
            if "model" not in meta and isinstance(model, str) and model != "<synthetic>":
                meta["model"] = model
            if open_msg is None or not isinstance(mid, str) or mid != open_id:
                open_msg = b.assistant("")
                open_id = mid if isinstance(mid, str) else None
                parts[id(open_msg)] = ([], [])
            thinking, texts = parts[id(open_msg)]
            for block in blocks:
                block = _get_dict(src, block, "a content block", line=line)
                t = block.get("type")
                if t in ("thinking", "redacted_thinking"):
                    tb = _thinking_block(block)
                    if tb is not None:
                        thinking.append(tb)
                    else:
                        b.dropped["thinking_unsigned"] += 1
                elif t == "text":
                    texts.append(_get_str(src, block.get("text"), "`text`", line=line))
                elif t in ("tool_use", "server_tool_use"):
                    cid = _get_str(src, block.get("id"), "tool_use `id`", line=line)
                    name = _get_str(src, block.get("name"), "tool_use `name`", line=line)
                    call = {"id": cid, "name": name, "arguments": _args(block.get("input"))}
                    open_msg.setdefault("tool_calls", []).append(call)
                elif isinstance(t, str) and t.endswith("_tool_result") and "tool_use_id" in block:
                    b.tool(str(block["tool_use_id"]), _text(block.get("content")))  # a server tool's result
                else:
                    texts.append(_text([block]))
        elif kind == "system" and e.get("subtype") == "compact_boundary":
            cm = _obj(e.get("compactMetadata"))
            marker = {"source": "claude-code", "trigger": cm.get("trigger"), "pre_tokens": cm.get("preTokens")}
            marker["timestamp"] = e.get("timestamp")
            marker = {k: v for k, v in marker.items() if v is not None}
            b.annotate_next("compaction", marker, str(e.get("content") or "Conversation compacted"))
            open_id = None
        elif kind == "summary" and isinstance(e.get("summary"), str):
            titles.append(e["summary"])
        else:
            b.dropped[str(kind) if kind != "system" else f"system/{e.get('subtype')}"] += 1
    # Fill in the merged responses; drop those with only thinking (or nothing at all). A marker on
    # a dropped message moves to the next one.
    keep: list[JsonDict] = []
    carry: JsonDict = {}
    for m in b.messages:
        pair = parts.get(id(m)) if m["role"] == "assistant" else None
        if pair is not None:
            thinking, texts = pair
            if not texts and not m.get("tool_calls"):
                b.dropped["thinking_only" if thinking else "empty_assistant"] += 1
                if "compaction" in m:
                    carry["compaction"] = m["compaction"]
                continue
            m["content"] = _with_thinking(thinking, texts, "\n\n")
        if carry:
            m.update(carry)
            carry = {}
        keep.append(m)
    if carry:
        keep.append({"role": "user", "content": "Conversation compacted", **carry})
    b.messages = keep
    if titles:
        meta["titles"] = titles
    return [b.build(_base_name(src.path), "claude-code-jsonl", meta)]


# ---------------------------------------------------------------------------------------------
# Codex CLI rollouts


def _import_codex(src: _Source) -> list[Imported]:
    entries = _entries(src)
    _require(src, any(e.get("type") in _CODEX_TYPES for _, e in entries), "Codex rollout entries")
    has_user_items = any(
        e.get("type") == "response_item"
        and isinstance(e.get("payload"), dict)
        and e["payload"].get("type") == "message"
        and e["payload"].get("role") == "user"
        for _, e in entries
    )
    b = _Builder(src)
    meta: JsonDict = {}
    web_searches = 0
    sessions = 0
    for line, e in entries:
        kind = e.get("type")
        p = _get_dict(src, e.get("payload", {}), "`payload`", line=line)
        if kind == "session_meta":
            sessions += 1
            if sessions > 1:
                b.dropped["session_meta"] += 1
                continue
            for key in ("id", "cwd", "originator", "cli_version", "model_provider"):
                if key in p:
                    meta[key if key != "id" else "session_id"] = p[key]
            instructions = p.get("base_instructions", p.get("instructions"))
            if isinstance(instructions, dict):
                instructions = instructions.get("text")
            if isinstance(instructions, str) and instructions:
                b.system(instructions)
        elif kind == "turn_context":
            if isinstance(p.get("model"), str):
                meta.setdefault("model", p["model"])
        elif kind == "event_msg":
            if p.get("type") == "user_message" and not has_user_items:
                text = _get_str(src, p.get("message"), "`message`", line=line, default="")
                images = len(p.get("images") or []) + len(p.get("local_images") or [])
                b.user("\n".join([text, *([_IMAGE] * images)]) if images else text)
            else:
                b.dropped[f"event_msg/{p.get('type')}"] += 1
        elif kind == "compacted":
            text = _get_str(src, p.get("message"), "`message`", line=line, default="")
            b.annotate_next("compaction", {"source": "codex", "timestamp": e.get("timestamp")})
            b.user(text)
        elif kind == "response_item":
            t = p.get("type")
            if t == "message":
                role = p.get("role")
                text = _text(p.get("content"))
                if role == "assistant":
                    b.assistant(text)
                elif role in ("developer", "system"):
                    b.system(text)
                elif role == "user":
                    b.user(text)
                else:
                    raise src.fail(f"unknown message role {role!r}", line=line)
            elif t in ("function_call", "custom_tool_call", "local_shell_call"):
                cid = p.get("call_id") or p.get("id")
                cid = _get_str(src, cid, "`call_id`", line=line)
                if t == "function_call":
                    args = _args(p.get("arguments"))
                elif t == "custom_tool_call":
                    args = json.dumps({"input": p.get("input", "")}, ensure_ascii=False)
                else:
                    args = _args(p.get("action"))
                b.call(cid, _get_str(src, p.get("name", "local_shell"), "`name`", line=line), args)
            elif t in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
                cid = _get_str(src, p.get("call_id"), "`call_id`", line=line)
                output = p.get("output")
                if isinstance(output, dict) and "content" in output:
                    output = output["content"]
                b.tool(cid, _text(output))
            elif t == "web_search_call":
                web_searches += 1
                cid = p.get("call_id") or p.get("id") or f"codex-{web_searches}"
                b.call(str(cid), "web_search", _args(p.get("action", {})))
                b.tool(str(cid), _WEB_SEARCH_RESULT.format(status=p.get("status", "unknown")))
            elif t == "reasoning":
                b.dropped["reasoning"] += 1
            else:
                b.dropped[f"response_item/{t}"] += 1
        else:
            b.dropped[str(kind)] += 1
    return [b.build(_base_name(src.path), "codex-rollout-jsonl", meta)]


# ---------------------------------------------------------------------------------------------
# pi


_PI_COMPACTION = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"


def _pi_bash_text(m: JsonDict) -> str:
    """pi's own rendering of a user shell command for the model (``bashExecutionToText``)."""
    text = f"Ran `{m.get('command', '')}`\n"
    output = m.get("output")
    text += f"```\n{output}\n```" if output else "(no output)"
    if m.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif m.get("exitCode") not in (None, 0):
        text += f"\n\nCommand exited with code {m['exitCode']}"
    if m.get("truncated") and m.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {m['fullOutputPath']}]"
    return text


def _import_pi(src: _Source) -> list[Imported]:
    entries = _entries(src)
    _require(src, any(e.get("type") in ("session", "message") for _, e in entries), "pi session entries")
    b = _Builder(src)
    meta: JsonDict = {}
    for line, e in entries:
        kind = e.get("type")
        if kind == "session":
            for key, name in (("id", "session_id"), ("cwd", "cwd"), ("provider", "provider"), ("modelId", "model")):
                if key in e:
                    meta.setdefault(name, e[key])
            continue
        if kind == "compaction":
            summary = _get_str(src, e.get("summary"), "`summary`", line=line, default="")
            b.annotate_next("compaction", {"source": "pi", "tokens_before": e.get("tokensBefore")})
            b.user(_PI_COMPACTION + summary + "\n</summary>")
            continue
        if kind != "message":
            b.dropped[str(kind)] += 1
            continue
        m = _get_dict(src, e.get("message"), "`message`", line=line)
        role = m.get("role")
        if role == "user":
            b.user(_text(m.get("content")))
        elif role == "assistant":
            blocks = m.get("content")
            if isinstance(blocks, str):
                blocks = [{"type": "text", "text": blocks}]
            blocks = _get_list(src, blocks, "`content`", line=line)
            thinking: list[JsonDict] = []
            texts: list[str] = []
            calls: list[JsonDict] = []
            anthropic = m.get("api") == "anthropic-messages"
            for block in blocks:
                block = _get_dict(src, block, "a content block", line=line)
                t = block.get("type")
                if t == "text":
                    texts.append(_get_str(src, block.get("text"), "`text`", line=line))
                elif t == "thinking":
                    tb = _thinking_block(block) if anthropic else None
                    if tb is not None:
                        thinking.append(tb)
                    else:
                        b.dropped["thinking_unsigned"] += 1
                elif t == "toolCall":
                    cid = _get_str(src, block.get("id"), "toolCall `id`", line=line)
                    name = _get_str(src, block.get("name"), "toolCall `name`", line=line)
                    calls.append({"id": cid, "name": name, "arguments": _args(block.get("arguments"))})
                else:
                    texts.append(_text([block]))
            texts = [t for t in texts if t]
            if not texts and not calls:
                b.dropped[f"empty_assistant/{m.get('stopReason')}" if not thinking else "thinking_only"] += 1
                continue
            b.assistant(_with_thinking(thinking, texts, "\n\n"), calls)
            if "model" in m:
                meta.setdefault("models", [])
                if m["model"] not in meta["models"]:
                    meta["models"].append(m["model"])
        elif role == "toolResult":
            cid = _get_str(src, m.get("toolCallId"), "`toolCallId`", line=line)
            b.tool(cid, _text(m.get("content")), is_error=m.get("isError") is True)
        elif role == "bashExecution":
            if m.get("excludeFromContext"):
                b.dropped["bash_excluded_from_context"] += 1
            else:
                b.user(_pi_bash_text(m))
        elif role == "compactionSummary":
            b.annotate_next("compaction", {"source": "pi"})
            b.user(_PI_COMPACTION + str(m.get("summary", "")) + "\n</summary>")
        elif role in ("custom", "branchSummary"):
            b.user(_text(m.get("content", m.get("summary"))))
        else:
            raise src.fail(f"unknown message role {role!r}", line=line)
    return [b.build(_base_name(src.path), "pi-session-jsonl", meta)]


# ---------------------------------------------------------------------------------------------
# SWE-agent


def _import_swe_agent(src: _Source) -> list[Imported]:
    doc = _get_dict(src, _document(src, "a SWE-agent trajectory"), "a SWE-agent trajectory")
    history = _get_list(src, doc.get("history"), "`history`")
    b = _Builder(src)
    n = 0
    pending: str | None = None  # the text-action call waiting for its observation
    for i, m in enumerate(history):
        m = _get_dict(src, m, "a history message", index=i)
        role = m.get("role")
        content = _text(m.get("content"))
        if role == "system":
            b.system(content)
            pending = None
        elif role == "assistant":
            calls = m.get("tool_calls")
            if calls:
                b.assistant(content, _chat_calls(src, calls, i))
                pending = None
                continue
            action = m.get("action")
            if isinstance(action, str) and action.strip():
                n += 1
                pending = f"swe-{n}"
                command = action.strip()
                call = {"id": pending, "name": command.split()[0], "arguments": _args({"command": command})}
                b.assistant(content, [call])
            else:
                b.assistant(content)
                pending = None
        elif role == "tool":
            ids = m.get("tool_call_ids") or ([m["tool_call_id"]] if "tool_call_id" in m else [])
            ids = _get_list(src, ids, "`tool_call_ids`", index=i)
            if not ids:
                raise src.fail("tool message without `tool_call_ids`", index=i)
            for cid in ids:
                b.tool(_get_str(src, cid, "a tool call id", index=i), content)
            pending = None
        elif role == "user":
            if pending is not None and not m.get("is_demo"):
                b.tool(pending, content)
            else:
                b.user(content)
            pending = None
        else:
            raise src.fail(f"unknown role {role!r}", index=i)
    info = _obj(doc.get("info"))
    meta: JsonDict = {"exit_status": info.get("exit_status"), "environment": doc.get("environment")}
    config = doc.get("replay_config")
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except json.JSONDecodeError:
            config = None
    if isinstance(config, dict):
        model = (config.get("agent") or {}).get("model") if isinstance(config.get("agent"), dict) else None
        if isinstance(model, dict) and isinstance(model.get("name"), str):
            meta["model"] = model["name"]
    return [b.build(_base_name(src.path), "swe-agent-traj", meta)]


# ---------------------------------------------------------------------------------------------
# mini-swe-agent


def _import_mini(src: _Source) -> list[Imported]:
    doc = _document(src, "a mini-swe-agent trajectory")
    if isinstance(doc, dict):
        messages = _get_list(src, doc.get("messages"), "`messages`")
        tf = doc.get("trajectory_format")
        fmt = "mini-swe-agent-1.1" if isinstance(tf, str) and tf != "mini-swe-agent-1" else "mini-swe-agent-1"
        info = _obj(doc.get("info"))
        meta: JsonDict = {"instance_id": doc.get("instance_id"), "exit_status": info.get("exit_status")}
        config = _obj(info.get("config"))
        model = _obj(config.get("model"))
        meta["model"] = model.get("model_name")
        meta["mini_version"] = info.get("mini_version")
    else:
        messages = _get_list(src, doc, "a mini-swe-agent trajectory")
        fmt = "mini-swe-agent-1"
        meta = {}
    b = _Builder(src)
    n = 0
    pending: str | None = None  # a text-action call waiting for its observation
    for i, m in enumerate(messages):
        m = _get_dict(src, m, "a message", index=i)
        role = m.get("role")
        content = _text(m.get("content"))
        if role == "system":
            b.system(content)
        elif role == "assistant":
            calls = m.get("tool_calls")
            pending = None
            if calls:
                b.assistant(content, _chat_calls(src, calls, i))
                continue
            blocks = _MINI_BLOCK.findall(content)
            if len(blocks) == 1:
                n += 1
                pending = f"mini-{n}"
                b.assistant(content, [{"id": pending, "name": "bash", "arguments": _args({"command": blocks[0]})}])
            else:
                b.assistant(content)
        elif role == "tool":
            cid = _get_str(src, m.get("tool_call_id"), "`tool_call_id`", index=i)
            b.tool(cid, content)
        elif role == "user":
            if pending is not None:
                b.tool(pending, content)
            else:
                b.user(content)
            pending = None
        elif role == "exit":
            waiting = _unanswered(b.messages)
            if waiting is not None:
                b.tool(waiting, content)
            else:
                meta["submission"] = content
            pending = None
        else:
            raise src.fail(f"unknown role {role!r}", index=i)
    return [b.build(_base_name(src.path), fmt, meta)]


def _unanswered(messages: list[JsonDict]) -> str | None:
    """The first unanswered call of the last assistant message with calls, if any."""
    answered: set[str] = set()
    for m in reversed(messages):
        if m["role"] == "tool":
            answered.add(m["tool_call_id"])
        elif m["role"] == "assistant" and m.get("tool_calls"):
            for call in m["tool_calls"]:
                if call["id"] not in answered:
                    return str(call["id"])
            return None
    return None


# ---------------------------------------------------------------------------------------------
# OpenHands


_OH_SKIP_ACTIONS: Final = frozenset({"recall", "change_agent_state", "null", "condensation", "condensation_request"})
_OH_SKIP_OBSERVATIONS: Final = frozenset({"recall", "agent_state_changed", "null", "condensation"})
_OH_LEGACY_ARGS: Final = ("command", "code", "path", "content", "url", "start", "end", "task", "agent", "inputs")


def _import_openhands(src: _Source) -> list[Imported]:
    base = _base_name(src.path)
    doc = src.doc
    if doc is None and src.entries is None:
        raise src.fail("not JSON (an OpenHands event list, output row or JSON Lines of rows)")
    if isinstance(doc, list):  # a bare event list
        return [_openhands_conversation(src, doc, base, {})]
    if isinstance(doc, dict):  # one object with `history` (a .json file, or JSON Lines of one row)
        rows: list[tuple[int | None, JsonDict]] = [(src.entries[0][0] if src.entries else None, doc)]
    else:
        rows = [(line, row) for line, row in _entries(src)]
    out = []
    for k, (line, row) in enumerate(rows):
        history = _get_list(src, row.get("history"), "`history`", line=line)
        key = _openhands_key(row, k if len(rows) > 1 else None)
        name = f"{base}--{key}" if key is not None else base
        out.append(_openhands_conversation(src, history, name, _openhands_meta(row), line=line))
    return out


def _openhands_key(row: JsonDict, k: int | None) -> str | None:
    """The session part of an output row's name: its instance id or issue number, else its 1-based
    position when the file has several rows."""
    if isinstance(row.get("instance_id"), (str, int)):
        return str(row["instance_id"])
    issue = row.get("issue")
    if isinstance(issue, dict) and isinstance(issue.get("number"), (str, int)):
        return str(issue["number"])
    return None if k is None else str(k + 1)


def _openhands_meta(row: JsonDict) -> JsonDict:
    meta: JsonDict = {}
    if "instance_id" in row:
        meta["instance_id"] = row["instance_id"]
    md = row.get("metadata")
    if isinstance(md, dict):
        llm = md.get("llm_config")
        if isinstance(llm, dict) and isinstance(llm.get("model"), str):
            meta["model"] = llm["model"]
        if isinstance(md.get("agent_class"), str):
            meta["agent"] = md["agent_class"]
    issue = row.get("issue")
    if isinstance(issue, dict):
        meta["issue"] = {k: issue[k] for k in ("owner", "repo", "number", "title") if k in issue}
    return meta


def _openhands_conversation(
    src: _Source, history: list[Any], name: str, meta: JsonDict, *, line: int | None = None
) -> Imported:
    kind = _openhands_kind(history)
    b = _Builder(src)

    def where(i: int) -> dict[str, int | None]:
        return {"line": line, "index": i}

    if kind == "openhands-events-legacy":
        n = 0
        pending: str | None = None
        for i, e in enumerate(history):
            e = _get_dict(src, e, "an event", **where(i))
            action = e.get("action")
            if action is not None:
                pending = None
                if action == "message":
                    text = _text(e.get("content", _obj(e.get("args")).get("content")))
                    if e.get("wait_for_response"):  # the agent asking the user
                        b.assistant(text)
                    else:
                        b.user(text)
                elif action == "finish":
                    b.assistant(_text(e.get("thought")))
                elif action in _OH_SKIP_ACTIONS:
                    b.dropped[f"action/{action}"] += 1
                else:
                    n += 1
                    pending = f"oh-{n}"
                    legacy_args = {k: e[k] for k in _OH_LEGACY_ARGS if k in e}
                    call = {"id": pending, "name": str(action), "arguments": _args(legacy_args)}
                    b.assistant(_text(e.get("thought")), [call])
            elif "observation" in e:
                obs = e["observation"]
                if obs in _OH_SKIP_OBSERVATIONS:
                    b.dropped[f"observation/{obs}"] += 1
                elif pending is not None:
                    b.tool(pending, _text(e.get("content")))
                else:
                    b.user(_text(e.get("content")))
                pending = None
            else:
                raise src.fail("an event with neither `action` nor `observation`", **where(i))
        return b.build(name, kind, meta)

    responses: set[str] = set()
    n = 0
    by_event: dict[Any, str] = {}  # event id -> synthesized call id, for actions without a tool call
    waiting: str | None = None  # the synthesized call of the last action
    for i, e in enumerate(history):
        e = _get_dict(src, e, "an event", **where(i))
        action = e.get("action")
        tcm = e.get("tool_call_metadata") if isinstance(e.get("tool_call_metadata"), dict) else None
        args = _obj(e.get("args"))
        if action is not None:
            if action in _OH_SKIP_ACTIONS:
                b.dropped[f"action/{action}"] += 1
            elif tcm is not None:
                response = tcm.get("model_response") if isinstance(tcm.get("model_response"), dict) else None
                rid = response.get("id") if response is not None else None
                if isinstance(rid, str) and rid in responses:
                    continue  # its calls are in the message built from the first event of the response
                message = _oh_response_message(response)
                cid = tcm.get("tool_call_id")
                if message is None or (isinstance(cid, str) and cid not in {c["id"] for c in message[1]}):
                    thought = args.get("thought", "")
                    fargs = {k: v for k, v in args.items() if k != "thought"}
                    call = {"id": str(cid), "name": str(tcm.get("function_name", action)), "arguments": _args(fargs)}
                    message = (_text(thought), [call])
                if isinstance(rid, str):
                    responses.add(rid)
                b.assistant(*message)
                if "model" not in meta and response is not None and isinstance(response.get("model"), str):
                    meta["model"] = response["model"]
            elif action == "system":
                b.system(_text(args.get("content", e.get("message"))))
            elif action == "message":
                text = _text(args.get("content", e.get("message")))
                if args.get("image_urls"):
                    text = "\n".join([text, *([_IMAGE] * len(args["image_urls"]))])
                if e.get("source") == "user":
                    b.user(text)
                else:
                    b.assistant(text)
            elif action == "finish":
                b.assistant(_text(args.get("thought") or args.get("final_thought") or e.get("message")))
            else:  # an action parsed from the reply text (no native call): a synthesized call
                n += 1
                waiting = f"oh-{n}"
                if "id" in e:
                    by_event[e["id"]] = waiting
                fargs = {k: v for k, v in args.items() if k != "thought"}
                b.assistant(
                    _text(args.get("thought", "")), [{"id": waiting, "name": str(action), "arguments": _args(fargs)}]
                )
                continue
            waiting = None
        elif "observation" in e:
            obs = e["observation"]
            cause = by_event.pop(e.get("cause"), None) if e.get("cause") is not None else None
            if obs in _OH_SKIP_OBSERVATIONS:
                b.dropped[f"observation/{obs}"] += 1
            elif tcm is not None and isinstance(tcm.get("tool_call_id"), str):
                b.tool(tcm["tool_call_id"], _text(e.get("content")))
            elif cause is not None or waiting is not None:
                b.tool(cause or str(waiting), _text(e.get("content")))
            elif obs in ("error", "user_rejected"):
                b.user(_text(e.get("content")))
            else:
                b.dropped[f"observation/{obs} (answers no call)"] += 1
            waiting = None
        else:
            raise src.fail("an event with neither `action` nor `observation`", **where(i))
    return b.build(name, kind, meta)


def _oh_response_message(response: JsonDict | None) -> tuple[str, list[JsonDict]] | None:
    if response is None:
        return None
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return None
    calls = []
    for call in message.get("tool_calls") or []:
        if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
            continue
        fn = call["function"]
        calls.append({"id": str(call.get("id")), "name": str(fn.get("name")), "arguments": _args(fn.get("arguments"))})
    return _text(message.get("content")), calls


# ---------------------------------------------------------------------------------------------
# Gemini CLI


def _import_gemini(src: _Source) -> list[Imported]:
    doc = _get_dict(src, _document(src, "a Gemini CLI session"), "a Gemini CLI session")
    messages = _get_list(src, doc.get("messages"), "`messages`")
    b = _Builder(src)
    meta: JsonDict = {"session_id": doc.get("sessionId"), "project_hash": doc.get("projectHash")}
    meta["start_time"] = doc.get("startTime")
    for i, m in enumerate(messages):
        m = _get_dict(src, m, "a message", index=i)
        kind = m.get("type")
        if kind == "user":
            b.user(_text(m.get("content")))
        elif kind == "gemini":
            if isinstance(m.get("model"), str):
                meta.setdefault("model", m["model"])
            text = _text(m.get("content"))
            calls = _get_list(src, m.get("toolCalls") or [], "`toolCalls`", index=i)
            out: list[JsonDict] = []
            results: list[tuple[str, str, bool]] = []
            for call in calls:
                call = _get_dict(src, call, "a tool call", index=i)
                cid = _get_str(src, call.get("id"), "tool call `id`", index=i)
                name = _get_str(src, call.get("name"), "tool call `name`", index=i)
                out.append({"id": cid, "name": name, "arguments": _args(call.get("args", {}))})
                result = call.get("result")
                if isinstance(result, list) and result:
                    results.append((cid, _gemini_result(result), call.get("status") == "error"))
            if not text and not out:
                b.dropped["empty_or_thoughts_only"] += 1
                continue
            b.assistant(text, out)
            for cid, content, is_error in results:
                b.tool(cid, content, is_error=is_error)
        else:
            b.dropped[str(kind)] += 1
    return [b.build(_base_name(src.path), "gemini-cli-json", meta)]


def _gemini_result(result: list[Any]) -> str:
    parts = []
    for part in result:
        if not isinstance(part, dict):
            parts.append(_text(part))
            continue
        fr = part.get("functionResponse")
        if isinstance(fr, dict):
            response = fr.get("response")
            if isinstance(response, dict) and ("output" in response or "error" in response):
                parts.append(_text(response.get("output", response.get("error"))))
            else:
                parts.append(_args(response))
        else:
            parts.append(_text([part]))
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------
# aider


_AIDER_START: Final = re.compile(r"^# aider chat started at (.*)$", re.MULTILINE)


def _aider_is_user(line: str) -> bool:
    return (line.startswith("#### ") and line.endswith("  ")) or line.rstrip() == "####"


def _aider_closes(line: str) -> bool:
    """The last line of a console entry: text stripped by aider, then two spaces."""
    return line.rstrip() == ">" or (line.endswith("  ") and len(line) > 2 and not line[-3].isspace())


def _aider_is_console(line: str) -> bool:
    return line.startswith("> ") or line.rstrip() == ">"


def _import_aider(src: _Source) -> list[Imported]:
    base = _base_name(src.path)
    lines = src.text.replace("\r\n", "\n").split("\n")
    _require(src, bool(_AIDER_START.search(src.text)), "aider session (`# aider chat started at`)")
    sessions: list[tuple[str, list[tuple[str, str]], JsonDict]] = []
    messages: list[tuple[str, str]] = []
    meta: JsonDict = {}
    user: list[str] = []
    reply: list[str] = []
    started: str | None = None
    console = 0  # console entries of the session, dropped

    def flush_reply() -> None:
        text = "\n".join(reply).strip()
        reply.clear()
        if text:
            messages.append(("assistant", text))

    def flush_user() -> None:
        if user:
            messages.append(("user", "\n".join(user)))
            user.clear()

    def end_session() -> None:
        nonlocal messages, meta, console
        flush_user()
        flush_reply()
        if messages:
            meta["dropped"] = {"console_entries": console} if console else {}
            sessions.append((started or "", messages, meta))
        messages = []
        meta = {}
        console = 0

    # An editor's mode line (``-*- mode: fundamental -*-``) is no part of the chat.
    i = 1 if lines and re.fullmatch(r"\s*-\*-.*-\*-\s*", lines[0]) else 0
    while i < len(lines):
        line = lines[i]
        match = _AIDER_START.match(line)
        if match:
            end_session()
            started = match.group(1).strip()
            meta = {"started": started}
            i += 1
            continue
        if _aider_is_user(line):
            flush_reply()
            text = line[5:] if line.startswith("#### ") else ""
            user.append(text[:-2] if text.endswith("  ") else text.rstrip())
            i += 1
            continue
        if _aider_is_console(line):
            if line.startswith("> Models: ") and "model" not in meta:
                meta["model"] = line[len("> Models: ") :].split(" with ")[0].strip()
            elif line.startswith("> Aider v") and "aider_version" not in meta:
                meta["aider_version"] = line[len("> Aider v") :].strip()
            # An entry ends at its first line that ends with two spaces (aider adds them to the
            # end of each entry, after stripping it), or before the next session or user input.
            console += 1
            j = i
            while not _aider_closes(lines[j]) and j + 1 < len(lines):
                nxt = lines[j + 1]
                if _AIDER_START.match(nxt) or _aider_is_user(nxt):
                    break
                j += 1
            i = j + 1
            continue
        if user and not line.strip():
            i += 1
            continue
        flush_user()
        reply.append(line)
        i += 1
    end_session()

    out: list[Imported] = []
    used: Counter[str] = Counter()
    for started_at, msgs, session_meta in sessions:
        key = re.sub(r"[: ]", "_", started_at) if started_at else "preamble"
        name = f"{base}--{key}"
        used[name] += 1
        if used[name] > 1:
            name = f"{name}#{used[name]}"
        b = _Builder(src)
        b.dropped.update(session_meta.pop("dropped"))
        for role, text in msgs:
            if role == "user":
                b.user(text)
            else:
                b.assistant(text)
        out.append(b.build(name, "aider-chat-history-md", session_meta))
    return out


# ---------------------------------------------------------------------------------------------


_IMPORTERS: Final[dict[str, Callable[[_Source], list[Imported]]]] = {
    "claude-code-jsonl": _import_claude,
    "codex-rollout-jsonl": _import_codex,
    "pi-session-jsonl": _import_pi,
    "swe-agent-traj": _import_swe_agent,
    "mini-swe-agent-1": _import_mini,
    "mini-swe-agent-1.1": _import_mini,
    "openhands-events": _import_openhands,
    "openhands-events-legacy": _import_openhands,
    "gemini-cli-json": _import_gemini,
    "aider-chat-history-md": _import_aider,
}
