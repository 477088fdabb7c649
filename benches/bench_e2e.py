"""End-to-end benchmarks from Python: the numbers users feel, each beside its named baseline in
one run, as ratios.

    python benches/bench_e2e.py            # everything
    python benches/bench_e2e.py tokens     # one section

Needs the test extras (``pip install -e '.[test]'``: tiktoken is the baseline) and a release
build. Python tiktoken runs offline from the rank files that ship inside the Rust crates. Times
are medians of several runs on whatever machine this is; compare ratios, not absolute numbers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from timing import timed

import agentcontext as ac
from tests import support


def table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print(
        "  "
        + "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths, strict=True)))
    )
    for r in rows:
        print(
            "  "
            + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        )


def tiktoken_encoding(name: str = "o200k_base") -> Any:
    cache = support.tiktoken_cache_dir()
    if cache is None:
        sys.exit("no tiktoken rank files in the cargo registry: build the project first")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    import tiktoken

    return tiktoken.get_encoding(name)


def inputs() -> dict[str, list[str]]:
    corpus = [t for p in support.normalized_files() for _, t in support.message_texts(p)]
    synthetic = [m["content"] for m in support.synthetic_session(2000) if m.get("content")]
    out = {"synthetic 2k": synthetic}
    if corpus:
        out = {"shared corpus": corpus, **out}
    return out


def bench_tokens() -> None:
    enc = tiktoken_encoding()
    print("\n[tokens] exact o200k_base, one call per message, one thread")
    rows = []
    for name, texts in inputs().items():
        size = sum(len(t.encode()) for t in texts)
        assert [ac.count_tokens(t) for t in texts] == [len(enc.encode_ordinary(t)) for t in texts]
        ours = timed(lambda texts=texts: [ac.count_tokens(t) for t in texts])
        theirs = timed(lambda texts=texts: [len(enc.encode_ordinary(t)) for t in texts])
        rows.append(
            [
                name,
                f"{size / 1e6:.2f} MB",
                f"{size / ours / 1e6:.1f} MB/s",
                f"{size / theirs / 1e6:.1f} MB/s",
                f"{theirs / ours:.2f}x",
            ]
        )
    table(["input", "size", "agentcontext", "tiktoken", "ratio"], rows)
    print("  (identical counts checked first; ratio = tiktoken time / agentcontext time)")

    print("\n[heuristic] estimate_tokens per message vs len/4, error against exact o200k (texts > 40 chars)")
    rows = []
    cjk = ["上下文窗口管理成为关键。模型是个能力超强、但只能看桌面、而且记性只到桌面的专家。" * 8]
    for name, texts in [*inputs().items(), ("CJK sample", cjk)]:
        texts = [t for t in texts if len(t) > 40]
        size = sum(len(t.encode()) for t in texts)
        exact = ac.count_tokens_batch(texts)
        heur_errors = sorted(abs(ac.estimate_tokens(t) - n) / n for t, n in zip(texts, exact, strict=True))
        quarter_errors = sorted(abs(len(t) / 4 - n) / n for t, n in zip(texts, exact, strict=True))
        ours = timed(lambda texts=texts: [ac.estimate_tokens(t) for t in texts])
        p90 = int(0.9 * (len(texts) - 1))
        under = statistics.median(n / (len(t) / 4) for t, n in zip(texts, exact, strict=True))
        rows.append(
            [
                name,
                f"{size / ours / 1e6:,.0f} MB/s",
                f"{statistics.median(heur_errors):.1%}",
                f"{heur_errors[p90]:.1%}",
                f"{statistics.median(quarter_errors):.1%}",
                f"{quarter_errors[p90]:.1%}",
                f"{under:.2f}x",
            ]
        )
    table(["input", "heuristic", "median err", "p90 err", "len/4 median", "len/4 p90", "exact/(len/4)"], rows)
    print(
        "  (MB/s here includes one Python call per message; the core alone runs at >1 GB/s: cargo bench --bench tokens)"
    )


def bench_conversation() -> None:
    enc = tiktoken_encoding()
    session = support.synthetic_session(2000)
    new = {"role": "user", "content": "Please run the tests again and show me the failing ones."}
    print(f"\n[conversation] one turn at {len(session):,} messages ({ac.Conversation(session).tokens:,} o200k tokens)")
    conv = ac.Conversation(session)
    n = 2000
    t = time.perf_counter()
    for _ in range(n):
        conv.append(new)
    append = (time.perf_counter() - t) / n

    def stateless_tiktoken() -> int:
        total = 0
        for m in [*session, new]:
            total += len(enc.encode_ordinary(m["content"] or ""))
            for c in m.get("tool_calls") or []:
                total += len(enc.encode_ordinary(c["function"]["arguments"]))
        return total

    whole_list = timed(lambda: ac.Conversation([*session, new]).tokens)
    tiktoken_turn = timed(stateless_tiktoken)
    boundary = timed(lambda: ac.detect_format(session)) / len(session)
    list_boundary = timed(lambda: ac.trim_messages(session, 10**9, encoding="approximate"), 15) / len(session)
    rows = [
        [
            "append 1 message, exact count (Conversation)",
            f"{append * 1e6:.1f} µs",
            f"{tiktoken_turn * 1e3:.1f} ms",
            f"{tiktoken_turn / append:,.0f}x",
        ],
        [
            "whole list per turn: Conversation(list)",
            f"{whole_list * 1e3:.1f} ms",
            f"{tiktoken_turn * 1e3:.1f} ms",
            f"{tiktoken_turn / whole_list:.1f}x",
        ],
        [
            "boundary, whole-list call (trim_messages reads the list), per message",
            f"{list_boundary * 1e6:.2f} µs",
            "",
            "",
        ],
        ["boundary, full conversion of list[dict] to the typed model, per message", f"{boundary * 1e6:.2f} µs", "", ""],
    ]
    table(["operation", "agentcontext", "tiktoken recount", "ratio"], rows)
    print("  (baseline: a stateless harness recounting every message with tiktoken each turn)")


def build_log(size: int) -> str:
    lines = []
    total = 0
    i = 0
    while total < size:
        i += 1
        line = f"[{i:>8}] compiling module_{i % 97} from src/pkg_{i % 13}/file_{i % 211}.rs ... ok (0.{i % 1000:03}s)\n"
        lines.append(line)
        total += len(line)
    lines.append("test result: FAILED. 411 passed; 2 failed; 0 ignored\n")
    return "".join(lines)


def python_head_tail(text: str, limit: int) -> str:
    """A careful plain-Python head + marker + tail: line-boundary cuts, counts in the marker."""
    if len(text) <= limit:
        return text
    room = limit - 80
    head_end = text.rfind("\n", 0, room // 2) + 1 or room // 2
    tail_start = text.find("\n", len(text) - (room - head_end)) + 1 or len(text) - (room - head_end)
    omitted = text[head_end:tail_start]
    return (
        f"{text[:head_end]}[... {omitted.count(chr(10))} lines, {len(omitted)} chars omitted ...]\n{text[tail_start:]}"
    )


def bench_budgets() -> None:
    enc = tiktoken_encoding()
    print("\n[budgets] head + marker + tail, against a plain Python implementation")
    rows = []
    for label, size in [("1 MB", 1 << 20), ("10 MB", 10 << 20), ("100 MB", 100 << 20)]:
        text = build_log(size)
        ours = timed(lambda text=text: ac.truncate(text, 16_000), 7)
        theirs = timed(lambda text=text: python_head_tail(text, 16_000), 7)
        rows.append(
            [
                f"truncate {label} to 16,000 chars",
                f"{ours * 1e3:.3f} ms",
                f"{theirs * 1e3:.3f} ms",
                f"{theirs / ours:.1f}x",
            ]
        )
    text = build_log(10 << 20)
    ours = timed(lambda: ac.truncate(text, 16_000, strategy="head"), 7)
    theirs = timed(lambda: (text.count("\n"), len(text.encode())), 7)
    rows.append(
        [
            "count lines, chars, bytes of 10 MB (in truncate)",
            f"{len(text) / ours / 1e9:.1f} GB/s",
            f"{len(text) / theirs / 1e9:.1f} GB/s",
            f"{theirs / ours:.1f}x",
        ]
    )
    mb = build_log(1 << 20)
    fitted = ac.truncate(mb, 4_000, unit="tokens")
    kept = mb[: fitted.head_chars] + mb[len(mb) - fitted.tail_chars :]
    ours = timed(lambda: ac.truncate(mb, 4_000, unit="tokens"), 7)

    def tiktoken_fit() -> str:
        ids = enc.encode_ordinary(mb)
        return enc.decode(ids[:1_980]) + "\n[...]\n" + enc.decode(ids[-1_980:])

    theirs = timed(tiktoken_fit, 3)
    kept_only = timed(lambda: enc.encode_ordinary(kept), 7)
    rows.append(
        [
            "fit 1 MB to 4,000 tokens (vs tiktoken: encode all, slice)",
            f"{ours * 1e3:.2f} ms",
            f"{theirs * 1e3:.1f} ms",
            f"{theirs / ours:.0f}x",
        ]
    )
    rows.append(
        [
            "  same, vs tiktoken encoding only the kept text",
            f"{ours * 1e3:.2f} ms",
            f"{kept_only * 1e3:.2f} ms",
            f"{kept_only / ours:.2f}x",
        ]
    )
    table(["operation", "agentcontext", "plain Python", "ratio"], rows)
    print(
        "  (ratio = baseline time / agentcontext time; the Python version keeps no line-boundary or UTF-8 guarantees)"
    )


def alternating(calls: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """The median CPU time (``time.process_time``: the machine's other load left out) of each call
    over `rounds` rounds, the calls taking turns within each round (in an order that rotates)."""
    names = list(calls)
    for name in names:
        calls[name]()
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            t = time.process_time()
            calls[name]()
            samples[name].append(time.process_time() - t)
    return {name: statistics.median(xs) for name, xs in samples.items()}


def bench_surgery() -> None:
    try:
        from langchain_core.messages import trim_messages as lc_trim
        from langchain_core.messages.utils import count_tokens_approximately
    except ImportError:
        print("\n[surgery] skipped: pip install langchain-core (the baseline) to run it")
        return
    session = support.synthetic_session(2000)
    budget = ac.Conversation(session).tokens // 4
    print(f"\n[surgery] whole list of {len(session):,} dicts in, trimmed list out (budget {budget:,} tokens)")

    def langchain() -> Any:
        return lc_trim(
            session,
            max_tokens=budget,
            strategy="last",
            token_counter=count_tokens_approximately,
            include_system=True,
            start_on="human",
        )

    ours = {
        f"trim_messages(encoding={e!r}{'' if c else ', clear=False'})": (
            lambda e=e, c=c: ac.trim_messages(session, budget, encoding=e, clear=c)
        )
        for e, c in [("approximate", False), ("approximate", True), ("heuristic", True), ("o200k_base", True)]
    }
    # Alternating rounds, CPU time: LangChain and each agentcontext call take turns, so a burst of
    # load on a shared machine falls on all of them alike.
    times = alternating({"langchain": langchain, **ours}, 31)
    theirs = times["langchain"]
    rows = [
        [what, f"{times[what] * 1e3:.2f} ms", f"{theirs * 1e3:.1f} ms", f"{theirs / times[what]:.1f}x"] for what in ours
    ]
    table(["agentcontext", "CPU time", "LangChain trim_messages", "ratio"], rows)
    print("  (LangChain: strategy='last', count_tokens_approximately, which only selects; agentcontext also")
    print("   validates pairing, clears old tool results first, and never splits a call from its result;")
    print("   medians of 31 alternating rounds, CPU time)")
    rows = []
    for encoding in ["approximate", "o200k_base"]:
        conv = ac.Conversation(session, encoding=encoding)
        cleared = len(conv.clear_tool_results()[1]["cleared"])
        ours_t = timed(conv.clear_tool_results, 7)
        rows.append([f"Conversation.clear_tool_results() ({encoding})", f"{ours_t * 1e3:.2f} ms", f"{cleared:,}"])
    table(["stateful: a new conversation with its counts, and the report", "time", "results cleared"], rows)


def bench_ladder() -> None:
    from agentcontext.compaction import Compactor

    enc = tiktoken_encoding()
    inputs: list[tuple[str, list[dict[str, Any]], str]] = []
    files = support.normalized_files()
    if files:
        largest = max(files, key=lambda p: p.stat().st_size)
        inputs.append((f"largest shared ({largest.stem[:24]})", support.read_jsonl(largest), "jsonl"))
    inputs.append(("generated ~1M tokens", support.synthetic_session(8300), "openai"))
    print(
        "\n[ladder] the whole compaction ladder, offline summarizer, conversation already counted"
        " (each timed compaction on a new conversation, so nothing a compaction keeps for the next"
        " is reused)"
    )
    rows = []
    for name, messages, fmt in inputs:
        conv = ac.Conversation(messages, format=fmt)  # type: ignore[arg-type]
        budget = conv.tokens // 10
        compactor = Compactor("openharness")
        result = compactor.compact(conv, budget=budget)
        fresh = [ac.Conversation(messages, format=fmt) for _ in range(5)]  # type: ignore[arg-type]
        for c in fresh:
            assert c.tokens == conv.tokens  # counted before it is timed
        ours = timed(lambda c=compactor, todo=fresh, budget=budget: c.compact(todo.pop(), budget=budget), 5)
        texts = [m["content"] for m in messages if isinstance(m.get("content"), str)]
        texts += [(c.get("function") or c)["arguments"] for m in messages for c in m.get("tool_calls") or []]
        count = timed(lambda texts=texts: [len(enc.encode_ordinary(t)) for t in texts], 3)
        stages = " -> ".join(f"{s.stage} {s.tokens_after:,}" for s in result.stages)
        rows.append(
            [name, f"{conv.tokens:,}", stages, f"{ours * 1e3:.0f} ms", f"{count * 1e3:.0f} ms", f"{count / ours:.1f}x"]
        )
    table(["input", "tokens", "stages (tokens after)", "ladder", "tiktoken count only", "ratio"], rows)
    print("  (ratio = the time Python tiktoken needs merely to count the conversation / the whole ladder)")


def bench_measure() -> None:
    import json

    from agentcontext import importers
    from agentcontext.compaction import Compactor
    from agentcontext.measure import evaluation
    from agentcontext.measure.metrics import replay, replay_policy

    raw = support.transcripts_dir() / "raw"
    if not raw.is_dir():
        print("\n[measure] skipped: no shared corpus")
        return
    files = sorted(p for p in raw.rglob("*") if p.is_file() and importers.detect(p) is not None)
    size = sum(p.stat().st_size for p in files)

    def parse_only() -> None:
        for p in files:
            text = p.read_text(encoding="utf-8")
            if p.suffix == ".md":
                continue  # aider's Markdown log: reading it is the whole baseline
            try:
                json.loads(text)
            except ValueError:
                [json.loads(line) for line in text.splitlines() if line.strip()]

    print(f"\n[measure] importers, replay and eval on the shared corpus ({len(files)} raw files, {size / 1e6:.1f} MB)")
    ours = timed(lambda: importers.import_files(files), 3)
    parse = timed(parse_only, 3)
    conversations = len(importers.import_files(files))
    rows = [
        [
            f"import {conversations} conversations",
            f"{ours * 1e3:.0f} ms",
            f"{parse * 1e3:.0f} ms",
            f"{parse / ours:.2f}x",
        ]
    ]
    largest = max(support.normalized_files(), key=lambda p: p.stat().st_size)
    conv = ac.Conversation(support.read_jsonl(largest), format="jsonl")
    policy = replay_policy(ac.PRESETS["openharness"].compaction, conv.tokens // 4)
    rep_time = timed(lambda: replay(conv, Compactor(policy)), 3)
    calls = replay(conv, Compactor(policy)).turns
    enc = tiktoken_encoding()
    texts = [t for _, t in support.message_texts(largest)]
    count = timed(lambda: [len(enc.encode_ordinary(t)) for t in texts], 3)
    rows.append(
        [
            f"replay {largest.stem[:20]} ({calls} calls)",
            f"{rep_time * 1e3:.0f} ms",
            f"{count * 1e3:.0f} ms",
            f"{count / rep_time:.2f}x",
        ]
    )
    table(["what", "agentcontext", "baseline", "ratio"], rows)
    print("  (baselines: reading and json.loads of the same files; tiktoken counting the transcript once)")
    normalized = support.transcripts_dir() / "normalized"
    started = time.perf_counter()
    runs = evaluation.run([normalized], ["openharness", "pi", "claude-code", "codex"], "25%", workers=os.cpu_count())
    wall = time.perf_counter() - started
    print(
        f"  eval: {len(runs)} runs (67 transcripts x 4 strategies, replay included) in {wall:.1f} s wall, {os.cpu_count()} processes"
    )


def langchain_tiktoken_counter(enc: Any) -> Callable[[list[Any]], int]:
    """What a LangChain user writes for exact counts with tiktoken's ``enc``: each message's text
    and tool calls (the peer of the frameworks and adapters benches)."""

    def count(messages: list[Any]) -> int:
        total = 0
        for m in messages:
            total += 4 + len(enc.encode(m.text))
            for call in getattr(m, "tool_calls", None) or []:
                total += 3 + len(enc.encode(call["name"])) + len(enc.encode(str(call["args"])))
        return total

    return count


def bench_frameworks() -> None:
    """The call a framework makes on every model call: the whole list in, fitted into half its
    size. LangChain's ``trim_messages`` recounts every message each call; agentcontext keeps its
    counts across calls (the count memo), as a framework's next call sees the same messages."""
    try:
        from langchain_core.messages import trim_messages as lc_trim
        from langchain_core.messages.utils import count_tokens_approximately
    except ImportError:
        print("\n[frameworks] skipped: pip install langchain-core (the baseline) to run it")
        return
    enc = tiktoken_encoding()
    session = support.synthetic_session(2000)
    budget = ac.Conversation(session).tokens // 2
    print(f"\n[frameworks] {len(session):,} generated messages fitted into half their tokens ({budget:,}), every call")

    tiktoken_counter = langchain_tiktoken_counter(enc)

    def langchain(counter: Callable[[list[Any]], int]) -> Callable[[], Any]:
        return lambda: lc_trim(
            session, max_tokens=budget, strategy="last", token_counter=counter, include_system=True, start_on="human"
        )

    rows = []
    info = {}
    for what, counter, encoding, rounds in [
        ("o200k_base / tiktoken counter", tiktoken_counter, "o200k_base", 5),
        ("approximate / count_tokens_approximately", count_tokens_approximately, "approximate", 31),
        ("approximate, clear_tool_inputs / count_tokens_approximately", count_tokens_approximately, "approximate", 31),
    ]:
        inputs = "clear_tool_inputs" in what
        ac.token_cache_clear()
        cold = timed(lambda e=encoding, i=inputs: ac.trim_messages(session, budget, encoding=e, clear_tool_inputs=i), 1)
        # Alternating rounds, CPU time: the two calls take turns, so load on a shared machine
        # falls on both alike.
        times = alternating(
            {
                "theirs": langchain(counter),
                "ours": lambda e=encoding, i=inputs: ac.trim_messages(session, budget, encoding=e, clear_tool_inputs=i),
            },
            rounds,
        )
        theirs, ours = times["theirs"], times["ours"]
        if encoding == "o200k_base":
            info = ac.token_cache_info()
        rows.append(
            [what, f"{ours * 1e3:.2f} ms", f"{cold * 1e3:.1f} ms", f"{theirs * 1e3:.1f} ms", f"{theirs / ours:.0f}x"]
        )
    table(["counts (agentcontext / LangChain)", "agentcontext", "first call", "LangChain", "ratio"], rows)
    print(
        f"  count memo after the o200k runs: {info['entries']:,} entries, {info['bytes'] / 1024:.0f} KiB "
        f"(capacity {info['capacity']:,} entries), {info['hits']:,} hits, {info['misses']:,} misses"
    )
    print("  (agentcontext: trim_messages with clearing, pairing kept; 'first call' is with empty memos;")
    print("   medians of alternating rounds, CPU time)")
    where_the_time_goes(session, budget, langchain(count_tokens_approximately))


def read_fields(session: list[dict[str, Any]]) -> int:
    """What any fit has to read of every Chat dict on every call, in plain Python: role, content
    length, call ids, tool names and arguments lengths."""
    total = 0
    for m in session:
        content = m.get("content")
        total += len(content) if content is not None else 0
        if m["role"] == "tool":
            total += len(m["tool_call_id"])
        for call in m.get("tool_calls") or ():
            f = call["function"]
            total += len(call["id"]) + len(f["name"]) + len(f["arguments"])
    return total


def where_the_time_goes(session: list[dict[str, Any]], budget: int, theirs: Callable[[], Any]) -> None:
    """The approximate row's call taken apart, each part timed right after a LangChain call (as
    the table's rounds do: its work leaves our objects out of the caches): the call itself, the
    same call on a list that already fits (reading the dicts, pairing and checking the calls, the
    list back), and a Python loop merely reading the same fields; the rest is clearing old
    results (new dicts for them) and choosing the suffix."""
    cleared = sum(
        1
        for m, out in zip(session, ac.trim_messages(session, budget, encoding="approximate"), strict=False)
        if m is not out
    )
    parts: dict[str, Callable[[], Any]] = {
        "ours": lambda: ac.trim_messages(session, budget, encoding="approximate"),
        "fits": lambda: ac.trim_messages(session, 10**12, encoding="approximate"),
        "read": lambda: read_fields(session),
    }
    samples: dict[str, list[float]] = {name: [] for name in parts}
    for _ in range(15):
        for name, call in parts.items():
            theirs()
            t = time.process_time()
            call()
            samples[name].append(time.process_time() - t)
    ours, fits, read = (statistics.median(samples[name]) for name in parts)
    print(
        f"  where the approximate call's {ours * 1e3:.2f} ms go: reading, pairing and checking the "
        f"{len(session):,} dicts {fits * 1e3:.2f} ms ({fits / ours:.0%}; a Python loop merely reading the same "
        f"fields: {read * 1e3:.2f} ms), clearing {cleared:,} old results (new dicts) and choosing the suffix "
        f"{(ours - fits) * 1e3:.2f} ms ({(ours - fits) / ours:.0%})"
    )


SECTIONS = {
    "tokens": bench_tokens,
    "conversation": bench_conversation,
    "budgets": bench_budgets,
    "surgery": bench_surgery,
    "frameworks": bench_frameworks,
    "ladder": bench_ladder,
    "measure": bench_measure,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sections", nargs="*", choices=[*SECTIONS, []], help="sections to run (default: all)")
    args = parser.parse_args()
    print(f"agentcontext {ac.__version__}, Python {sys.version.split()[0]}, {os.cpu_count()} cores")
    for name in args.sections or SECTIONS:
        SECTIONS[name]()


if __name__ == "__main__":
    main()
