"""Budgets on what enters the context: tool results, project files and file reads.

The cutting itself (head + marker + tail, tail importance, token fitting, JSON previews, paging)
runs in the Rust core; this module holds the policies, the store that keeps what was cut out,
and the stateful helpers (read dedup, open-file views).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from agentcontext import _checks
from agentcontext._core import Page, Truncation, json_preview, page_text, read_page, truncate
from agentcontext.errors import FileReadError, OptionError, RecallError
from agentcontext.types import TruncateStrategy as Strategy

__all__ = [
    "PRESETS",
    "BudgetPreset",
    "BudgetedResult",
    "FileReader",
    "OpenFiles",
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


class ResultStore:
    """A content-addressed store of full tool results, one file per result under ``directory``.

    The id of a text is derived from its SHA-256, so storing the same text twice gives the same
    id and one file. Writes go to a temporary file in the same directory and are renamed into
    place, so concurrent writers (threads or processes) of the same result leave one intact file
    and a reader never sees a partial one.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def id_for(text: str) -> str:
        return "r-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]

    def path_for(self, recall_id: str) -> Path:
        if not recall_id.startswith("r-") or not recall_id[2:].isalnum():
            raise RecallError(f"not a recall id: {recall_id!r}", recall_id)
        return self.directory / f"{recall_id}.txt"

    def put(self, text: str) -> str:
        """Store ``text`` and return its recall id."""
        recall_id = self.id_for(text)
        path = self.path_for(recall_id)
        if path.exists():
            return recall_id
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{recall_id}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return recall_id

    def get(self, recall_id: str) -> str:
        """The full text stored under ``recall_id``."""
        path = self.path_for(recall_id)
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise RecallError(f"no stored result with recall id {recall_id!r}", recall_id) from None

    def __contains__(self, recall_id: object) -> bool:
        return isinstance(recall_id, str) and recall_id.startswith("r-") and self.path_for(recall_id).exists()

    def recall(self, recall_id: str, offset: int = 1, limit: int = 500) -> str:
        """Lines ``offset`` .. ``offset + limit - 1`` of a stored result, with a continuation hint
        when more follow: the answer of the ``recall`` tool."""
        page = page_text(self.get(recall_id), offset, limit, name=f"result {recall_id}", line_numbers=False)
        return page.text


def recall_tool(style: Literal["openai", "anthropic"] = "openai") -> dict[str, Any]:
    """The definition of a ``recall`` tool that pages a stored result back, for a tool list."""
    description = (
        "Read back the full text of a tool result that was shortened or cleared from the conversation. "
        "Pass the recall id shown in its marker; use offset and limit to page through long results."
    )
    schema = _paged_schema("id", "The recall id from the marker, like r-3fa2...")
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
            content, budget, unit="chars", strategy=self.strategy, head_share=self.head_share, recall_id=recall_id
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
