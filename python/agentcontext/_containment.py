"""Containment for the files a repository or the model can name (project instructions, skills,
files a judge or a read tool opens): such a file is read only when its real path — every symlink
resolved — lies inside a root the caller chose, and the file that was opened is checked again
after the open, so a symlink swapped in between is caught. Names shown in a prompt are rendered on
one line.

A hard link is the file itself, so a hard link inside the root is inside: its path has no symlink
to resolve and no other name to check. It cannot carry a secret in from outside: a git clone never
creates one, no ``/proc`` file can be linked (another file system), and on Linux only who owns the
file or may read and write it can link it (``fs.protected_hardlinks``), who could read it anyway."""

from __future__ import annotations

import os

__all__ = ["inside", "one_line", "opened_inside", "outside_reason", "real_root"]


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
