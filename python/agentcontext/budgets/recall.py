"""The ``recall`` tool: resolves the ids written into markers and placeholders and pages the
original text back."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from agentcontext import _checks
from agentcontext._core import Conversation, json_path
from agentcontext.budgets.store import RECALL_ID, ResultStore, _check_id, _shown
from agentcontext.budgets.tools import recall_tool
from agentcontext.errors import AgentContextError, OptionError, RecallError

if TYPE_CHECKING:
    from agentcontext.sessions.log import SessionLog

__all__ = ["Recall", "RecallPage", "result_text"]


@dataclass(frozen=True)
class RecallPage:
    """One page of a recalled text. ``text`` is exactly ``full[start:end]``; ``hint`` says how to
    continue when more follows (None on the last page)."""

    text: str
    start: int
    end: int
    total_chars: int
    start_line: int
    end_line: int
    total_lines: int
    hint: str | None

    @property
    def answer(self) -> str:
        """The page as the tool answers it: the text, then the hint on a line of its own."""
        if self.hint is None:
            return self.text
        return f"{self.text}{'' if self.text.endswith(chr(10)) else chr(10)}\n{self.hint}"


class Recall:
    """The ``recall`` tool: resolves every id the library writes into a marker or placeholder,
    and pages the original back.

    - ``r-...`` ids: results stored in ``store`` by :class:`ToolResultPolicy` (persisted or cut
      results) and the originals of summarized or dropped spans stored by a
      :class:`~agentcontext.Compactor` that has a store (as JSON Lines, one message a line);
    - tool call ids (``[cleared: ...; recall id call_abc]``, ``recall(id="call_abc")``): the
      result as it was before it was cleared or cut, from ``store`` (stored by the compactor
      under the call id), else from ``originals`` (the caller's own messages, e.g. those given to
      :func:`~agentcontext.trim_messages` or ``Conversation.clear_tool_results``), else from
      the session ``log``. When a call id was used twice, the last result is the one recalled.

    Pages are by lines (``offset``, ``lines``; the tool's arguments ``offset`` and ``limit``) and never longer than ``max_chars`` characters: a
    longer line (a one-line JSON result) is paged by character, the hint naming ``char_offset``.
    ``path`` first selects a value inside a JSON result (``$.items[3].name``; see
    :func:`agentcontext.json_path`).
    """

    def __init__(
        self,
        store: ResultStore | None = None,
        *,
        log: SessionLog | None = None,
        originals: Conversation | Iterable[Mapping[str, Any]] | None = None,
    ) -> None:
        self.store = store
        self.log = log
        if originals is not None and not isinstance(originals, Conversation):
            originals = Conversation(list(originals))
        self.originals = originals
        self._indexed: dict[str, tuple[int, dict[str, str]]] = {}

    def tool(self, style: Literal["openai", "anthropic"] = "openai") -> dict[str, Any]:
        """The tool definition (see :func:`recall_tool`)."""
        return recall_tool(style)

    def _results(self, source: str) -> dict[str, str] | None:
        """Call id → the text of its last result that is not a placeholder, in the original
        messages (``source="originals"``) or the session log (``"log"``); rebuilt when the source
        has grown (a log only grows)."""
        log = self.log
        if source == "originals":
            if self.originals is None:
                return None
            size = len(self.originals)
        elif log is None:
            return None
        else:
            size = len(log.messages)
        cached = self._indexed.get(source)
        if cached is not None and cached[0] == size:
            return cached[1]
        out: dict[str, str] = {}
        conv = self.originals if source == "originals" else log.originals() if log is not None else None
        if conv is not None:
            for m in conv.to_jsonl():
                if m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str):
                    text = result_text(m.get("content"))
                    if not text.startswith(("[cleared: result of ", "[superseded: ")):
                        out[m["tool_call_id"]] = text
        self._indexed[source] = (size, out)
        return out

    def original(self, recall_id: str) -> str:
        """The full text behind ``recall_id``.

        Raises:
            OptionError: ``recall_id`` is not a string.
            RecallError: nothing is stored under it (the message says where it was looked for).
        """
        recall_id = _check_id(recall_id, "id")
        store = self.store
        if store is not None:
            if RECALL_ID.fullmatch(recall_id):
                return store.get(recall_id)
            stored = store.alias(recall_id)
            if stored is not None:
                return store.get(stored)
        for source in ("originals", "log"):
            text = (self._results(source) or {}).get(recall_id)
            if text is not None:
                return text
        looked = [
            name
            for name, have in (
                ("the store", store),
                ("the original messages", self.originals),
                ("the session log", self.log),
            )
            if have is not None
        ]
        where = ", ".join(looked) if looked else "nothing (no store, session log or original messages given)"
        raise RecallError(f"no stored result with recall id {_shown(recall_id)} (looked in {where})", recall_id)

    def page(
        self,
        recall_id: str,
        offset: int = 1,
        lines: int = 500,
        *,
        char_offset: int | None = None,
        max_chars: int = 20_000,
        path: str | None = None,
    ) -> RecallPage:
        """One page of what ``recall_id`` names (of the value at ``path`` in it, for JSON)."""
        offset = _checks.count("offset", offset, minimum=1)
        lines = _checks.count("lines", lines, minimum=1)
        max_chars = _checks.count("max_chars", max_chars, minimum=1)
        if char_offset is not None:
            char_offset = _checks.count("char_offset", char_offset)
        if path is None:
            stored = self._stored(_check_id(recall_id, "id"))
            if stored is not None:
                # Read from the store's file as it is paged: memory holds the page, not the result.
                return _page(stored, offset, lines, char_offset, max_chars)
        text = self.original(recall_id)
        if path is not None:
            if not isinstance(path, str):
                raise OptionError(f"path must be a string, not {type(path).__name__}")
            text = json_path(text, path)
        return _page((text,), offset, lines, char_offset, max_chars)

    def _stored(self, recall_id: str) -> Iterator[str] | None:
        """The pieces of the result the store holds under ``recall_id`` (an id or an alias), or
        None when it holds none."""
        store = self.store
        if store is None:
            return None
        stored = recall_id if RECALL_ID.fullmatch(recall_id) else store.alias(recall_id)
        return None if stored is None else store.pieces(stored)

    def recall(
        self,
        recall_id: str,
        offset: int = 1,
        lines: int = 500,
        *,
        char_offset: int | None = None,
        max_chars: int = 20_000,
        path: str | None = None,
    ) -> str:
        """The tool's answer: :meth:`page` with its continuation hint."""
        return self.page(recall_id, offset, lines, char_offset=char_offset, max_chars=max_chars, path=path).answer

    def __call__(self, arguments: Mapping[str, Any]) -> str:
        """The executor for a tool call's parsed arguments (``id``, ``offset``, ``limit``,
        ``char_offset``, ``path``). A bad argument or an unknown id is answered with the error's
        message, which tells the model what to do."""
        if not isinstance(arguments, Mapping):
            return f"Error: the recall tool takes an object of arguments, not {type(arguments).__name__}"
        unknown = sorted(set(arguments) - {"id", "offset", "limit", "char_offset", "path"})
        if unknown:
            return (
                f"Error: unknown argument {unknown[0]!r} (the recall tool takes id, offset, limit, char_offset, path)"
            )
        try:
            # The tool's argument is `limit` (lines): checked here, in `page`'s order, so that the
            # answer to a bad value names the argument the model passed.
            offset = _checks.count("offset", arguments.get("offset", 1), minimum=1)
            lines = _checks.count("limit", arguments.get("limit", 500), minimum=1)
            return self.recall(
                arguments.get("id"),  # type: ignore[arg-type]  # checked in `original`
                offset,
                lines,
                char_offset=arguments.get("char_offset"),
                path=arguments.get("path"),
            )
        except AgentContextError as exc:
            return f"Error: {exc}"


def result_text(content: object) -> str:
    """A tool result's content as the text a recall gives back: a string as is, anything else
    (a list of content parts) as JSON."""
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False)


def _page(pieces: Iterable[str], offset: int, lines: int, char_offset: int | None, max_chars: int) -> RecallPage:
    """The page of the text made of ``pieces`` (consumed once, in order): only the page is held."""
    n = newlines = 0  # chars and line breaks seen
    ends_with_newline = False
    # Line mode: the page starts after line break offset - 1 (found while reading); char mode: at char_offset.
    start: int | None = 0 if char_offset is None and offset == 1 else char_offset
    before = 0  # line breaks before start
    kept: list[str] = []  # text[start:start + max_chars]
    room = max_chars
    for piece in pieces:
        if not piece:
            continue
        size = len(piece)
        if start is None:
            need = offset - 1 - newlines
            if piece.count("\n") >= need:
                at = -1
                for _ in range(need):
                    at = piece.index("\n", at + 1)
                start, before = n + at + 1, offset - 1
        elif char_offset is not None and start > n:
            before += piece.count("\n", 0, start - n)
        if start is not None and room and n + size > start:
            lo = max(0, start - n)
            take = piece[lo : lo + room]
            kept.append(take)
            room -= len(take)
        newlines += piece.count("\n")
        n += size
        ends_with_newline = piece.endswith("\n")
    # A final line break ends the last line; it does not start another.
    total_lines = max(1, newlines + (0 if ends_with_newline else 1))
    head = "".join(kept)
    if char_offset is None:
        if offset > total_lines or start is None:
            raise OptionError(f"offset {offset} is past the end (the text has {total_lines:,} lines)")
        at = -1
        for _ in range(lines):
            at = head.find("\n", at + 1)
            if at < 0:
                break
        if at >= 0:
            stop = start + at + 1
        elif start + len(head) == n:
            stop = n
        else:
            # Never more than max_chars: end at the last line break that fits, or mid-line.
            nl = head.rfind("\n", 0, max_chars)
            stop = start + nl + 1 if nl >= 0 else start + max_chars
    else:
        if char_offset > n or (char_offset == n and n > 0):
            raise OptionError(f"char_offset {char_offset:,} is past the end (the text has {n:,} chars)")
        start = char_offset
        stop = min(n, start + max_chars)
    text = head[: stop - start]
    first = before + 1
    last = first + text.count("\n", 0, max(0, len(text) - 1))
    hint = None
    if stop < n:
        if text.endswith("\n"):
            hint = f"[Showing lines {first}-{last} of {total_lines}. Use offset={last + 1} to continue.]"
        else:
            hint = f"[Showing chars {start}-{stop} of {n} (line {last} of {total_lines}). Use char_offset={stop} to continue.]"
    return RecallPage(text, start, stop, n, first, last, total_lines, hint)
