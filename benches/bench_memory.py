"""Memory index: the Rust index (agentcontext._core.MemoryIndex) against a straightforward Python
os.walk + read + parse of the same tree, in one run, at 1,000 and 10,000 records.

    PYTHONPATH=python python benches/bench_memory.py [--rounds 5]

Cold: a new index reads, parses, validates and renders every record (the files are in the OS
cache for both sides). Warm: refresh + render after nothing changed (stat only). Incremental:
one record rewritten, then refresh + render. Prints the medians, the ratios and µs per record,
and the floor of the warm path: listing the directory and stat-ing each file from Python's C
os.scandir (the warm refresh is that stat per file, in parallel, plus a render).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from timing import timed

from agentcontext._core import MemoryIndex

TYPES = ("user", "feedback", "project", "reference")


def make_tree(directory: Path, n: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        kind = TYPES[i % 4]
        body = f"Record {i}. " + "Some remembered context about the project and how it is built. " * 6
        (directory / f"record-{i:05d}.md").write_text(
            f"---\nname: record-{i:05d}\ndescription: what record {i} is about, topic {i % 97}\ntype: {kind}\n"
            f"updated: 2026-11-30T12:00:00Z\n---\n{body}\n"
        )


def python_index(directory: Path, max_lines: int = 200) -> str:
    """The straightforward Python version: walk, read, parse the front matter, validate, sort, render."""
    records = []
    for root, _dirs, files in os.walk(directory):
        for file in files:
            if file.startswith(".") or not file.endswith(".md"):
                continue
            with open(os.path.join(root, file), encoding="utf-8") as f:
                text = f.read()
            if not text.startswith("---\n"):
                continue
            end = text.find("\n---\n", 3)
            if end < 0:
                continue
            fields = {}
            for line in text[4:end].split("\n"):
                key, sep, value = line.partition(":")
                if sep:
                    fields[key.strip()] = value.strip()
            if fields.get("type") not in TYPES or not fields.get("description") or fields.get("name") != file[:-3]:
                continue
            records.append((TYPES.index(fields["type"]), fields["name"], fields["description"], file))
        break
    records.sort()
    lines = [f"- {name} ({TYPES[t]}, {file}): {desc}" for t, name, desc, file in records]
    if len(lines) > max_lines:
        lines = [*lines[: max_lines - 1], f"[... {len(records) - max_lines + 1} of {len(records)} records not listed]"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1_000, 10_000):
            d = Path(tmp) / f"m{n}"
            make_tree(d, n)
            python_index(d)  # warm the OS cache for both sides

            def rust_cold(d: Path = d) -> None:
                index = MemoryIndex(d)
                index.refresh()
                index.render()

            warm_index = MemoryIndex(d)
            warm_index.refresh()

            def rust_warm(index: MemoryIndex = warm_index) -> None:
                index.refresh()
                index.render()

            victim = d / "record-00003.md"
            original = victim.read_text()
            flip = [0]

            def rust_incremental(
                index: MemoryIndex = warm_index, victim: Path = victim, original: str = original, flip: list[int] = flip
            ) -> None:
                flip[0] ^= 1
                victim.write_text(original.replace("topic", "topic!" if flip[0] else "topic"))
                index.refresh()
                index.render()

            def stat_floor(d: Path = d) -> None:
                with os.scandir(d) as entries:
                    for e in entries:
                        e.stat(follow_symlinks=False)

            floor = timed(stat_floor, args.rounds * 4)
            py = timed(lambda d=d: python_index(d), args.rounds)
            cold = timed(rust_cold, args.rounds)
            warm = timed(rust_warm, args.rounds * 4)
            inc = timed(rust_incremental, args.rounds * 4)
            print(
                f"{n:>6,} records: python os.walk+read+parse {py * 1e3:8.2f} ms | rust cold {cold * 1e3:7.2f} ms "
                f"({py / cold:4.1f}x faster) | rust warm {warm * 1e3:6.2f} ms ({warm / n * 1e6:.2f} µs/record, "
                f"{py / warm:5.1f}x) | one changed {inc * 1e3:6.2f} ms ({inc / n * 1e6:.2f} µs/record) | "
                f"floor: scandir+stat alone {floor / n * 1e6:.2f} µs/record"
            )


if __name__ == "__main__":
    main()
