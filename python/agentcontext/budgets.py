"""Budgets on what enters the context: tool results, project files and file reads.

The cutting itself (head + marker + tail, tail importance, token fitting, JSON previews, paging)
runs in the Rust core; this module holds the policies, the store that keeps what was cut out,
and the stateful helpers (read dedup, open-file views).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentcontext import _checks
from agentcontext._core import Conversation, Page, Truncation, json_path, json_preview, read_page, truncate
from agentcontext.errors import AgentContextError, FileReadError, OptionError, RecallError
from agentcontext.types import TruncateStrategy as Strategy

if TYPE_CHECKING:
    from agentcontext.session_log import SessionLog

__all__ = [
    "PRESETS",
    "BudgetPreset",
    "BudgetedResult",
    "FileReader",
    "OpenFiles",
    "Recall",
    "RecallPage",
    "ResultStore",
    "ToolResultPolicy",
    "fit_project_files",
    "open_file_limits",
    "read_file_tool",
    "recall_tool",
]


#: Characters per token used to turn a window in tokens into a budget in characters.
CHARS_PER_TOKEN = 4


# ---------------------------------------------------------------------------------------------
# The store of full results.


#: The form of a store's recall id: ``r-`` and 20 lowercase hex digits of the text's SHA-256.
RECALL_ID = re.compile(r"r-[0-9a-f]{20}")

#: The longest id :class:`Recall` looks up (call ids of every provider are far shorter).
MAX_ID_CHARS = 512


def _shown(value: str) -> str:
    """``value`` as a message shows it: quoted, and cut when long."""
    if len(value) <= 80:
        return repr(value)
    return f"{value[:60]!r}... ({len(value):,} chars)"


def _check_id(recall_id: object, argument: str = "recall_id") -> str:
    if not isinstance(recall_id, str):
        raise OptionError(f"{argument} must be a string, not {type(recall_id).__name__} ({recall_id!r:.80})")
    if not recall_id or len(recall_id) > MAX_ID_CHARS or recall_id != recall_id.strip():
        why = "empty" if not recall_id else "too long" if len(recall_id) > MAX_ID_CHARS else "padded with spaces"
        raise RecallError(f"not a recall id ({why}): {argument}={_shown(recall_id)}", recall_id)
    return recall_id


class ResultStore:
    """A content-addressed store of full tool results, one file per result under ``directory``.

    The id of a text is derived from its SHA-256, so storing the same text twice gives the same
    id and one file. Writes go to a temporary file in the same directory and are renamed into
    place, so concurrent writers (threads or processes) of the same result leave one intact file
    and a reader never sees a partial one. A text can also be stored under an alias (a tool call
    id), which :meth:`alias` resolves to its recall id. Only regular files are read back: a
    symlink or anything else planted under a stored name is refused.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OptionError(f"cannot use {self.directory} as a result store: {exc.strerror or exc}") from None
        if not self.directory.is_dir():
            raise OptionError(f"cannot use {self.directory} as a result store: not a folder")

    @staticmethod
    def id_for(text: str) -> str:
        return "r-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]

    def path_for(self, recall_id: str) -> Path:
        _check_id(recall_id)
        if not RECALL_ID.fullmatch(recall_id):
            raise RecallError(
                f"not a recall id: recall_id={_shown(recall_id)} (expected r- and 20 hex digits)", recall_id
            )
        return self.directory / f"{recall_id}.txt"

    def _alias_path(self, alias: str) -> Path:
        return self.directory / f"a-{hashlib.sha256(alias.encode('utf-8', 'surrogatepass')).hexdigest()[:20]}.ref"

    def _write(self, path: Path, text: str) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{path.stem}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            # Replaces whatever holds the name, a planted symlink included (the link, not its target).
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _read(self, path: Path, recall_id: str) -> str | None:
        """The text of a regular file at ``path`` (None when there is none); anything else is refused."""
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            return None
        except OSError as exc:
            if path.is_symlink():
                raise RecallError(
                    f"{path} is a symlink; the store reads only its own regular files", recall_id
                ) from None
            raise RecallError(f"{path}: cannot read the stored result: {exc.strerror}", recall_id) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise RecallError(f"{path} is not a regular file; the store reads only its own files", recall_id)
        with os.fdopen(fd, "rb") as f:
            data = f.read()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise RecallError(
                f"{path}: the stored result is not UTF-8 (changed outside the store?)", recall_id
            ) from None

    def _holds(self, path: Path) -> bool:
        try:
            return stat.S_ISREG(os.lstat(path).st_mode)
        except OSError:
            return False

    def put(self, text: str, *, alias: str | None = None) -> str:
        """Store ``text`` and return its recall id; with ``alias`` (a tool call id), the alias
        resolves to that id from now on (:meth:`alias`)."""
        recall_id = self.id_for(text)
        path = self.path_for(recall_id)
        if not self._holds(path):
            self._write(path, text)
        if alias is not None:
            _check_id(alias, "alias")
            ref = self._alias_path(alias)
            record = f"{alias}\n{recall_id}"
            if not self._holds(ref) or self._read(ref, alias) != record:
                self._write(ref, record)
        return recall_id

    def alias(self, name: str) -> str | None:
        """The recall id stored under the alias ``name``, or None."""
        _check_id(name, "alias")
        text = self._read(self._alias_path(name), name)
        if text is None:
            return None
        stored_name, _, recall_id = text.rpartition("\n")
        return recall_id if stored_name == name and RECALL_ID.fullmatch(recall_id) else None

    def get(self, recall_id: str) -> str:
        """The full text stored under ``recall_id``."""
        path = self.path_for(recall_id)
        text = self._read(path, recall_id)
        if text is None:
            raise RecallError(f"no stored result with recall id {recall_id!r}", recall_id)
        return text

    def __contains__(self, recall_id: object) -> bool:
        return (
            isinstance(recall_id, str)
            and bool(RECALL_ID.fullmatch(recall_id))
            and self._holds(self.path_for(recall_id))
        )

    def recall(
        self,
        recall_id: str,
        offset: int = 1,
        limit: int = 500,
        *,
        char_offset: int | None = None,
        max_chars: int = 20_000,
        path: str | None = None,
    ) -> str:
        """The answer of the ``recall`` tool for a stored result: see :meth:`Recall.recall`."""
        _check_id(recall_id)
        return Recall(self).recall(recall_id, offset, limit, char_offset=char_offset, max_chars=max_chars, path=path)


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

    Pages are by lines (``offset``, ``limit``) and never longer than ``max_chars`` characters: a
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
        limit: int = 500,
        *,
        char_offset: int | None = None,
        max_chars: int = 20_000,
        path: str | None = None,
    ) -> RecallPage:
        """One page of what ``recall_id`` names (of the value at ``path`` in it, for JSON)."""
        offset = _checks.count("offset", offset, minimum=1)
        limit = _checks.count("limit", limit, minimum=1)
        max_chars = _checks.count("max_chars", max_chars, minimum=1)
        if char_offset is not None:
            char_offset = _checks.count("char_offset", char_offset)
        text = self.original(recall_id)
        if path is not None:
            if not isinstance(path, str):
                raise OptionError(f"path must be a string, not {type(path).__name__}")
            text = json_path(text, path)
        return _page(text, offset, limit, char_offset, max_chars)

    def recall(
        self,
        recall_id: str,
        offset: int = 1,
        limit: int = 500,
        *,
        char_offset: int | None = None,
        max_chars: int = 20_000,
        path: str | None = None,
    ) -> str:
        """The tool's answer: :meth:`page` with its continuation hint."""
        return self.page(recall_id, offset, limit, char_offset=char_offset, max_chars=max_chars, path=path).answer

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
            return self.recall(
                arguments.get("id"),  # type: ignore[arg-type]  # checked in `original`
                arguments.get("offset", 1),
                arguments.get("limit", 500),
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


def _page(text: str, offset: int, limit: int, char_offset: int | None, max_chars: int) -> RecallPage:
    n = len(text)
    # A final line break ends the last line; it does not start another.
    total_lines = max(1, text.count("\n") + (0 if text.endswith("\n") else 1))
    if char_offset is None:
        if offset > total_lines:
            raise OptionError(f"offset {offset} is past the end (the text has {total_lines:,} lines)")
        start = 0
        for _ in range(offset - 1):
            start = text.index("\n", start) + 1
        stop = start
        for _ in range(limit):
            nl = text.find("\n", stop)
            if nl < 0:
                stop = n
                break
            stop = nl + 1
        # Never more than max_chars: end at the last line break that fits, or mid-line.
        if stop - start > max_chars:
            nl = text.rfind("\n", start, start + max_chars)
            stop = nl + 1 if nl >= start else start + max_chars
    else:
        if char_offset > n or (char_offset == n and n > 0):
            raise OptionError(f"char_offset {char_offset:,} is past the end (the text has {n:,} chars)")
        start = char_offset
        stop = min(n, start + max_chars)
    first = text.count("\n", 0, start) + 1
    last = first + text.count("\n", start, max(start, stop - 1))
    hint = None
    if stop < n:
        if text[stop - 1] == "\n":
            hint = f"[Showing lines {first}-{last} of {total_lines}. Use offset={last + 1} to continue.]"
        else:
            hint = f"[Showing chars {start}-{stop} of {n} (line {last} of {total_lines}). Use char_offset={stop} to continue.]"
    return RecallPage(text[start:stop], start, stop, n, first, last, total_lines, hint)


def recall_tool(style: Literal["openai", "anthropic"] = "openai") -> dict[str, Any]:
    """The definition of the ``recall`` tool that :class:`Recall` executes, for a tool list."""
    description = (
        "Read back the original of something shortened, cleared, summarized or dropped from the conversation. "
        "Pass the recall id its marker shows. Pages are by lines (offset, limit); a long line is paged by "
        "character (char_offset, as the page's last line tells). For a JSON result, path selects a value "
        "inside it first, like $.items[3].name, $['key'][-1] or $.items[*].id."
    )
    schema = _paged_schema("id", "The recall id from the marker, like r-3fa2... or a tool call id.")
    schema["properties"]["char_offset"] = {
        "type": "integer",
        "minimum": 0,
        "description": "Character offset (0-based) to start from instead of a line.",
    }
    schema["properties"]["path"] = {
        "type": "string",
        "description": "A JSON path into a JSON result: $, .key, ['key'], [n], [-n], [*].",
    }
    return _tool("recall", description, schema, style)


def _paged_schema(key: str, description: str) -> dict[str, Any]:
    """A tool input of one required string ``key`` plus optional ``offset`` and ``limit`` lines."""
    return {
        "type": "object",
        "properties": {
            key: {"type": "string", "description": description},
            "offset": {"type": "integer", "minimum": 1, "description": "First line to show (1-based)."},
            "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to show."},
        },
        "required": [key],
    }


def _tool(name: str, description: str, schema: dict[str, Any], style: str) -> dict[str, Any]:
    if style == "anthropic":
        return {"name": name, "description": description, "input_schema": schema}
    if style == "openai":
        return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}
    raise OptionError(f'unknown tool style {style!r} (expected "openai" or "anthropic")')


# ---------------------------------------------------------------------------------------------
# Tool-result policy.


@dataclass(frozen=True)
class BudgetedResult:
    """What became of one tool result."""

    text: str
    #: ``"kept"`` (fit as is), ``"truncated"`` (head/tail with a marker) or ``"persisted"``
    #: (stored in full, replaced by a preview with its recall id).
    action: Literal["kept", "truncated", "persisted"]
    original_chars: int
    recall_id: str | None = None
    truncation: Truncation | None = None


@dataclass(frozen=True)
class ToolResultPolicy:
    """The budget every tool result gets when it enters the conversation.

    - A result over ``budget_chars`` is cut to head + marker + tail (``strategy="auto"`` keeps the
      tail when it holds errors, tracebacks, test summaries, exit status or closing brackets).
      The default budget is min(16,000 chars, 30% of the context window).
    - A result over ``persist_over_chars`` is stored in full in ``store`` and replaced by a
      ``preview_chars`` preview (a structural one for JSON) with its size and recall id.
    - Across the parallel results of one message, at most ``message_limit_chars`` enter; the
      largest are persisted first until the rest fit.
    - ``per_tool`` overrides ``budget_chars`` and ``persist_over_chars`` for named tools: their
      results are cut to their own budget (head + marker + tail), never replaced by a preview for
      being over ``persist_over_chars`` (the per-message limit still applies).
    """

    context_window: int = 200_000
    budget_chars: int | None = None
    per_tool: Mapping[str, int] = field(default_factory=dict)
    persist_over_chars: int | None = 50_000
    preview_chars: int = 2_000
    message_limit_chars: int | None = 200_000
    strategy: Strategy = "auto"
    head_share: float = 0.5
    store: ResultStore | None = None

    def __post_init__(self) -> None:
        _checks.count("context_window", self.context_window)
        _checks.optional_count("budget_chars", self.budget_chars)
        object.__setattr__(self, "per_tool", _checks.count_map("per_tool", self.per_tool))
        _checks.optional_count("persist_over_chars", self.persist_over_chars)
        _checks.count("preview_chars", self.preview_chars)
        _checks.optional_count("message_limit_chars", self.message_limit_chars)
        _checks.number("head_share", self.head_share, high=1.0)

    @property
    def default_budget(self) -> int:
        if self.budget_chars is not None:
            return self.budget_chars
        return min(16_000, int(0.3 * self.context_window * CHARS_PER_TOKEN))

    def budget_for(self, tool: str | None) -> int:
        return self.per_tool.get(tool or "", self.default_budget)

    def _persists(self, content: str, tool: str | None) -> bool:
        """Whether ``content`` is over the persist threshold (tools in ``per_tool`` have none)."""
        return (
            self.persist_over_chars is not None
            and (tool or "") not in self.per_tool
            and len(content) > self.persist_over_chars
        )

    def apply(self, content: str, tool: str | None = None) -> BudgetedResult:
        """Budget one tool result."""
        if self._persists(content, tool):
            return self.persist(content)
        return self._cut(content, self.budget_for(tool))

    def apply_message(self, results: Iterable[tuple[str | None, str]]) -> list[BudgetedResult]:
        """Budget the parallel results of one message, given as ``(tool_name, content)``, in order."""
        items = list(results)
        persist = {i for i, (t, c) in enumerate(items) if self._persists(c, t)}
        if self.message_limit_chars is not None:
            sizes = {i: min(len(c), self.budget_for(t)) for i, (t, c) in enumerate(items)}
            total = sum(self.preview_chars if i in persist else sizes[i] for i in range(len(items)))
            for i in sorted(range(len(items)), key=lambda i: -len(items[i][1])):
                if total <= self.message_limit_chars:
                    break
                if i not in persist:
                    persist.add(i)
                    total -= sizes[i] - self.preview_chars
        return [self.persist(c) if i in persist else self._cut(c, self.budget_for(t)) for i, (t, c) in enumerate(items)]

    def persist(self, content: str) -> BudgetedResult:
        """Store ``content`` in full and return its preview."""
        if self.store is None:
            # Nowhere to keep it: the best is a marked cut to the preview size.
            return self._cut(content, self.preview_chars)
        recall_id = self.store.put(content)
        header = f"[Full result stored: {len(content):,} chars, {content.count(chr(10)) + 1:,} lines; recall id {recall_id}]\n"
        room = max(self.preview_chars - len(header), 200)
        preview = json_preview(content, max_chars=room)
        if preview is None:
            preview = truncate(
                content, room, unit="chars", strategy=self.strategy, head_share=self.head_share, recall_id=recall_id
            ).text
        return BudgetedResult(
            text=header + preview, action="persisted", original_chars=len(content), recall_id=recall_id
        )

    def _cut(self, content: str, budget: int) -> BudgetedResult:
        if len(content) <= budget:
            return BudgetedResult(text=content, action="kept", original_chars=len(content))
        recall_id = self.store.put(content) if self.store is not None else None
        t = truncate(
            content,
            budget,
            unit="chars",
            strategy=self.strategy,
            head_share=self.head_share,
            recall_id=recall_id,
            not_stored=recall_id is None,
        )
        return BudgetedResult(
            text=t.text, action="truncated", original_chars=len(content), recall_id=recall_id, truncation=t
        )


# ---------------------------------------------------------------------------------------------
# Project / bootstrap files.


def fit_project_files(
    files: Mapping[str, str],
    *,
    per_file_chars: int = 12_000,
    total_chars: int = 60_000,
    head_share: float = 0.75,
) -> dict[str, str]:
    """Fit project instruction files (AGENTS.md and the like) into the system prompt: each file
    at most ``per_file_chars`` (keeping ``head_share`` head and the rest tail), all together at
    most ``total_chars``, in the order given. A file that no longer fits at all is replaced by a
    one-line note, so the model knows it exists."""
    _checks.count("per_file_chars", per_file_chars)
    _checks.count("total_chars", total_chars)
    _checks.number("head_share", head_share, high=1.0)

    def note(name: str, text: str) -> str:
        return f"[{name} omitted: {len(text):,} chars, over the {total_chars:,}-char total for project files]"

    names = list(files)
    # Room is kept for a note on every later file, so the total holds even when files are dropped.
    notes = [len(note(n, files[n])) for n in names]
    out: dict[str, str] = {}
    left = total_chars
    for i, name in enumerate(names):
        text = files[name]
        budget = min(per_file_chars, left - sum(notes[i + 1 :]))
        if len(text) <= budget:
            out[name] = text
        elif budget >= 200:
            out[name] = truncate(
                text, budget, unit="chars", strategy="head_tail", head_share=head_share, path=name
            ).text
        else:
            out[name] = note(name, text)
        left -= len(out[name])
    return out


# ---------------------------------------------------------------------------------------------
# File reads.


def read_file_tool(style: Literal["openai", "anthropic"] = "openai", *, max_lines: int = 2000) -> dict[str, Any]:
    """The definition of a ``read_file`` tool matching :class:`FileReader`."""
    description = (
        f"Read a text file. Returns at most {max_lines} lines or 50 KB, whichever comes first, with line numbers; "
        "longer output ends with a hint telling the offset to continue from. Use offset and limit to read large "
        "files in parts, and grep to find what you need in very large ones."
    )
    return _tool("read_file", description, _paged_schema("path", "Path of the file."), style)


@dataclass
class _ReadRecord:
    number: int
    size: int
    mtime_ns: int
    content_hash: str
    start_line: int
    end_line: int


class FileReader:
    """File reads for an agent: :func:`agentcontext.read_page` with the given limits, plus dedup —
    reading the same range of an unchanged file again (same size, modification time and content
    hash) answers with a short stub naming the earlier read instead of the content."""

    def __init__(
        self,
        *,
        max_lines: int = 2000,
        max_bytes: int = 50 * 1024,
        line_max_chars: int = 2000,
        byte_gate: int | None = 256 * 1024,
        token_gate: int | None = 25_000,
        dedup: bool = True,
    ) -> None:
        for name, value in (("max_lines", max_lines), ("max_bytes", max_bytes), ("line_max_chars", line_max_chars)):
            _checks.count(name, value, minimum=1)
        _checks.optional_count("byte_gate", byte_gate)
        _checks.optional_count("token_gate", token_gate)
        self.limits: dict[str, Any] = {
            "max_lines": max_lines,
            "max_bytes": max_bytes,
            "line_max_chars": line_max_chars,
            "byte_gate": byte_gate,
            "token_gate": token_gate,
        }
        self.dedup = dedup
        self.reads = 0
        self._seen: dict[tuple[str, int | None, int | None], _ReadRecord] = {}

    def read(self, path: str | os.PathLike[str], offset: int | None = None, limit: int | None = None) -> str:
        """The answer to a read: the page, or a stub for a repeated read of an unchanged file.

        Raises:
            FileReadError: the read was refused (too large, binary, not UTF-8, past the end, ...);
                its message is the answer to give the model.
        """
        real = os.path.realpath(path)
        page: Page = read_page(path, offset, limit, **self.limits)
        stat = os.stat(real)
        self.reads += 1
        key = (real, offset, limit)
        previous = self._seen.get(key)
        record = _ReadRecord(
            self.reads, stat.st_size, stat.st_mtime_ns, page.content_hash, page.start_line, page.end_line
        )
        self._seen[key] = record
        if (
            self.dedup
            and previous is not None
            and (previous.size, previous.mtime_ns, previous.content_hash)
            == (record.size, record.mtime_ns, record.content_hash)
        ):
            record.number = previous.number
            of_total = "" if page.total_lines is None else f" of {page.total_lines}"
            return (
                f"[{os.fspath(path)} is unchanged since read #{previous.number} "
                f"(lines {previous.start_line}-{previous.end_line}{of_total}); "
                "that content is still above in this conversation, so it is not repeated.]"
            )
        return page.text

    def answer(self, path: str | os.PathLike[str], offset: int | None = None, limit: int | None = None) -> str:
        """Like :meth:`read`, but a refused read is answered with its message instead of raising."""
        try:
            return self.read(path, offset, limit)
        except FileReadError as exc:
            return str(exc)

    def forget(self, path: str | os.PathLike[str] | None = None) -> None:
        """Forget earlier reads (of one file, or all), e.g. after the conversation was compacted and
        the earlier content is no longer in context."""
        if path is None:
            self._seen.clear()
            return
        real = os.path.realpath(path)
        for key in [k for k in self._seen if k[0] == real]:
            del self._seen[key]


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
        """All open files as one block for the context, most recently used last."""
        return "\n\n".join(f'<file name="{name}">\n{self.view(name)}\n</file>' for name in self._files)


# ---------------------------------------------------------------------------------------------
# Presets.


@dataclass(frozen=True)
class BudgetPreset:
    """The budget numbers of a well-known harness, for comparison on the same transcripts."""

    name: str
    #: Per tool-result budget in chars (``None``: the policy default, min(16,000, 30% of window)).
    result_chars: int | None
    strategy: Strategy
    head_share: float
    persist_over_chars: int | None
    preview_chars: int
    message_limit_chars: int | None
    read_max_lines: int
    read_max_bytes: int
    read_line_max_chars: int | None
    read_byte_gate: int | None
    read_token_gate: int | None
    read_dedup: bool
    project_file_chars: int | None
    project_total_chars: int | None
    note: str = ""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "int":
                _checks.count(f.name, value)
            elif f.type == "int | None":
                _checks.optional_count(f.name, value)
            elif f.type == "float":
                _checks.number(f.name, value, high=1.0)

    def result_policy(self, context_window: int = 200_000, store: ResultStore | None = None) -> ToolResultPolicy:
        return ToolResultPolicy(
            context_window=context_window,
            budget_chars=self.result_chars,
            persist_over_chars=self.persist_over_chars,
            preview_chars=self.preview_chars,
            message_limit_chars=self.message_limit_chars,
            strategy=self.strategy,
            head_share=self.head_share,
            store=store,
        )

    def file_reader(self) -> FileReader:
        return FileReader(
            max_lines=self.read_max_lines,
            max_bytes=self.read_max_bytes,
            line_max_chars=self.read_line_max_chars or 1_000_000,
            byte_gate=self.read_byte_gate,
            token_gate=self.read_token_gate,
            dedup=self.read_dedup,
        )

    def with_(self, **changes: Any) -> BudgetPreset:
        return replace(self, **changes)


PRESETS: dict[str, BudgetPreset] = {
    preset.name: preset
    for preset in [
        BudgetPreset(
            name="openharness",
            result_chars=None,
            strategy="head_tail",
            head_share=0.5,
            persist_over_chars=50_000,
            preview_chars=2_000,
            message_limit_chars=200_000,
            read_max_lines=2_000,
            read_max_bytes=51_200,
            read_line_max_chars=2_000,
            read_byte_gate=262_144,
            read_token_gate=25_000,
            read_dedup=True,
            project_file_chars=12_000,
            project_total_chars=60_000,
            note="the seed design: head + marker + tail on every result",
        ),
        BudgetPreset(
            name="pi",
            result_chars=51_200,
            strategy="tail",
            head_share=0.0,
            persist_over_chars=None,
            preview_chars=2_000,
            message_limit_chars=None,
            read_max_lines=2_000,
            read_max_bytes=51_200,
            read_line_max_chars=None,
            read_byte_gate=None,
            read_token_gate=None,
            read_dedup=False,
            project_file_chars=None,
            project_total_chars=None,
            note="reads keep the head (2,000 lines / 50 KB); bash output keeps the tail",
        ),
        BudgetPreset(
            name="openclaw",
            result_chars=None,
            strategy="auto",
            head_share=0.5,
            persist_over_chars=None,
            preview_chars=2_000,
            message_limit_chars=None,
            read_max_lines=2_000,
            read_max_bytes=51_200,
            read_line_max_chars=None,
            read_byte_gate=None,
            read_token_gate=None,
            read_dedup=False,
            project_file_chars=12_000,
            project_total_chars=60_000,
            note="min(16,000 chars, 30% of window); head+tail when the tail is important",
        ),
        BudgetPreset(
            name="claude-code",
            result_chars=30_000,
            strategy="head",
            head_share=1.0,
            persist_over_chars=50_000,
            preview_chars=2_000,
            message_limit_chars=200_000,
            read_max_lines=2_000,
            read_max_bytes=1_073_741_824,
            read_line_max_chars=2_000,
            read_byte_gate=262_144,
            read_token_gate=25_000,
            read_dedup=True,
            project_file_chars=None,
            project_total_chars=None,
            note="persist >50,000 chars with a 2 KB preview; 200,000 per message; read dedup",
        ),
        BudgetPreset(
            name="codex",
            result_chars=40_000,
            strategy="head_tail",
            head_share=0.5,
            persist_over_chars=None,
            preview_chars=2_000,
            message_limit_chars=None,
            read_max_lines=2_000,
            read_max_bytes=51_200,
            read_line_max_chars=None,
            read_byte_gate=None,
            read_token_gate=None,
            read_dedup=False,
            project_file_chars=None,
            project_total_chars=None,
            note="head and tail halves of about 10,000 tokens (~40,000 chars)",
        ),
        BudgetPreset(
            name="letta",
            result_chars=5_000,
            strategy="head",
            head_share=1.0,
            persist_over_chars=None,
            preview_chars=2_000,
            message_limit_chars=None,
            read_max_lines=2_000,
            read_max_bytes=51_200,
            read_line_max_chars=None,
            read_byte_gate=None,
            read_token_gate=None,
            read_dedup=False,
            project_file_chars=None,
            project_total_chars=None,
            note="tool returns cut to 5,000 chars; open files scale with the window",
        ),
    ]
}
