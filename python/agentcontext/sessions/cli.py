"""The ``agentcontext sessions`` commands: look at saved sessions before resuming one.

- ``agentcontext sessions list DIR [--json]``: every snapshot store in DIR (DIR itself, or the
  directories under it holding a ``current.json``, down to :data:`MAX_DEPTH` levels, symlinks not
  followed), one line each: turn, messages, tokens, mode, goal. A store that cannot be read is
  listed with the reason, the others still are. Directories deeper than that are not searched;
  a last line says below how many directories (``not_searched`` in ``--json``): list one of them
  to see its sessions.
- ``agentcontext sessions show DIR [--history N] [--json]``: one store's current snapshot and the N
  newest in its history: when and why each was taken, tokens, turns, mode, goal, last compaction.

Nothing here writes: a missing directory is an error (exit status 2), not created.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from agentcontext import _checks
from agentcontext.errors import OptionError, SnapshotError
from agentcontext.sessions.snapshots import SnapshotInfo, SnapshotStore

__all__ = ["MAX_DEPTH", "add_commands", "run"]

#: How many directory levels below DIR ``sessions list`` looks for stores.
MAX_DEPTH = 4


def add_commands(sub: Any) -> None:
    """Add ``sessions`` to the subcommands ``sub``."""
    sessions = _checks.read_command(
        sub,
        "sessions",
        help="list or show saved session snapshots",
        description="Read session snapshot directories (agentcontext.sessions.SnapshotStore); nothing is written.",
    )
    ssub = sessions.add_subparsers(dest="sessions_command", required=True, metavar="ACTION")
    listing = _checks.read_command(
        ssub,
        "list",
        help="every snapshot store in DIR, one line each",
        description="List every snapshot store under DIR (down to four levels, symlinks not followed): its turn, "
        "messages, tokens, mode and goal; a store that cannot be read is listed with why.",
    )
    listing.add_argument("directory", metavar="DIR", help="a snapshot store, or a directory of them")
    listing.add_argument("--json", action="store_true", help="print one JSON object")
    show = _checks.read_command(
        ssub,
        "show",
        help="a store's current snapshot and its history",
        description="Show a snapshot store's current snapshot (turn, messages, tokens, mode, goal, pending "
        "permission) and, with --history N, the N newest earlier ones.",
    )
    show.add_argument("directory", metavar="DIR", help="a snapshot store (holds current.json)")
    show.add_argument("--history", type=int, default=0, metavar="N", help="also show the N newest earlier snapshots")
    show.add_argument("--json", action="store_true", help="print one JSON object")


def _control_line(info: SnapshotInfo) -> str:
    control = info.control
    parts = []
    for key in ("mode", "goal"):
        value = control.get(key)
        if isinstance(value, dict):
            value = value.get("condition") or value.get("text") or json.dumps(value, ensure_ascii=False)
        if value:
            text = _checks.shown_line(str(value))
            parts.append(f"{key} {text[:60] + '…' if len(text) > 60 else text}")
    compaction = control.get("compaction")
    if isinstance(compaction, dict) and isinstance(compaction.get("count"), int) and compaction["count"] > 0:
        last = compaction.get("last")
        stages = " + ".join(map(str, last)) if isinstance(last, list) and last else "?"
        parts.append(f"{compaction['count']} compactions, the last: {stages}")
    return ", ".join(parts)


def _line(info: SnapshotInfo, name: str) -> str:
    what = "empty (cleared)" if info.messages == 0 else f"{info.messages:,} messages, {info.tokens:,} tokens"
    control = _control_line(info)
    return f"{name}: turn {info.turn}, {what}, {info.format}, {info.reason} at {_checks.shown_line(info.created)}" + (
        f"; {control}" if control else ""
    )


def _is_store(directory: Path) -> bool:
    """Whether ``directory`` holds an entry named ``current.json`` (of any kind: one that is not a
    readable snapshot makes a store listed as unreadable, not a directory skipped)."""
    return os.path.lexists(directory / "current.json")


def _stores(directory: Path) -> tuple[list[Path], list[tuple[Path, str]], list[Path]]:
    """The stores in ``directory`` (itself, or any directory under it down to :data:`MAX_DEPTH`
    levels; a store's own subdirectories and symlinks are not entered), sorted, the directories
    that could not be listed with why, and the directories :data:`MAX_DEPTH` levels down whose
    subdirectories were not searched (sorted)."""
    if _is_store(directory):
        return [directory], [], []
    if not directory.is_dir():
        if directory.exists():
            raise SnapshotError(f"{directory}: not a directory", str(directory), "io")
        raise SnapshotError(f"{directory}: no such directory", str(directory), "not_found")
    stores: list[Path] = []
    unlisted: list[tuple[Path, str]] = []
    level = [directory]
    for _ in range(MAX_DEPTH):
        below: list[Path] = []
        for folder in level:
            try:
                with os.scandir(folder) as entries:
                    subdirs = [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
            except OSError as exc:
                unlisted.append((folder, f"cannot be listed: {exc.strerror or exc}"))
                continue
            for sub in subdirs:
                (stores if _is_store(sub) else below).append(sub)
        level = below
    return sorted(stores), unlisted, sorted(d for d in level if _has_subdirectory(d))


def _has_subdirectory(folder: Path) -> bool:
    """Whether ``folder`` holds a directory (not a symlink to one): where a store could be."""
    try:
        with os.scandir(folder) as entries:
            return any(e.is_dir(follow_symlinks=False) for e in entries)
    except OSError:
        return True  # not listed: it may hold one


def _name(path: Path, directory: Path) -> str:
    """How a store is named in the listing: its path under DIR (DIR's own name when DIR is one)."""
    return path.name if path == directory else path.relative_to(directory).as_posix()


def _list(directory: Path, as_json: bool) -> int:
    stores, unlisted, deeper = _stores(directory)
    rows: list[tuple[Path, SnapshotInfo | None, str | None]] = []
    for path in stores:
        try:
            rows.append((path, SnapshotStore(path, create=False).info(0), None))
        except SnapshotError as exc:
            rows.append((path, None, str(exc)))
    rows += [(path, None, reason) for path, reason in unlisted]
    if as_json:
        out = [{"directory": str(p), **(i.to_json() if i is not None else {"error": e})} for p, i, e in rows]
        listing = {"directory": str(directory), "sessions": out, "not_searched": [str(p) for p in deeper]}
        print(json.dumps(listing, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print(f"{directory}: no saved sessions" + (f" within {MAX_DEPTH} levels" if deeper else ""))
    for path, info, error in rows:
        name = _checks.shown_line(_name(path, directory))
        print(_line(info, name) if info is not None else f"{name}: unreadable: {_checks.shown_line(str(error))}")
    if deeper:
        # Said, not left out silently: a store further down is not listed.
        first = _checks.shown_line(_name(deeper[0], directory))
        print(
            f"not searched: the subdirectories of {len(deeper):,} director{'y' if len(deeper) == 1 else 'ies'} "
            f"{MAX_DEPTH} levels down (list one to see its sessions, e.g. {first})"
        )
    return 0


def run(args: argparse.Namespace) -> int:
    """Run a command added by :func:`add_commands`; raises AgentContextError on bad input."""
    directory = Path(args.directory)
    if args.sessions_command == "list":
        return _list(directory, args.json)
    if args.history < 0:
        raise OptionError(f"--history must be a non-negative integer, got {args.history}")
    store = SnapshotStore(directory, create=False)
    try:
        current = store.info(0)
    except SnapshotError as exc:
        if exc.kind != "not_found":
            raise
        store_like = _is_store(directory) or (directory / "history").is_dir()
        what = "no current snapshot" if store_like else "not a snapshot store (it holds no current.json)"
        raise SnapshotError(f"{directory}: {what}", str(directory), "not_found") from None
    # Only the snapshots asked for are read (each may be up to max_bytes), and one that cannot be
    # read is listed with why, not left out.
    rows: list[tuple[int, SnapshotInfo | None, str | None]] = [(0, current, None)]
    for slot in range(1, min(args.history, store.history_size()) + 1):
        try:
            rows.append((slot, store.info(slot), None))
        except SnapshotError as exc:
            rows.append((slot, None, str(exc)))
    if args.json:
        snapshots = [i.to_json() if i is not None else {"slot": slot, "error": e} for slot, i, e in rows]
        print(json.dumps({"directory": str(directory), "snapshots": snapshots}, indent=2, ensure_ascii=False))
        return 0
    for slot, info, error in rows:
        name = "current" if slot == 0 else f"{slot} back"
        print(_line(info, name) if info is not None else f"{name}: unreadable: {_checks.shown_line(str(error))}")
    return 0
