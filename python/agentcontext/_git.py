"""Running git on a repository that is not trusted (private): every git the library runs goes
through here.

A repository's config can name programs git would run: ``core.fsmonitor``, the clean/smudge/process
filters, hooks (``post-checkout``, ``reference-transaction``, ``post-index-change`` run on a
``git worktree add``), an external diff. Git runs here with all of them switched off on its command
line (which beats every config file and the ``GIT_CONFIG_*`` variables), with no optional locks,
no submodule recursion and no transport at all (``protocol.allow=never``: the library never
fetches). The filters are switched off by name (:func:`filters_off`), so a command that reads or
writes work-tree files is refused when a filter's name cannot be written on a command line.

The ``GIT_*`` variables of the parent process are not passed on, but for the few that only choose
the user's own config files or stop the repository search: the others can point git at another
repository, index or object store (``GIT_DIR``, ``GIT_WORK_TREE``, ``GIT_INDEX_FILE``, ...), add
config (``GIT_CONFIG_PARAMETERS``, ``GIT_CONFIG_COUNT``), or name a program git runs
(``GIT_EXEC_PATH``, where ``git worktree add`` finds the ``git`` it runs for its checkout,
``GIT_EXTERNAL_DIFF``, ``GIT_SSH_COMMAND``, ``GIT_ASKPASS``, ``GIT_EDITOR``, ...).

Nothing is fetched: a partial clone does not fetch a missing object from its promisor remote
(which would run the transport program its config names). The ``git`` program, and whatever it
runs, is looked up in the absolute directories of ``PATH`` only, never in the working directory
(the workspace, which can hold a ``git`` of its own). No bare repository is taken implicitly
(``safe.bareRepository=explicit``); a caller that names the work tree (``root=``) gets
``--work-tree`` and a repository search that stops at it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = ["SAFE_CONFIG", "environment", "filters_off", "output", "run"]

#: Settings that keep git from running a program the repository names, or writing to it.
SAFE_CONFIG = (
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "diff.external=",
    "status.submoduleSummary=false",
    "submodule.recurse=false",
    "protocol.allow=never",
    "safe.bareRepository=explicit",
)
_FILTER_COMMANDS = re.compile(r"^filter\.(.+)\.(clean|smudge|process)$", re.DOTALL)

#: The ``GIT_*`` variables passed on: which of the user's own config files git reads, and where
#: its search for the repository stops. Every other one is dropped.
KEPT_VARIABLES = frozenset({"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "GIT_CEILING_DIRECTORIES"})


def search_path() -> str:
    """The absolute directories of ``PATH``: an empty or relative entry would be taken from the
    working directory, the workspace, which can hold a ``git`` (or a ``git-upload-pack``) of its
    own."""
    return os.pathsep.join(d for d in os.environ.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(d))


def environment(root: Path | None = None) -> dict[str, str]:
    """The environment git runs with: the parent's, without its ``GIT_*`` variables (but
    :data:`KEPT_VARIABLES`), with no optional locks, no terminal prompt, no pager, C messages,
    no lazy fetch and no transport, and ``PATH`` of its absolute directories only. With ``root``
    (the work tree), the repository search stops at it."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("GIT_") or k.upper() in KEPT_VARIABLES}
    env.update({"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_PAGER": "cat"})
    # A partial clone fetches missing objects from its promisor remote while computing a status,
    # running the transport the repository's config names (remote.<name>.uploadpack,
    # core.sshCommand, a remote helper): lazy fetching is off (git 2.44+) and no transport is
    # allowed (older git).
    env.update({"GIT_NO_LAZY_FETCH": "1", "GIT_ALLOW_PROTOCOL": "none", "PATH": search_path()})
    if root is not None and root.parent != root:
        env["GIT_CEILING_DIRECTORIES"] = str(root.parent)
    return env


def _run(
    cwd: Path, args: Sequence[str], timeout: float, root: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    env = environment(root)
    program = shutil.which("git", path=env["PATH"]) if env["PATH"] else None
    if program is None:
        raise FileNotFoundError("git was not found in the absolute directories of PATH")
    safe = [x for setting in SAFE_CONFIG for x in ("-c", setting)]
    tree = [] if root is None else [f"--work-tree={root}"]
    return subprocess.run(
        [program, "--no-pager", *tree, *safe, *args],
        cwd=cwd,
        capture_output=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def run(
    workspace: Path, args: list[str], timeout: float, *, root: Path | None = None
) -> subprocess.CompletedProcess[bytes] | None:
    """git ``args`` in ``workspace`` with :data:`SAFE_CONFIG` (and ``--work-tree=root`` when
    ``root`` is given), or None when git could not be run or did not finish within ``timeout``
    seconds."""
    try:
        return _run(workspace, args, timeout, root)
    except (OSError, subprocess.SubprocessError):
        return None


def filters_off(workspace: Path, timeout: float, *, root: Path | None = None) -> list[str] | None:
    """``-c`` options that switch off every filter command the repository's config names (reading
    the config runs nothing), or None when one cannot be switched off on a command line."""
    done = run(
        workspace,
        ["config", "-z", "--name-only", "--get-regexp", r"^filter\..*\.(clean|smudge|process)$"],
        timeout,
        root=root,
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


def output(cwd: Path, *args: str, timeout: float = 60.0, files: bool = False) -> str:
    """The output of git ``args`` run in ``cwd`` as :func:`run` does (decoded as file names are).
    ``files``: the command reads or writes work-tree files, so every filter is switched off first
    (:func:`filters_off`). Raises :class:`OSError` when git cannot be started,
    :class:`subprocess.TimeoutExpired`, :class:`subprocess.CalledProcessError` (with git's
    message as ``stderr``) when it fails, and :class:`subprocess.SubprocessError` when a filter
    cannot be switched off."""
    off: list[str] = []
    if files:
        got = filters_off(cwd, timeout)
        if got is None:
            raise subprocess.SubprocessError(
                f"git could not list the filters of the repository at {os.fspath(cwd)!r}, or one has a name "
                "that cannot be switched off on git's command line; git was not run"
            )
        off = got
    done = _run(cwd, [*off, *args], timeout)
    if done.returncode != 0:
        raise subprocess.CalledProcessError(
            done.returncode, ["git", *args], os.fsdecode(done.stdout), done.stderr.decode("utf-8", errors="replace")
        )
    return os.fsdecode(done.stdout)
