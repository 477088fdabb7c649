"""Reading the small text files the compiler takes in (AGENTS.md, SKILL.md): only regular files,
never waiting on a FIFO, never more than a cap, with a root only files whose real path lies inside
it, and a reason instead of an exception when a file cannot be used."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from agentcontext._containment import opened_inside, outside_reason

_SPECIAL = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


@dataclass(frozen=True)
class ReadText:
    """What reading a file gave: ``text`` (None when it could not be used, with ``problem`` saying
    why), whether invalid UTF-8 was replaced, and the file's identity (device, inode)."""

    text: str | None
    problem: str | None = None
    replaced: bool = False
    identity: tuple[int, int] = (0, 0)


def _kind(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _SPECIAL if test(mode)), "not a regular file")


def read_text(path: Path, max_bytes: int, *, root: str | None = None, within: str = "the workspace") -> ReadText:
    """The text of ``path`` (a symlink to a regular file is followed), at most ``max_bytes`` bytes.
    A FIFO, device, socket or directory is refused before a byte is read; a larger file is refused
    by its size, and by what was read when it grows; invalid UTF-8 is replaced (``replaced``).

    With ``root`` (a real path, see :func:`agentcontext._containment.real_root`), a file whose real path
    does not lie inside it is refused (``within`` names the root in the reason): the real path is
    opened without following a last symlink, and the opened file is checked again, so a symlink
    swapped in after the check is not followed out of the root."""
    target: str | Path = path
    flags = _FLAGS
    if root is not None:
        # Resolved once: the path checked is the path opened (a second resolution could meet a
        # symlink swapped in meanwhile).
        target, flags = os.path.realpath(path), _FLAGS | _NOFOLLOW
        why = outside_reason(path, root, within, target)
        if why is not None:
            return ReadText(None, why)
    try:
        kind = _kind(os.stat(target).st_mode)
    except OSError as exc:
        return ReadText(None, f"cannot be read: {exc.strerror or exc}")
    if kind is not None:
        return ReadText(None, f"is {kind}, not a regular file")
    try:
        fd = os.open(target, flags)
    except OSError as exc:
        return ReadText(None, f"cannot be read: {exc.strerror or exc}")
    if root is not None and not opened_inside(fd, os.fspath(target), root):
        os.close(fd)
        return ReadText(None, f"changed while being opened and no longer lies inside {within}; not read")
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        kind = _kind(info.st_mode)
        if kind is not None:
            return ReadText(None, f"is {kind}, not a regular file")
        if info.st_size > max_bytes:
            return ReadText(None, f"is {info.st_size:,} bytes, over the {max_bytes:,}-byte limit; not read")
        try:
            data = f.read(max_bytes + 1)
        except OSError as exc:
            return ReadText(None, f"cannot be read: {exc.strerror or exc}")
        if len(data) > max_bytes:
            return ReadText(None, f"grew past the {max_bytes:,}-byte limit while being read; not read")
    identity = (info.st_dev, info.st_ino)
    try:
        return ReadText(data.decode("utf-8"), identity=identity)
    except UnicodeDecodeError:
        return ReadText(data.decode("utf-8", errors="replace"), replaced=True, identity=identity)
