"""What the stable ABI costs: the e2e bench's operations that cross the Python boundary, timed on
two builds of the same tree in one run, as ratios.

    python benches/bench_abi3.py                            # builds both wheels first
    python benches/bench_abi3.py --wheels ABI3.whl FULL.whl  # or compares two built ones

The wheel that ships is abi3 (pyo3's ``abi3-py310``: one wheel for CPython 3.10 and later); the
other is built from a copy of the tree without that feature, for this interpreter only. Both use
the ``dist`` profile, each in its own target directory under ``target/bench-abi3`` (a first build
takes a few minutes). Each round runs every operation in a fresh process per build, the builds'
order alternating from round to round; each number is the median over rounds of per-process
medians. Under the stable ABI every reference count change, type check by flags and list or dict
size is a call into the interpreter; the Rust work is the same.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs in the child with the build's package first on sys.path; prints one JSON line of medians.
CHILD = r"""
import json, sys
sys.path[1:1] = [sys.argv[1], sys.argv[1] + "/benches"]
from tests import support
from timing import timed
import agentcontext as ac
from agentcontext.compaction import Compactor

expected = sys.argv[2]
if not ac.__file__.startswith(expected):
    sys.exit(f"agentcontext imported from {ac.__file__}, not {expected}")

session = support.synthetic_session(2000)
texts = [m["content"] for m in session if m.get("content")]
ac.count_tokens("warm up")
conv = ac.Conversation(session)
budget = conv.tokens // 4
new = {"role": "user", "content": "Please run the tests again and show me the failing ones."}
def append_many():
    c = ac.Conversation(session[:1])
    for _ in range(1000):
        c.append(new)
big = ac.Conversation(support.synthetic_session(8300))
ladder = Compactor("openharness")
out = {
    "count_tokens, one call per text (µs per text)": timed(lambda: [ac.count_tokens(t) for t in texts], 60) / len(texts) * 1e6,
    "Conversation.append, exact count (µs per message)": timed(append_many, 30) / 1000 * 1e6,
    "Conversation(list), o200k (ms)": timed(lambda: ac.Conversation(session), 60) * 1e3,
    "Conversation(list), approximate (ms)": timed(lambda: ac.Conversation(session, encoding="approximate"), 60) * 1e3,
    "detect_format, whole list converted (µs per message)": timed(lambda: ac.detect_format(session), 100) / len(session) * 1e6,
    "convert to Responses (ms)": timed(lambda: ac.convert(session, to="responses"), 60) * 1e3,
    "trim_messages, approximate (ms)": timed(lambda: ac.trim_messages(session, budget, encoding="approximate"), 100) * 1e3,
    "trim_messages, o200k (ms)": timed(lambda: ac.trim_messages(session, budget), 100) * 1e3,
    "Conversation.clear_tool_results (ms)": timed(conv.clear_tool_results, 60) * 1e3,
    "ladder on ~1M tokens, warm (ms)": timed(lambda: ladder.compact(big, budget=big.tokens // 10), 10) * 1e3,
}
print(json.dumps(out))
"""


def run(cmd: list[str], **kwargs: object) -> None:
    print("  $", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kwargs)  # type: ignore[call-overload]


def build(work: Path) -> tuple[Path, Path]:
    """Build the abi3 wheel from the tree and a version-specific one from a copy without the
    feature; return (abi3, full)."""
    maturin = shutil.which("maturin")
    if maturin is None:
        sys.exit("maturin is not on PATH: pip install 'maturin>=1.9.4,<2'")
    git = shutil.which("git")
    listing = git and subprocess.run(
        [git, "ls-files", "-co", "--exclude-standard", "-z"], check=False, cwd=ROOT, capture_output=True
    )
    if not listing or listing.returncode != 0:
        sys.exit("building needs git and a git checkout (its files are copied for the second build); pass --wheels")
    files = listing.stdout.split(b"\0")
    copy = work / "full-src"
    shutil.rmtree(copy, ignore_errors=True)
    for name in filter(None, files):
        src = ROOT / os.fsdecode(name)
        if src.is_file():
            (copy / src.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, copy / src.relative_to(ROOT))
    manifest = copy / "Cargo.toml"
    text = manifest.read_text()
    feature = 'features = ["abi3-py310"]'
    if text.count(feature) != 1:
        sys.exit(f"Cargo.toml: expected one {feature!r} (on the pyo3 line)")
    manifest.write_text(text.replace(feature, "features = []"))
    wheels = []
    for name, tree, interpreter in [("abi3", ROOT, []), ("full", copy, ["-i", sys.executable])]:
        out = work / f"wheel-{name}"
        shutil.rmtree(out, ignore_errors=True)
        env = {**os.environ, "CARGO_TARGET_DIR": str(work / f"target-{name}")}
        run([maturin, "build", "--out", str(out), *interpreter], cwd=tree, env=env)
        (wheel,) = out.glob("*.whl")
        wheels.append(wheel)
    return wheels[0], wheels[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wheels", nargs=2, type=Path, metavar=("ABI3", "FULL"), help="two built wheels")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    for wheel in args.wheels or []:
        if not zipfile.is_zipfile(wheel):
            parser.error(f"not a wheel: {wheel}")
    work = ROOT / "target" / "bench-abi3"
    work.mkdir(parents=True, exist_ok=True)
    abi3, full = args.wheels or build(work)
    if "abi3" not in abi3.name or "abi3" in full.name:
        sys.exit(f"expected an abi3 wheel then a version-specific one: {abi3.name}, {full.name}")
    print(f"agentcontext, Python {sys.version.split()[0]}, {os.cpu_count()} cores")
    print(f"  abi3:             {abi3.name}\n  version-specific: {full.name}")
    with tempfile.TemporaryDirectory() as tmp:
        places = {}
        for name, wheel in [("abi3", abi3), ("full", full)]:
            place = Path(tmp) / name
            with zipfile.ZipFile(wheel) as z:
                z.extractall(place)
            places[name] = place
        results: dict[str, dict[str, list[float]]] = {"abi3": {}, "full": {}}
        for r in range(args.rounds):
            order = ["abi3", "full"] if r % 2 == 0 else ["full", "abi3"]
            for name in order:
                env = {**os.environ, "PYTHONPATH": str(places[name])}
                expected = str(places[name] / "agentcontext")
                line = subprocess.run(
                    [sys.executable, "-c", CHILD, str(ROOT), expected],
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                for op, value in json.loads(line).items():
                    results[name].setdefault(op, []).append(value)
            print(f"  round {r + 1}/{args.rounds} done", flush=True)
    print(f"\n[abi3] the same operations on both builds (medians of {args.rounds} rounds)")
    rows = [["operation", "abi3", "version-specific", "abi3 / version-specific"]]
    for op, values in results["abi3"].items():
        a, f = statistics.median(values), statistics.median(results["full"][op])
        rows.append([op, f"{a:.3f}", f"{f:.3f}", f"{a / f:.2f}x"])
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        print(
            "  "
            + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))
        )
    print("  (> 1.00x: abi3 is slower; compare ratios, not the absolute numbers of this machine)")


if __name__ == "__main__":
    main()
