"""Project memory records: one markdown file per record, with front matter, in one directory per
project.

A record file ``NAME.md``::

    ---
    name: NAME
    description: one line, what the record is about
    type: user | feedback | project | reference
    updated: 2026-11-30T20:45:16Z
    ---
    the body (markdown)

Writes are atomic (a temporary file in the same directory, fsynced, renamed over the record) and
serialized between processes by a lock file, so concurrent writers never lose a record and a
reader never sees half of one. Names are slugs, so a name can never leave the directory; files are
opened without following symlinks and records are capped in size. Reading and indexing are done by
the Rust core (:class:`agentcontext._core.MemoryIndex`), which reports broken files one by one.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import json
import os
import re
import secrets
import stat
import sys
import threading
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path

from agentcontext import _checks
from agentcontext._core import MEMORY_MAX_RECORD_BYTES, MemoryIndex, check_memory_record
from agentcontext.errors import MemoryRecordError, OptionError
from agentcontext.types import MemoryHit, MemoryRecord, MemoryRecordWithBody, RecordType

__all__ = [
    "MEMORY_TYPES",
    "MemoryStore",
    "RecordType",
    "default_memory_root",
    "is_slug",
    "slugify",
]

#: The record types, in the order the index lists them.
MEMORY_TYPES: tuple[RecordType, ...] = ("user", "feedback", "project", "reference")
#: The longest description (characters), as the index accepts it.
MAX_DESCRIPTION_CHARS = 300

_SLUG = re.compile(r"[a-z0-9][a-z0-9_-]{0,99}")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


#: What the core refuses in a description (``src/memory/record.rs``, ``is_bidi_control``): the
#: characters that reorder what a reader sees of the rest of the line.
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def is_bidi_control(c: str) -> bool:
    """Whether ``c`` is a bidirectional embedding, override, isolate or mark."""
    return c in BIDI_CONTROLS


def is_slug(name: object) -> bool:
    """Whether ``name`` is a record name: 1 to 100 of ``a-z 0-9 - _``, not starting with - or _."""
    return isinstance(name, str) and _SLUG.fullmatch(name) is not None


def slugify(text: str) -> str:
    """A record name made from free text: lower case, runs of anything else than a-z, 0-9 and _
    turned into one ``-``, at most 100 characters. Raises :class:`OptionError` if nothing is left."""
    slug = re.sub(r"[^a-z0-9_]+", "-", text.lower()).strip("-_")[:100].strip("-_")
    if not slug:
        raise OptionError(f"cannot make a record name from {text[:60]!r} (use a-z, 0-9, - and _)")
    return slug


def default_memory_root() -> Path:
    """Where project memories live by default: ``agentcontext/memory`` under the user's data
    directory (``$XDG_DATA_HOME`` or ``~/.local/share``; ``~/Library/Application Support`` on
    macOS; ``%LOCALAPPDATA%`` on Windows)."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "agentcontext" / "memory"


def project_key(project_root: str | os.PathLike[str]) -> str:
    """The directory name of a project's memory: its folder name and a hash of its resolved path,
    so two checkouts with the same name do not share records."""
    resolved = Path(project_root).resolve()
    digest = hashlib.sha256(os.fsencode(resolved)).hexdigest()[:16]
    stem = re.sub(r"[^a-z0-9_]+", "-", resolved.name.lower()).strip("-_")[:40] or "root"
    return f"{stem}-{digest}"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _value(text: str) -> str:
    return json.dumps(text, ensure_ascii=False) if text[:1] in {'"', "'"} else text


def render_record(name: str, description: str, type: str, body: str, updated: str | None = None) -> str:
    """The file text of a record (front matter, then the body)."""
    return (
        f"---\nname: {name}\ndescription: {_value(description)}\ntype: {type}\nupdated: {updated or _now()}\n---\n"
        f"{body}"
    )


def check_fields(name: str, description: str, type: str) -> None:
    """Raise :class:`OptionError` naming the first field that the index would not accept."""
    if not is_slug(name):
        raise OptionError(f"record name {name!r} is not a slug (1-100 of a-z, 0-9, - and _; not starting with - or _)")
    if not isinstance(description, str) or not description.strip():
        raise OptionError(f"record {name}: description must be a non-empty line")
    if description != description.strip() or any(
        (c.isspace() and c != " ") or unicodedata.category(c) == "Cc" for c in description
    ):
        raise OptionError(
            f"record {name}: description must be one line without leading or trailing spaces or control characters"
        )
    if any(is_bidi_control(c) for c in description):
        raise OptionError(f"record {name}: description holds a bidirectional control character")
    _checks.text(f"record {name}: description", description)
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise OptionError(
            f"record {name}: description is {len(description)} characters (at most {MAX_DESCRIPTION_CHARS})"
        )
    if type not in MEMORY_TYPES:
        raise OptionError(f"record {name}: type {type!r} is not one of {', '.join(MEMORY_TYPES)}")


class MemoryStore:
    """The memory records of one project.

    ``MemoryStore(project_root)`` keeps them in ``root / project_key(project_root)`` (``root``
    defaults to :func:`default_memory_root`); ``MemoryStore(directory=path)`` uses ``path`` itself.
    The directory is created (mode 0700) if needed; it must not be a symlink.
    """

    def __init__(
        self,
        project_root: str | os.PathLike[str] | None = None,
        *,
        root: str | os.PathLike[str] | None = None,
        directory: str | os.PathLike[str] | None = None,
        max_record_bytes: int = MEMORY_MAX_RECORD_BYTES,
    ) -> None:
        if (project_root is None) == (directory is None):
            raise OptionError("give either project_root or directory")
        for name, path in (("project_root", project_root), ("root", root), ("directory", directory)):
            if path is not None:
                _checks.path_argument(name, path)
        if _checks.count("max_record_bytes", max_record_bytes, minimum=1) > MEMORY_MAX_RECORD_BYTES:
            raise OptionError(
                f"max_record_bytes must be between 1 and {MEMORY_MAX_RECORD_BYTES}, got {max_record_bytes}"
            )
        self.project_root = Path(project_root).resolve() if project_root is not None else None
        if directory is None:
            assert project_root is not None
            directory = Path(root if root is not None else default_memory_root()) / project_key(project_root)
        self.directory = Path(directory).absolute()
        self.max_record_bytes = max_record_bytes
        self._mutex = threading.RLock()  # held with the file lock: a fork waits for it
        _checks.hold_across_forks(self)
        if self.directory.is_symlink():
            raise MemoryRecordError(f"{self.directory}: the memory directory is a symlink", "", "symlink")
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise MemoryRecordError(f"{self.directory}: cannot create the memory directory: {exc}", "", "io") from None
        if not self.directory.is_dir() or self.directory.is_symlink():
            raise MemoryRecordError(f"{self.directory}: not a directory", "", "io")
        self.index = MemoryIndex(self.directory)

    def __repr__(self) -> str:
        return f"MemoryStore({str(self.directory)!r})"

    # -- paths and locking ---------------------------------------------------------------------

    def path_of(self, name: str) -> Path:
        """The file of record ``name`` (raises :class:`OptionError` for a name that is not a slug)."""
        if not is_slug(name):
            raise OptionError(
                f"record name {name!r} is not a slug (1-100 of a-z, 0-9, - and _; not starting with - or _)"
            )
        return self.directory / f"{name}.md"

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's write lock (between threads and processes) for a read-modify-write.

        The lock file ``.lock`` is opened without following a symlink: a symlink (or anything that
        cannot be opened as the lock) there is a :class:`MemoryRecordError` (kind ``"symlink"`` or
        ``"io"``) and nothing is written."""
        with self._mutex, self._file_locked():
            yield

    @contextlib.contextmanager
    def _file_locked(self) -> Iterator[None]:
        lock = self.directory / ".lock"
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _NONBLOCK, 0o600)
        except OSError as exc:
            if lock.is_symlink():
                raise MemoryRecordError(
                    f"{lock}: the lock file is a symlink; the memory store is not written through one", "", "symlink"
                ) from None
            raise MemoryRecordError(f"{lock}: cannot open the lock file: {exc.strerror or exc}", "", "io") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise MemoryRecordError(f"{lock}: the lock file is not a regular file", "", "io")
            if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
                import msvcrt

                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)  # type: ignore[attr-defined]
            else:
                import fcntl

                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                except OSError as exc:
                    raise MemoryRecordError(f"{lock}: cannot lock: {exc.strerror or exc}", "", "io") from None
            yield
        finally:
            os.close(fd)

    def _encode(self, name: str, text: str) -> bytes:
        """``text`` as UTF-8, checked before anything is written (a lone surrogate is not text:
        the record on disk is left as it was)."""
        where = _checks.lone_surrogate(text)
        if where is not None:
            raise MemoryRecordError(
                f"record {name}: not valid Unicode text: a lone surrogate at {where}; nothing was written",
                name,
                "invalid",
            )
        return text.encode("utf-8")

    def _write_file(self, name: str, text: str) -> None:
        data = self._encode(name, text)
        if len(data) > self.max_record_bytes:
            raise MemoryRecordError(
                f"record {name}: {len(data):,} bytes, over the {self.max_record_bytes:,}-byte limit for a record "
                "(keep records short; split or summarize)",
                name,
                "too_large",
            )
        target = self.path_of(name)
        if target.is_symlink() or (target.exists() and not target.is_file()):
            raise MemoryRecordError(f"record {name}: {target} is not a regular file; not replaced", name, "symlink")
        tmp = self.directory / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
        except OSError as exc:
            raise MemoryRecordError(f"record {name}: cannot write: {exc.strerror or exc}", name, "io") from None
        try:
            _checks.replace_durably(fd, tmp, target, data)
        except OSError as exc:
            raise MemoryRecordError(
                f"record {name}: cannot write: {exc.strerror or exc}; the record was left as it was", name, "io"
            ) from None
        with contextlib.suppress(OSError):
            dir_fd = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)

    def read_text(self, name: str) -> str:
        """The raw text of record ``name``'s file (front matter included), read without following a
        symlink and within the size cap."""
        path = self.path_of(name)
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
        except FileNotFoundError:
            raise MemoryRecordError(f"no memory record {name!r}", name, "not_found") from None
        except OSError as exc:
            raise MemoryRecordError(f"record {name}: cannot open {path.name}: {exc.strerror}", name, "io") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise MemoryRecordError(f"record {name}: {path.name} is not a regular file", name, "io")
        with os.fdopen(fd, "rb") as f:
            data = f.read(self.max_record_bytes + 1)
        if len(data) > self.max_record_bytes:
            raise MemoryRecordError(f"record {name}: over the {self.max_record_bytes:,}-byte limit", name, "too_large")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise MemoryRecordError(f"record {name}: not UTF-8", name, "invalid") from None

    # -- records ---------------------------------------------------------------------------------

    def write(self, name: str, *, description: str, type: RecordType, body: str = "") -> MemoryRecordWithBody:
        """Create or replace record ``name`` (atomically) and return it as :meth:`get` does."""
        check_fields(name, description, type)
        if not isinstance(body, str):
            raise OptionError(f"record {name}: body must be a string")
        _checks.text(f"record {name}: body", body)
        with self.locked():
            # Checked as the index reads it before the file is replaced: a record the index would
            # refuse is never written over a good one.
            self._write_checked(name, render_record(name, description, type, body))
            # Read back under the lock: another process may delete or replace it the moment it is released.
            return self.get(name)

    def write_text(self, name: str, text: str) -> MemoryRecordWithBody:
        """Replace record ``name``'s whole file with ``text`` (front matter included) after checking
        that the index accepts it; the file is left as it was if not."""
        with self.locked():
            self._write_checked(name, text)
            return self.get(name)

    def _write_checked(self, name: str, text: str) -> None:
        problem = self.check_text(name, text)
        if problem is not None:
            raise MemoryRecordError(f"record {name}: {problem}", name, "invalid")
        self._write_file(name, text)

    def check_text(self, name: str, text: str) -> str | None:
        """Why the index would not accept ``text`` as record ``name``'s file, or None."""
        where = _checks.lone_surrogate(text)
        if where is not None:
            return f"not valid Unicode text: a lone surrogate at {where}"
        return check_memory_record(f"{name}.md", text)

    def get(self, name: str) -> MemoryRecordWithBody:
        """Record ``name``: ``name``, ``type``, ``description``, ``updated``, ``file``, ``bytes`` and
        ``body``. Raises :class:`MemoryRecordError` (``kind="not_found"``, or ``"invalid"`` with the
        reason for a broken file)."""
        self.path_of(name)
        self.index.refresh()
        record = self.index.get(name)
        if record is None:
            for file, reason in self.index.problems():
                if file == f"{name}.md":
                    raise MemoryRecordError(f"record {name}: {reason}", name, "invalid")
            raise MemoryRecordError(f"no memory record {name!r}", name, "not_found")
        return record

    def __contains__(self, name: object) -> bool:
        return is_slug(name) and (self.directory / f"{name}.md").is_file()

    def delete(self, name: str) -> bool:
        """Delete record ``name``; False if there was none. A broken record file is deleted too."""
        path = self.path_of(name)
        with self.locked():
            try:
                if path.is_dir() and not path.is_symlink():
                    raise MemoryRecordError(f"record {name}: {path.name} is a directory; not deleted", name, "io")
                path.unlink()
            except FileNotFoundError:
                return False
            except OSError as exc:
                raise MemoryRecordError(f"record {name}: cannot delete: {exc.strerror or exc}", name, "io") from None
        return True

    def rename(self, old: str, new: str) -> MemoryRecordWithBody:
        """Rename record ``old`` to ``new`` (its front matter name too); refuses to overwrite."""
        with self.locked():
            text = self.read_text(old)
            if self.path_of(new).exists() or self.path_of(new).is_symlink():
                raise MemoryRecordError(f"record {new} already exists", new, "exists")
            # Only the name changes: the line's own ending (\r\n in a CRLF file) is kept.
            renamed = re.sub(r"(?m)^name:[^\r\n]*", f"name: {new}", text, count=1)
            self._write_checked(new, renamed)
            try:
                self.path_of(old).unlink()
            except OSError as exc:
                raise MemoryRecordError(
                    f"record {old}: copied to {new}, but {old}.md cannot be removed: {exc.strerror or exc}", old, "io"
                ) from None
            return self.get(new)

    def list(self) -> builtins.list[MemoryRecord]:
        """Every valid record (without bodies), in index order: by type, then name."""
        self.index.refresh()
        return self.index.records()

    def problems(self) -> builtins.list[tuple[str, str]]:
        """Files in the directory that are not valid records: (file name, reason)."""
        self.index.refresh()
        return self.index.problems()

    def search(self, query: str, *, regex: bool = False, limit: int = 10) -> builtins.list[MemoryHit]:
        """Records matching ``query`` (words, case-insensitive; or a regular expression) in name,
        description or body, best first, with a snippet of the body."""
        if isinstance(query, str):
            _checks.text("query", query)
        self.index.refresh()
        return self.index.search(query, regex=regex, limit=limit)

    def render_index(self, *, max_lines: int = 200, max_bytes: int = 25_000) -> str:
        """The index for the system prompt (see :meth:`agentcontext._core.MemoryIndex.render`)."""
        self.index.refresh()
        return self.index.render(max_lines=max_lines, max_bytes=max_bytes)

    def __len__(self) -> int:
        self.index.refresh()
        return len(self.index)
