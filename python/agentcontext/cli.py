"""The ``agentcontext`` command line.

- ``agentcontext inspect FILE`` prints the token counts of a transcript per role and per tool,
  exact (``o200k_base``, ``cl100k_base``) and estimated (the heuristic), as a table or as JSON.
- ``agentcontext compact FILE --budget N|P%`` runs the compaction ladder with the offline
  summarizer (no API key) and reports what was kept, cleared and summarized.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from agentcontext import Conversation
from agentcontext.errors import AgentContextError, OptionError
from agentcontext.types import Encoding, FormatOrAuto

#: What `inspect` counts with: the exact encodings and the heuristic.
ENCODINGS: tuple[Encoding, ...] = ("o200k_base", "cl100k_base", "heuristic")
ROLES = ("system", "developer", "user", "assistant", "tool")
FORMATS: tuple[FormatOrAuto, ...] = ("auto", "openai", "responses", "anthropic", "jsonl")

#: Exit status for a file that cannot be read or parsed.
EXIT_BAD_INPUT = 2
#: Exit status for a budget that cannot be met.
EXIT_DOES_NOT_FIT = 3


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
    inspect.add_argument("file", help="transcript file")
    inspect.add_argument("--format", choices=FORMATS, default="auto", help="message format (default: detect)")
    inspect.add_argument("--json", action="store_true", help="print one JSON object instead of tables")

    from agentcontext.compaction import PRESETS

    compact = sub.add_parser(
        "compact",
        help="compact a transcript under a token budget (offline, no API key)",
        description="Run the compaction ladder (tool-result budgets, clearing, offline summary, dropping the "
        "oldest groups) on a transcript so it fits a token budget, and report each stage.",
    )
    compact.add_argument("file", help="transcript file")
    compact.add_argument("--budget", required=True, help="tokens (e.g. 8000) or a share of the transcript (e.g. 25%%)")
    compact.add_argument(
        "--strategy", choices=sorted(PRESETS), default="openharness", help="preset (default: openharness)"
    )
    compact.add_argument("--format", choices=FORMATS, default="auto", help="message format of FILE (default: detect)")
    compact.add_argument("-o", "--output", help="write the compacted conversation here (JSON Lines)")
    compact.add_argument("--to", choices=FORMATS[1:], help="format of --output (default: the input's format)")
    compact.add_argument("--json", action="store_true", help="print the report as one JSON object")
    return parser


def inspect_report(path: str, fmt: FormatOrAuto = "auto") -> dict[str, Any]:
    """The figures ``agentcontext inspect`` prints, as a dict."""
    conv = Conversation.from_file(path, format=fmt)
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
        "format": conv.format,
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


def parse_budget(text: str, total: int) -> int:
    """``N`` tokens or ``P%`` of ``total``."""
    try:
        if text.endswith("%"):
            share = float(text[:-1])
            if not 0 < share <= 100:
                raise ValueError
            return max(1, int(total * share / 100))
        value = int(text.replace(",", "").replace("_", ""))
        if value <= 0:
            raise ValueError
        return value
    except ValueError:
        raise OptionError(f"--budget must be a positive number of tokens or a percentage, got {text!r}") from None


def compact_command(args: argparse.Namespace) -> int:
    from agentcontext.compaction import Compactor

    conv = Conversation.from_file(args.file, format=args.format)
    budget = parse_budget(args.budget, conv.tokens)
    result = Compactor(args.strategy).compact(conv, budget=budget)
    report = {"path": args.file, "format": conv.format, "strategy": args.strategy, **result.to_dict()}
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
            report = inspect_report(args.file, args.format)
            print(json.dumps(report, indent=2) if args.json else format_inspect(report))
        elif args.command == "compact":
            return compact_command(args)
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
