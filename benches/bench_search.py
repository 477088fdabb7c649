"""conversation_search: the Rust search over a session log against a Python `re` scan of the same
log, in one run, on a ~10M-token log (OpenAI Chat format, tool-heavy, as SessionLog writes it).

    PYTHONPATH=python python benches/bench_search.py [--tokens 10000000] [--rounds 3]

The Python side is the straightforward scan: read the file, json.loads every message record,
collect its text, and count matches of each word (re.IGNORECASE) or of the pattern; then rank by
the number of matches. Prints the medians and the ratio for a words query, a rare word, and a
regex.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import tempfile
from pathlib import Path
from typing import Any

from timing import timed

from agentcontext._core import count_tokens_batch, search_log

SKIP = {"type", "role", "id", "tool_call_id", "tool_use_id", "call_id", "signature", "status", "model", "index"}
WORDS = [
    "build",
    "test",
    "deploy",
    "error",
    "cache",
    "token",
    "index",
    "module",
    "config",
    "server",
    "client",
    "request",
    "response",
    "value",
]


def make_log(path: Path, target_tokens: int) -> tuple[int, int]:
    rng = random.Random(7)
    texts: list[str] = []
    tokens = 0
    with path.open("w", encoding="utf-8") as f:
        f.write('{"type":"session","version":1,"format":"openai"}\n')
        i = 0
        while tokens < target_tokens:
            call = f"call_{i}"
            lines = [
                f"{rng.choice(WORDS)} {rng.choice(WORDS)} line {j}: value={rng.randint(0, 10**6)} path=src/m{rng.randint(0, 99)}.py"
                for j in range(rng.randint(20, 120))
            ]
            if i % 5000 == 1234:
                lines.append("needle: the staging password rotation id is quokka-7731")
            items = [
                [{"role": "user", "content": f"please {rng.choice(WORDS)} the {rng.choice(WORDS)} again"}],
                [
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": call,
                                "type": "function",
                                "function": {"name": "bash", "arguments": json.dumps({"cmd": f"run {i}"})},
                            }
                        ],
                    }
                ],
                [{"role": "tool", "tool_call_id": call, "content": "\n".join(lines)}],
            ]
            for data in items:
                f.write(
                    json.dumps({"type": "message", "index": i, "data": data}, ensure_ascii=False, separators=(",", ":"))
                    + "\n"
                )
                text = data[0].get("content") or data[0]["tool_calls"][0]["function"]["arguments"]
                texts.append(text)
                i += 1
            if len(texts) >= 3000:
                tokens += sum(count_tokens_batch(texts))
                texts = []
        tokens += sum(count_tokens_batch(texts))
    return i, tokens


def text_of(v: Any, out: list[str]) -> None:
    if isinstance(v, str):
        out.append(v)
    elif isinstance(v, list):
        for x in v:
            text_of(x, out)
    elif isinstance(v, dict):
        for k, x in v.items():
            if k not in SKIP:
                text_of(x, out)


def python_search(path: Path, patterns: list[re.Pattern[str]], limit: int = 10) -> list[tuple[int, int]]:
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
    return scores[:limit]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "session.jsonl"
        messages, tokens = make_log(path, args.tokens)
        print(f"log: {messages:,} messages, {tokens:,} tokens (o200k_base), {path.stat().st_size / 1e6:.1f} MB")
        queries = [
            (
                "words: deploy error",
                "deploy error",
                False,
                [re.compile("deploy", re.IGNORECASE), re.compile("error", re.IGNORECASE)],
            ),
            ("rare word: quokka-7731", "quokka-7731", False, [re.compile("quokka\\-7731", re.IGNORECASE)]),
            ("regex: m\\d+\\.py", r"m\d+\.py", True, [re.compile(r"m\d+\.py")]),
        ]
        for label, query, is_regex, patterns in queries:
            rust = timed(lambda q=query, r=is_regex: search_log(path, q, regex=r), args.rounds)
            py = timed(lambda p=patterns: python_search(path, p), args.rounds)
            found = search_log(path, query, regex=is_regex)["matched"]
            print(
                f"{label:<26} rust {rust * 1e3:8.1f} ms | python re {py * 1e3:8.1f} ms | {py / rust:5.1f}x faster "
                f"| {found:,} messages matched"
            )


if __name__ == "__main__":
    main()
