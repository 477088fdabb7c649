"""The working-set compiler: the two ways plan mode hides tools (``hiding=``) side by side, and the cost of compiling.

    PYTHONPATH=python python benches/bench_compiler.py [--rounds 3] [--calls 40]

1. Cache-prefix stability of ``filter`` and ``deny``. One session of ``--calls`` model calls over a
   registry of 50 tools (20 read-only) and 30 skills; the mode switches default -> plan -> default
   -> plan every quarter. Each call adds a user message, or an assistant tool call and its result.
   Every request is measured by :meth:`Compiler.replay` (agentcontext.measure.metrics.Replay): the tokens of
   each request that are a prefix of the previous one (a cache read). Printed side by side: cache
   stability, tokens sent, cache-write tokens (request minus prefix), and the tool-definition tokens
   of a plan request.
2. Time per model call, 50 tools, 30 skills and a 2,000-message history: ``Session.send`` against a
   provider that answers at once (no network), without a compiler (today's stateful path: append,
   compaction check, pre-send fit check) and with one (the same plus the compile: sections, catalog,
   tokens per source, reminders, cache-prefix measure). Runs alternate (A B A B); medians and ranges.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from agentcontext import Conversation
from agentcontext.compiler import Compiler, Registry, WorkingSet, discover_skills
from agentcontext.providers import Completion, Provider, Usage
from agentcontext.sessions.loop import Session


def make_registry() -> Registry:
    reg = Registry()
    for i in range(50):
        reg.tool(
            f"tool_{i:02d}",
            f"Tool number {i}: does one thing to the project's files and reports what it did, with paths.",
            lambda a: "ok",
            input_schema={
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "A path in the workspace."},
                    "pattern": {"type": "string", "description": "What to look for or change."},
                },
                "required": ["path"],
            },
            read_only=i % 5 < 2,
        )
    return reg


def make_skills(root: Path) -> Path:
    for i in range(30):
        d = root / f"skill-{i:02d}"
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(
            f"---\nname: skill-{i:02d}\ndescription: How to do task {i} in this project, step by step.\n---\n"
            + "A step of the skill.\n" * 40
        )
    return root


def tool_turn(i: int) -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"Looking at file {i}."},
                {"type": "tool_use", "id": f"t{i}", "name": f"tool_{i % 50:02d}", "input": {"path": f"src/f{i}.py"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": f"line {i}\n" * 30}],
        },
    ]


def hidings(calls: int, skills: Path) -> None:
    print(f"1. filter vs deny: {calls} calls, 50 tools (20 read-only), 30 skills, mode switches every {calls // 4}")
    rows = []
    for hiding in ("filter", "deny"):
        ws = WorkingSet(registry=make_registry(), skills=discover_skills([skills]))
        compiler = Compiler(ws, hiding=hiding)
        conv = Conversation([{"role": "user", "content": "Start the task."}], format="anthropic")
        plan_tools = 0
        for call in range(calls):
            if call and call % (calls // 4) == 0:
                compiler.set_mode("plan" if compiler.mode == "default" else "default")
            compiled = compiler.compile(conv)
            if compiler.mode == "plan":
                plan_tools = compiled.tokens["tools"]
            if call % 3 == 2:
                conv.extend([{"role": "assistant", "content": "Done with that step."}])
                conv.extend([{"role": "user", "content": f"Next step {call}."}])
            else:
                conv.extend(tool_turn(call))
        replay = compiler.replay()
        rows.append(
            (
                hiding,
                replay.cache_stability,
                sum(replay.request_tokens),
                replay.cache_write_tokens,
                plan_tools,
                sum(1 for e in compiler.events if e["event"] in ("tools_changed", "section_changed")),
            )
        )
    print(f"   {'hiding':<8} {'cache stability':>16} {'tokens sent':>12} {'cache writes':>13} "
          f"{'plan tool defs':>15} {'prompt changes':>15}")  # fmt: skip
    for name, stability, sent, writes, plan_tools, changes in rows:
        print(f"   {name:<8} {stability:>16.1%} {sent:>12,} {writes:>13,} {plan_tools:>15,} {changes:>15}")


class Instant(Provider):
    """A provider that answers at once, so only the library's per-call work is timed."""

    format = "anthropic"
    name = "instant"

    def _request(self, conversation: Conversation, max_output_tokens: int, system: str | None) -> dict[str, Any]:
        # The answer does not depend on the conversation, so none is converted: only the work the
        # library does around a provider is timed.
        return {"model": self.model, "max_tokens": max_output_tokens}

    def _send(self, body: dict[str, Any]) -> Any:
        return SimpleNamespace(http_response=SimpleNamespace(content=INSTANT_ANSWER))

    def _completion(self, data: dict[str, Any]) -> Completion:
        message = {"role": "assistant", "content": data["content"]}
        return Completion("anthropic", self.model, [message], "ok", [], Usage(0, 1), data["stop_reason"], data)


#: What :class:`Instant` answers every call with (the JSON body of a Messages response).
INSTANT_ANSWER = json.dumps({"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}).encode()


def history(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": "Start the task."}]
    i = 0
    while len(out) < n - 1:
        out += tool_turn(i)
        i += 1
    out.append({"role": "assistant", "content": "Paused."})
    return out[:n]


def time_sends(with_compiler: bool, skills: Path, sends: int) -> list[float]:
    provider = Instant("instant-model", context_window=10_000_000)
    compiler = (
        Compiler(WorkingSet(registry=make_registry(), skills=discover_skills([skills]))) if with_compiler else None
    )
    tools = None if with_compiler else [t.definition("anthropic") for t in make_registry()]
    session = Session(provider, conversation=history(2_000), compiler=compiler, tools=tools, system="Base.")
    session.send("warm up")
    times = []
    for i in range(sends):
        t0 = time.perf_counter()
        session.send(f"message {i}")
        times.append(time.perf_counter() - t0)
    assert len(session.conversation) == 2_000 + 2 * (sends + 1)
    return times


def timing(rounds: int, sends: int, skills: Path) -> None:
    print(f"\n2. time per Session.send, 50 tools, 30 skills, 2,000-message history ({sends} sends per run, A B A B)")
    runs: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(rounds):
        for with_compiler in (False, True):
            runs[with_compiler].append(statistics.median(time_sends(with_compiler, skills, sends)) * 1e3)
    for with_compiler, label in ((False, "today (system + tools given)"), (True, "with the compiler")):
        ms = runs[with_compiler]
        print(f"   {label:<30} median per run {', '.join(f'{m:.2f}' for m in ms)} ms")

    ws = WorkingSet(registry=make_registry(), skills=discover_skills([skills]))
    compiler = Compiler(ws)
    conv = Conversation(history(2_000), format="anthropic")
    compiler.compile(conv)
    one = []
    for i in range(sends):
        conv.append({"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"})
        t0 = time.perf_counter()
        compiler.compile(conv)
        one.append(time.perf_counter() - t0)
    print(f"   the compile alone: median {statistics.median(one) * 1e3:.2f} ms, "
          f"max {max(one) * 1e3:.2f} ms")  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--sends", type=int, default=30)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        skills = make_skills(Path(tmp) / "skills")
        hidings(args.calls, skills)
        timing(args.rounds, args.sends, skills)


if __name__ == "__main__":
    main()
