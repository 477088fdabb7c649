"""Two builds side by side in the agent-loop bench (``bench_adapters.py``): each pair of runs is one
process per build, in alternating order, and each run's ratios are against LangChain's hooks timed
in the same process; the median of each ratio over the pairs is printed per build.

    python benches/bench_adapters_ab.py /work/wt/base/python python --pairs 3
    python benches/bench_adapters_ab.py A B --tiktoken            # with the tiktoken peers (slow)
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent / "bench_adapters.py"
RATIO = re.compile(r"^\s+(.+ vs .+): ([0-9.]+)x$")


def run(tree: str, args: argparse.Namespace) -> dict[str, float]:
    cmd = [sys.executable, str(BENCH), "--rounds", str(args.rounds), "--turns", str(args.turns)]
    if not args.tiktoken:
        cmd.append("--no-tiktoken")
    env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return {m[1]: float(m[2]) for line in out.splitlines() if (m := RATIO.match(line))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", help="the first build's python/ folder (the one before)")
    parser.add_argument("b", help="the second build's python/ folder")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--tiktoken", action="store_true", help="also the (slow) tiktoken peers")
    args = parser.parse_args()
    got: dict[str, list[dict[str, float]]] = {args.a: [], args.b: []}
    for k in range(args.pairs):
        for tree in (args.a, args.b) if k % 2 == 0 else (args.b, args.a):
            got[tree].append(run(tree, args))
    names = list(got[args.b][0])
    print(f"{args.pairs} pairs of runs, {args.rounds} rounds each, alternating; median ratio (the peer's time / ours)")
    print(f"  {'':<72} {'A':>7} {'B':>7}")
    for name in names:
        a = statistics.median(r[name] for r in got[args.a] if name in r) if any(name in r for r in got[args.a]) else 0
        b = statistics.median(r[name] for r in got[args.b])
        print(f"  {name:<72} {a:6.1f}x {b:6.1f}x")
    print(f"A = {args.a}\nB = {args.b}")


if __name__ == "__main__":
    main()
