"""The memory tools a model calls: definitions and executors over a :class:`MemoryStore`.

- :class:`MemoryTools`: ``memory_show``, ``memory_write``, ``memory_delete``, ``memory_list`` and
  ``memory_search``, as OpenAI or Anthropic tool definitions, and :meth:`MemoryTools.execute`.
  The writes are for the root agent only (``root_only``): a subagent reads memory, and its
  findings reach memory through the agent that started it.
- :class:`AnthropicMemoryTool`: Anthropic's client-side memory tool (``memory_20250818``; commands
  ``view``, ``create``, ``str_replace``, ``insert``, ``delete``, ``rename`` on paths under
  ``/memories``) executed against the same store, so a Claude agent's memory calls work locally.

Executors return the text the model sees; a mistake of the model (a bad name, a missing record)
comes back as ``Error: ...`` text rather than an exception.
"""

from __future__ import annotations

import json
import os
import re
import stat
import unicodedata
from collections.abc import Mapping
from typing import Any, Literal

from agentcontext import _checks
from agentcontext._core import MEMORY_MAX_RECORD_BYTES
from agentcontext.errors import AgentContextError, ArgumentTypeError, MemoryRecordError, OptionError
from agentcontext.memory.store import (
    MAX_DESCRIPTION_CHARS,
    MEMORY_TYPES,
    MemoryStore,
    _value,
    is_bidi_control,
    is_slug,
    render_record,
    slugify,
)

__all__ = ["AnthropicMemoryTool", "MemoryTools"]

ToolStyle = Literal["openai", "anthropic"]


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str], style: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    if style == "anthropic":
        return {"name": name, "description": description, "input_schema": schema}
    if style == "openai":
        return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}
    raise OptionError(f'unknown tool style {style!r} (expected "openai" or "anthropic")')


_NAME = {
    "type": "string",
    "description": "The record's name (a slug: a-z, 0-9, - and _), as the memory index lists it.",
}


class MemoryTools:
    """Definitions and executor of the memory tools over ``store``."""

    #: The tools for the root agent only (the writes); subagents keep the reads.
    root_only: tuple[str, ...] = ("memory_write", "memory_delete")
    names = ("memory_show", "memory_write", "memory_delete", "memory_list", "memory_search")

    def __init__(self, store: MemoryStore) -> None:
        if not isinstance(store, MemoryStore):
            raise ArgumentTypeError(f"MemoryTools takes a MemoryStore, got {type(store).__name__}")
        self.store = store

    def definitions(self, style: ToolStyle = "openai") -> list[dict[str, Any]]:
        """The five tool definitions, for a request's tool list."""
        return [
            _tool(
                "memory_show",
                "Show the full body of a memory record listed in the memory index.",
                {"name": _NAME},
                ["name"],
                style,
            ),
            _tool(
                "memory_write",
                "Create or update a memory record (replaces the whole record). Keep what will matter in later "
                "sessions and cannot be derived from the code, git or docs. Types: user (who the user is and how "
                "they like to work), feedback (a correction or confirmation, with its reason), project (goals and "
                "context not in the code or git), reference (where external information lives).",
                {
                    "name": {**_NAME, "description": "Record name; free text is turned into a slug."},
                    "type": {"type": "string", "enum": list(MEMORY_TYPES)},
                    "description": {
                        "type": "string",
                        "description": f"One line (at most {MAX_DESCRIPTION_CHARS} characters) saying what it is about; "
                        "shown in the index.",
                    },
                    "body": {"type": "string", "description": "The record's content (markdown)."},
                },
                ["name", "type", "description", "body"],
                style,
            ),
            _tool(
                "memory_delete",
                "Delete a memory record: when the user asks to forget something, or the record is wrong or stale.",
                {"name": _NAME},
                ["name"],
                style,
            ),
            _tool("memory_list", "List every memory record (name, type, description).", {}, [], style),
            _tool(
                "memory_search",
                "Search memory records by words (or a regular expression) in their names, descriptions and bodies.",
                {
                    "query": {"type": "string", "description": "Words to look for, or a regular expression."},
                    "regex": {"type": "boolean", "description": "Treat query as a regular expression (default false)."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "At most this many."},
                },
                ["query"],
                style,
            ),
        ]

    def handles(self, name: str) -> bool:
        return name in self.names

    def execute(self, name: str, arguments: Mapping[str, Any] | str) -> str:
        """Run tool ``name`` with ``arguments`` (a dict, or the JSON string of an OpenAI call)."""
        return _text_out(self._execute(name, arguments))

    def _execute(self, name: str, arguments: Mapping[str, Any] | str) -> str:
        try:
            args = _arguments(arguments)
            if name == "memory_show":
                r = self.store.get(_str(args, "name"))
                return (
                    f"{r['name']} ({r['type']}, updated {r['updated'] or 'unknown'}): {r['description']}\n\n{r['body']}"
                )
            if name == "memory_write":
                record_name = slugify(_str(args, "name"))
                existed = record_name in self.store
                r = self.store.write(
                    record_name,
                    description=_str(args, "description").strip(),
                    type=_str(args, "type"),  # type: ignore[arg-type]  # checked by write
                    body=_str(args, "body", ""),
                )
                return f"{'Updated' if existed else 'Created'} memory record {r['name']} ({r['type']})."
            if name == "memory_delete":
                record_name = _str(args, "name")
                if self.store.delete(record_name):
                    return f"Deleted memory record {record_name}."
                return f"Error: no memory record {record_name!r}."
            if name == "memory_list":
                records = self.store.list()
                if not records:
                    return "No memory records."
                return "\n".join(f"- {r['name']} ({r['type']}): {r['description']}" for r in records)
            if name == "memory_search":
                limit = args.get("limit", 10)
                if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 50:
                    raise OptionError("limit must be an integer from 1 to 50")
                found = self.store.search(_str(args, "query"), regex=bool(args.get("regex", False)), limit=limit)
                if not found:
                    return "No memory record matches."
                lines = []
                for hit in found:
                    lines.append(f"- {hit['name']} ({hit['type']}): {hit['description']}")
                    lines += [f"    {s}" for s in hit["snippets"]]
                return "\n".join(lines)
        except AgentContextError as exc:
            return f"Error: {exc}"
        return f"Error: unknown memory tool {name!r} (known: {', '.join(self.names)})"


def _arguments(arguments: Mapping[str, Any] | str) -> Mapping[str, Any]:
    if isinstance(arguments, str):
        try:
            arguments = _checks.json_arguments(arguments or "{}")
        except OptionError:
            raise
        except ValueError as exc:
            raise OptionError(f"arguments are not JSON: {exc}") from None
    if not isinstance(arguments, Mapping):
        raise OptionError("arguments must be a JSON object")
    return arguments


def _str(args: Mapping[str, Any], key: str, default: str | None = None) -> str:
    value = args.get(key, default)
    if not isinstance(value, str):
        raise OptionError(f"{key} is required and must be a string")
    return value


# ---------------------------------------------------------------------------------------------
# Anthropic's memory tool.

ROOT = "/memories"


def _human(size: int) -> str:
    value = float(size)
    for unit in ("", "K", "M"):
        if value < 1024:
            return f"{value:.1f}{unit}" if unit else f"{int(value)}"
        value /= 1024
    return f"{value:.1f}G"


class _PathError(Exception):
    pass


class AnthropicMemoryTool:
    """Anthropic's client-side memory tool over ``store``: files ``/memories/NAME.md`` are the
    store's records, and a file's content, as this tool shows and edits it, is the record's body:
    the text the model wrote, with line numbers counted in it. The store keeps the record's front
    matter beside it (name, type, description, ``updated``), never shown to the model and never
    edited by it. A file created here becomes a ``created_type`` record whose description is the
    first line of its text (it follows that line through later edits, unless it was set otherwise,
    by ``memory_write`` for example); every edit refreshes ``updated``. The directory listing gives
    each file's name on one line (a name that is not a record name, escaped) and the size of its
    text."""

    root_only = True
    name = "memory"

    def __init__(self, store: MemoryStore, *, created_type: str = "project") -> None:
        if not isinstance(store, MemoryStore):
            raise ArgumentTypeError(f"AnthropicMemoryTool takes a MemoryStore, got {type(store).__name__}")
        if created_type not in MEMORY_TYPES:
            raise OptionError(f"created_type {created_type!r} is not one of {', '.join(MEMORY_TYPES)}")
        self.store = store
        self.created_type = created_type

    @staticmethod
    def definition() -> dict[str, Any]:
        """The tool entry for an Anthropic request's ``tools``."""
        return {"type": "memory_20250818", "name": "memory"}

    def _record(self, path: object) -> str | None:
        """The record name a path names; None for the directory itself."""
        if not isinstance(path, str):
            raise _PathError("Error: path is required and must be a string")
        # The directory may be named with a trailing slash; a file may not (``/memories/a.md/``
        # names a directory, not the record a.md).
        if path.rstrip("/") == ROOT:
            return None
        rest = path[len(ROOT) + 1 :] if path.startswith(ROOT + "/") else None
        if rest is None:
            raise _PathError(f"Error: {_one_line(path)} is outside {ROOT}; every memory path starts with {ROOT}/")
        name = rest[:-3] if rest.endswith(".md") else None
        if name is None or "/" in rest or not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,99}", name):
            raise _PathError(
                f"Error: {_one_line(path)} is not a memory file; memory files are {ROOT}/NAME.md with NAME made of "
                "lowercase letters, digits, - and _ (no subdirectories)"
            )
        return name

    def execute(self, command: Mapping[str, Any] | str) -> str:
        """Run one memory tool call (its ``input``) and return the text for the tool result."""
        return _text_out(self._execute(command))

    def _execute(self, command: Mapping[str, Any] | str) -> str:
        try:
            args = _arguments(command)
            kind = args.get("command")
            if kind == "view":
                return self._view(args)
            if kind == "create":
                return self._create(args)
            if kind == "str_replace":
                return self._str_replace(args)
            if kind == "insert":
                return self._insert(args)
            if kind == "delete":
                name = self._record(args.get("path"))
                if name is None:
                    return f"Error: cannot delete the {ROOT} directory itself"
                if not self.store.delete(name):
                    return f"Error: The path {args['path']} does not exist"
                return f"Successfully deleted {args['path']}"
            if kind == "rename":
                old, new = self._record(args.get("old_path")), self._record(args.get("new_path"))
                if old is None or new is None:
                    return f"Error: cannot rename the {ROOT} directory"
                self.store.rename(old, new)
                return f"Successfully renamed {args['old_path']} to {args['new_path']}"
            return f"Error: unknown command {kind!r} (view, create, str_replace, insert, delete, rename)"
        except _PathError as exc:
            return str(exc)
        except AgentContextError as exc:
            return f"Error: {exc}"

    def _listing(self) -> str:
        rows = [f"{_human(4096)}\t{ROOT}"]
        self.store.index.refresh()
        try:
            with os.scandir(self.store.directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            raise MemoryRecordError(
                f"{self.store.directory}: cannot list the memory directory: {exc.strerror or exc}", "", "io"
            ) from None
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue  # gone since it was listed
            if e.name.startswith(".") or not e.name.endswith(".md") or not stat.S_ISREG(st.st_mode):
                continue
            stem = e.name[:-3]
            if not is_slug(stem):
                # Not a record this tool can open; shown escaped so that no name can forge a line.
                shown = json.dumps(f"{ROOT}/{e.name}")
                rows.append(f"{_human(st.st_size)}\t{shown} (not a record name: this tool cannot open it)")
                continue
            record = self.store.index.get(stem)
            size = len(record["body"].encode("utf-8")) if record is not None else st.st_size
            rows.append(f"{_human(size)}\t{ROOT}/{e.name}")
        return (
            f"Here're the files and directories up to 2 levels deep in {ROOT}, excluding hidden items:\n"
            + "\n".join(rows)
        )

    def _view(self, args: Mapping[str, Any]) -> str:
        name = self._record(args.get("path"))
        if name is None:
            return self._listing()
        try:
            record = self.store.get(name)
        except AgentContextError as exc:
            if getattr(exc, "kind", "") == "not_found":
                return f"Error: The path {args['path']} does not exist. Please provide a valid path."
            raise
        lines = record["body"].split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        start, end = 1, len(lines)
        view_range = args.get("view_range")
        if view_range is not None:
            if (
                not isinstance(view_range, list)
                or len(view_range) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in view_range)
            ):
                return "Error: view_range must be [start_line, end_line]"
            start, end = view_range[0], view_range[1] if view_range[1] != -1 else len(lines)
            if not 1 <= start <= max(len(lines), 1) or end < start:
                return f"Error: view_range {view_range} is outside the file's lines 1-{len(lines)}"
        shown = "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(lines[start - 1 : end], start=start))
        return f"Here's the content of {args['path']} with line numbers:\n{shown}"

    def _create(self, args: Mapping[str, Any]) -> str:
        name = self._record(args.get("path"))
        if name is None:
            return f"Error: {ROOT} is a directory; create a file {ROOT}/NAME.md"
        text = _checks.text("file_text", _str(args, "file_text"))
        with self.store.locked():
            if name in self.store or self.store.path_of(name).is_symlink():
                return f"Error: File {args['path']} already exists"
            self.store._write_checked(name, render_record(name, _describe(text, name), self.created_type, text))
        return f"File created successfully at: {args['path']}"

    def _edit(self, name: str, path: str, change: Any) -> str:
        """Apply ``change`` (the record's body in, the new body or a refusal out) under the lock;
        the front matter is kept, with ``updated`` refreshed."""
        with self.store.locked():
            try:
                text = self.store.read_text(name)
                record = self.store.get(name)
            except AgentContextError as exc:
                if getattr(exc, "kind", "") == "not_found":
                    return f"Error: The path {path} does not exist. Please provide a valid path."
                raise
            body: str = record["body"]
            if not text.endswith(body):  # the file changed between the two reads (outside the lock)
                raise MemoryRecordError(f"record {name}: changed while it was read; try again", name, "io")
            after = change(body)
            if isinstance(after, _Refusal):
                return after.message
            front = _touch(text[: len(text) - len(body)])
            description = record["description"]
            if description == _describe(body, name) and _describe(after, name) != description:
                # A description taken from the first line follows it.
                line = f"description: {_value(_describe(after, name))}"
                front = re.sub(r"(?m)^description:[^\r\n]*", lambda _m: line, front, count=1)
            self.store._write_checked(name, front + after)
        return "The memory file has been edited."

    def _str_replace(self, args: Mapping[str, Any]) -> str:
        name = self._record(args.get("path"))
        if name is None:
            return f"Error: {ROOT} is a directory"
        old = _checks.text("old_str", _str(args, "old_str"))
        new = _checks.text("new_str", _str(args, "new_str", ""))
        if not old:
            return "Error: old_str must not be empty"

        def change(text: str) -> str | _Refusal:
            count = text.count(old)
            if count == 0:
                return _Refusal(
                    f"No replacement was performed, old_str `{old}` did not appear verbatim in {args['path']}."
                )
            if count > 1:
                lines = [n for n, ln in enumerate(text.split("\n"), start=1) if old.split("\n")[0] in ln]
                return _Refusal(
                    f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines {lines}. "
                    "Please ensure it is unique"
                )
            return text.replace(old, new, 1)

        return self._edit(name, args["path"], change)

    def _insert(self, args: Mapping[str, Any]) -> str:
        name = self._record(args.get("path"))
        if name is None:
            return f"Error: {ROOT} is a directory"
        at, insert = args.get("insert_line"), _checks.text("insert_text", _str(args, "insert_text"))
        if not isinstance(at, int) or isinstance(at, bool):
            return "Error: insert_line must be an integer"

        def change(text: str) -> str | _Refusal:
            lines = text.split("\n")
            trailing = lines[-1] == ""
            if trailing:
                lines.pop()
            if not 0 <= at <= len(lines):
                return _Refusal(f"Error: Invalid `insert_line` parameter: {at}. It should be within [0, {len(lines)}].")
            lines[at:at] = insert.split("\n")
            return "\n".join(lines) + ("\n" if trailing else "")

        return self._edit(name, args["path"], change)


def _describe(text: str, name: str) -> str:
    """The description of a record created through :class:`AnthropicMemoryTool`: the first line
    of its text with a letter or digit (markdown heading marks off, spaces squeezed, control
    and bidirectional control characters dropped, cut to the index's limit), or the record's name.

    Only the first :data:`MEMORY_MAX_RECORD_BYTES` characters are looked at: a longer text is over
    the record limit (each character is at least one byte) and is refused when written, so the
    description of every record that can be stored is the same, and a 10 MB text the model sends
    costs no more than the largest record (it took seconds, under the store's lock, character by
    character)."""
    first = ""
    for line in text[:MEMORY_MAX_RECORD_BYTES].splitlines():
        candidate = "".join(
            c for c in line.strip().lstrip("#") if unicodedata.category(c) != "Cc" and not is_bidi_control(c)
        )
        candidate = " ".join(candidate.split())
        if any(c.isalnum() for c in candidate):
            first = candidate
            break
    first = first or name
    if len(first) > MAX_DESCRIPTION_CHARS:
        first = first[: MAX_DESCRIPTION_CHARS - 1].rstrip() + "…"
    return first


def _one_line(text: str) -> str:
    """``text`` for a message: on one line (line breaks and control characters escaped)."""
    if text.isprintable():
        return text
    return json.dumps(text, ensure_ascii=False)[1:-1]


def _text_out(text: str) -> str:
    """A tool result is text: a lone surrogate echoed from the model's own input is escaped."""
    if _checks.lone_surrogate(text) is None:
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class _Refusal:
    def __init__(self, message: str) -> None:
        self.message = message


def _touch(text: str) -> str:
    """Refresh the ``updated`` line of the front matter (if it has one)."""
    from agentcontext.memory.store import _now

    end = text.find("\n---", 3)
    if not text.startswith("---") or end < 0:
        return text
    head, tail = text[:end], text[end:]
    head = re.sub(r"(?m)^updated:[^\r\n]*", f"updated: {_now()}", head, count=1)  # its line end kept
    return head + tail
