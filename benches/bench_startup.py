"""Startup, size and memory against the goals of issue #19, each measurement in a fresh process.

    PYTHONPATH=python python benches/bench_startup.py               # startup and memory
    PYTHONPATH=python python benches/bench_startup.py startup --wheel dist/agentcontext-*.whl
    PYTHONPATH=python python benches/bench_startup.py memory --sizes 1000000 10000000

startup: the import alone; the first exact count (import + first ``count_tokens``, which loads the
encoding's tables) and the RSS after it; ``agentcontext inspect`` on a small file (wall time and
peak RSS of the whole process); the steady exact counting speed (one call per message over ~0.8 MB
of generated session text, after a warm-up); the wheel's size when one is given. Each number is
the median of ``--repeats`` fresh processes, with the range.

memory: for a generated session of about N o200k tokens, as multiples of its JSON text's size, each
in a fresh process: the RSS growth of holding the plain ``list[dict]`` from ``json.loads``; the
growth a ``Conversation`` built from that list adds while the list is held (what the Conversation
itself costs); the growth of ``Conversation.from_file`` on the same text (no list at all); and
whether the Conversation gives back the same messages (keys, order, unknown fields). A last column
shows what Python keeps of the list after it is freed (its allocator gives part of the memory of
freed small objects back only when whole arenas empty), which a process that builds a Conversation
from a list and then drops the list carries on top of the Conversation.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

GOALS = {
    "wheel_mb": 12.0,
    "first_count_ms": 100.0,
    "rss_after_first_count_mib": 60.0,
    "conversation_rss_per_json": 3.0,
}

# Runs in the child: import, first count, RSS; prints one JSON line.
FIRST_COUNT = r"""
import json, sys, time
t0 = time.perf_counter()
import agentcontext as ac
t1 = time.perf_counter()
n = ac.count_tokens("Hello, world: the first exact count loads the tables.", encoding=sys.argv[1])
t2 = time.perf_counter()
def rss(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) / 1024 for line in f if line.startswith(key))
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "first_count_ms": (t2 - t0) * 1e3,
                  "count_only_ms": (t2 - t1) * 1e3, "rss_mib": rss("VmRSS:"), "hwm_mib": rss("VmHWM:"), "n": n}))
"""

STEADY = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
import agentcontext as ac
from tests import support
texts = [t for m in support.synthetic_session(2000, seed=7) for t in [m.get("content") or ""] if t]
size = sum(len(t.encode()) for t in texts)
for t in texts[:200]:
    ac.count_tokens(t, encoding=sys.argv[1])
best = float("inf")
for _ in range(5):
    t0 = time.perf_counter()
    for t in texts:
        ac.count_tokens(t, encoding=sys.argv[1])
    best = min(best, time.perf_counter() - t0)
print(json.dumps({"mb_per_s": size / best / 1e6, "mb": size / 1e6}))
"""

MEMORY = r"""
import gc, json, sys
def rss():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
path, kind = sys.argv[1], sys.argv[2]
import agentcontext as ac
ac.count_tokens("warm", encoding="o200k_base")
gc.collect()
before = rss()
if kind == "file":
    held = ac.Conversation.from_file(path)
    gc.collect()
    grown = rss() - before
else:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    messages = json.loads(text)
    del text
    gc.collect()
    grown = rss() - before
    if kind == "conversation":
        with_list = rss()
        held = ac.Conversation(messages)
        gc.collect()
        grown = rss() - with_list
    elif kind == "freed":
        del messages
        gc.collect()
        grown = rss() - before
same = None
if kind in ("conversation", "file"):
    with open(path, encoding="utf-8") as f:
        want = json.load(f)
    got = held.to_format(held.format)
    same = got == want and all(list(a) == list(b) for a, b in zip(got, want))
print(json.dumps({"bytes": grown, "same": same}))
"""


# The children may write bytecode caches: an installed package has them (pip compiles on install),
# and without them every child would compile the package's sources again (~100 ms of `inspect`'s
# wall time under PYTHONDONTWRITEBYTECODE=1). A first untimed child writes them.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_child(code: str, *args: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, env=CHILD_ENV, cwd=ROOT
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def spread(values: list[float], fmt: str = "{:.0f}") -> str:
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def verdict(value: float, goal: float) -> str:
    return "ok" if value <= goal else "MISSED"


def bench_startup(repeats: int, wheel: Path | None, encodings: list[str]) -> None:
    print(f"[startup] median (range) of {repeats} fresh processes")
    rows = []
    if wheel is not None:
        mb = wheel.stat().st_size / 1e6
        rows.append(("wheel size", f"{mb:.1f} MB", f"<= {GOALS['wheel_mb']:.0f} MB", verdict(mb, GOALS["wheel_mb"])))
    for encoding in encodings:
        run_child(FIRST_COUNT, encoding)  # writes the bytecode caches; not timed
        runs = [run_child(FIRST_COUNT, encoding) for _ in range(repeats)]
        imp = [r["import_ms"] for r in runs]
        first = [r["first_count_ms"] for r in runs]
        only = [r["count_only_ms"] for r in runs]
        rss = [r["rss_mib"] for r in runs]
        rows.append(("import agentcontext", f"{spread(imp)} ms", "", ""))
        goal = GOALS["first_count_ms"]
        rows.append(
            (f"first exact count {encoding} (import + count)", f"{spread(first)} ms", f"<= {goal:.0f} ms",
             verdict(statistics.median(first), goal))
        )  # fmt: skip
        rows.append((f"  of which the first count_tokens {encoding}", f"{spread(only)} ms", "", ""))
        goal = GOALS["rss_after_first_count_mib"]
        rows.append(
            (f"RSS after the first count {encoding}", f"{spread(rss)} MiB", f"<= {goal:.0f} MiB",
             verdict(statistics.median(rss), goal))
        )  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "small.jsonl"
        lines = [{"role": "user", "content": "Read the config."}, {"role": "assistant", "content": "It is fine."}] * 10
        small.write_text("\n".join(json.dumps(m) for m in lines) + "\n")
        walls, peaks = [], []
        code = (
            "import resource, sys\nfrom agentcontext.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:"
            "\n    pass\nprint(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
        )
        for i in range(repeats + 1):
            t = time.perf_counter()
            out = subprocess.run(
                [sys.executable, "-c", code, "inspect", str(small)],
                capture_output=True,
                text=True,
                check=True,
                env=CHILD_ENV,
                cwd=ROOT,
            )
            if i == 0:
                continue  # writes the bytecode caches of the CLI's modules; not timed
            walls.append((time.perf_counter() - t) * 1e3)
            peaks.append(float(out.stdout.strip().splitlines()[-1]))
        rows.append(
            (f"agentcontext inspect ({small.stat().st_size} B file), process wall", f"{spread(walls)} ms", "", "")
        )
        rows.append(("  peak RSS of that process", f"{spread(peaks)} MiB", "", ""))
    for encoding in encodings:
        speeds = [run_child(STEADY, encoding, str(ROOT))["mb_per_s"] for _ in range(max(2, repeats // 2))]
        rows.append(
            (f"steady exact count {encoding}, one call per message", f"{spread(speeds, '{:.1f}')} MB/s", "", "")
        )
    width = [max(len(r[i]) for r in rows) for i in range(4)]
    print(f"  {'measure':<{width[0]}}  {'value':>{width[1]}}  {'goal':<{width[2]}}")
    for r in rows:
        print(f"  {r[0]:<{width[0]}}  {r[1]:>{width[1]}}  {r[2]:<{width[2]}}  {r[3]}")


def bench_memory(sizes: list[int]) -> None:
    sys.path.insert(0, str(ROOT))
    import agentcontext as ac
    from tests import support

    goal = GOALS["conversation_rss_per_json"]
    print("[memory] RSS growth holding one generated session, as a multiple of its JSON text (fresh process each)")
    head = ["tokens", "JSON text", "list[dict]", "Conversation(list)", "Conversation.from_file", "lossless"]
    head += [f"goal <= {goal:.0f}x", "list kept after del"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for target in sizes:
            # ~120 o200k tokens per generated message on average: size the session to the target.
            messages = support.synthetic_session(max(10, target // 120), seed=11)
            for i, m in enumerate(messages[::10]):  # unknown fields, which must come back in place
                m["metadata"] = {"turn": i, "source": "bench"}
            tokens = ac.Conversation(messages).tokens
            path = Path(tmp) / f"session-{target}.json"
            path.write_text(json.dumps(messages), encoding="utf-8")
            size = path.stat().st_size
            got = {kind: run_child(MEMORY, str(path), kind) for kind in ("list", "conversation", "file", "freed")}
            ratio = {kind: r["bytes"] / size for kind, r in got.items()}
            worst = max(ratio["conversation"], ratio["file"])
            lossless = got["conversation"]["same"] and got["file"]["same"]
            rows.append(
                [f"{tokens:,}", f"{size / 2**20:.1f} MiB"]
                + [f"{got[k]['bytes'] / 2**20:.1f} MiB {ratio[k]:.2f}x" for k in ("list", "conversation", "file")]
                + ["yes" if lossless else "NO", verdict(worst, goal), f"{ratio['freed']:.2f}x"]
            )
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        print("  " + "  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sections", nargs="*", choices=["startup", "memory", []], help="default: both")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--wheel", type=Path, help="a built wheel whose size to report")
    parser.add_argument("--encodings", default="o200k_base,cl100k_base")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000], help="session sizes in tokens")
    args = parser.parse_args()
    sections = args.sections or ["startup", "memory"]
    import agentcontext

    print(
        f"agentcontext {agentcontext.__version__} from {Path(agentcontext.__file__).parent}, Python {sys.version.split()[0]}"
    )
    if "startup" in sections:
        bench_startup(args.repeats, args.wheel, args.encodings.split(","))
    if "memory" in sections:
        bench_memory(args.sizes)


if __name__ == "__main__":
    main()
