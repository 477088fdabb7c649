"""Session snapshots: the exact, resumable state of a session, kept apart from its log.

A :class:`SnapshotStore` is one directory::

    current.json          the latest snapshot
    history/00000041.json earlier ones, newest numbered highest (at most ``keep``)
    .lock                 serializes writers between threads and processes

A snapshot holds the whole typed conversation, losslessly (its messages as the format it is in
writes them, unknown fields and key order kept, with that format and its encoding), the control state the caller gives (a JSON
object: mode, goal, judge state, pending permission request, compaction state, calibration — the
store does not interpret it), a fingerprint of the registry and settings, the turn number and why it
was taken.

Writes are atomic: the new snapshot is written to a temporary file in the directory and fsynced;
the previous ``current`` is hard-linked into ``history`` (so ``current`` exists at every instant);
the temporary file is renamed over ``current`` and the directory is fsynced. A process killed at any
point leaves a readable ``current``: the previous one or the new one, never a mixture.
:meth:`SnapshotStore.clear` (a user's ``/clear``) writes an empty ``current`` the same way, so a
later resume cannot bring back what was cleared (the old one stays in ``history``).

Reads are bounded: only regular files (never through a symlink), at most ``max_bytes`` each.
``history`` is opened as a directory without following a symlink each time it is listed, linked
into or pruned: one swapped in after the store was made is a :class:`SnapshotError`, not a place
to write or delete files.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import secrets
import shutil
import stat
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from agentcontext import _checks, _json
from agentcontext._core import Conversation
from agentcontext.errors import AgentContextError, OptionError, SnapshotError
from agentcontext.sessions.log_file import _lock
from agentcontext.types import Encoding, Format, SnapshotDict, SnapshotInfoDict

__all__ = ["SNAPSHOT_VERSION", "Snapshot", "SnapshotInfo", "SnapshotReason", "SnapshotStore"]

#: The version of the snapshot file layout this library writes and reads.
SNAPSHOT_VERSION = 1
#: The largest snapshot file read by default (bytes).
DEFAULT_MAX_BYTES = 1 << 30

#: Why a snapshot was taken: the end of an outer turn (a natural reply, a paused permission
#: request, a turn limit), a user's clear, or an explicit call.
SnapshotReason = Literal["reply", "permission", "turn_limit", "error", "clear", "manual"]
_REASONS: tuple[str, ...] = get_args(SnapshotReason)

_FORMATS: tuple[Format, ...] = ("openai", "responses", "anthropic", "jsonl")
_ENCODINGS: tuple[Encoding, ...] = get_args(Encoding)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)
_HISTORY_NAME = re.compile(r"(\d{8,})\.json")
_TEMP_PREFIX = ".snapshot-"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass(frozen=True)
class Snapshot:
    """One saved session state.

    ``conversation`` is the whole typed conversation; ``control`` a JSON object of the session's
    control state; ``fingerprint`` identifies the tool registry and settings the state was taken
    under (resume compares it with the current one); ``turn`` counts outer turns.
    """

    conversation: Conversation
    control: dict[str, Any] = field(default_factory=dict)
    fingerprint: str = ""
    turn: int = 0
    reason: SnapshotReason = "manual"
    created: str = field(default_factory=_now)

    def __post_init__(self) -> None:
        if not isinstance(self.conversation, Conversation):
            raise OptionError(f"conversation must be a Conversation, got {type(self.conversation).__name__}")
        if not isinstance(self.control, Mapping):
            raise OptionError(f"control must be a mapping (a JSON object), got {type(self.control).__name__}")
        # The snapshot's own copy: the caller's dict edited after, or a to_json() result edited,
        # does not change what this snapshot holds.
        try:
            object.__setattr__(self, "control", copy.deepcopy(dict(self.control)))
        except (TypeError, copy.Error, RecursionError) as exc:
            raise OptionError(f"control must be a JSON object; it cannot be copied: {exc}") from None
        if not isinstance(self.fingerprint, str):
            raise OptionError(f"fingerprint must be a string, got {type(self.fingerprint).__name__}")
        _checks.count("turn", self.turn)
        if self.reason not in _REASONS:
            raise OptionError(f"reason must be one of {', '.join(_REASONS)}, got {self.reason!r}")

    @property
    def empty(self) -> bool:
        """Whether the conversation holds no message (a cleared session)."""
        return len(self.conversation) == 0

    def to_json(self) -> SnapshotDict:
        """The file's JSON object."""
        conv = self.conversation
        return {
            "version": SNAPSHOT_VERSION,
            "created": self.created,
            "reason": self.reason,
            "turn": self.turn,
            "fingerprint": self.fingerprint,
            "format": conv.format,
            "encoding": conv.encoding,
            "tokens": conv.tokens,
            "messages": conv.to_format(conv.format),
            "control": copy.deepcopy(self.control),
        }

    @classmethod
    def from_json(cls, data: Any, *, path: str = "<snapshot>") -> Snapshot:
        """A snapshot from :meth:`to_json`'s object; :class:`SnapshotError` names what is wrong."""
        if not isinstance(data, dict):
            raise SnapshotError(f"{path}: a snapshot is a JSON object, got {type(data).__name__}", path, "invalid")
        version = data.get("version")
        if version != SNAPSHOT_VERSION:
            raise SnapshotError(
                f"{path}: snapshot version {version!r} (this library reads version {SNAPSHOT_VERSION})",
                path,
                "version",
            )
        messages = data.get("messages")
        control = data.get("control", {})
        if not isinstance(messages, list):
            raise SnapshotError(f"{path}: 'messages' must be a list", path, "invalid")
        if not isinstance(control, dict):
            raise SnapshotError(f"{path}: 'control' must be an object", path, "invalid")
        created = data.get("created", "")
        if not isinstance(created, str):
            raise SnapshotError(f"{path}: 'created' must be a string", path, "invalid")
        fmt, encoding = data.get("format"), data.get("encoding")
        if fmt not in _FORMATS:
            raise SnapshotError(f"{path}: unknown format {fmt!r}", path, "invalid")
        if encoding not in _ENCODINGS:
            raise SnapshotError(f"{path}: unknown encoding {encoding!r}", path, "invalid")
        try:
            conv = Conversation(messages, format=fmt, encoding=encoding)
            return cls(
                conv,
                control=control,
                fingerprint=data.get("fingerprint", ""),
                turn=data.get("turn", 0),
                reason=data.get("reason", "manual"),
                created=created,
            )
        except AgentContextError as exc:
            raise SnapshotError(f"{path}: {exc}", path, "invalid") from exc


@dataclass(frozen=True)
class SnapshotInfo:
    """What a snapshot file says about itself, read without rebuilding the conversation."""

    path: Path
    slot: int
    """0 for ``current``, 1 for the newest in ``history``, 2 for the one before, …"""
    created: str
    reason: str
    turn: int
    messages: int
    tokens: int
    format: str
    fingerprint: str
    control: dict[str, Any]

    def to_json(self) -> SnapshotInfoDict:
        return {
            "path": str(self.path),
            "slot": self.slot,
            "created": self.created,
            "reason": self.reason,
            "turn": self.turn,
            "messages": self.messages,
            "tokens": self.tokens,
            "format": self.format,
            "fingerprint": self.fingerprint,
            "control": self.control,
        }


class SnapshotStore:
    """The snapshots of one session, in ``directory`` (created, mode 0700; never a symlink).

    ``keep`` earlier snapshots stay in ``history`` (0 keeps none); a snapshot file over
    ``max_bytes`` is refused on read. ``create=False`` opens an existing store only (for readers:
    nothing is made; a missing directory is a :class:`SnapshotError` of kind ``"not_found"``, a
    missing ``history`` an empty history).
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        keep: int = 10,
        max_bytes: int = DEFAULT_MAX_BYTES,
        create: bool = True,
    ) -> None:
        self.keep = _checks.count("keep", keep)
        self.max_bytes = _checks.count("max_bytes", max_bytes, minimum=1)
        if not isinstance(directory, str | os.PathLike):
            raise OptionError(f"directory must be a path, got {type(directory).__name__}")
        self.directory = Path(_checks.file_name("directory", directory)).absolute()
        self._mutex = threading.RLock()  # held with the file lock: a fork waits for it
        _checks.hold_across_forks(self)
        for path in (self.directory, self.directory / "history"):
            if path.is_symlink():
                raise SnapshotError(f"{path}: a symlink; snapshots are not written through one", str(path), "symlink")
            if not create and not path.exists():
                if path != self.directory:
                    # No history yet (or it was removed): read as an empty one, nothing is made.
                    continue
                raise SnapshotError(f"{path}: no such snapshot directory", str(path), "not_found")
            if not create and not path.is_dir():
                raise SnapshotError(f"{path}: not a directory", str(path), "io")
            try:
                path.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError as exc:
                raise SnapshotError(f"{path}: cannot create the directory: {exc.strerror}", str(path), "io") from None
            if not path.is_dir():
                raise SnapshotError(f"{path}: not a directory", str(path), "io")

    def __repr__(self) -> str:
        return f"SnapshotStore({str(self.directory)!r}, keep={self.keep})"

    @property
    def current_path(self) -> Path:
        return self.directory / "current.json"

    # -- writing -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._mutex, self._file_locked():
            yield

    @contextlib.contextmanager
    def _file_locked(self) -> Iterator[None]:
        lock = self.directory / ".lock"
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _NONBLOCK | _BINARY, 0o600)
        except OSError as exc:
            if lock.is_symlink():
                raise SnapshotError(
                    f"{lock}: the lock file is a symlink; snapshots are not written through one", str(lock), "symlink"
                ) from None
            raise SnapshotError(f"{lock}: cannot open the lock file: {exc.strerror or exc}", str(lock), "io") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise SnapshotError(f"{lock}: the lock file is not a regular file", str(lock), "io")
            try:
                _lock(fd, exclusive=True)
            except OSError as exc:
                raise SnapshotError(f"{lock}: cannot lock: {exc.strerror or exc}", str(lock), "io") from None
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def save(self, snapshot: Snapshot) -> Path:
        """Make ``snapshot`` the current one (the previous current rotates into ``history``), and
        return the path of ``current``."""
        if not isinstance(snapshot, Snapshot):
            raise OptionError(f"save() takes a Snapshot, got {type(snapshot).__name__}")
        data = self._encode(snapshot)
        current = self.current_path
        with self._locked():
            self._remove_stale_temps()
            tmp = self.directory / f"{_TEMP_PREFIX}{secrets.token_hex(6)}.tmp"
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY, 0o600)
                _checks.replace_durably(fd, tmp, current, data, before=self._rotate)
            except OSError as exc:
                # A full disk, a read-only or vanished directory: named, and current is as it was.
                raise SnapshotError(
                    f"{current}: cannot save the snapshot: {exc.strerror or exc}; {current.name} is as it was",
                    str(current),
                    "io",
                ) from None
            try:
                _fsync_dir(self.directory)
                self._prune()
            except OSError as exc:
                raise SnapshotError(
                    f"{current}: the snapshot was saved, but making it durable or pruning the history failed: "
                    f"{exc.strerror or exc}",
                    str(current),
                    "io",
                ) from None
        return current

    def _encode(self, snapshot: Snapshot) -> bytes:
        """The file's bytes, made before anything is written: control state that is not JSON (an
        object of another type, a cycle) or not text (a lone surrogate) is a
        :class:`SnapshotError` (kind ``"invalid"``) and ``current`` stays as it was."""
        path = str(self.current_path)
        value = snapshot.to_json()
        try:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            raise SnapshotError(
                f"{path}: the snapshot is not JSON: {exc}; nothing was written", path, "invalid"
            ) from None
        if _checks.lone_surrogate(text) is not None:
            where = _surrogate_at(value)
            raise SnapshotError(
                f"{path}: {where} is not valid Unicode text (a lone surrogate); nothing was written", path, "invalid"
            )
        return text.encode("utf-8")

    def clear(self, *, control: Mapping[str, Any] | None = None, fingerprint: str = "", turn: int = 0) -> Path:
        """Write an empty current snapshot (a user's ``/clear``): what was cleared cannot come back on
        resume; the old current stays in ``history``, also when it cannot be read. ``control`` is
        what survives the clear (for example the mode)."""
        if control is not None and not isinstance(control, Mapping):
            raise OptionError(f"control must be a mapping (a JSON object) or None, got {type(control).__name__}")
        current = self._peek_current()
        fmt = current.format if current is not None else "jsonl"
        encoding = current.encoding if current is not None else "o200k_base"
        empty = Conversation([], format=fmt, encoding=encoding)
        return self.save(
            Snapshot(
                empty,
                control=dict(control if control is not None else {}),
                fingerprint=fingerprint,
                turn=turn,
                reason="clear",
            )
        )

    def _peek_current(self) -> Conversation | None:
        """The current conversation, for its format and encoding; None when there is none or it
        cannot be read (cut short, of another version, too large): a clear is what gets past such a
        file, which rotates into ``history`` as it is."""
        try:
            return self.load().conversation
        except SnapshotError:
            return None

    @contextlib.contextmanager
    def _history_dir(self) -> Iterator[int | None]:
        """``history`` opened as a directory, never through a symlink (one swapped in since the
        store was made would have saves link and pruning delete files wherever it leads): its
        descriptor, or None when there is none (a store opened with ``create=False``)."""
        folder = self.directory / "history"
        try:
            fd = os.open(folder, os.O_RDONLY | _DIRECTORY | _NOFOLLOW)
        except FileNotFoundError:
            yield None
            return
        except OSError as exc:
            if os.path.islink(folder):
                raise SnapshotError(
                    f"{folder}: a symlink; snapshots are not written or read through one", str(folder), "symlink"
                ) from None
            raise SnapshotError(f"{folder}: cannot be listed: {exc.strerror}", str(folder), "io") from None
        try:
            yield fd
        finally:
            os.close(fd)

    def _history_files(self) -> list[tuple[int, Path]]:
        with self._history_dir() as fd:
            if fd is None:
                return []
            return [(n, self.directory / "history" / name) for n, name in _history_names(fd)]

    def _rotate(self) -> None:
        """Put the current snapshot into ``history`` (current stays in place until replaced)."""
        current = self.current_path
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return
        if not stat.S_ISREG(mode):
            raise SnapshotError(f"{current}: not a regular file; not replaced", str(current), "symlink")
        if self.keep == 0:
            return
        folder = self.directory / "history"
        if not os.path.lexists(folder):  # a store opened with create=False that had none
            folder.mkdir(mode=0o700)
        with self._history_dir() as fd:
            if fd is None:  # removed again since it was made just above
                raise SnapshotError(f"{folder}: vanished while saving; current is as it was", str(folder), "io")
            names = _history_names(fd)
            name = f"{names[0][0] + 1 if names else 1:08d}.json"
            try:
                os.link(current, name, dst_dir_fd=fd)
            except OSError:
                # No hard links here (some file systems): a copy, made durable before it counts.
                tmp = f"{_TEMP_PREFIX}{secrets.token_hex(6)}.tmp"
                source = os.open(current, os.O_RDONLY | _NOFOLLOW | _BINARY)  # (as lstat found it)
                with os.fdopen(source, "rb") as src:
                    out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY, 0o600, dir_fd=fd)
                    with os.fdopen(out, "wb") as f:
                        shutil.copyfileobj(src, f)
                        f.flush()
                        os.fsync(f.fileno())
                os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
            os.fsync(fd)

    def _prune(self) -> None:
        with self._history_dir() as fd:
            if fd is None:
                return
            for _, name in _history_names(fd)[self.keep :]:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=fd)

    def _remove_stale_temps(self) -> None:
        # Writers hold the lock while a temporary file exists: any found under the lock is left by a
        # writer that died.
        for path in self.directory.glob(f"{_TEMP_PREFIX}*.tmp"):
            with contextlib.suppress(OSError):
                path.unlink()
        with self._history_dir() as fd:
            if fd is None:
                return
            with os.scandir(fd) as entries:
                stale = [e.name for e in entries if e.name.startswith(_TEMP_PREFIX) and e.name.endswith(".tmp")]
            for name in stale:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=fd)

    # -- reading -------------------------------------------------------------------------------

    def _path_of(self, slot: int) -> Path:
        slot = _checks.count("slot", slot)
        if slot == 0:
            return self.current_path
        files = self._history_files()
        if slot > len(files):
            raise SnapshotError(
                f"{self.directory}: no snapshot {slot} back (history holds {len(files)})",
                str(self.directory),
                "not_found",
            )
        return files[slot - 1][1]

    def _read(self, path: Path) -> Any:
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _BINARY)
        except FileNotFoundError:
            raise SnapshotError(f"{path}: no snapshot", str(path), "not_found") from None
        except OSError as exc:
            raise SnapshotError(f"{path}: cannot open: {exc.strerror}", str(path), "io") from None
        too_large = SnapshotError(f"{path}: over the {self.max_bytes:,}-byte limit (max_bytes)", str(path), "too_large")
        # Checked on the descriptor before it becomes a file object: os.fdopen refuses a directory
        # with an IsADirectoryError naming the descriptor ("Is a directory: 3"), not the path.
        try:
            st = os.fstat(fd)
        except OSError as exc:
            os.close(fd)
            raise SnapshotError(f"{path}: cannot read: {exc.strerror}", str(path), "io") from None
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            what = "a directory, not a snapshot file" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise SnapshotError(f"{path}: {what}", str(path), "io")
        with os.fdopen(fd, "rb") as f:
            if st.st_size > self.max_bytes:  # refused before reading (a huge sparse file costs no memory)
                raise too_large
            data = f.read(self.max_bytes + 1)
        if len(data) > self.max_bytes:
            raise too_large
        try:
            return _json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SnapshotError(f"{path}: not a JSON snapshot: {exc}", str(path), "invalid") from None
        except RecursionError:
            raise SnapshotError(f"{path}: not a JSON snapshot: nested too deeply", str(path), "invalid") from None

    def load(self, slot: int = 0) -> Snapshot:
        """The snapshot in ``slot`` (0 = current, 1 = the newest in history, …)."""
        path = self._path_of(slot)
        return Snapshot.from_json(self._read(path), path=str(path))

    def current(self) -> Snapshot | None:
        """The current snapshot, or None when none was saved yet."""
        try:
            return self.load()
        except SnapshotError as exc:
            if exc.kind == "not_found":
                return None
            raise

    def info(self, slot: int = 0) -> SnapshotInfo:
        """What snapshot ``slot`` says about itself, checked as :meth:`load` checks it (a field of the
        wrong type is a :class:`SnapshotError`, never shown as a default)."""
        path = self._path_of(slot)
        snapshot = Snapshot.from_json(self._read(path), path=str(path))
        conv = snapshot.conversation
        return SnapshotInfo(
            path=path,
            slot=slot,
            created=snapshot.created,
            reason=snapshot.reason,
            turn=snapshot.turn,
            messages=len(conv),
            tokens=conv.tokens,
            format=conv.format,
            fingerprint=snapshot.fingerprint,
            control=dict(snapshot.control),
        )

    def history_size(self) -> int:
        """How many snapshots ``history`` holds now (slots 1 to this)."""
        return len(self._history_files())

    def history(self) -> list[SnapshotInfo]:
        """Every snapshot, current first (an unreadable history file is skipped)."""
        out = []
        try:
            out.append(self.info(0))
        except SnapshotError as exc:
            if exc.kind != "not_found":
                raise
        for slot in range(1, self.history_size() + 1):
            with contextlib.suppress(SnapshotError):
                out.append(self.info(slot))
        return out


def _surrogate_at(value: Any) -> str:
    """Where in a JSON value the first string holding a lone surrogate is (``control['goal']``)."""
    stack: list[tuple[str, Any]] = [("snapshot", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            if _checks.lone_surrogate(item) is not None:
                return where
        elif isinstance(item, dict):
            for key, inner in reversed(list(item.items())):
                if isinstance(key, str) and _checks.lone_surrogate(key) is not None:
                    return f"a key of {where}"
                stack.append((f"{where}[{key!r}]" if where != "snapshot" else str(key), inner))
        elif isinstance(item, list | tuple):
            stack.extend((f"{where}[{i}]", inner) for i, inner in reversed(list(enumerate(item))))
    return "a string of the snapshot"


def _fsync_dir(path: Path) -> None:
    if sys.platform == "win32":  # pragma: no cover - directories cannot be fsynced there
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _history_names(fd: int) -> list[tuple[int, str]]:
    """The snapshot files in the ``history`` directory open as ``fd`` (regular files only, never
    a symlink), newest (highest number) first."""
    out = []
    with os.scandir(fd) as entries:
        for entry in entries:
            m = _HISTORY_NAME.fullmatch(entry.name)
            if m and entry.is_file(follow_symlinks=False):
                out.append((int(m.group(1)), entry.name))
    return sorted(out, reverse=True)
