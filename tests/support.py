"""Test and benchmark support: the shared corpus, Python tiktoken set up offline, and a generator
of realistic coding-agent sessions (OpenAI Chat format)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

#: The sha256 tiktoken expects of each rank file.
TIKTOKEN_HASHES = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}


#: The subset of the shared corpus that ships with the tests (tests/data/SOURCES.md): at least one
#: session per agent format, with the same layout (SOURCES.md tables, raw/, normalized/).
VENDORED = ROOT / "tests" / "data"


def shared_dir() -> Path:
    """The shared folder: ``AGENTCONTEXT_SHARED``, default ``../shared`` next to the project."""
    return Path(os.environ.get("AGENTCONTEXT_SHARED", ROOT.parent / "shared")).resolve()


def transcripts_dir() -> Path:
    """The full corpus when it is there (``AGENTCONTEXT_SHARED`` names it, or ``../shared`` exists),
    else the vendored subset. A folder named by ``AGENTCONTEXT_SHARED`` is used even when missing,
    so that a wrong path shows up as skips that name it rather than as a smaller corpus."""
    shared = shared_dir() / "data" / "transcripts"
    if "AGENTCONTEXT_SHARED" in os.environ or shared.is_dir():
        return shared
    return VENDORED


def full_corpus() -> bool:
    """Whether the tests run on the full shared corpus (the facts about all 67 transcripts hold)."""
    return transcripts_dir() != VENDORED


def normalized_files() -> list[Path]:
    return sorted((transcripts_dir() / "normalized").glob("*/*.jsonl"))


def corpus_size() -> int:
    """How many transcripts the corpus in use holds: 67 in the full corpus (its SOURCES.md), 16 in
    the vendored subset (tests/data/SOURCES.md)."""
    return 67 if full_corpus() else 16


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def message_texts(path: Path) -> Iterator[tuple[str, str]]:
    """``(kind, text)`` for every message content and tool-call argument of a normalized file."""
    for m in read_jsonl(path):
        if m.get("content"):
            yield m["role"], m["content"]
        for call in m.get("tool_calls") or []:
            yield "arguments", call["arguments"]


def each_message(conv: Any) -> list[list[dict[str, Any]]]:
    """Each message of ``conv`` written alone in its format (public ``slice`` and ``to_format``):
    two conversations compared with it are equal message by message, byte for byte."""
    return [conv.slice(i, i + 1).to_format(conv.format) for i in range(len(conv))]


def latest_request(conv: Any) -> tuple[int, str] | None:
    """The latest real user request of ``conv`` as ``(index, text)`` (the handoff's requests come
    latest first), or None."""
    return next(iter(conv.handoff()["user_requests"]), None)


def tool_ids(conv: Any) -> list[tuple[list[str], list[str]]]:
    """Per message of ``conv``: the ids of the tool calls it makes and of the tool results it
    carries, read from its library (``jsonl``) form."""
    out: list[tuple[list[str], list[str]]] = []
    for i in range(len(conv)):
        calls: list[str] = []
        results: list[str] = []
        for m in conv.slice(i, i + 1).to_jsonl():
            calls += [c["id"] for c in m.get("tool_calls") or []]
            if isinstance(m.get("content"), list):
                calls += [b["id"] for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
            if m.get("role") == "tool":
                results.append(m["tool_call_id"])
        out.append((calls, results))
    return out


def cut_points(conv: Any) -> list[int]:
    """Where the history of ``conv`` may be cut, worked out here from public names only: the starts
    of its groups and rounds (``groups()``, ``rounds()``) that no tool call spans, a call spanning
    every message after it up to its result (each result answers the latest call of its id while
    that call has none), or to the end when it has none."""
    n = len(conv)
    spanned = [0] * (n + 2)
    latest: dict[str, int] = {}
    answered: dict[int, bool] = {}
    calls: list[tuple[int, int | None]] = []
    for i, (made, carried) in enumerate(tool_ids(conv)):
        for cid in carried:
            k = latest.get(cid)
            if k is not None and not answered[k]:
                answered[k] = True
                calls[k] = (calls[k][0], i)
        for cid in made:
            latest[cid] = len(calls)
            answered[len(calls)] = False
            calls.append((i, None))
    for at, result in calls:
        end = n if result is None else result
        if end > at:
            spanned[at + 1] += 1
            spanned[end + 1] -= 1
    depth, safe = 0, []
    for i in range(n + 1):
        depth += spanned[i]
        safe.append(depth == 0)
    starts = {s for s, _ in conv.groups()} | {s for s, _ in conv.rounds()}
    return sorted(s for s in starts if safe[s])


def _rank_file_candidates(name: str) -> Iterator[Path]:
    cargo_home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))
    yield from (cargo_home / "registry" / "src").glob(f"*/bpe-openai-*/data/{name}.tiktoken.gz")
    yield from (cargo_home / "registry" / "src").glob(f"*/tiktoken-rs-*/assets/{name}.tiktoken")


def tiktoken_cache_dir() -> Path | None:
    """A directory that Python tiktoken accepts as ``TIKTOKEN_CACHE_DIR``, filled with the rank
    files that ship inside the Rust crates (checked against tiktoken's hashes), or None when the
    crates are not in the cargo registry."""
    target = Path(tempfile.gettempdir()) / "agentcontext-tiktoken-cache"
    target.mkdir(exist_ok=True)
    for name, expected in TIKTOKEN_HASHES.items():
        url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        dest = target / hashlib.sha1(url.encode()).hexdigest()
        if dest.exists() and hashlib.sha256(dest.read_bytes()).hexdigest() == expected:
            continue
        for candidate in _rank_file_candidates(name):
            data = candidate.read_bytes()
            if candidate.suffix == ".gz":
                data = gzip.decompress(data)
            if hashlib.sha256(data).hexdigest() == expected:
                dest.write_bytes(data)
                break
        else:
            return None
    return target


# ---------------------------------------------------------------------------------------------
# A generator of coding-agent sessions, for benchmarks and examples.

_WORDS = [
    "parse",
    "config",
    "cache",
    "token",
    "request",
    "handler",
    "session",
    "retry",
    "buffer",
    "window",
    "summary",
    "result",
    "error",
    "value",
    "index",
    "message",
    "budget",
    "stream",
    "client",
    "server",
    "context",
    "file",
    "path",
    "line",
    "offset",
    "limit",
    "state",
    "update",
    "build",
    "test",
    "check",
    "record",
    "flush",
    "write",
    "read",
    "load",
    "store",
    "merge",
    "split",
    "count",
]
_FILES = [
    "src/app.py",
    "src/config.py",
    "src/handlers/session.py",
    "src/cache/lru.py",
    "src/api/client.py",
    "tests/test_session.py",
    "tests/test_cache.py",
    "README.md",
    "pyproject.toml",
]


def _ident(rng: random.Random) -> str:
    return "_".join(rng.sample(_WORDS, rng.randint(1, 3)))


def _code(rng: random.Random, lines: int) -> str:
    out = []
    indent = 0
    for i in range(lines):
        r = rng.random()
        if r < 0.1:
            out.append(f"def {_ident(rng)}(self, {_ident(rng)}: int, {_ident(rng)}: str | None = None) -> dict:")
            indent = 4
        elif r < 0.15:
            out.append(f"class {_ident(rng).title().replace('_', '')}:")
            indent = 4
        elif r < 0.3:
            out.append(" " * indent + f"if {_ident(rng)} is None or len({_ident(rng)}) > {rng.randint(1, 4096)}:")
        elif r < 0.45:
            out.append(" " * (indent + 4) + f"return {{'{_ident(rng)}': {_ident(rng)}, 'n': {rng.randint(0, 99)}}}")
        elif r < 0.6:
            out.append(" " * indent + f'logger.debug("{" ".join(rng.sample(_WORDS, 5))} %s", {_ident(rng)})')
        elif r < 0.8:
            out.append(" " * indent + f"{_ident(rng)} = self.{_ident(rng)}({_ident(rng)}, limit={rng.randint(1, 500)})")
        else:
            out.append("")
        if i % 17 == 16:
            indent = 0
    return "\n".join(f"{n + 1:6}\t{line}" for n, line in enumerate(out))


def _pytest(rng: random.Random, failing: bool) -> str:
    tests = [f"tests/test_{rng.choice(_WORDS)}.py::test_{_ident(rng)}" for _ in range(rng.randint(4, 14))]
    lines = ["============================= test session starts ==============================", ""]
    lines += [f"{t} PASSED" for t in tests]
    if failing:
        lines += [
            "",
            "=================================== FAILURES ===================================",
            f"____________________________ test_{_ident(rng)} ____________________________",
            "",
            "Traceback (most recent call last):",
            f'  File "{rng.choice(_FILES)}", line {rng.randint(10, 400)}, in {_ident(rng)}',
            f"    {_ident(rng)} = {_ident(rng)}[{rng.randint(0, 9)}]",
            f"KeyError: '{_ident(rng)}'",
            "",
            (
                f"=========================== short test summary info ============================\n"
                f"FAILED {tests[0]} - KeyError"
            ),
            f"==================== 1 failed, {len(tests) - 1} passed in {rng.uniform(0.2, 9):.2f}s ====================",
        ]
    else:
        lines.append(
            f"============================== {len(tests)} passed in {rng.uniform(0.2, 9):.2f}s =============================="
        )
    return "\n".join(lines)


def _grep(rng: random.Random) -> str:
    return "\n".join(
        f"{rng.choice(_FILES)}:{rng.randint(1, 900)}:    {_ident(rng)} = {_ident(rng)}({_ident(rng)})"
        for _ in range(rng.randint(3, 12))
    )


def synthetic_session(messages: int = 2000, seed: int = 7) -> list[dict[str, Any]]:
    """A deterministic coding-agent session in OpenAI Chat format with about ``messages`` messages:
    a system prompt, user requests, assistant replies, and tool calls (some parallel) to read_file,
    bash, grep and edit_file with realistic outputs (source files, pytest runs with tracebacks,
    grep hits, JSON). About 115 o200k tokens per message on average."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": "You are a coding agent. Read before you edit, run the tests after every change, "
            "and report the exact command and its result.",
        }
    ]
    call = 0
    while len(out) < messages:
        out.append(
            {
                "role": "user",
                "content": f"Please fix the {rng.choice(_WORDS)} bug in {rng.choice(_FILES)}: "
                f"{' '.join(rng.sample(_WORDS, 12))}. Keep the public API unchanged.",
            }
        )
        for _ in range(rng.randint(3, 12)):
            if len(out) >= messages:
                break
            calls = []
            for _ in range(1 if rng.random() < 0.8 else rng.randint(2, 4)):
                call += 1
                tool = rng.choices(["read_file", "bash", "grep", "edit_file"], [4, 3, 2, 2])[0]
                if tool == "read_file":
                    args: dict[str, Any] = {"path": rng.choice(_FILES)}
                    result = _code(rng, rng.randint(8, 40))
                elif tool == "bash":
                    if rng.random() < 0.6:
                        args = {"command": "python -m pytest -q"}
                        result = _pytest(rng, failing=rng.random() < 0.5)
                    else:
                        args = {"command": f"cat {rng.choice(_FILES)} | head -50 && git status --short"}
                        payload = {w: rng.randint(0, 9999) for w in rng.sample(_WORDS, 8)}
                        result = json.dumps({"status": "ok", "items": [payload] * rng.randint(1, 3)}, indent=2)
                elif tool == "grep":
                    args = {"pattern": _ident(rng), "path": "src"}
                    result = _grep(rng)
                else:
                    args = {"path": rng.choice(_FILES), "old": _ident(rng), "new": _ident(rng)}
                    result = f"Applied edit to {args['path']} (1 replacement)."
                calls.append((f"call_{call:05d}", tool, args, result))
            out.append(
                {
                    "role": "assistant",
                    "content": f"I'll {rng.choice(['check', 'read', 'run', 'search'])} "
                    f"{' '.join(rng.sample(_WORDS, 6))}.",
                    "tool_calls": [
                        {"id": cid, "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}
                        for cid, tool, args, _ in calls
                    ],
                }
            )
            for cid, _, _, result in calls:
                out.append({"role": "tool", "tool_call_id": cid, "content": result})
        out.append({"role": "assistant", "content": f"Done: {' '.join(rng.sample(_WORDS, 15))}."})
    return out


def provider(kind: str, server: Any, **options: Any) -> Any:
    """A provider of ``kind`` (``anthropic``, ``openai`` or ``responses``) talking to the loopback
    LLM ``server`` (``tests.llm_server.LLMServer``), with a test key, no retries and a 50,000-token
    window unless ``options`` say otherwise; the server closes it when it stops."""
    from agentcontext.providers import AnthropicProvider, OpenAIChatProvider, OpenAIResponsesProvider

    url = server.url
    common: dict[str, Any] = {"api_key": "test-key", "max_retries": 0, "context_window": 50_000, **options}
    made: Any
    if kind == "anthropic":
        made = AnthropicProvider("claude-test", base_url=url, **common)
    elif kind == "openai":
        made = OpenAIChatProvider("gpt-test", base_url=url + "/v1", **common)
    else:
        made = OpenAIResponsesProvider("gpt-test", base_url=url + "/v1", **common)
    server.clients.append(made)
    return made
