"""The ``agentcontext`` command line.

- ``agentcontext inspect FILE`` prints the token counts of a transcript per role and per tool,
  exact (``o200k_base``, ``cl100k_base``) and estimated (the heuristic), as a table or as JSON.
- ``agentcontext compact FILE --budget N|P%`` runs the compaction ladder with the offline
  summarizer (no API key) and reports what was kept, cleared and summarized.
- ``agentcontext memory index DIR`` / ``memory search DIR QUERY`` / ``search LOG QUERY``: project
  memory and search over a session log (:mod:`agentcontext.memory.cli`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from agentcontext import Conversation
from agentcontext.compaction import parse_budget
from agentcontext.errors import AgentContextError
from agentcontext.types import Encoding, FormatOrAuto

#: What `inspect` counts with: the exact encodings and the heuristic.
ENCODINGS: tuple[Encoding, ...] = ("o200k_base", "cl100k_base", "heuristic")
ROLES = ("system", "developer", "user", "assistant", "tool")
FORMATS: tuple[FormatOrAuto, ...] = ("auto", "openai", "responses", "anthropic", "jsonl")


def _input_formats() -> list[str]:
    from agentcontext.importers import FORMATS as AGENT_FORMATS

    return [*FORMATS, *AGENT_FORMATS]


#: Exit status for a file that cannot be read or parsed.
EXIT_BAD_INPUT = 2
#: Exit status for a budget that cannot be met.
EXIT_DOES_NOT_FIT = 3


def _add_input(command: argparse.ArgumentParser) -> None:
    """The transcript a command reads: FILE, --format and --session."""
    command.add_argument("file", help="transcript file")
    command.add_argument(
        "--format", choices=_input_formats(), default="auto", metavar="FORMAT", help="format of FILE (default: detect)"
    )
    command.add_argument("--session", help="the session to read, by name or index, in a file that holds several")


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentcontext",
        description="Inspect and compile the context an LLM agent sends on every call.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    inspect = sub.add_parser(
        "inspect",
        help="token counts of a transcript per role and per tool",
        description="Count the tokens of a transcript file (a JSON array, a request body or JSON Lines "
        "in any supported format) per role and per tool, exactly and with the heuristic.",
    )
    _add_input(inspect)
    inspect.add_argument("--json", action="store_true", help="print one JSON object instead of tables")

    from agentcontext.compaction import PRESETS

    compact = sub.add_parser(
        "compact",
        help="compact a transcript under a token budget (offline, no API key)",
        description="Run the compaction ladder (tool-result budgets, clearing, offline summary, dropping the "
        "oldest groups) on a transcript so it fits a token budget, and report each stage.",
    )
    _add_input(compact)
    compact.add_argument("--budget", required=True, help="tokens (e.g. 8000) or a share of the transcript (e.g. 25%%)")
    compact.add_argument(
        "--strategy", choices=sorted(PRESETS), default="openharness", help="preset (default: openharness)"
    )
    compact.add_argument("-o", "--output", help="write the compacted conversation here (JSON Lines)")
    compact.add_argument("--to", choices=FORMATS[1:], help="format of --output (default: the input's format)")
    compact.add_argument("--json", action="store_true", help="print the report as one JSON object")

    ev = sub.add_parser(
        "eval",
        help="compare compaction strategies over many transcripts",
        description="Run compaction strategies over transcripts (files or folders, in any supported format, "
        "real session files included) under one budget, in parallel, and compare validity, token reduction, "
        "retention of probe facts, prompt-cache stability and compactions per 100 turns.",
    )
    ev.add_argument("paths", nargs="+", metavar="PATH", help="transcript files or folders (searched recursively)")
    ev.add_argument(
        "--strategy",
        default="openharness,pi,claude-code,codex",
        help=f"comma-separated presets (default: openharness,pi,claude-code,codex; known: {', '.join(PRESETS)})",
    )
    ev.add_argument("--budget", required=True, help="tokens (e.g. 8000) or a share of each transcript (e.g. 25%%)")
    ev.add_argument("--json", metavar="OUT", help="write every run and the summary as JSON here")
    ev.add_argument("--csv", metavar="OUT", help="write one CSV row per transcript and strategy here")
    ev.add_argument("--engine", choices=("local", "ray"), default="local", help="where to run (default: local)")
    ev.add_argument("--workers", type=int, help="local worker processes (default: CPU count)")
    ev.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    progress = ev.add_mutually_exclusive_group()
    progress.add_argument("--progress", dest="progress", action="store_true", default=None, help="show a progress bar")
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")

    from agentcontext.memory import cli as memory_cli

    memory_cli.add_commands(sub)
    return parser


def load(path: str, fmt: str = "auto", session: str | None = None) -> tuple[Conversation, str]:
    """A transcript in any format, the library's own or an agent's session file (detected by
    content; see :mod:`agentcontext.importers`), and the name of the format it was read as."""
    from agentcontext import importers
    from agentcontext.errors import SessionSelectionError

    picked: str | int | None = int(session) if session is not None and session.isdigit() else session
    try:
        conv = importers.load(path, format=fmt, session=picked)
    except SessionSelectionError as exc:
        shown = ", ".join(exc.names[:20]) + (f", ... ({len(exc.names)} in all)" if len(exc.names) > 20 else "")
        why = f"no session {session!r}" if session is not None else f"holds {len(exc.names)} sessions"
        raise SessionSelectionError(
            f"{path}: {why}; pick one with --session NAME or INDEX: {shown}", path, exc.names
        ) from None
    if fmt != "auto":
        return conv, fmt
    return conv, importers.detect(path) or conv.format


def inspect_report(path: str, fmt: str = "auto", session: str | None = None) -> dict[str, Any]:
    """The figures ``agentcontext inspect`` prints, as a dict."""
    conv, read_as = load(path, fmt, session)
    stats = {enc: conv.stats(encoding=enc) for enc in ENCODINGS}
    first = stats[ENCODINGS[0]]
    by_tool: dict[str, Any] = {}
    for name, tool in first["by_tool"].items():
        by_tool[name] = {
            "calls": tool["calls"],
            "results": tool["results"],
            "tokens": {enc: stats[enc]["by_tool"][name]["tokens"] for enc in ENCODINGS},
        }
    return {
        "path": path,
        "format": read_as,
        "messages": len(conv),
        "tool_calls": first["tool_calls"],
        "tokens": {enc: stats[enc]["tokens"] for enc in ENCODINGS},
        "by_role": {role: {enc: stats[enc]["by_role"][role] for enc in ENCODINGS} for role in ROLES},
        "messages_by_role": first["messages_by_role"],
        "by_tool": by_tool,
    }


def _table(rows: list[list[str]], right: set[int]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=False))]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_inspect(report: dict[str, Any]) -> str:
    total = report["tokens"][ENCODINGS[0]] or 1
    out = [
        (
            f"{report['path']}: {report['format']} format, {report['messages']:,} messages, "
            f"{report['tool_calls']:,} tool calls"
        ),
        "",
    ]
    rows = [["role", "messages", *ENCODINGS, "share"]]
    for role in ROLES:
        counts = report["by_role"][role]
        if report["messages_by_role"][role] == 0 and counts[ENCODINGS[0]] == 0:
            continue
        rows.append(
            [
                role,
                f"{report['messages_by_role'][role]:,}",
                *(f"{counts[e]:,}" for e in ENCODINGS),
                f"{counts[ENCODINGS[0]] / total:.1%}",
            ]
        )
    rows.append(["total", f"{report['messages']:,}", *(f"{report['tokens'][e]:,}" for e in ENCODINGS), "100.0%"])
    out.append(_table(rows, right=set(range(1, len(rows[0])))))
    if report["by_tool"]:
        out.append("")
        tools = sorted(report["by_tool"].items(), key=lambda kv: -kv[1]["tokens"][ENCODINGS[0]])
        rows = [["tool", "calls", *ENCODINGS, "share"]]
        for name, tool in tools:
            rows.append(
                [
                    name,
                    f"{tool['calls']:,}",
                    *(f"{tool['tokens'][e]:,}" for e in ENCODINGS),
                    f"{tool['tokens'][ENCODINGS[0]] / total:.1%}",
                ]
            )
        out.append(_table(rows, right=set(range(1, len(rows[0])))))
        out.append("(tool tokens are calls and their results together)")
    return "\n".join(out)


def compact_command(args: argparse.Namespace) -> int:
    from agentcontext.compaction import Compactor

    conv, read_as = load(args.file, args.format, args.session)
    budget = parse_budget(args.budget, conv.tokens)
    result = Compactor(args.strategy).compact(conv, budget=budget)
    report = {"path": args.file, "format": read_as, "strategy": args.strategy, **result.to_dict()}
    if args.output:
        target = args.to or conv.format
        messages = result.conversation.to_format(target)
        with open(args.output, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(m, ensure_ascii=False) + "\n" for m in messages)
        report["output"] = {"path": args.output, "format": target, "messages": len(messages)}
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else format_compact(report))
    if not result.fits:
        print(f"agentcontext: the budget of {budget:,} tokens cannot be met: {result.reason}", file=sys.stderr)
        return EXIT_DOES_NOT_FIT
    return 0


def eval_command(args: argparse.Namespace) -> int:
    from agentcontext import evaluation

    strategies = [s.strip() for s in args.strategy.split(",") if s.strip()]
    rows = evaluation.run(
        args.paths,
        strategies,
        args.budget,
        engine=args.engine,
        workers=args.workers,
        progress=evaluation.progress_stream(args.progress),
    )
    if args.json:
        evaluation.write_json(rows, args.json, budget=args.budget, paths=list(args.paths))
    if args.csv:
        evaluation.write_csv(rows, args.csv)
    print(evaluation.markdown_table(rows) if args.markdown else evaluation.format_table(rows))
    failed = [r for r in rows if r.error]
    for r in failed:
        print(f"agentcontext: {r.transcript} with {r.strategy}: {r.error}", file=sys.stderr)
    return EXIT_BAD_INPUT if failed else 0


def format_compact(report: dict[str, Any]) -> str:
    out = [
        f"{report['path']}: {report['format']} format, strategy {report['strategy']}, budget {report['budget']:,} tokens",
        "",
    ]
    rows = [["stage", "tokens before", "tokens after", "what changed"]]
    for s in report["stages"]:
        detail = ", ".join(
            f"{k.replace('_', ' ')} {v:,}" if isinstance(v, int) else f"{k.replace('_', ' ')}: {v}"
            for k, v in s["detail"].items()
        )
        rows.append([s["stage"], f"{s['tokens_before']:,}", f"{s['tokens_after']:,}", detail])
    out.append(_table(rows, right={1, 2}))
    out.append("")
    fits = "fits" if report["fits"] else f"does NOT fit ({report['reason']})"
    out.append(
        f"tokens: {report['tokens_before']:,} -> {report['tokens_after']:,} ({fits}); "
        f"messages: {report['messages_before']:,} -> {report['messages_after']:,} "
        f"(kept {report['kept']:,}, cleared or cut {report['changed']:,}, summarized {report['summarized']:,}, "
        f"dropped {report['dropped']:,})"
    )
    if report.get("output"):
        o = report["output"]
        out.append(f"wrote {o['messages']:,} messages ({o['format']}) to {o['path']}")
    if report["summary"]:
        out += ["", "summary:", report["summary"]]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        if args.command == "inspect":
            report = inspect_report(args.file, args.format, args.session)
            print(json.dumps(report, indent=2) if args.json else format_inspect(report))
        elif args.command == "compact":
            return compact_command(args)
        elif args.command == "eval":
            return eval_command(args)
        elif args.command in {"memory", "search"}:
            from agentcontext.memory import cli as memory_cli

            return memory_cli.run(args)
    except AgentContextError as exc:
        print(f"agentcontext: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
