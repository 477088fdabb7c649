"""Containment for the files a repository or the model can name (project instructions, skills,
files a judge or a read tool opens): such a file is read only when its real path — every symlink
resolved — lies inside a root the caller chose, and the file that was opened is checked again
after the open, so a symlink swapped in between is caught. Names shown in a prompt are rendered on
one line.

A hard link is the file itself, so a hard link inside the root is inside: its path has no symlink
to resolve and no other name to check. It cannot carry a secret in from outside: a git clone never
creates one, no ``/proc`` file can be linked (another file system), and on Linux only who owns the
file or may read and write it can link it (``fs.protected_hardlinks``), who could read it anyway.

:func:`read_text` reads such a small text file (project instructions, a skill, a memory anchor):
only a regular file, never waiting on a FIFO, never more than a cap, with a reason instead of an
exception when the file cannot be used."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ReadText", "inside", "one_line", "opened_inside", "outside_reason", "read_text", "real_root"]


def real_root(root: str | os.PathLike[str]) -> str:
    """The real path of ``root`` (symlinks resolved): what containment is checked against."""
    return os.path.realpath(root)


def inside(real: str, root: str) -> bool:
    """Whether the real path ``real`` is ``root`` or lies under it (both real paths)."""
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def outside_reason(path: str | os.PathLike[str], root: str, within: str, real: str | None = None) -> str | None:
    """None when the real path of ``path`` (``real`` when the caller has it) lies inside ``root``;
    otherwise why it is not read (``within`` names the root for the reader, e.g. "the workspace").

    The reason names a symlink's own text (what the repository holds), never the real path it
    resolves to: that would put the name of a file outside in the prompt (``AGENTS.md ->
    /proc/self/fd/3`` resolves to whatever file the process has open as descriptor 3)."""
    real = os.path.realpath(path) if real is None else real
    if inside(real, root):
        return None
    try:
        text = os.readlink(path)
    except (OSError, ValueError):  # not a symlink (a directory on the way leads out, or ..)
        return f"leads outside {within}; not read"
    return f"is a symlink to {one_line(text)}, outside {within}; not read"


def opened_inside(fd: int, real: str, root: str) -> bool:
    """Whether the file open at ``fd`` (opened from the real path ``real``) lies inside ``root``.

    Where the system names the file behind a descriptor (``/proc/self/fd``), that name decides;
    elsewhere ``real`` must lie inside ``root``, the open file must be the very file now at
    ``real`` (same device and inode) and ``real`` must still resolve to itself."""
    try:
        shown = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        shown = None
    if shown is not None and shown.startswith(os.sep):
        return inside(shown.removesuffix(" (deleted)"), root)
    if not inside(real, root):
        return False
    try:
        now = os.stat(real, follow_symlinks=False)
        opened = os.fstat(fd)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino) and os.path.realpath(real) == real


def one_line(text: str) -> str:
    """``text`` as it is when every character is printable; otherwise its escaped, quoted form
    (``'mcp:a\\n# SYSTEM'``), so a newline or another control character in a name can never start
    a line of its own in a prompt."""
    return text if text.isprintable() else repr(text)


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
