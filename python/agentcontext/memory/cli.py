"""The memory and search commands of the ``agentcontext`` command line.

- ``agentcontext memory index DIR [--json]``: the index of a memory directory as the system
  prompt gets it, then the files that are not valid records and why.
- ``agentcontext memory search DIR QUERY``: records matching words or a regular expression.
- ``agentcontext search LOG QUERY``: messages of a session log (cleared and summarized ones
  included) matching words or a regular expression, with message numbers and recall ids; any
  other transcript ``agentcontext inspect`` reads is searched too.

Nothing here writes: a missing directory or log is an error (exit status 2), not created.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from agentcontext import _checks
from agentcontext._containment import one_line
from agentcontext._core import MemoryIndex
from agentcontext.errors import SessionSelectionError

__all__ = ["add_commands", "run"]


def _add_query(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "query", help='words to find (case-insensitive; "a phrase" in quotes), or a regex with --regex'
    )
    command.add_argument("--regex", action="store_true", help="QUERY is a regular expression (Rust regex syntax)")
    command.add_argument("--limit", type=int, default=10, help="show at most this many (default: 10)")
    command.add_argument("--json", action="store_true", help="print one JSON object")


def add_commands(sub: Any) -> None:
    """Add ``memory`` and ``search`` to the subcommands ``sub``."""
    memory = _checks.read_command(
        sub,
        "memory",
        help="show or search a project memory directory",
        description="Read a memory directory (one NAME.md record with front matter per file).",
    )
    msub = memory.add_subparsers(dest="memory_command", required=True, metavar="ACTION")
    index = _checks.read_command(
        msub,
        "index",
        help="the index the system prompt gets, and the files that are not valid records",
        description="Print the memory index (one line per record, grouped by type) as the system prompt gets it, "
        "then each file that is not a valid record and why.",
    )
    index.add_argument("directory", metavar="DIR", help="the memory directory")
    index.add_argument("--max-lines", type=int, default=200, help="cap on index lines (default: 200)")
    index.add_argument("--max-bytes", type=int, default=25_000, help="cap on index bytes (default: 25000)")
    index.add_argument("--json", action="store_true", help="print one JSON object")
    search = _checks.read_command(
        msub,
        "search",
        help="records matching words or a regular expression",
        description="Print the records of a memory directory whose name, description or body match QUERY "
        "(every word, or a regular expression with --regex), best first.",
    )
    search.add_argument("directory", metavar="DIR", help="the memory directory")
    _add_query(search)
    log = _checks.read_command(
        sub,
        "search",
        help="search a session log, cleared and summarized messages included",
        description="Search every message of a session log (agentcontext.SessionLog), including messages cleared or "
        "summarized out of the working set; print the best matches with their message number and recall id.",
    )
    log.add_argument(
        "log",
        metavar="LOG",
        help="session log (JSON Lines written by SessionLog), or any transcript `agentcontext inspect` reads",
    )
    _add_query(log)
    log.add_argument(
        "--session", help="the session to search, by name or index, in a transcript file that holds several"
    )
    _checks.max_bytes_argument(log, "LOG")


def run(args: argparse.Namespace) -> int:
    """Run a command added by :func:`add_commands`; raises AgentContextError on bad input."""
    if args.command == "search":
        from agentcontext.memory.conversation import conversation_search, format_hits

        session = args.session
        picked = _checks.session_choice(session)
        try:
            result = conversation_search(
                args.log, args.query, regex=args.regex, limit=args.limit, max_bytes=args.max_bytes, session=picked
            )
        except SessionSelectionError as exc:  # the library's message names session=; this is --session
            shown = ", ".join(exc.names[:20]) + (f", ... ({len(exc.names)} in all)" if len(exc.names) > 20 else "")
            why = f"no session {session!r}" if session is not None else f"holds {len(exc.names)} sessions"
            raise SessionSelectionError(
                f"{args.log}: {why}; pick one with --session NAME or INDEX: {shown}", args.log, exc.names
            ) from None
        print(
            json.dumps({"log": args.log, "query": args.query, **result}, indent=2, ensure_ascii=False)
            if args.json
            else _terminal(format_hits(result))
        )
        return 0
    if args.memory_command == "search":
        _checks.text("QUERY", args.query)  # bytes that are not UTF-8 on the command line
    index = MemoryIndex(args.directory)
    index.refresh()
    if args.memory_command == "index":
        rendered = index.render(max_lines=args.max_lines, max_bytes=args.max_bytes)
        problems = index.problems()
        if args.json:
            report = {
                "directory": args.directory,
                "records": index.records(),
                "problems": [{"file": f, "reason": r} for f, r in problems],
                "index": rendered,
            }
            print(json.dumps(report, indent=2, ensure_ascii=False))
            return 0
        print(rendered if rendered else f"{args.directory}: no records", end="\n" if not rendered else "")
        if problems:
            many = len(problems) != 1
            print(f"\n{len(problems)} {'files are not valid records' if many else 'file is not a valid record'}:")
            for file, reason in problems:  # any name a file in the directory has: one line, no escape sequence
                print(f"  {one_line(file)}: {one_line(reason)}")
        return 0
    found = index.search(args.query, regex=args.regex, limit=args.limit)
    if args.json:
        print(
            json.dumps({"directory": args.directory, "query": args.query, "hits": found}, indent=2, ensure_ascii=False)
        )
        return 0
    if not found:
        print("No memory record matches.")
    for r in found:
        print(f"- {r['name']} ({r['type']}, {r['file']}): {r['description']}")
        for s in r["snippets"]:
            print(f"    {one_line(s)}")
    return 0


def _terminal(text: str) -> str:
    """``text`` with every line on one line of the terminal: a snippet of a stored text holding an
    escape sequence (``\x1b[2J``) or a line break of its own is shown escaped."""
    return "\n".join(one_line(line) for line in text.split("\n"))
