"""A subagent's own workspace: an empty directory, or a git worktree of the parent's repository,
and the branches a worktree child left (see :class:`~agentcontext.sessions.subagents.SubagentPolicy`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agentcontext._containment import one_line
from agentcontext._core import count_tokens
from agentcontext.errors import OptionError

__all__ = ["WorkspaceMode", "child_workspace", "repository"]

WorkspaceMode = Literal["shared", "directory", "worktree"]


@contextlib.contextmanager
def child_workspace(mode: WorkspaceMode, number: int, *, keep: bool, root: Path | None) -> Iterator[_Space]:
    """The workspace of child ``number`` (see :class:`~agentcontext.sessions.subagents.SubagentPolicy`):
    none (``shared``), an empty directory, or a git worktree of the repository at ``root`` (the
    parent's workspace; None: the current directory); removed afterwards unless ``keep``."""
    import shutil
    import subprocess
    import tempfile

    if mode == "shared":
        yield _Space()
        return
    base = repository(root) if mode == "worktree" else None
    if mode == "worktree" and base is None:
        raise OptionError("workspace='worktree' needs the parent's workspace to be a git repository")
    directory = Path(tempfile.mkdtemp(prefix=f"agentcontext-agent-{number}-"))
    try:
        space = _Space(directory)
        if base is not None:
            directory.rmdir()
            try:
                space = _Space(directory, base, _branch_refs(base))
                _git(base, "worktree", "add", "--quiet", "--detach", str(directory), "HEAD", files=True)
            except (OSError, subprocess.SubprocessError) as exc:
                why = getattr(exc, "stderr", None) or str(exc)
                raise OptionError(
                    f"workspace='worktree': git worktree add failed in {base}: {str(why).strip()[:300]}"
                ) from None
        yield space
    finally:
        if not keep:
            if base is not None:
                with contextlib.suppress(OSError, subprocess.SubprocessError):
                    _git(base, "worktree", "remove", "--force", str(directory))
            shutil.rmtree(directory, ignore_errors=True)


def repository(root: Path | None) -> Path | None:
    """The top of the git repository ``root`` (None: the current directory) is in, or None."""
    import subprocess

    root = root or Path.cwd()
    try:
        out = _git(root, "rev-parse", "--show-toplevel")
    except (OSError, subprocess.SubprocessError):
        return None
    top, here = Path(out.removesuffix("\n")).resolve(), Path(root).resolve()
    if top != here and top not in here.parents:
        # The repository's config (core.worktree) names a work tree elsewhere: git would add
        # a worktree of whatever repository lies there.
        raise OptionError(
            f"workspace='worktree': the repository of {one_line(str(here))} names a work tree outside it "
            f"({one_line(str(top))}); no worktree is made"
        )
    return top


@dataclass
class _Space:
    """A child's workspace: its directory, and for a worktree the repository and its branches
    (name -> commit) before the child started."""

    directory: Path | None = None
    repository: Path | None = None
    before: dict[str, str] = field(default_factory=dict)

    def branches(self) -> list[str]:
        """Branches of the repository made or moved since the child started (also by another
        process, or a sibling running at the same time: what the repository shows)."""
        import subprocess

        if self.repository is None:
            return []
        try:
            now = _branch_refs(self.repository)
        except (OSError, subprocess.SubprocessError):
            return []
        return sorted(name for name, commit in now.items() if self.before.get(name) != commit)


def _branch_refs(repository: Path) -> dict[str, str]:
    out = _git(repository, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads")
    refs = {}
    for line in out.splitlines():
        commit, _, ref = line.partition(" ")
        refs[ref.removeprefix("refs/heads/")] = commit
    return refs


def _git(cwd: Path, *args: str, files: bool = False) -> str:
    """git's output, run as :mod:`agentcontext._git` runs it: nothing the repository's config names
    (hooks, fsmonitor, filters) runs; ``files`` for a command that writes work-tree files."""
    from agentcontext import _git as git

    return git.output(cwd, *args, timeout=60.0, files=files)


#: The largest the line naming the branches a worktree child left may be, in tokens.
BRANCH_NOTE_TOKENS = 40


def branch_note(branches: Sequence[str], encoding: Literal["o200k_base", "cl100k_base"]) -> str:
    """``[subagent branches left in the repository: a, b (and 3 more)]`` within
    :data:`BRANCH_NOTE_TOKENS`."""
    shown = list(branches)
    while shown:
        more = len(branches) - len(shown)
        listed = ", ".join(shown) + (f" (and {more} more)" if more else "")
        text = f"[subagent branches left in the repository: {listed}]"
        if count_tokens(text, encoding=encoding) <= BRANCH_NOTE_TOKENS:
            return text
        shown.pop()
    return f"[subagent branches left in the repository: {len(branches)}, names too long to list]"
