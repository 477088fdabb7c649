"""The environment section: working directory, platform, date, shell and, in a git repository,
the branch and a short status — gathered offline (``git`` runs locally with a timeout; no git, or
not a repository, just leaves those lines out), capped in size.

The repository is not trusted: its ``.git/config`` can name programs git would run while it
computes a status (``core.fsmonitor``, the clean/smudge/process filters, hooks). Git runs here
with all of them switched off on its command line (which beats the repository's config), with no
optional locks (nothing written to ``.git``) and without looking into submodules' work trees; a
filter that cannot be switched off that way leaves the git lines out. Nothing is fetched: a
partial clone does not fetch a missing object from its promisor remote (which would run the
transport program its config names); a status that needs one leaves the git lines out. The
``git`` program, and whatever it runs, is looked up in the absolute directories of ``PATH`` only
(never in the workspace). The work tree is the directory holding the nearest ``.git`` at or above
the workspace (a ``core.worktree`` in the repository's config, which could point anywhere, is not
used; no bare repository is taken, and git does not look above that directory), and variables
inherited from the parent that point git at another repository (``GIT_DIR``, ``GIT_WORK_TREE``,
``GIT_INDEX_FILE``, ...) are dropped; no ``.git`` there leaves the git lines out. The branch and status lines are shown one per line,
escaped when they hold a character that is not printable (a branch named ``main\u2028# SYSTEM``
cannot start a line of its own)."""

from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path

from agentcontext import _checks
from agentcontext._containment import one_line
from agentcontext._git import filters_off as _filters_off
from agentcontext._git import run as _run
from agentcontext.compiler.instructions import find_repo_root
from agentcontext.errors import ArgumentTypeError, OptionError

__all__ = ["environment_section", "git_state"]

#: Lines of ``git status --short`` kept; the rest are counted.
MAX_STATUS_LINES = 20


def _git(workspace: Path, root: Path, args: list[str], timeout: float) -> str | None:
    done = _run(workspace, args, timeout, root=root)
    if done is None or done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", errors="replace")


def git_state(workspace: str | os.PathLike[str], *, timeout: float = 2.0) -> tuple[str, list[str]] | None:
    """``(branch, status lines)`` of the repository ``workspace`` is in, or None (not a repository,
    git missing, or git did not answer within ``timeout`` seconds). A detached HEAD is
    ``"(detached at <short sha>)"``. The branch and every line are on one line (escaped when they
    hold a character that is not printable)."""
    _checks.path_argument("workspace", workspace)
    _checks.number("timeout", timeout, low=0.0, low_open=True)
    ws = Path(workspace).resolve()
    root = find_repo_root(ws)
    if root is None:
        return None
    filters_off = _filters_off(ws, timeout, root=root)
    if filters_off is None:
        return None
    status = _git(
        ws,
        root,
        [*filters_off, "status", "--porcelain=v1", "--branch", "--untracked-files=normal", "--ignore-submodules=dirty"],
        timeout,
    )
    if status is None:
        return None
    # Lines end in "\n" only: a branch or a file name may hold "\u2028" or "\x85", which
    # str.splitlines() would take for line ends.
    lines = status.split("\n")
    if lines and not lines[-1]:
        lines.pop()
    head, rest = (lines[0], lines[1:]) if lines and lines[0].startswith("## ") else ("", lines)
    branch = head[3:].split("...", 1)[0].strip()
    if branch.startswith("HEAD") or not branch:
        sha = _git(ws, root, ["rev-parse", "--short", "HEAD"], timeout)
        branch = f"(detached at {sha.strip()})" if sha else "(no commit yet)"
    elif branch.startswith("No commits yet on "):
        branch = branch.removeprefix("No commits yet on ") + " (no commit yet)"
    return one_line(branch), [one_line(line) for line in rest]


def environment_section(
    workspace: str | os.PathLike[str],
    *,
    git: bool = True,
    git_timeout: float = 2.0,
    max_chars: int = 2_000,
    today: datetime.date | None = None,
) -> str:
    """The environment section. Only the date (not the time) is shown, so the section stays the
    same all day; the git status lines are capped at 20 and the whole section at ``max_chars``
    (the status is cut first, with a line saying how many entries were left out)."""
    _checks.path_argument("workspace", workspace)
    _checks.count("max_chars", max_chars, minimum=1)
    _checks.flag("git", git)
    _checks.number("git_timeout", git_timeout, low=0.0, low_open=True)
    if today is not None and not isinstance(today, datetime.date):
        raise ArgumentTypeError(f"today must be a datetime.date or None, got {type(today).__name__}")
    ws = Path(workspace).resolve()
    if not ws.is_dir():
        raise OptionError(f"workspace {os.fspath(workspace)!r} is not a directory")
    day = today or datetime.datetime.now(datetime.timezone.utc).date()
    shell = os.environ.get("SHELL") or os.environ.get("COMSPEC") or "unknown"
    head = [
        "# Environment",
        "",
        f"Working directory: {one_line(str(ws))}",
        f"Platform: {platform.system()} {platform.release()} ({platform.machine()})",
        f"Date: {day.isoformat()}",
        f"Shell: {one_line(shell)}",
    ]
    state = git_state(ws, timeout=git_timeout) if git else None
    if state is None:
        text = "\n".join(head) + "\n"
        return text if len(text) <= max_chars else text[: max_chars - 1] + "\n"
    branch, status = state
    head.append(f"Git branch: {branch}")
    keep = min(len(status), MAX_STATUS_LINES)
    while True:
        body = head + (["Git status (short):", *status[:keep]] if status else ["Git status: clean"])
        if keep < len(status):
            body.append(f"... and {len(status) - keep} more")
        text = "\n".join(body) + "\n"
        if len(text) <= max_chars or keep == 0:
            break
        keep -= 1
    return text if len(text) <= max_chars else text[: max_chars - 1] + "\n"
