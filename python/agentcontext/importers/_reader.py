"""Reading transcript files (regular files only, at most ``max_bytes``), parsing them as JSON or
JSON Lines, and the helpers every importer uses to read values, text and names."""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any, Final, Union

from agentcontext import _checks, _json
from agentcontext.errors import (
    TranscriptError,
    TranscriptReadError,
)

JsonDict = dict[str, Any]
PathLike = Union[str, "os.PathLike[str]"]

#: The largest transcript file read unless ``max_bytes`` allows more: 1 GiB, as
#: :meth:`Conversation.from_file`. (The largest real session in the test corpus is 4 MB; parsed, a
#: transcript takes several times its size in memory.)
MAX_TRANSCRIPT_BYTES: Final = 1 << 30


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
        OptionError, ArgumentTypeError: ``max_bytes`` is not a positive integer (as
            :meth:`Conversation.from_file` says it).
    """
    max_bytes = _checks.count("max_bytes", max_bytes, minimum=1)
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
            f"is {size}, over the {_checks.human_size(max_bytes)} ({max_bytes} bytes) limit for a transcript; pass a larger "
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
            raise too_large(f"{_checks.human_size(info.st_size)} ({info.st_size} bytes)")
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
            doc = _json.loads(text)
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
            _json.loads(lines[first])
        except RecursionError:
            raise _too_deep(path, lines[first], first + 1) from None
        except json.JSONDecodeError:
            msg = f"{path}: line {whole.lineno}: {_not_read(whole)}"
            raise TranscriptError(msg, str(path), line=whole.lineno) from None
    out: list[tuple[int, Any]] = []
    for n, line in enumerate(lines[first:], start=first + 1):
        if not line.strip():
            continue
        try:
            out.append((n, _json.loads(line)))
        except RecursionError:
            raise _too_deep(path, line, n) from None
        except json.JSONDecodeError as err:
            msg = f"{path}: line {n}: {_not_read(err)}"
            raise TranscriptError(msg, str(path), line=n) from None
    return out


def _not_read(err: json.JSONDecodeError) -> str:
    """Why a line was not read: its JSON syntax error, or an integer Python cannot hold."""
    what = "" if isinstance(err, _json.IntegerTooLongError) else "not valid JSON: "
    return f"{what}{err.msg} (column {err.colno})"


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


def _obj(value: Any) -> JsonDict:
    """``value`` when it is an object, else an empty one."""
    return value if isinstance(value, dict) else {}


def _is_dict_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


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
