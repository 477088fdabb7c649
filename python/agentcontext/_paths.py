"""Where a path named relative to a root (a workspace) really is: inside the root, following
symlinks only while they stay inside it."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["inside"]


def inside(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> tuple[Path | None, str | None]:
    """``(real path, None)`` when ``path`` (relative to ``root``, or absolute) resolves, every
    symlink followed, to ``root`` itself or a location under it; ``(None, why)`` when it leaves the
    root (``..``, an absolute path elsewhere, or a symlink pointing out). A missing file resolves
    lexically: the caller's open reports that it does not exist."""
    try:
        base = os.path.realpath(root)
        real = os.path.realpath(os.path.join(base, os.fspath(path)))
    except (ValueError, OSError) as exc:  # a NUL byte, a path the OS refuses
        return None, f"is not a usable path ({exc})"
    try:
        within = os.path.commonpath([base, real]) == base
    except ValueError:  # different drives (Windows)
        within = False
    if not within:
        return None, f"resolves to {real}, outside the workspace {base}"
    return Path(real), None
