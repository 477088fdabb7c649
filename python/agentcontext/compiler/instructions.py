"""Project instructions: ``AGENTS.md`` / ``CLAUDE.md`` (configurable names) from the working
directory up to the repository root, fitted into the system prompt by
:func:`agentcontext.budgets.fit_project_files` (12,000 chars per file, 60,000 in all, 75% head and
25% tail of a file that is cut)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentcontext import _checks
from agentcontext._containment import one_line, read_text
from agentcontext.budgets import fit_project_files
from agentcontext.errors import OptionError

__all__ = ["DEFAULT_INSTRUCTION_NAMES", "ProjectInstructions", "find_repo_root", "project_instructions"]

#: The file names looked for in every directory, in this order.
DEFAULT_INSTRUCTION_NAMES: tuple[str, ...] = ("AGENTS.md", "CLAUDE.md")
#: A file larger than this is not read at all (it is listed as skipped).
MAX_INSTRUCTION_BYTES = 1 << 20


@dataclass(frozen=True)
class ProjectInstructions:
    """The project instruction files found, in prompt order (outermost first, nearest last)."""

    #: ``(shown path, text as it enters the prompt)``, outermost first.
    files: list[tuple[str, str]]
    #: Paths whose text was cut to fit (head + marker + tail, or replaced by a note).
    cut: list[str] = field(default_factory=list)
    #: ``(shown path, reason)`` of files found but not used.
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: Paths whose invalid UTF-8 bytes were replaced.
    replaced: list[str] = field(default_factory=list)

    def section(self) -> str | None:
        """The section text, or None when no file was found."""
        if not self.files and not self.skipped:
            return None
        lines = ["# Project instructions", ""]
        lines.append(
            "Instructions from the project's files, outermost first; when they disagree, the later (nearer) file wins."
        )
        read = ", ".join(one_line(p) for p, _ in self.files) or "none"
        lines.append(f"Files read: {read}.")
        if self.cut:
            lines.append(f"Cut to fit (the middle is left out): {', '.join(one_line(p) for p in self.cut)}.")
        if self.replaced:
            lines.append(f"Not valid UTF-8 (bad bytes replaced): {', '.join(one_line(p) for p in self.replaced)}.")
        for path, why in self.skipped:
            lines.append(f"Not read: {one_line(path)} {why}.")
        for path, text in self.files:
            lines += ["", f"## {one_line(path)}", "", text.rstrip("\n")]
        return "\n".join(lines) + "\n"


def find_repo_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding ``.git`` (a directory or a file, as in
    a worktree), or None.

    As git has it since 2.35.2 (its ``safe.directory`` check), a repository whose directory or
    ``.git`` belongs to another user is not taken, and nothing above it is looked at (None): in a
    shared directory (``/tmp/.git`` and ``/tmp/AGENTS.md`` made by another user) its files would
    otherwise be read as this workspace's project instructions. Where the system has no user ids
    (Windows), any owner is taken."""
    for d in (start, *start.parents):
        if os.path.lexists(d / ".git"):
            return d if _ours(d) and _ours(d / ".git") else None
    return None


def _ours(path: Path) -> bool:
    """Whether ``path`` (not followed if a symlink) belongs to the user this process runs as."""
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None:
        return True
    uid: int = geteuid()
    try:
        return os.lstat(path).st_uid == uid
    except OSError:
        return False


def project_instructions(
    workspace: str | os.PathLike[str],
    *,
    names: Sequence[str] = DEFAULT_INSTRUCTION_NAMES,
    per_file_chars: int = 12_000,
    total_chars: int = 60_000,
    head_share: float = 0.75,
) -> ProjectInstructions:
    """Find the instruction files from ``workspace`` up to the repository root (``workspace``
    alone when it is not in a repository), read them (regular files whose real path lies inside
    that root, at most 1 MiB each; a file reached twice through a symlink is read once; a symlink
    leading out of the root, a FIFO or a device is listed as not read, with the reason) and fit
    them: every file at most ``per_file_chars``, all at most ``total_chars``, each cut keeping
    ``head_share`` head and the rest tail. The nearest files are fitted first, so over the total
    the farthest are cut or left out first. Outermost first, nearest last, so the nearest wins."""
    _checks.path_argument("workspace", workspace)
    _checks.count("per_file_chars", per_file_chars)
    _checks.count("total_chars", total_chars)
    if isinstance(names, str) or not all(isinstance(n, str) and n and "/" not in n for n in names):
        raise OptionError(f"names must be a list of file names, got {names!r}")
    start = Path(workspace).resolve()
    if not start.is_dir():
        raise OptionError(f"workspace {os.fspath(workspace)!r} is not a directory")
    root = find_repo_root(start)
    dirs = [start] if root is None else [start, *start.parents[: len(start.parents) - len(root.parents)]]
    dirs.reverse()  # outermost first
    base = root or start
    within = "the repository" if root is not None else "the workspace"
    texts: dict[str, str] = {}
    skipped: list[tuple[str, str]] = []
    replaced: list[str] = []
    seen: set[tuple[int, int]] = set()
    for d in dirs:
        for name in names:
            path = d / name
            if not os.path.lexists(path):
                continue
            shown = os.path.relpath(path, base) if root is not None else name
            got = read_text(path, MAX_INSTRUCTION_BYTES, root=str(base), within=within)
            if got.text is None:
                skipped.append((shown, got.problem or "cannot be read"))
                continue
            if got.identity in seen:
                continue
            seen.add(got.identity)
            if got.replaced:
                replaced.append(shown)
            texts[shown] = got.text
    # Fitted nearest first (the nearest file gets the room first, the farthest is cut or left out
    # first), then shown outermost first.
    nearest_first = dict(reversed(texts.items()))
    fitted = fit_project_files(
        nearest_first, per_file_chars=per_file_chars, total_chars=total_chars, head_share=head_share
    )
    files = [(p, fitted[p]) for p in texts]
    cut = [p for p, t in files if t != texts[p]]
    return ProjectInstructions(files, cut, skipped, replaced)
