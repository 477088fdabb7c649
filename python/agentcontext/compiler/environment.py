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
import re
import shutil
import subprocess
from pathlib import Path

from agentcontext import _checks
from agentcontext._containment import one_line
from agentcontext.compiler.instructions import find_repo_root
from agentcontext.errors import OptionError

__all__ = ["environment_section", "git_state"]

#: Lines of ``git status --short`` kept; the rest are counted.
MAX_STATUS_LINES = 20


#: Settings that keep git from running a program the repository names, or writing to it.
_SAFE_CONFIG = (
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "diff.external=",
    "status.submoduleSummary=false",
    "safe.bareRepository=explicit",
)
#: Inherited variables that point git at another repository, work tree, index or object store
#: than the workspace's (of ``git rev-parse --local-env-vars``, those that are not configuration),
#: and GIT_EXTERNAL_DIFF, which names a program.
_REPOSITORY_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_GRAFT_FILE",
    "GIT_SHALLOW_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_EXTERNAL_DIFF",
)
_FILTER_COMMANDS = re.compile(r"^filter\.(.+)\.(clean|smudge|process)$", re.DOTALL)


def _search_path() -> str:
    """The absolute directories of ``PATH``: an empty or relative entry would be taken from the
    working directory, the workspace, which can hold a ``git`` (or a ``git-upload-pack``) of its
    own."""
    return os.pathsep.join(d for d in os.environ.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(d))


def _run(workspace: Path, root: Path, args: list[str], timeout: float) -> subprocess.CompletedProcess[bytes] | None:
    search = _search_path()
    program = shutil.which("git", path=search) if search else None
    if program is None:
        return None
    env = {k: v for k, v in os.environ.items() if k not in _REPOSITORY_ENV}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C", GIT_PAGER="cat", PATH=search)
    # No fetch: a partial clone fetches missing objects from its promisor remote while computing a
    # status, running the transport the repository's config names (remote.<name>.uploadpack,
    # core.sshCommand, a remote helper). Lazy fetching is off (git 2.44+) and no transport is
    # allowed (older git): a status that needs a missing object leaves the git lines out.
    env.update(GIT_NO_LAZY_FETCH="1", GIT_ALLOW_PROTOCOL="none")
    if root.parent != root:  # git looks for the repository no higher than ``root``
        env["GIT_CEILING_DIRECTORIES"] = str(root.parent)
    safe = [x for setting in _SAFE_CONFIG for x in ("-c", setting)]
    try:
        return subprocess.run(
            [program, "--no-pager", f"--work-tree={root}", *safe, *args],
            cwd=workspace,
            capture_output=True,
            timeout=timeout,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None


def _filters_off(workspace: Path, root: Path, timeout: float) -> list[str] | None:
    """``-c`` options that switch off every filter command the repository's config names (reading
    the config runs nothing), or None when one cannot be switched off on a command line."""
    done = _run(
        workspace,
        root,
        ["config", "-z", "--name-only", "--get-regexp", r"^filter\..*\.(clean|smudge|process)$"],
        timeout,
    )
    if done is None or done.returncode not in (0, 1):
        return None
    out: list[str] = []
    for name in done.stdout.decode("utf-8", errors="surrogateescape").split("\0"):
        m = _FILTER_COMMANDS.match(name)
        if m is None:
            continue
        if "=" in m.group(1):  # `-c` splits at the first "=": this driver cannot be named there
            return None
        for command in ("clean", "smudge", "process"):
            out += ["-c", f"filter.{m.group(1)}.{command}="]
    return out


def _git(workspace: Path, root: Path, args: list[str], timeout: float) -> str | None:
    done = _run(workspace, root, args, timeout)
    if done is None or done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", errors="replace")


def git_state(workspace: str | os.PathLike[str], *, timeout: float = 2.0) -> tuple[str, list[str]] | None:
    """``(branch, status lines)`` of the repository ``workspace`` is in, or None (not a repository,
    git missing, or git did not answer within ``timeout`` seconds). A detached HEAD is
    ``"(detached at <short sha>)"``. The branch and every line are on one line (escaped when they
    hold a character that is not printable)."""
    _checks.number("timeout", timeout, low=0.0, low_open=True)
    ws = Path(workspace).resolve()
    root = find_repo_root(ws)
    if root is None:
        return None
    filters_off = _filters_off(ws, root, timeout)
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
    _checks.count("max_chars", max_chars, minimum=1)
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
        f"Shell: {shell}",
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
