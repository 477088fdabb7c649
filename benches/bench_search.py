"""conversation_search against ripgrep and against a Python json + re scan, in one run, on a large
session log built from the corpus (every normalized transcript as OpenAI Chat messages, written as
SessionLog writes them, repeated to about ``--mb`` megabytes, with a rare word planted now and
then).

    PYTHONPATH=python python benches/bench_search.py [--mb 100] [--rounds 5] [--log /tmp/log.jsonl]
    PYTHONPATH=python python benches/bench_search.py --log /tmp/log.jsonl --dump /tmp/before.json
    PYTHONPATH=python python benches/bench_search.py --log /tmp/log.jsonl --dump /tmp/after.json --compare /tmp/before.json

``--dump`` writes the whole answer (hits with scores and snippets, messages, matched, skipped) of
every query of ``CHECKS`` on the log and on a small log of malformed lines (torn, escaped, not
UTF-8, numbers out of range, other record types) instead of timing; ``--compare`` then says
whether a dump of another build is identical (a speed-up must not change a byte of it).

The peers, on the same file:

- ripgrep's line count, ``rg -c`` (``-i -F`` for a words query, one ``-e`` per word: what a plain
  text search of the log costs; it neither parses the JSON nor ranks anything). Timed as a process,
  its start-up included (a few ms).
- the straightforward Python scan: read the file, ``json.loads`` every message record, collect its
  text, count the matches of each word (``re.IGNORECASE``) or of the pattern, rank by the count.

Rounds alternate the three (rg, agentcontext, Python), and each figure is the median over the
rounds; the Python scan runs ``--python-rounds`` times (it is slow). The ratio to rg is
agentcontext's time over rg's (lower is better, 1.0 is rg's speed); the one to Python is Python's
time over agentcontext's.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import agentcontext as ac
from agentcontext._core import search_log
from tests import support

SKIP = {
    "type",
    "role",
    "id",
    "tool_call_id",
    "tool_use_id",
    "call_id",
    "signature",
    "status",
    "model",
    "index",
    "encrypted_content",
}
NEEDLE = "the staging password rotation id is quokka-7731"

# (label, query, regex?, ripgrep arguments, Python patterns)
QUERIES: list[tuple[str, str, bool, list[str], list[re.Pattern[str]]]] = [
    ("words: error", "error", False, ["-i", "-F", "-e", "error"], [re.compile("error", re.IGNORECASE)]),
    (
        "words: test failed",
        "test failed",
        False,
        ["-i", "-F", "-e", "test", "-e", "failed"],
        [re.compile("test", re.IGNORECASE), re.compile("failed", re.IGNORECASE)],
    ),
    (
        "rare word: quokka-7731",
        "quokka-7731",
        False,
        ["-i", "-F", "-e", "quokka-7731"],
        [re.compile(re.escape("quokka-7731"), re.IGNORECASE)],
    ),
    ("regex: [A-Z]\\w+Error\\b", r"[A-Z]\w+Error\b", True, [r"[A-Z]\w+Error\b"], [re.compile(r"[A-Z]\w+Error\b")]),
    ("regex: m\\d+\\.py", r"m\d+\.py", True, [r"m\d+\.py"], [re.compile(r"m\d+\.py")]),
]


# The identical-output check: (query, regex?), run on the corpus log and on the malformed one.
CHECKS: list[tuple[str, bool]] = [
    *((q, r) for _, q, r, _, _ in QUERIES),
    ("needle", False),
    ('"build failed" error', False),
    ("kelvin café", False),
    ("a/b traceback", False),
    ("\ufffd", False),
    (r"(?i)needle\W+\w+", True),
    (r"\w+", True),
    (r"\d{4,}", True),
]


def malformed_log(path: Path) -> None:
    """A log of every kind of line a search must read as it always did."""
    rows: list[bytes] = [b'{"type":"session","version":1,"format":"openai"}']
    contents = [
        r"the needle is here",
        r"NEEDLE\nwith a break",
        r"caf\u00e9 and \u212aelvin",
        r"a \"quoted\" needle\\ and a\/b",
        r"build\tfailed; Build   failed error",
        r"ValueError: m12.py line 40",
        r"\ud83d\ude00 emoji needle",
    ]
    for i in range(120):
        c = contents[i % len(contents)]
        extra = ["", ',"n":12', ',"n":1.5e3', ',"n":-0.10', ',"n":' + "9" * 400, ',"n":123456789012345678901'][i % 6]
        line = f'{{"type":"message","index":{i},"data":[{{"role":"tool","tool_call_id":"c{i}","content":"{c} {i}"{extra}}}]}}'
        rows.append(line.encode())
        kind = i % 9
        if kind == 1:
            rows.append(line.encode()[: len(line) // 2])  # torn
        elif kind == 2:
            rows.append(b'{"type":"message","index":0,"data":[{"role":"user","content":"bad \xff needle"}]}')
        elif kind == 3:
            rows.append(b'{"type":"compaction","seq":1,"upto":3,"working_set":[{"ref":0}]}')
        elif kind == 4:
            rows.append(b"not json at all, needle")
        elif kind == 5:
            rows.append(b'{"data":[{"role":"user","content":"needle"}],"type":"message"}  ')
        elif kind == 6:
            rows.append(b'{"type":"message","index":1,"data":[{"role":"user","content":"needle \x01"}]}\r')
        elif kind == 7:
            rows.append(b"")
        elif kind == 8:
            rows.append(b'{"type":"message","index":2,"data":[{"role":"user","content":"x"}]} trailing needle}')
    path.write_bytes(b"\n".join(rows) + b'\n{"type":"message","index":9,"data":"torn needle')


def dump(paths: list[Path], out: Path) -> None:
    answers = {
        f"{path.name} {query!r} regex={is_regex}": search_log(path, query, regex=is_regex, limit=50, max_bytes=1 << 40)
        for path in paths
        for query, is_regex in CHECKS
    }
    out.write_text(json.dumps(answers, indent=1, ensure_ascii=False))
    print(f"{len(answers)} answers written to {out}")


def corpus_messages() -> list[dict[str, Any]]:
    """Every normalized transcript of the corpus as OpenAI Chat messages."""
    out: list[dict[str, Any]] = []
    for path in support.normalized_files():
        out.extend(ac.Conversation(support.read_jsonl(path), format="jsonl").to_openai())
    return out


def make_log(path: Path, megabytes: float) -> int:
    """The corpus repeated as one session log of about `megabytes` MB; the message count."""
    messages = corpus_messages()
    if not messages:
        sys.exit("no transcripts found: set AGENTCONTEXT_SHARED to the shared data directory")
    index = 0
    with path.open("w", encoding="utf-8") as f:
        f.write('{"type":"session","version":1,"format":"openai"}\n')
        while f.tell() < megabytes * 1e6:
            for m in messages:
                if index % 20_000 == 7_777:
                    m = {"role": "tool", "tool_call_id": f"call_{index}", "content": f"needle: {NEEDLE}"}
                record = {"type": "message", "index": index, "data": [m]}
                f.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
                index += 1
    return index


def text_of(v: Any, out: list[str]) -> None:
    if isinstance(v, str):
        out.append(v)
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        out.append(str(v))
    elif isinstance(v, list):
        for x in v:
            text_of(x, out)
    elif isinstance(v, dict):
        for k, x in v.items():
            if k not in SKIP:
                text_of(x, out)


def python_search(path: Path, patterns: list[re.Pattern[str]], limit: int = 10) -> tuple[int, list[tuple[int, int]]]:
    """The messages that match and the best `limit` (by match count)."""
    scores = []
    n = 0
    with path.open(encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if record.get("type") != "message":
                continue
            parts: list[str] = []
            text_of(record["data"], parts)
            text = "\n".join(parts)
            count = sum(len(p.findall(text)) for p in patterns)
            if count:
                scores.append((-count, n))
            n += 1
    scores.sort()
    return len(scores), scores[:limit]


def rg_count(rg: str, args: list[str], path: Path) -> int:
    done = subprocess.run([rg, "-c", *args, str(path)], capture_output=True, text=True, check=False)
    return int(done.stdout.strip() or 0)


def wall(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=100, help="size of the log built from the corpus")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--python-rounds", type=int, default=1)
    parser.add_argument("--log", type=Path, help="build the log here (kept) instead of in a temporary directory")
    parser.add_argument("--only", default="", help="only the queries whose label contains this")
    parser.add_argument("--dump", type=Path, help="write every answer of CHECKS here instead of timing")
    parser.add_argument("--compare", type=Path, help="with --dump: the dump of another build to compare with")
    parser.add_argument("--rg", default=shutil.which("rg"), help="the ripgrep to compare with (default: rg on PATH)")
    args = parser.parse_args()
    rg = args.rg
    with tempfile.TemporaryDirectory() as tmp:
        path = args.log or Path(tmp) / "session.jsonl"
        if not path.exists():
            make_log(path, args.mb)
        size = path.stat().st_size
        if args.dump:
            bad = Path(tmp) / "malformed.jsonl"
            malformed_log(bad)
            dump([path, bad], args.dump)
            if args.compare:
                same = args.compare.read_text() == args.dump.read_text()
                print("identical" if same else f"DIFFERENT from {args.compare}")
                sys.exit(0 if same else 1)
            return
        print(f"log: {path} ({size / 1e6:.1f} MB), corpus transcripts repeated; median of {args.rounds} rounds")
        if rg is None:
            print("  (ripgrep not found: apt-get install ripgrep, or cargo install ripgrep, to compare with it)")
        else:
            version = subprocess.run([rg, "--version"], check=False, capture_output=True, text=True).stdout.split("\n")[
                0
            ]
            print(f"  rg: {rg} ({version})")
        header = f"{'query':<26}{'agentcontext':>14}{'rg -c':>10}{'ours/rg':>9}{'Python':>10}{'Py/ours':>9}  matched"
        print(header)
        for label, query, is_regex, rg_args, patterns in QUERIES:
            if args.only not in label:
                continue
            ours, theirs = [], []
            for _ in range(args.rounds):
                if rg is not None:
                    theirs.append(wall(lambda a=rg_args: rg_count(rg, a, path)))
                ours.append(wall(lambda q=query, r=is_regex: search_log(path, q, regex=r, max_bytes=1 << 40)))
            py, expected = [], None
            for _ in range(args.python_rounds):
                t = time.perf_counter()
                expected = python_search(path, patterns)[0]
                py.append(time.perf_counter() - t)
            found = search_log(path, query, regex=is_regex, max_bytes=1 << 40)["matched"]
            ours_t = statistics.median(ours)
            py_t = statistics.median(py) if py else float("nan")
            rg_t = statistics.median(theirs) if theirs else float("nan")
            lines = rg_count(rg, rg_args, path) if rg is not None else 0
            same = "" if expected in (None, found) else f" (Python: {expected:,})"
            print(
                f"{label:<26}{ours_t * 1e3:>11.0f} ms{rg_t * 1e3:>7.0f} ms{ours_t / rg_t:>8.2f}x"
                f"{py_t * 1e3:>7.0f} ms{py_t / ours_t:>8.1f}x  {found:,} messages{same} ({lines:,} lines for rg)"
            )


if __name__ == "__main__":
    main()
