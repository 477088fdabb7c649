"""The ``agentcontext sessions`` commands: look at saved sessions before resuming one.

- ``agentcontext sessions list DIR [--json]``: every snapshot store in DIR (DIR itself, or its
  subdirectories holding a ``current.json``), one line each: turn, messages, tokens, mode, goal.
- ``agentcontext sessions show DIR [--history N] [--json]``: one store's current snapshot and the N
  newest in its history: when and why each was taken, tokens, turns, mode, goal, last compaction.

Nothing here writes: a missing directory is an error (exit status 2), not created.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from agentcontext.errors import OptionError, SnapshotError
from agentcontext.sessions.snapshots import SnapshotInfo, SnapshotStore

__all__ = ["add_commands", "run"]


def add_commands(sub: Any) -> None:
    """Add ``sessions`` to the subcommands ``sub``."""
    sessions = sub.add_parser(
        "sessions",
        help="list or show saved session snapshots",
        description="Read session snapshot directories (agentcontext.sessions.SnapshotStore); nothing is written.",
    )
    ssub = sessions.add_subparsers(dest="sessions_command", required=True, metavar="ACTION")
    listing = ssub.add_parser("list", help="every snapshot store in DIR, one line each")
    listing.add_argument("directory", metavar="DIR", help="a snapshot store, or a directory of them")
    listing.add_argument("--json", action="store_true", help="print one JSON object")
    show = ssub.add_parser("show", help="a store's current snapshot and its history")
    show.add_argument("directory", metavar="DIR", help="a snapshot store (holds current.json)")
    show.add_argument("--history", type=int, default=0, metavar="N", help="also show the N newest earlier snapshots")
    show.add_argument("--json", action="store_true", help="print one JSON object")


def _one_line(text: str) -> str:
    """``text`` with its control characters (a newline in a file's field) shown escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _control_line(info: SnapshotInfo) -> str:
    control = info.control
    parts = []
    for key in ("mode", "goal"):
        value = control.get(key)
        if isinstance(value, dict):
            value = value.get("condition") or value.get("text") or json.dumps(value, ensure_ascii=False)
        if value:
            text = _one_line(str(value))
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
    return f"{name}: turn {info.turn}, {what}, {info.format}, {info.reason} at {_one_line(info.created)}" + (
        f"; {control}" if control else ""
    )


def _stores(directory: Path) -> list[Path]:
    if (directory / "current.json").exists():
        return [directory]
    if not directory.is_dir():
        raise SnapshotError(f"{directory}: no such directory", str(directory), "not_found")
    return sorted(p for p in directory.iterdir() if p.is_dir() and not p.is_symlink() and (p / "current.json").exists())


def run(args: argparse.Namespace) -> int:
    """Run a command added by :func:`add_commands`; raises AgentContextError on bad input."""
    directory = Path(args.directory)
    if args.sessions_command == "list":
        rows: list[tuple[Path, SnapshotInfo | None, str | None]] = []
        for path in _stores(directory):
            store = SnapshotStore(path, create=False)
            try:
                rows.append((path, store.info(0), None))
            except SnapshotError as exc:
                rows.append((path, None, str(exc)))
        if args.json:
            out = [{"directory": str(p), **(i.to_json() if i is not None else {"error": e})} for p, i, e in rows]
            print(json.dumps({"directory": str(directory), "sessions": out}, indent=2, ensure_ascii=False))
        elif not rows:
            print(f"{directory}: no saved sessions")
        for path, info, error in rows if not args.json else []:
            print(_line(info, path.name) if info is not None else f"{path.name}: unreadable: {error}")
        return 0
    if args.history < 0:
        raise OptionError(f"--history must be a non-negative integer, got {args.history}")
    store = SnapshotStore(directory, create=False)
    infos = [info for info in store.history() if info.slot <= args.history]
    if not infos or infos[0].slot != 0:
        raise SnapshotError(f"{directory}: no current snapshot", str(directory), "not_found")
    if args.json:
        print(
            json.dumps(
                {"directory": str(directory), "snapshots": [i.to_json() for i in infos]}, indent=2, ensure_ascii=False
            )
        )
        return 0
    for info in infos:
        print(_line(info, "current" if info.slot == 0 else f"{info.slot} back"))
    return 0
