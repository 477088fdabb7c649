"""A/B timing of the compaction ladder between builds, alternating round by round.

Each build is a PYTHONPATH holding the ``agentcontext`` package with its compiled core. One
long-lived worker process per build loads the inputs once and warms the ladder; then every round
asks each worker in turn (the order rotates each round) for one timed ``Compactor.compact`` per
input (on a new conversation, counted before it is timed: nothing a compaction keeps on its
conversation for the next is reused), so that the builds see the same load on a shared machine. The table gives, in wall-clock time,
per input the minimum and the median over the rounds for each build and their ratio to the first
build; and the same for CPU time (``time.process_time``, all threads of the worker: steadier than
wall-clock time on a loaded machine). Give the same path twice under two labels to see the noise floor::

    python benches/bench_ladder_ab.py before=/work/wt/before/python after=python --rounds 30

Inputs (as ``benches/bench_e2e.py``'s ladder table): the largest shared transcript and the
generated ~1M-token session (``tests.support.synthetic_session(8300)``), budget a tenth of the
tokens, preset ``openharness``, offline summarizer, conversation already counted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def inputs() -> dict[str, tuple[list[dict[str, Any]], str]]:
    sys.path.insert(0, str(ROOT))
    from tests import support

    out: dict[str, tuple[list[dict[str, Any]], str]] = {}
    files = support.normalized_files()
    if files:
        largest = max(files, key=lambda p: p.stat().st_size)
        out[f"largest shared ({largest.parent.name}/{largest.stem[:20]})"] = (support.read_jsonl(largest), "jsonl")
    out["generated ~1M tokens"] = (support.synthetic_session(8300), "openai")
    return out


def worker(preset: str) -> None:
    """Answer each line on stdin with one JSON line: {input: seconds} of one compaction each."""
    import agentcontext as ac
    from agentcontext.compaction import Compactor

    calls = {}
    for name, (messages, fmt) in inputs().items():
        conv = ac.Conversation(messages, format=fmt)  # type: ignore[arg-type]
        compactor = Compactor(preset)
        budget = conv.tokens // 10
        compactor.compact(conv, budget=budget)  # warm
        calls[name] = (compactor, messages, fmt, budget)
    print(json.dumps({"ready": ac.__file__}), flush=True)
    for _ in sys.stdin:
        out = {}
        for name, (compactor, messages, fmt, budget) in calls.items():
            # A new conversation each round, counted before it is timed: nothing a compaction
            # keeps on its conversation for the next one is reused.
            conv = ac.Conversation(messages, format=fmt)  # type: ignore[arg-type]
            conv.tokens  # noqa: B018
            t, cpu = time.perf_counter(), time.process_time()
            compactor.compact(conv, budget=budget)
            out[name] = time.perf_counter() - t
            out[f"{name}, CPU"] = time.process_time() - cpu
        print(json.dumps(out), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("builds", nargs="*", help="label=PYTHONPATH, the first is the reference")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--preset", default="openharness")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.preset)
        return
    if len(args.builds) < 2:
        parser.error("give at least two builds as label=PYTHONPATH")
    builds = [b.split("=", 1) for b in args.builds]
    procs = {}
    for label, path in builds:
        env = {**os.environ, "PYTHONPATH": str(Path(path).resolve())}
        procs[label] = p = subprocess.Popen(
            [sys.executable, __file__, "--worker", "--preset", args.preset],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert p.stdout is not None
        print(f"{label}: {json.loads(p.stdout.readline())['ready']}", flush=True)
    samples: dict[str, dict[str, list[float]]] = {label: {} for label, _ in builds}
    labels = [label for label, _ in builds]
    for r in range(args.rounds):
        order = labels[r % len(labels) :] + labels[: r % len(labels)]
        for label in order:
            p = procs[label]
            assert p.stdin is not None and p.stdout is not None
            p.stdin.write("\n")
            p.stdin.flush()
            for name, seconds in json.loads(p.stdout.readline()).items():
                samples[label].setdefault(name, []).append(seconds)
    for p in procs.values():
        assert p.stdin is not None
        p.stdin.close()
        p.wait()
    ref = labels[0]
    print(f"\n{args.rounds} alternating rounds, ms (min / median), ratio to {ref}")
    for name in samples[ref]:
        print(f"\n{name}")
        base = samples[ref][name]
        for label in labels:
            s = samples[label][name]
            lo, med = min(s) * 1e3, statistics.median(s) * 1e3
            ratio = f"  x{min(s) / min(base):.2f} / x{statistics.median(s) / statistics.median(base):.2f}"
            print(f"  {label:<10} {lo:8.1f} / {med:8.1f}" + ("" if label == ref else ratio))


if __name__ == "__main__":
    main()
