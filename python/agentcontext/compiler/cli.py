"""The ``prompt`` command of the ``agentcontext`` command line.

``agentcontext prompt [--workspace DIR] [--mode default|plan] [--hiding filter|deny]
[--skills DIR]... [--memory DIR] [--mcp SERVER=FILE]... [--names NAME]... [--style STYLE]
[--no-git] [--json]`` prints the system prompt compiled for DIR (its AGENTS.md / CLAUDE.md files,
environment, skills, memory index), the tool catalog of the mode, and the tokens per section.
Nothing is written; a bad argument or a file that cannot be used is exit status 2, one line.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from agentcontext import _checks
from agentcontext._containment import one_line, read_text
from agentcontext.compiler.compile import compile_request
from agentcontext.compiler.instructions import DEFAULT_INSTRUCTION_NAMES
from agentcontext.compiler.registry import Registry
from agentcontext.compiler.sections import WorkingSet
from agentcontext.errors import OptionError

__all__ = ["add_commands", "run"]

#: Largest MCP tools/list file read (bytes).
MAX_MCP_BYTES = 16 << 20


def add_commands(sub: Any) -> None:
    """Add ``prompt`` to the subcommands ``sub``."""
    prompt = _checks.read_command(
        sub,
        "prompt",
        help="print the compiled system prompt and tool catalog with tokens per section",
        description="Compile the system prompt for a workspace (project instructions, environment, skills, memory) "
        "and print it, the tool catalog of the mode, and the tokens of every section. Nothing is written.",
    )
    prompt.add_argument("--workspace", default=".", metavar="DIR", help="the working directory (default: .)")
    prompt.add_argument("--mode", default="default", help="default or plan (default: default)")
    prompt.add_argument(
        "--hiding", default="filter", help="how plan mode hides tools: filter or deny (default: filter)"
    )
    prompt.add_argument("--skills", action="append", default=[], metavar="DIR", help="a skills directory (repeatable)")
    prompt.add_argument("--memory", metavar="DIR", help="a memory directory (its index becomes the memory section)")
    prompt.add_argument(
        "--mcp",
        action="append",
        default=[],
        metavar="SERVER=FILE",
        help="an MCP server's tools/list result as JSON (repeatable)",
    )
    prompt.add_argument(
        "--names",
        action="append",
        metavar="NAME",
        help=f"project instruction file names (repeatable; default: {', '.join(DEFAULT_INSTRUCTION_NAMES)})",
    )
    prompt.add_argument("--style", default="anthropic", help="tool definition style: anthropic, openai, responses")
    prompt.add_argument("--no-git", action="store_true", help="leave git branch and status out")
    prompt.add_argument("--json", action="store_true", help="print one JSON object")


def _mcp(registry: Registry, spec: str) -> None:
    server, sep, file = spec.partition("=")
    if not sep or not server or not file:
        raise OptionError(f"--mcp takes SERVER=FILE, got {spec!r}")
    got = read_text(Path(file), MAX_MCP_BYTES)
    if got.text is None:
        raise OptionError(f"--mcp {server}: {file} {got.problem}")
    if got.replaced:
        raise OptionError(f"--mcp {server}: {file} is not valid UTF-8")
    try:
        listing = json.loads(got.text)
    except ValueError as exc:
        raise OptionError(f"--mcp {server}: {file} is not JSON: {exc}") from None
    except RecursionError:
        raise OptionError(f"--mcp {server}: {file} is not a tools/list result: JSON nested too deeply") from None
    registry.add_mcp(server, listing)


def run(args: argparse.Namespace) -> int:
    """Run ``prompt``; raises AgentContextError on bad input."""
    if not os.path.isdir(args.workspace):
        raise OptionError(f"--workspace {args.workspace!r} is not a directory")
    memory = None
    if args.memory is not None:
        if not os.path.isdir(args.memory):
            raise OptionError(f"--memory {args.memory!r} is not a directory")
        from agentcontext.memory.store import MemoryStore

        memory = MemoryStore(directory=args.memory)
    registry = Registry()
    for spec in args.mcp:
        _mcp(registry, spec)
    ws = WorkingSet.load(
        args.workspace,
        skills=args.skills,
        instruction_names=args.names or DEFAULT_INSTRUCTION_NAMES,
        git=not args.no_git,
        registry=registry,
        memory=memory,
    )
    compiled = compile_request([], ws, mode=args.mode, hiding=args.hiding, style=args.style, format="jsonl")
    problems = ws.skills.problems if ws.skills is not None else []
    if args.json:
        report: dict[str, Any] = dict(compiled.to_dict())
        del report["tokens"]["history"], report["tokens"]["pending_results"], report["tokens"]["reserved_output"]
        del report["tokens"]["history_total"], report["tokens"]["reminders"]
        report["workspace"] = str(ws.workspace)
        report["skill_problems"] = [{"file": f, "reason": r} for f, r in problems]
        if ws.instructions is not None:
            report["instructions"] = {
                "read": [p for p, _ in ws.instructions.files],
                "cut": ws.instructions.cut,
                "skipped": [{"file": f, "reason": r} for f, r in ws.instructions.skipped],
            }
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    print(_checks.shown_text(compiled.system), end="")  # a project file's escapes, shown (--json: exact)
    print("\n---")
    if compiled.tools:
        print(
            f"tools sent in {compiled.mode} mode ({compiled.hiding}): {', '.join(t['name'] for t in _named(compiled))}"
        )
    else:
        print(f"no tools ({compiled.mode} mode)")
    for name, why in compiled.hidden.items():
        print(f"  hidden: {name}: {why}")
    width = max([len(s.name) for s in compiled.sections] + [len("tool definitions")])
    print("tokens:")
    for s in compiled.sections:
        print(f"  {s.name:<{width}} {s.tokens:>8,}")
    print(f"  {'tool definitions':<{width}} {compiled.tokens['tools']:>8,}")
    print(f"  {'system prompt':<{width}} {compiled.tokens['system']:>8,}")
    if problems:
        print(f"skills not loaded ({len(problems)}):")
        for file, why in problems:
            print(f"  {one_line(file)}: {one_line(why)}")
    return 0


def _named(compiled: Any) -> list[dict[str, str]]:
    return [{"name": t.get("name") or t.get("function", {}).get("name", "")} for t in compiled.tools or []]
