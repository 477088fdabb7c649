"""The golden run: every output a refactoring must keep, written to a folder as JSON with sorted
keys, so that two builds can be compared file by file and key by key.

    PYTHONPATH=python python benches/golden.py OUT            # write OUT/*.json
    python benches/golden.py --compare A B                    # every differing file and key

What it writes, for every transcript under ``$AGENTCONTEXT_SHARED/data/transcripts/normalized``
(read with :meth:`Conversation.from_file`) and ``.../raw`` (read as the CLI reads them, through
the importers; a file that holds several sessions gives its first ``--sessions`` ones):

- every compaction preset at 10, 25 and 50% of the transcript's tokens, with the offline
  summarizer (``Compactor(preset).compact``, the path ``agentcontext compact`` takes): the report,
  the compacted messages, provenance and origins;
- ``trim_messages`` at the same budgets, on the native messages and on OpenAI Chat dicts (the
  fast path), with and without clearing;
- ``validate`` and ``repair`` (the functions, on the raw lists, and the methods), ``handoff()``,
  ``protected``, ``clear_tool_results``, ``clearable_tokens``, ``dedup_reads``,
  ``truncate_tool_results``, ``recent_suffix`` and ``stats``;
- the CLI's ``inspect --json`` and ``compact --json -o`` (openharness at 25%), and one
  ``eval --json`` over two folders (its ``seconds`` removed: a time).

Errors are outputs too: an exception is written as its class name and message. Paths under the
shared folder are written relative to it, so two checkouts compare equal. Runs in a few minutes on
two cores (``--jobs``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

SHARES = (10, 25, 50)
SHARED = Path(os.environ.get("AGENTCONTEXT_SHARED", "/work/shared"))
TRANSCRIPTS = SHARED / "data" / "transcripts"


def _relative(value: Any) -> Any:
    """``value`` with the shared folder's path written as ``$SHARED`` (recursively)."""
    if isinstance(value, str):
        return value.replace(str(SHARED), "$SHARED")
    if isinstance(value, dict):
        return {str(k): _relative(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_relative(v) for v in value]
    return value


def _outcome(fn: Callable[[], Any]) -> Any:
    """``fn()``, or ``{"error": class name, "message": text}`` when it raises."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - an error is an output to keep
        return {"error": type(exc).__name__, "message": str(exc)}


def _cli(argv: list[str]) -> dict[str, Any]:
    """The CLI run in this process: exit status, stdout (parsed when JSON) and stderr."""
    from agentcontext import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = _outcome(lambda: cli.main(argv))
    text = out.getvalue()
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = text
    return {"status": status, "stdout": parsed, "stderr": err.getvalue()}


def _compaction(conv: Any, preset: str, budget: int) -> dict[str, Any]:
    from agentcontext.compaction import Compactor

    result = Compactor(preset).compact(conv, budget=budget)
    return {
        "report": result.to_dict(),
        "messages": result.conversation.to_jsonl(),
        "provenance": result.provenance,
        "origins": result.origins,
    }


def _trim(messages: list[Any], budget: int, clear: bool) -> Any:
    from agentcontext import trim_messages

    return _outcome(lambda: trim_messages(messages, budget, clear=clear))


def _tool_names(conv: Any) -> list[str]:
    return sorted(conv.tokens_by_tool())


def conversation_outputs(conv: Any, raw: list[Any] | None) -> dict[str, Any]:
    """Everything the golden run records for one conversation."""
    from agentcontext import repair, validate
    from agentcontext.compaction import PRESETS

    tokens = conv.tokens
    budgets = {f"{share}%": max(1, tokens * share // 100) for share in SHARES}
    out: dict[str, Any] = {
        "format": conv.format,
        "messages": len(conv),
        "tokens": tokens,
        "stats": conv.stats(),
        "message_tokens": conv.message_tokens(),
        "validate": conv.validate(),
        "repair": _outcome(lambda: [r.to_jsonl() if hasattr(r, "to_jsonl") else r for r in conv.repair()]),
        "handoff": _outcome(conv.handoff),
        "protected": conv.protected(),
        "protected_0_0": conv.protected(recent_messages=0, recent_tools=0),
        "clearable_tokens": conv.clearable_tokens(),
        "clearable_tokens_0_0": conv.clearable_tokens(recent_messages=0, recent_tools=0),
        "groups": conv.groups(),
        "rounds": conv.rounds(),
        "cut_points": conv._cut_points(),
    }
    cleared, report = conv.clear_tool_results()
    out["clear_tool_results"] = {"messages": cleared.to_jsonl(), "report": report}
    cleared, report = conv.clear_tool_results(
        recent_messages=2, recent_tools=0, clear_tool_inputs=True, keep_thinking=False, recall_ids=False
    )
    out["clear_tool_results_all"] = {"messages": cleared.to_jsonl(), "report": report}
    deduped, stubs = conv.dedup_reads(_tool_names(conv), recent_messages=2)
    out["dedup_reads"] = {"messages": deduped.to_jsonl(), "stubs": stubs}
    cut, cuts = conv.truncate_tool_results(2000)
    out["truncate_tool_results"] = {"messages": cut.to_jsonl(), "cuts": cuts}
    out["recent_suffix"] = {name: _outcome(lambda b=b: conv.recent_suffix(b)) for name, b in budgets.items()}
    out["compact"] = {
        preset: {name: _outcome(lambda p=preset, b=b: _compaction(conv, p, b)) for name, b in budgets.items()}
        for preset in PRESETS
    }
    native = conv.to_jsonl()
    openai = _outcome(conv.to_openai)
    out["trim_messages"] = {
        name: {
            "native": _trim(native, b, True),
            "native_no_clear": _trim(native, b, False),
            "openai": _trim(openai, b, True) if isinstance(openai, list) else openai,
        }
        for name, b in budgets.items()
    }
    if raw is not None:
        out["validate_fn"] = _outcome(lambda: validate(raw))
        out["repair_fn"] = _outcome(lambda: repair(raw))
    out["validate_fn_openai"] = _outcome(lambda: validate(openai)) if isinstance(openai, list) else openai
    out["repair_fn_openai"] = _outcome(lambda: repair(openai)) if isinstance(openai, list) else openai
    return out


def _jsonl(path: Path) -> list[Any]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def normalized(path: Path) -> dict[str, Any]:
    from agentcontext import Conversation

    conv = Conversation.from_file(path)
    out = conversation_outputs(conv, _jsonl(path))
    out["cli_inspect"] = _cli(["inspect", str(path), "--json"])
    with tempfile.TemporaryDirectory() as tmp:
        target = os.path.join(tmp, "out.jsonl")
        run = _cli(["compact", str(path), "--budget", "25%", "--json", "-o", target])
        if isinstance(run["stdout"], dict) and "output" in run["stdout"]:
            run["stdout"]["output"]["path"] = "OUT"
        run["written"] = _jsonl(Path(target)) if os.path.exists(target) else None
        out["cli_compact"] = run
    return out


def raw(path: Path, sessions: int) -> dict[str, Any]:
    from agentcontext import importers
    from agentcontext.errors import SessionSelectionError

    picks: list[int | None] = [None]
    out: dict[str, Any] = {"detect": importers.detect(path)}
    try:
        importers.load(path)
    except SessionSelectionError as exc:
        out["sessions"] = list(exc.names)
        picks = list(range(min(sessions, len(exc.names))))
    except Exception as exc:  # noqa: BLE001 - an error is an output to keep
        return {**out, "load": {"error": type(exc).__name__, "message": str(exc)}}
    for pick in picks:
        key = "conversation" if pick is None else f"session {pick}"
        conv = importers.load(path, session=pick)
        entry = conversation_outputs(conv, None)
        argv = ["inspect", str(path), "--json"] + ([] if pick is None else ["--session", str(pick)])
        entry["cli_inspect"] = _cli(argv)
        out[key] = entry
    return out


def _evaluation(folders: list[Path]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        target = os.path.join(tmp, "eval.json")
        run = _cli(["eval", *map(str, folders), "--budget", "25%", "--json", target, "--workers", "1", "--no-progress"])
        data = json.loads(Path(target).read_text(encoding="utf-8")) if os.path.exists(target) else None
    if data is not None:
        for row in data["runs"]:
            row.pop("seconds", None)
        for summary in data["strategies"].values() if isinstance(data["strategies"], dict) else data["strategies"]:
            if isinstance(summary, dict):
                for key in [k for k in summary if "seconds" in k]:
                    summary.pop(key)
    run["json"] = data
    # The table printed holds timings too: keep only what the JSON does not have.
    run["stdout"] = None
    return run


def _name(path: Path) -> str:
    return str(path.relative_to(TRANSCRIPTS)).replace(os.sep, "__") + ".json"


def _write(out_dir: Path, name: str, data: Any) -> None:
    text = json.dumps(_relative(data), sort_keys=True, indent=1, ensure_ascii=False, default=repr)
    (out_dir / name).write_text(text + "\n", encoding="utf-8")


def _job(kind: str, path: str, out_dir: str, sessions: int) -> str:
    p = Path(path)
    if kind == "normalized":
        data = _outcome(lambda: normalized(p))
        name = _name(p)
    elif kind == "raw":
        data = _outcome(lambda: raw(p, sessions))
        name = _name(p)
    else:
        data = _outcome(
            lambda: _evaluation([TRANSCRIPTS / "normalized" / "openhands", TRANSCRIPTS / "normalized" / "aider"])
        )
        name = "eval.json"
    _write(Path(out_dir), name, data)
    return name


def _files(root: Path) -> Iterator[Path]:
    return (p for p in sorted(root.rglob("*")) if p.is_file())


def write(out_dir: Path, jobs: int, sessions: int) -> int:
    out_dir.mkdir(parents=True, exist_ok=True)
    tasks = [("normalized", str(p)) for p in _files(TRANSCRIPTS / "normalized")]
    tasks += [("raw", str(p)) for p in _files(TRANSCRIPTS / "raw")]
    tasks.append(("eval", ""))
    # Largest first, so the slowest file does not start last.
    tasks.sort(key=lambda t: -(os.path.getsize(t[1]) if t[1] else 1 << 40))
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_job, kind, path, str(out_dir), sessions) for kind, path in tasks]
        for f in futures:
            print(f.result(), file=sys.stderr)
    print(f"{len(tasks)} files in {out_dir}", file=sys.stderr)
    return 0


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 160 else text[:157] + "..."


def _diff(a: Any, b: Any, where: str, out: list[str], limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a:
                out.append(f"{where}/{key}: only in B")
            elif key not in b:
                out.append(f"{where}/{key}: only in A")
            else:
                _diff(a[key], b[key], f"{where}/{key}", out, limit)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{where}[{i}]", out, limit)
    elif a != b:
        out.append(f"{where}: A={_short(a)} B={_short(b)}")


def compare(a_dir: Path, b_dir: Path, limit: int) -> int:
    a_names = {p.name for p in a_dir.glob("*.json")}
    b_names = {p.name for p in b_dir.glob("*.json")}
    differing = identical = 0
    for name in sorted(a_names | b_names):
        if name not in b_names or name not in a_names:
            print(f"{name}: only in {'A' if name in a_names else 'B'}")
            differing += 1
            continue
        a_text = (a_dir / name).read_bytes()
        b_text = (b_dir / name).read_bytes()
        if a_text == b_text:
            identical += 1
            continue
        differing += 1
        lines: list[str] = []
        _diff(json.loads(a_text), json.loads(b_text), "", lines, limit)
        print(f"{name}: differs")
        for line in lines:
            print(f"  {line}")
        if len(lines) >= limit:
            print(f"  (first {limit} differences)")
    print(f"{differing} of {len(a_names | b_names)} files differ ({identical} byte-identical)")
    return 1 if differing else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", help="folder to write the outputs to")
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two golden folders")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default: 2)")
    parser.add_argument("--sessions", type=int, default=3, help="sessions read from a file that holds several")
    parser.add_argument("--limit", type=int, default=20, help="differences shown per file (default: 20)")
    args = parser.parse_args()
    if args.compare:
        return compare(Path(args.compare[0]), Path(args.compare[1]), args.limit)
    if not args.out:
        parser.error("give OUT or --compare A B")
    return write(Path(args.out), args.jobs, args.sessions)


if __name__ == "__main__":
    sys.exit(main())
