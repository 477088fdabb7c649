"""A/B timing of ``trim_messages`` (and the parsed path's clearing) between builds, alternating.

Each build is a PYTHONPATH holding the ``agentcontext`` package with its compiled core. Every
round runs one fresh worker process per build, in an order that rotates each round; a worker
times every workload a few times in CPU time (``time.process_time``) and reports its median.
The table gives, per workload, the median over the rounds for each build and its ratio to the
first build. Give the same path twice under two labels to see the noise floor of the machine::

    python benches/bench_trim_ab.py before=/work/wt/before/python after=python again=python

Workloads (clearing on, budget a quarter of the tokens, encodings ``approximate`` and
``o200k_base``): ``trim_messages`` on a list of OpenAI Chat dicts (the whole-list fast path, also
with ``clear_tool_inputs``) and
on the same conversation as OpenAI Responses items (the general path, which parses the list), and ``Conversation.clear_tool_results``; over a real
transcript (the pi-mono large session, as Chat dicts) and a synthetic tool-heavy session.
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
TRANSCRIPT = Path("/work/shared/data/transcripts/normalized/pi-mono/large-session.jsonl")
ENCODINGS = ("approximate", "o200k_base")


def sessions(synthetic: int) -> dict[str, list[dict[str, Any]]]:
    """The sessions as OpenAI Chat dicts, by name."""
    import agentcontext as ac

    sys.path.insert(0, str(ROOT / "tests"))
    import support

    out = {f"synthetic-{synthetic}": support.synthetic_session(synthetic)}
    path = Path(os.environ.get("TRIM_AB_TRANSCRIPT", TRANSCRIPT))
    if path.exists():
        out[path.parent.name] = ac.Conversation(
            [json.loads(line) for line in path.read_text().splitlines() if line.strip()], format="jsonl"
        ).to_openai()
    return out


def workloads(synthetic: int) -> dict[str, Any]:
    """Name → a call to time."""
    import agentcontext as ac

    calls: dict[str, Any] = {}
    for name, chat in sessions(synthetic).items():
        for enc in ENCODINGS:
            conv = ac.Conversation(chat, encoding=enc)
            budget = conv.tokens // 4
            responses = conv.to_format("responses")
            calls[f"{name} {enc} trim chat (fast)"] = lambda c=chat, b=budget, e=enc: ac.trim_messages(c, b, encoding=e)
            calls[f"{name} {enc} trim chat inputs (fast)"] = lambda c=chat, b=budget, e=enc: ac.trim_messages(
                c, b, encoding=e, clear_tool_inputs=True
            )
            calls[f"{name} {enc} trim responses (parsed)"] = lambda r=responses, b=budget, e=enc: ac.trim_messages(
                r, b, format="responses", encoding=e
            )
            calls[f"{name} {enc} clear_tool_results"] = lambda c=conv: c.clear_tool_results()
    return calls


def worker(synthetic: int, repeat: int, only: str) -> None:
    """Time every workload named with `only` `repeat` times after one warm-up call; print
    {name: median seconds}."""
    out = {}
    for name, call in workloads(synthetic).items():
        if only not in name:
            continue
        call()
        samples = []
        for _ in range(repeat):
            t = time.process_time()
            call()
            samples.append(time.process_time() - t)
        out[name] = statistics.median(samples)
    print(json.dumps(out))


def run(path: str, synthetic: int, repeat: int, only: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": path}
    env.setdefault("AGENTCONTEXT_SHARED", "/work/shared")
    cmd = [sys.executable, __file__, "--worker", "--synthetic", str(synthetic), "--repeat", str(repeat), "--only", only]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("builds", nargs="*", help="LABEL=PYTHONPATH, the first is the reference")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=5, help="timed calls per workload in a worker")
    parser.add_argument("--synthetic", type=int, default=3000, help="messages of the synthetic session")
    parser.add_argument("--only", default="", help="only the workloads whose name contains this")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.synthetic, args.repeat, args.only)
        return
    if len(args.builds) < 2:
        parser.error("give at least two LABEL=PYTHONPATH builds")
    builds = [b.split("=", 1) for b in args.builds]
    times: dict[str, dict[str, list[float]]] = {label: {} for label, _ in builds}
    for r in range(args.rounds):
        for k in range(len(builds)):
            label, path = builds[(r + k) % len(builds)]
            for name, t in run(str(Path(path).resolve()), args.synthetic, args.repeat, args.only).items():
                times[label].setdefault(name, []).append(t)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    ref = builds[0][0]
    labels = [label for label, _ in builds]
    print(f"medians over {args.rounds} rounds of CPU ms (each the median of {args.repeat} calls); ratio to {ref}")
    print(
        f"{'workload':<52}"
        + "".join(f"{label:>12}" for label in labels)
        + "".join(f"{'/' + ref:>14}" for _ in labels[1:])
    )
    for name in times[ref]:
        med = {label: statistics.median(times[label][name]) for label in labels}
        cells = "".join(f"{med[label] * 1e3:>12.2f}" for label in labels)
        ratios = "".join(f"{med[label] / med[ref]:>14.3f}" for label in labels[1:])
        print(f"{name:<52}{cells}{ratios}")


if __name__ == "__main__":
    main()
