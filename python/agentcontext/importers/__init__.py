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

Rules applied to every format (those of the shared transcript corpus), by
:meth:`Conversation.repair`, so that imported and repaired conversations follow one convention:
every call is answered by exactly one ``tool`` message placed right after its assistant message;
ids reused within a transcript are renamed ``<id>#2``, ``<id>#3``, ... with their results; a
result whose call is not before it in the transcript, or a second result for a call (none was seen
in practice), becomes a user message that names the call and keeps the text, rather than being
dropped. A call with no recorded result gets one with the content :data:`NO_RESULT` (where repair
writes that the call was interrupted). ``arguments`` is always a JSON string; images become
``[image]``. Every conversation built here has
``conversation.validate() == []``. Content is kept as text (``"content"`` a string), except an
assistant message with signed thinking, whose content is a list of blocks.

``meta`` keys, where the source has them: ``model``, ``cwd``, ``session_id``, ``version``... and
always ``dropped`` (source entries left out, by kind: they were not sent to the model, or they are
reasoning, telemetry or UI events); ``synthesized_results``, ``renamed_ids``, ``orphan_results``
and ``compactions`` (``[{"index": message index, ...}]``) when there are any.
"""

from __future__ import annotations

import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final, cast

from agentcontext import _checks
from agentcontext._core import Conversation
from agentcontext.errors import OptionError, SessionSelectionError, TranscriptError, UnknownFormatError
from agentcontext.importers._builder import NO_RESULT, Imported
from agentcontext.importers._reader import (
    MAX_TRANSCRIPT_BYTES,
    PathLike,
    _base_name,
    _disambiguate,
    _is_dict_list,
    _Source,
)
from agentcontext.importers._reader import (
    read_transcript_bytes as read_transcript_bytes,
)
from agentcontext.importers.aider import _AIDER_START, _import_aider
from agentcontext.importers.claude_code import _import_claude, _is_claude_entry
from agentcontext.importers.codex import _CODEX_TYPES, _import_codex
from agentcontext.importers.gemini_cli import _import_gemini
from agentcontext.importers.mini_swe_agent import _import_mini, _looks_mini
from agentcontext.importers.openhands import _import_openhands, _is_openhands_history, _openhands_kind
from agentcontext.importers.pi import _import_pi
from agentcontext.importers.swe_agent import _import_swe_agent
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
    path: PathLike,
    *,
    format: str = "auto",
    session: str | int | None = None,
    max_bytes: int = MAX_TRANSCRIPT_BYTES,
    cache: bool = False,
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

    This is the library's one loading path: the CLI, ``agentcontext eval`` and the pytest plugin
    read transcripts through it (:meth:`Conversation.from_file` is the reader of the library's own
    formats it calls). With ``cache=True`` the conversations of the file stay parsed for the next
    call with the same arguments (the :data:`CACHED_FILES` files read last, each known by its
    path, size and modification time, so a changed file is read again) and each call returns a
    copy of the one asked for: for reading one file many times, as the plugin and ``eval`` do once
    per strategy.

    Raises:
        SessionSelectionError: the file holds several sessions and ``session`` is None, or it has
            no session by that name or index (``names`` lists them).
        UnknownFormatError: the file is in none of the formats (the message lists every one tried
            and why the library's reader refused it).
        TranscriptError: the content is malformed (line or entry index in the message).
        TranscriptReadError: the file cannot be read.
        OptionError: an unknown ``format`` name.
    """
    if not isinstance(cache, bool):
        raise OptionError(f"cache must be True or False, got {type(cache).__name__}")
    p = Path(os.fspath(_checks.file_name("path", path)))
    if not cache:
        return _pick(_load_all(p, format, max_bytes), session, p)
    return _pick(_load_cached(p, format, max_bytes), session, p).slice(0)


#: How many files :func:`load` keeps parsed with ``cache=True``.
CACHED_FILES: Final = 8

_cache: OrderedDict[tuple[object, ...], list[Imported]] = OrderedDict()
_cache_lock = threading.Lock()


def _load_cached(p: Path, format: str, max_bytes: int) -> list[Imported]:
    try:
        st = os.stat(p)
    except OSError:
        return _load_all(p, format, max_bytes)  # raises the error that says why
    if not stat.S_ISREG(st.st_mode):
        return _load_all(p, format, max_bytes)
    key = (str(p.resolve()), format, max_bytes, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    with _cache_lock:
        items = _cache.get(key)
        if items is not None:
            _cache.move_to_end(key)
            return items
    items = _load_all(p, format, max_bytes)
    with _cache_lock:
        _cache[key] = items
        while len(_cache) > CACHED_FILES:
            _cache.popitem(last=False)
    return items


def _load_all(p: Path, format: str, max_bytes: int) -> list[Imported]:
    """Every conversation of a file in any format (:func:`load` picks one)."""
    if format in LIBRARY_FORMATS:
        return [_library_file(p, format, max_bytes=max_bytes)]
    if format != "auto" and format not in FORMATS:
        raise OptionError(
            f"unknown format {format!r} (expected one of {', '.join(FORMATS + LIBRARY_FORMATS)} or 'auto')"
        )
    src = _Source.read(p, max_bytes)
    fmt = _detect(src) if format == "auto" else format
    if fmt is not None:
        return _IMPORTERS[fmt](src)
    try:
        conv = Conversation.from_file(p, max_bytes=max_bytes)
    except TranscriptError as err:
        raise _unknown(src, FORMATS + LIBRARY_FORMATS, library_error=err) from err
    return [_library_file(p, conv.format, conv)]


# ---------------------------------------------------------------------------------------------
# Detection and selection


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
