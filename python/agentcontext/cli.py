"""The ``agentcontext`` command line.

- ``agentcontext inspect FILE`` prints the token counts of a transcript per role and per tool,
  exact (``o200k_base``, ``cl100k_base``) and estimated (the heuristic), as a table or as JSON;
  ``--by-source`` breaks a request (a request body, or any transcript) down by source with the
  window around it (:mod:`agentcontext.measure.context_view`).
- ``agentcontext compact FILE --budget N|P%`` runs the compaction ladder with the offline
  summarizer (no API key) and reports what was kept, cleared and summarized. A transcript that is
  not protocol-valid is repaired first (and the repairs reported), or refused with ``--no-repair``.
- ``agentcontext eval PATH...`` compares strategies over many transcripts; every file it cannot
  read is listed and counted.
- ``agentcontext memory index DIR`` / ``memory search DIR QUERY`` / ``search LOG QUERY``: project
  memory and search over a session log (:mod:`agentcontext.memory.cli`).
- ``agentcontext sessions list DIR`` / ``sessions show DIR [--history N]``: saved session snapshots
  (:mod:`agentcontext.sessions.cli`).
- ``agentcontext prompt [--workspace DIR] [--mode default|plan] [--skills DIR]...``: the compiled
  system prompt, tool catalog and tokens per section (:mod:`agentcontext.compiler.cli`).
- ``agentcontext --version`` prints ``agentcontext`` and the version.

The exit statuses are :data:`EXIT_STATUS` (shown by ``--help``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from agentcontext import Conversation, __version__, _checks
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

#: The exit statuses, as ``--help`` shows them.
EXIT_STATUS = """exit status:
  0  success
  2  bad input: a bad argument; a file that cannot be read or parsed, is not a regular file
     (a FIFO, a device, a socket) or is over --max-bytes; an output path that cannot be written;
     a transcript that is not protocol-valid under `compact --no-repair`; `eval`: any transcript
     that cannot be read or evaluated (each is listed on stderr; --skip-errors exits 0 instead)
  3  `compact`: the budget cannot be met (the report and --output are still written)"""


def _add_input(command: argparse.ArgumentParser) -> None:
    """The transcript a command reads: FILE, --format, --session and --max-bytes."""
    command.add_argument("file", help="transcript file")
    command.add_argument(
        "--format", choices=_input_formats(), default="auto", metavar="FORMAT", help="format of FILE (default: detect)"
    )
    command.add_argument("--session", help="the session to read, by name or index, in a file that holds several")
    _checks.max_bytes_argument(command, "FILE")


#: The subcommands. A command line that names one builds only its parser, so that `inspect` does
#: not import the compaction ladder, the compiler, sessions and memory (half its time).
COMMANDS = ("inspect", "compact", "eval", "memory", "search", "sessions", "prompt")


class _Parser(argparse.ArgumentParser):
    """A parser whose errors (a missing argument, a bad choice, a value of the wrong type) are one
    line on stderr, with exit status 2, like the commands' own errors; its subcommands' parsers
    are of this class too (``add_subparsers`` makes them of the parent's class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {_checks.shown_line(message)}; see '{self.prog} --help'\n")


def _build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every subcommand, or only ``command`` (one of :data:`COMMANDS`)."""

    def wanted(*names: str) -> bool:
        return command is None or command in names

    parser = _Parser(
        prog="agentcontext",
        description="Inspect and compile the context an LLM agent sends on every call.",
        epilog=EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"agentcontext {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if wanted("inspect"):
        _add_inspect(sub)
    if wanted("compact"):
        _add_compact(sub)
    if wanted("eval"):
        _add_eval(sub)
    if wanted("memory", "search"):
        from agentcontext.memory import cli as memory_cli

        memory_cli.add_commands(sub)
    if wanted("sessions"):
        from agentcontext.sessions import cli as sessions_cli

        sessions_cli.add_commands(sub)
    if wanted("prompt"):
        from agentcontext.compiler import cli as compiler_cli

        compiler_cli.add_commands(sub)
    return parser


def _add_inspect(sub: Any) -> None:
    inspect = sub.add_parser(
        "inspect",
        help="token counts of a transcript per role and per tool",
        description="Count the tokens of a transcript file (a JSON array, a request body or JSON Lines "
        "in any supported format) per role and per tool, exactly and with the heuristic.",
        epilog=EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_input(inspect)
    inspect.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    inspect.add_argument(
        "--by-source",
        action="store_true",
        help="break the request down by source (system prompt, tool definitions, pinned, summary, ledger, history "
        "by role and tool) with the window around it (reserved output, autocompact buffer, free space); FILE may "
        "be a request body with its tools and system prompt",
    )
    inspect.add_argument("--window", type=int, metavar="N", help="--by-source: the context window (default: the "
                         "body's model's, else the strategy's)")  # fmt: skip
    inspect.add_argument("--max-output-tokens", type=int, metavar="N", help="--by-source: the output reserve")
    inspect.add_argument("--strategy", default="openharness", help="--by-source: the preset whose trigger, margin and "
                         "window apply (default: openharness)")  # fmt: skip


def _add_compact(sub: Any) -> None:
    from agentcontext.compaction import PRESETS

    compact = sub.add_parser(
        "compact",
        help="compact a transcript under a token budget (offline, no API key)",
        description="Run the compaction ladder (tool-result budgets, clearing, offline summary, dropping the "
        "oldest groups) on a transcript so it fits a token budget, and report each stage.",
        epilog=EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_input(compact)
    compact.add_argument("--budget", required=True, help="tokens (e.g. 8000) or a share of the transcript (e.g. 25%%)")
    compact.add_argument(
        "--strategy", choices=sorted(PRESETS), default="openharness", help="preset (default: openharness)"
    )
    compact.add_argument(
        "--instructions",
        metavar="TEXT",
        help="extra focus for the summary (as /compact TEXT in Pi or Claude Code), passed to the summarizer; the "
        "offline summarizer extracts the same facts whatever it says",
    )
    compact.add_argument("-o", "--output", help="write the compacted conversation here (JSON Lines)")
    compact.add_argument("--to", choices=FORMATS[1:], help="format of --output (default: the input's format)")
    compact.add_argument("--json", action="store_true", help="print the report as one JSON object")
    compact.add_argument(
        "--no-repair",
        action="store_true",
        help="refuse a transcript that is not protocol-valid (orphan or missing results, reused call ids, ...) "
        "instead of repairing it first",
    )
    compact.add_argument(
        "--store",
        metavar="DIR",
        help="keep the originals of what is cut, cleared, summarized or dropped in this folder, so the ids "
        "the markers name can be recalled (default: nothing is stored and the markers say so)",
    )


def _add_eval(sub: Any) -> None:
    from agentcontext.compaction import PRESETS
    from agentcontext.compaction.pricing import EVAL_PRICES, PRICES
    from agentcontext.measure.metrics import BASELINE

    ev = sub.add_parser(
        "eval",
        help="compare compaction strategies over many transcripts",
        description="Run compaction strategies over transcripts (files or folders, in any supported format, "
        "real session files included) under one budget, in parallel, and compare validity, token reduction, "
        "retention of probe facts, prompt-cache stability and compactions per 100 turns.",
        epilog=EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ev.add_argument("paths", nargs="+", metavar="PATH", help="transcript files or folders (searched recursively)")
    ev.add_argument(
        "--strategy",
        default="openharness,pi,claude-code,codex",
        help=f"comma-separated presets (default: openharness,pi,claude-code,codex; known: {', '.join(PRESETS)}), "
        f"and {BASELINE}: the bar to clear (every user message verbatim plus the largest recent suffix that fits)",
    )
    ev.add_argument("--budget", required=True, help="tokens (e.g. 8000) or a share of each transcript (e.g. 25%%)")
    ev.add_argument("--json", metavar="OUT", help="write every run and the summary as JSON here")
    ev.add_argument("--csv", metavar="OUT", help="write one CSV row per transcript and strategy here")
    ev.add_argument("--engine", choices=("local", "ray"), default="local", help="where to run (default: local)")
    ev.add_argument("--workers", type=int, help="local worker processes (default: CPU count)")
    ev.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ev.add_argument(
        "--prices",
        metavar="MODEL[,MODEL]",
        default=",".join(EVAL_PRICES),
        help="price each strategy's replayed requests (cache reads, cache writes) under these models' list prices "
        f"(default: {','.join(EVAL_PRICES)}; known: {', '.join(PRICES)}; a dated id such as "
        "claude-sonnet-4-5-20250929 finds its family; @1h after an Anthropic model: its 1-hour cache, writes at "
        "2x input; @24h after an OpenAI model: extended retention; 'none': no cost columns)",
    )
    ev.add_argument(
        "--schedule",
        action="store_true",
        help="also replay each strategy with the cache schedule under each price table (compact while the cache "
        "is cold, not while it is warm unless that pays): the cost table's 'scheduled' column beside 'timed' "
        "(one more replay per table)",
    )
    ev.add_argument(
        "--per-transcript",
        action="store_true",
        help="also print one line per transcript: each strategy's retention, whether it kept the latest "
        "ask, its fill (or 'over' when the output is larger than the budget), and '< baseline' where it kept "
        "fewer probes than baseline-suffix-users",
    )
    ev.add_argument(
        "--skip-errors",
        action="store_true",
        help="exit 0 even when some transcripts cannot be read or evaluated (they are still listed and counted)",
    )
    progress = ev.add_mutually_exclusive_group()
    progress.add_argument("--progress", dest="progress", action="store_true", default=None, help="show a progress bar")
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")


def load(
    path: str, fmt: str = "auto", session: str | None = None, max_bytes: int = 1 << 30
) -> tuple[Conversation, str]:
    """A transcript in any format, the library's own or an agent's session file (detected by
    content; see :mod:`agentcontext.importers`), and the name of the format it was read as."""
    from agentcontext import importers
    from agentcontext.errors import SessionSelectionError

    picked = _checks.session_choice(session)
    try:
        conv = importers.load(path, format=fmt, session=picked, max_bytes=max_bytes)
    except SessionSelectionError as exc:
        shown = ", ".join(exc.names[:20]) + (f", ... ({len(exc.names)} in all)" if len(exc.names) > 20 else "")
        why = f"no session {session!r}" if session is not None else f"holds {len(exc.names)} sessions"
        raise SessionSelectionError(
            f"{path}: {why}; pick one with --session NAME or INDEX: {shown}", path, exc.names
        ) from None
    if fmt != "auto":
        return conv, fmt
    return conv, importers.detect(path, max_bytes=max_bytes) or conv.format


def inspect_report(
    path: str, fmt: str = "auto", session: str | None = None, max_bytes: int = 1 << 30
) -> dict[str, Any]:
    """The figures ``agentcontext inspect`` prints, as a dict."""
    conv, read_as = load(path, fmt, session, max_bytes)
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


def source_view(args: argparse.Namespace) -> Any:
    """``inspect --by-source``: the :class:`~agentcontext.measure.context_view.ContextView` of FILE,
    a request body (its system prompt and tool definitions counted too) or any transcript."""
    from pathlib import Path

    from agentcontext._containment import read_text
    from agentcontext.measure.context_view import context_view

    for name in ("window", "max_output_tokens"):
        _checks.optional_count(f"--{name.replace('_', '-')}", getattr(args, name), minimum=1)
    options: dict[str, Any] = {"policy": args.strategy, "context_window": args.window}
    options["max_output_tokens"] = args.max_output_tokens
    if args.format in ("auto", "openai", "anthropic", "responses") and args.session is None:
        got = read_text(Path(args.file), args.max_bytes)
        body: Any = None
        if got.text is not None and got.text.lstrip().startswith("{"):
            try:
                body = json.loads(got.text)
            except (ValueError, RecursionError):
                body = None
        if isinstance(body, dict) and ("messages" in body or "input" in body):
            return context_view(body, **options)
    conv, _ = load(args.file, args.format, args.session, args.max_bytes)
    return context_view(conv, **options)


def _table(rows: list[list[str]], right: set[int]) -> str:
    rows = [[_checks.shown_line(c) for c in row] for row in rows]  # a name from the file, escaped: one line, aligned
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
    from agentcontext.compaction import Compactor, parse_budget
    from agentcontext.observe.progress import compact_progress

    if args.output:
        _checks.check_output(args.output)
    progress = compact_progress(args.file, args.json, sys.stderr)
    progress.step("read")
    conv, read_as = load(args.file, args.format, args.session, args.max_bytes)
    progress.step("check")
    conv, repaired = _valid_input(conv, args.file, args.no_repair)
    budget = parse_budget(args.budget, conv.tokens)
    from agentcontext.budgets import ResultStore

    store = ResultStore(args.store) if args.store else None
    progress.step("compact")
    result = Compactor(args.strategy, store=store, on_event=progress.on_event).compact(
        conv, budget=budget, instructions=args.instructions
    )
    progress.step("write")
    report = {"path": args.file, "format": read_as, "strategy": args.strategy, **result.to_dict()}
    report["repaired"] = repaired
    fits = result.fits
    if args.output:
        target = args.to or conv.format
        messages = result.conversation.to_format(target)
        _checks.write_output(args.output, "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in messages))
        # The tokens of what was written, in the format it was written in (what reading the file
        # back counts): another format renders the same messages in more or fewer tokens.
        written = Conversation(messages, format=target, encoding=conv.encoding).tokens
        report["output"] = {"path": args.output, "format": target, "messages": len(messages), "tokens": written}
        if written != result.tokens_after:
            report["tokens_after"] = written
            report["fill"] = round(written / result.target, 4) if result.target else None
            if fits and written > budget:
                fits = False
                report["fits"] = False
                report["reason"] = (
                    f"written in {target} format the output is {written:,} tokens, over the budget; "
                    f"compacted in {conv.format} format it was {result.tokens_after:,}"
                )
    progress.close()
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else _checks.shown_text(format_compact(report)))
    if not fits:
        reason = _checks.shown_line(str(report["reason"]))
        print(f"agentcontext: the budget of {budget:,} tokens cannot be met: {reason}", file=sys.stderr)
        return EXIT_DOES_NOT_FIT
    return 0


#: How each kind of repair reads in the report.
REPAIRS = {
    "moved_result": "moved result {id} right after its call",
    "synthesized_result": "added an error result for interrupted call {id}",
    "orphan_to_user": "made result {id}, which has no call, a user message",
    "duplicate_to_user": "made a second result for call {id} a user message",
    "renamed_id": "renamed reused call id {id}",
    "reordered_thinking": "moved thinking first",
    "dropped_empty": "dropped an empty message",
    "dropped_call": "dropped built-in tool call {id}, which has no output item",
}


def _valid_input(conv: Conversation, path: str, no_repair: bool) -> tuple[Conversation, list[dict[str, Any]]]:
    """``conv`` repaired when it is not protocol-valid, and the changes (message indices of the
    input); with ``no_repair`` an invalid transcript raises instead."""
    from agentcontext.errors import InvalidMessageError

    violations = conv.validate()
    if not violations:
        return conv, []
    if no_repair:
        v = violations[0]
        more = f" (and {len(violations) - 1:,} more)" if len(violations) > 1 else ""
        which = f" id {v['id']!r}" if v["id"] is not None else ""
        raise InvalidMessageError(
            f"{path}: not protocol-valid: message {v['index']}{which}: {v['kind']}: {v['detail']}{more}; "
            "run without --no-repair to repair it",
            v["index"],
        )
    repaired, changes = conv.repair()
    return repaired, sorted((dict(c) for c in changes), key=lambda c: c["index"])


def eval_command(args: argparse.Namespace) -> int:
    from agentcontext.compaction.pricing import price_tables
    from agentcontext.measure import evaluation

    for flag, path in (("--json", args.json), ("--csv", args.csv)):
        if path:
            _checks.check_report_output(flag, path, evaluation.report_start(flag[2:]))
    strategies = [s.strip() for s in args.strategy.split(",") if s.strip()]
    prices = price_tables(args.prices)
    rows = evaluation.run(
        args.paths,
        strategies,
        args.budget,
        engine=args.engine,
        workers=args.workers,
        progress=evaluation.progress_stream(False if args.progress is None and args.json else args.progress),
        prices=prices if args.schedule else (),
        schedule=args.schedule,
    )
    if args.json:
        evaluation.write_json(rows, args.json, prices=prices, budget=args.budget, paths=list(args.paths))
    if args.csv:
        evaluation.write_csv(rows, args.csv, prices=prices)
    table = evaluation.markdown_table(rows, prices) if args.markdown else evaluation.format_table(rows, prices)
    print(_checks.shown_text(table))
    if args.per_transcript:
        print("\nretention per transcript")
        print(_checks.shown_text(evaluation.per_transcript_table(rows, markdown=args.markdown)))
    # One line per transcript and reason (a file that cannot be read fails every strategy alike).
    failed: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        if r.error:
            failed.setdefault((r.transcript, r.error), []).append(r.strategy)
    for (transcript, error), with_strategies in failed.items():
        reason = " ".join(error.split())
        shown = _checks.shown_line(f"{transcript} ({', '.join(with_strategies)}): {reason}")
        print(f"agentcontext: failed: {shown}", file=sys.stderr)
    if failed:
        transcripts = {r.transcript for r in rows}
        broken = {t for t, _ in failed}
        print(f"agentcontext: {len(broken):,} of {len(transcripts):,} transcripts failed", file=sys.stderr)
    return EXIT_BAD_INPUT if failed and not args.skip_errors else 0


def format_compact(report: dict[str, Any]) -> str:
    out = [
        f"{report['path']}: {report['format']} format, strategy {report['strategy']}, budget {report['budget']:,} tokens",
        "",
    ]
    if report.get("repaired"):
        changes = report["repaired"]
        out.append(f"repaired the input first ({len(changes):,} changes; message indices of the input):")
        out += [f"  message {c['index']}: " + REPAIRS[c["kind"]].format(id=repr(c["id"])) for c in changes]
        out.append("")
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
        out.append(f"wrote {o['messages']:,} messages ({o['format']}, {o['tokens']:,} tokens) to {o['path']}")
    if report["summary"]:
        out += ["", "summary:", report["summary"]]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv[0] if argv and argv[0] in COMMANDS else None
    args = _build_parser(command).parse_args(argv)
    try:
        if args.command == "inspect" and args.by_source:
            view = source_view(args)
            print(json.dumps(view.to_dict(), indent=2) if args.json else _checks.shown_text(view.format()))
        elif args.command == "inspect":
            report = inspect_report(args.file, args.format, args.session, args.max_bytes)
            print(json.dumps(report, indent=2) if args.json else _checks.shown_text(format_inspect(report)))
        elif args.command == "compact":
            return compact_command(args)
        elif args.command == "eval":
            return eval_command(args)
        elif args.command in {"memory", "search"}:
            from agentcontext.memory import cli as memory_cli

            return memory_cli.run(args)
        elif args.command == "sessions":
            from agentcontext.sessions import cli as sessions_cli

            return sessions_cli.run(args)
        elif args.command == "prompt":
            from agentcontext.compiler import cli as compiler_cli

            return compiler_cli.run(args)
    except AgentContextError as exc:
        # One line, whatever the message quotes (a file name with a line break or an escape).
        print(f"agentcontext: error: {_checks.shown_line(str(exc))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        # A file named on the command line (--json OUT, --csv OUT) that cannot be written.
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"agentcontext: error: {_checks.shown_line(f'{where}{exc.strerror or exc}')}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


if __name__ == "__main__":
    sys.exit(main())
