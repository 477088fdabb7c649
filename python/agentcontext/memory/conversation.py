"""``conversation_search``: find text in everything a session ever held, including what was
cleared, cut or summarized out of the working set, from the originals in its session log.

The search runs in the Rust core over the log file, read as a stream up to ``max_bytes`` (lines in
parallel; for a words query, lines that cannot hold a word are not parsed). Each hit names the
message's index in the log and, for a tool result, its recall id (the call id its cleared
placeholder shows). A file that is not a session log is read as ``agentcontext inspect`` reads it
(:func:`agentcontext.importers.load`: an agent's session file or a transcript in one of the
library's formats) and its messages are searched the same way.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from agentcontext import _checks
from agentcontext._core import search_log, search_messages
from agentcontext.errors import AgentContextError, ArgumentTypeError, FileReadError, OptionError, UnknownFormatError
from agentcontext.types import SearchResult

__all__ = ["ConversationSearch", "conversation_search"]


class _LogFile(Protocol):
    """What is taken of an :class:`agentcontext.SessionLog` (not imported: the sessions package
    imports this one): its file."""

    path: Path


def conversation_search(
    log: str | os.PathLike[str] | _LogFile,
    query: str,
    *,
    regex: bool = False,
    limit: int = 10,
    snippet_chars: int = 240,
    snippets: int = 2,
    max_bytes: int = 1 << 30,
    session: str | int | None = None,
) -> SearchResult:
    """Search the originals of the session log at ``log`` (a :class:`agentcontext.SessionLog`, or
    its file) by words (case-insensitive; ``"a phrase"`` in quotes) or a regular expression. Returns
    ``messages``, ``matched``, ``skipped`` (lines of the log that could not be read as a record —
    not JSON, a number out of range, a torn last line —: not searched, not in ``messages``, no
    message index; 0 for a transcript) and ``hits`` (best first: ``message``, ``line``, ``role``,
    ``recall_id``, ``score``, ``matches``, ``snippets``). A hit on a tool result of a session log
    gives the recall id its placeholder names (``<id>#k`` for the k-th call of an id the log
    reuses, as :class:`~agentcontext.budgets.Recall` resolves it; None when two calls would have
    that name); a hit on a transcript's, the name the conversation's placeholders give it.

    The log is read as a stream (memory does not grow with its size) and only if it is at most
    ``max_bytes`` bytes (default 1 GiB). A file that is not a session log (it does not start with
    the log's header) is read as :func:`agentcontext.importers.load` reads it, ``session``
    picking one session (a name or an index) of a file that holds several (without it, such a file
    raises :class:`~agentcontext.errors.SessionSelectionError` naming them), and its messages are
    searched: ``message`` is then the position in that conversation and ``line`` is None.

    Raises:
        FileReadError: the log cannot be read, is a directory, or is over ``max_bytes``
            (``kind`` ``"too_large"``).
        UnknownFormatError: the file is neither a session log nor a transcript in a format
            agentcontext reads (the message says what its first line is and which formats were tried).
        TranscriptError, TranscriptReadError: the transcript cannot be parsed or read.
        OptionError: a bad query or argument, or ``session`` given for a session log (it holds one).
    """
    log = _log_path(log)
    if session is not None and (isinstance(session, bool) or not isinstance(session, str | int)):
        raise ArgumentTypeError(f"session must be a session's name (str) or index (int), got {type(session).__name__}")
    if isinstance(log, str | os.PathLike) and os.path.islink(log):
        # Opened without following a symlink: say so, not the system's "too many levels of symbolic links".
        raise FileReadError(
            f"{os.fspath(log)} is a symlink; a session log is searched only at its own path (not through a "
            f"symlink): search {os.path.realpath(log)}",
            os.fspath(log),
            "io",
        )
    try:
        result = search_log(
            log,
            query,
            regex=regex,
            limit=limit,
            snippet_chars=snippet_chars,
            snippets=snippets,
            max_bytes=max_bytes,
        )
    except FileReadError as exc:
        if exc.kind != "not_a_session_log":
            raise
        not_a_log = exc
    else:
        if session is not None:
            raise OptionError(
                f"{log}: is a session log, which holds one session; session {session!r} picks one of the sessions "
                "of a transcript file"
            )
        return result
    from agentcontext import importers

    try:
        conv = importers.load(log, max_bytes=max_bytes, session=session)
    except UnknownFormatError as exc:
        raise UnknownFormatError(
            f"{not_a_log}; nor is it a transcript in a format agentcontext reads: {exc}", exc.path, exc.tried
        ) from None
    return search_messages(conv, query, regex=regex, limit=limit, snippet_chars=snippet_chars, snippets=snippets)


def _log_path(log: Any) -> str | os.PathLike[str]:
    """The path of ``log``: a :class:`~agentcontext.SessionLog`'s, or ``log`` itself (checked by
    whoever reads it)."""
    path = getattr(log, "path", None)
    if not isinstance(log, str | os.PathLike) and isinstance(path, Path):
        return path
    return cast("str | os.PathLike[str]", log)


def format_hits(result: SearchResult) -> str:
    """The hits as the text a model reads."""
    hits = result["hits"]
    skipped = result.get("skipped", 0)
    unread = f" ({skipped:,} record{'' if skipped == 1 else 's'} could not be read)" if skipped else ""
    if not hits:
        return f"No message matches (searched {result['messages']:,} messages){unread}."
    shown = f"{len(hits)} of {result['matched']:,}" if result["matched"] > len(hits) else f"{len(hits)}"
    out = [f"{shown} matching messages (of {result['messages']:,} in the session){unread}, best first:"]
    for h in hits:
        ref = f"message {h['message']} ({h['role'] or 'unknown role'})"
        if h["recall_id"]:
            ref += f", recall id {h['recall_id']}"
        out.append(f"- {ref}:")
        out += [f"    {s}" for s in h["snippets"]]
    return "\n".join(out)


class ConversationSearch:
    """The ``conversation_search`` tool over one session log: definition and executor."""

    name = "conversation_search"

    def __init__(
        self, log: str | os.PathLike[str] | _LogFile, *, snippet_chars: int = 240, max_limit: int = 50
    ) -> None:
        log = _log_path(log)
        if not isinstance(log, str | os.PathLike):
            raise ArgumentTypeError(f"log must be a SessionLog, a str or os.PathLike, got {type(log).__name__}")
        self.log = os.fspath(_checks.file_name("log", log))
        self.snippet_chars = _checks.count("snippet_chars", snippet_chars, minimum=1)
        self.max_limit = _checks.count("max_limit", max_limit, minimum=1)

    def definition(self, style: Literal["openai", "anthropic"] = "openai") -> dict[str, Any]:
        description = (
            "Search everything said earlier in this session, including tool results and messages that were "
            "cleared or summarized out of the context. Returns ranked snippets with the message number and, "
            "for a tool result, its recall id (pass it to recall to read the whole result)."
        )
        schema = {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": 'Words to find (case-insensitive; "a phrase" in quotes).'},
                "regex": {"type": "boolean", "description": "Treat query as a regular expression (default false)."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": self.max_limit,
                    "description": "At most this many.",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        }
        if style == "anthropic":
            return {"name": self.name, "description": description, "input_schema": schema}
        if style == "openai":
            return {
                "type": "function",
                "function": {"name": self.name, "description": description, "parameters": schema},
            }
        raise OptionError(f'unknown tool style {style!r} (expected "openai" or "anthropic")')

    def execute(self, arguments: Mapping[str, Any] | str) -> str:
        """Run one call; a bad query comes back as ``Error: ...`` text."""
        from agentcontext.memory.tools import _arguments, _str

        try:
            args = _arguments(arguments)
            limit = args.get("limit", 10)
            if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= self.max_limit:
                raise OptionError(f"limit must be an integer from 1 to {self.max_limit}")
            regex = args.get("regex", False)
            if regex is None:
                regex = False
            if not isinstance(regex, bool):
                # (bool("false") is True: a string would search the words as a pattern.)
                raise OptionError(f"regex must be true or false, got {json.dumps(regex)[:40]}")
            result = conversation_search(
                self.log,
                _str(args, "query"),
                regex=regex,
                limit=limit,
                snippet_chars=self.snippet_chars,
            )
        except AgentContextError as exc:
            return f"Error: {exc}"
        return format_hits(result)
