"""The compaction ladder's last rungs (the drop, recompile's drop, a summary made smaller) and
repeated compactions of one working set, on seeded random histories: every preset, summarizers
that raise (typed or not), return nothing, an empty or a huge text, tight budgets, a reserve,
Anthropic and OpenAI forms, parallel calls answered in part, orphan results, reused ids, images.

What every result must hold: a call and its (one) result are kept or dropped together, the
latest user request is in it (raw, cut, or quoted by the summary), `fits` says whether it is
within the budget, only typed errors, the input unchanged, and every recall id its markers name
resolves (a marker of dropped messages to at least that many messages)."""

from __future__ import annotations

import copy
import json
import random
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.budgets import ResultStore
from agentcontext.budgets.recall import Recall
from agentcontext.compaction import Compactor, resolve_policy
from agentcontext.compaction.summarize import OfflineSummarizer
from agentcontext.errors import AgentContextError, CompactionError

Message = dict[str, Any]
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
PRESETS = ["openharness", "pi", "openclaw", "claude-code", "codex", "letta", "goose", "alyx"]
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
RECALL_ID = re.compile(r"recall id (r-[0-9a-f]+)\b")
DROPPED = re.compile(r"\[agentcontext: ([\d,]+) earlier messages .*?recall id (r-[0-9a-f]+)")


class Raises:
    def summarize(self, request: Any) -> str:
        raise RuntimeError("the summarizer is down")


class RaisesTyped:
    def summarize(self, request: Any) -> str:
        raise CompactionError("no summary today")


class Empty:
    def summarize(self, request: Any) -> str:
        return ""


class Nothing:
    def summarize(self, request: Any) -> Any:
        return None


class Huge:
    def summarize(self, request: Any) -> str:
        return "huge " * 20_000


SUMMARIZERS: dict[str, Any] = {
    "offline": None,
    "raises": Raises(),
    "typed": RaisesTyped(),
    "empty": Empty(),
    "none": Nothing(),
    "huge": Huge(),
}


def _text(r: random.Random, lo: int = 1, hi: int = 60) -> str:
    return " ".join(r.choice(WORDS) for _ in range(r.randint(lo, hi)))


def _call(r: random.Random, native: bool, ids: list[str], big: bool) -> Message:
    def args() -> dict[str, str]:
        return {"p": _text(r, 40, 200) if big else _text(r, 1, 8)}

    if native:
        blocks: list[Message] = [{"type": "text", "text": _text(r, 1, 10)}] if r.random() < 0.5 else []
        blocks += [{"type": "tool_use", "id": i, "name": r.choice(["read", "write"]), "input": args()} for i in ids]
        return {"role": "assistant", "content": blocks}
    calls = [{"id": i, "type": "function", "function": {"name": "read", "arguments": json.dumps(args())}} for i in ids]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def _results(r: random.Random, native: bool, ids: list[str], words: str | None = None) -> list[Message]:
    if not native:
        return [{"role": "tool", "tool_call_id": i, "content": _text(r, 1, 80)} for i in ids]
    blocks: list[Message] = [
        {"type": "tool_result", "tool_use_id": i,
         "content": _text(r, 1, 80) if r.random() < 0.9 else [{"type": "text", "text": _text(r, 1, 20)}, IMAGE]}
        for i in ids
    ]  # fmt: skip
    if words is not None:
        blocks.append({"type": "text", "text": words})
    return [{"role": "user", "content": blocks}] if blocks else []


def _history(r: random.Random, native: bool, ask: str) -> list[Message]:
    """Turns of user text (images sometimes), assistant text and tool calls (one to three, their
    arguments large sometimes) answered in full, in part or not at all, with orphan, late and
    second results and reused ids; it ends with the ask (`ask` opens it), in an Anthropic
    user message with the result of the call before it sometimes, or with no ask."""
    out: list[Message] = []
    made = 0

    def new_id() -> str:
        nonlocal made
        if made and r.random() < 0.05:
            return f"c{r.randrange(made)}"
        made += 1
        return f"c{made}"

    if not native and r.random() < 0.6:
        out.append({"role": "system", "content": _text(r, 1, 20)})
    for _ in range(r.randint(1, 14)):
        kind = r.random()
        if kind < 0.3:
            image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}
            content: Any = (
                _text(r) if r.random() < 0.85 else [{"type": "text", "text": _text(r)}, IMAGE if native else image]
            )
            out.append({"role": "user", "content": content})
        elif kind < 0.5:
            out.append({"role": "assistant", "content": _text(r)})
        else:
            ids = [new_id() for _ in range(r.choice([1, 1, 2, 3]))]
            out.append(_call(r, native, ids, big=r.random() < 0.3))
            mode = r.random()
            answered = [] if mode < 0.2 else [i for i in ids if r.random() < 0.5] if mode < 0.45 else list(ids)
            if r.random() < 0.1:
                answered.append(f"orphan{r.randrange(100)}")
            if r.random() < 0.1:
                answered.append(f"c{r.randint(1, made)}")
            out += _results(r, native, answered, _text(r, 1, 30) if r.random() < 0.3 else None)
    if r.random() < 0.6:
        out.append({"role": "user", "content": f"{ask} final ask " + _text(r, 1, 10)})
    elif native and r.random() < 0.7:
        # The latest request inside a tool interaction: the call's result and the user's words.
        made += 1
        out.append(_call(r, native, [f"c{made}"], big=True))
        out += _results(r, native, [f"c{made}"], f"{ask} now " + _text(r, 1, 10))
        if r.random() < 0.5:
            out.append({"role": "assistant", "content": _text(r, 1, 40)})
    return out


def _calls_of(m: Message) -> list[str]:
    if m.get("role") != "assistant":
        return []
    if isinstance(m.get("content"), list):
        return [b["id"] for b in m["content"] if b.get("type") == "tool_use"]
    return [c["id"] for c in m.get("tool_calls") or []]


def _results_of(m: Message) -> list[str]:
    if m.get("role") == "tool":
        return [m["tool_call_id"]]
    if m.get("role") == "user" and isinstance(m.get("content"), list):
        return [b["tool_use_id"] for b in m["content"] if b.get("type") == "tool_result"]
    return []


def _split(given: list[Message], out: list[Message]) -> list[str]:
    """Ids of one call and one result in ``given``, answered after the call, that ``out`` keeps
    one of without the other."""
    calls = Counter(c for m in given for c in _calls_of(m))
    results = Counter(c for m in given for c in _results_of(m))
    seen: set[str] = set()
    answered: set[str] = set()
    for m in given:
        answered |= {c for c in _results_of(m) if c in seen}
        seen |= set(_calls_of(m))
    kept_calls = {c for m in out for c in _calls_of(m)}
    kept_results = {c for m in out for c in _results_of(m)}
    pairs = {c for c in answered if calls[c] == 1 and results[c] == 1}
    return sorted(c for c in pairs if (c in kept_calls) != (c in kept_results))


def _messages(conv: ac.Conversation, native: bool) -> list[Message]:
    out = conv.to_format("anthropic" if native else "openai")
    return out["messages"] if isinstance(out, dict) else out


def _problems(given: list[Message], result: Any, native: bool, ask: str | None, store: Any) -> list[Any]:
    out = _messages(result.conversation, native)
    dump = json.dumps(out)
    found: list[Any] = [("split", c) for c in _split(given, out)]
    if (
        result.fits != (result.conversation.tokens <= result.budget)
        or result.tokens_after != result.conversation.tokens
    ):
        found.append(("fits", result.fits, result.conversation.tokens, result.budget))
    if ask is not None and ask in json.dumps(given) and ask not in dump:
        found.append(("ask lost", ask))
    if store is not None:
        recall = Recall(store)
        for rid in RECALL_ID.findall(dump):
            try:
                recall.original(rid)
            except AgentContextError as e:
                found.append(("recall", rid, str(e)))
        for m in out:
            text = m.get("content") if isinstance(m.get("content"), str) else ""
            for n, rid in DROPPED.findall(text):
                lines = [line for line in recall.original(rid).splitlines() if line.strip()]
                if len(lines) < int(n.replace(",", "")):
                    found.append(("marker", rid, n, len(lines)))
    return found


def _compactor(r: random.Random, preset: Any, name: str, store: Any) -> Compactor:
    fallback = OfflineSummarizer() if r.random() < 0.5 else None
    return Compactor(preset, summarizer=SUMMARIZERS[name], fallback=fallback, store=store)


def _single(seed: int, preset: str, name: str, tmp: Path) -> list[Any]:
    r = random.Random(seed)
    native = r.random() < 0.45
    ask = f"ASK{seed}X"
    given = _history(r, native, ask)
    frozen = copy.deepcopy(given)
    conv = ac.Conversation(
        given, encoding=r.choice(["approximate", "o200k_base"]), format="anthropic" if native else "auto"
    )
    before = conv.to_jsonl()
    budget = max(1, int(conv.tokens * r.uniform(0.05, 1.1)))
    store = ResultStore(tmp / f"{seed}-{preset}") if r.random() < 0.4 else None
    manual = r.random() < 0.15
    found: list[Any] = []
    for run in ("compact", "recompile"):
        c = _compactor(r, preset, name, store)
        try:
            result = c.compact(conv, budget=budget, manual=manual) if run == "compact" else c.recompile(conv, budget)
        except AgentContextError:
            continue
        found += [(run, *p) for p in _problems(given, result, native, ask, store)]
    if given != frozen or conv.to_jsonl() != before:
        found.append(("input changed",))
    return found


@pytest.mark.parametrize("block", range(4))
def test_one_compaction_keeps_the_invariants(block: int, tmp_path: Path) -> None:
    found = {}
    for seed in range(block * 100, (block + 1) * 100):
        preset = PRESETS[seed % len(PRESETS)]
        name = list(SUMMARIZERS)[(seed // len(PRESETS)) % len(SUMMARIZERS)]
        if problems := _single(seed, preset, name, tmp_path):
            found[(seed, preset, name)] = problems
    assert not found, found


def _turn(r: random.Random, native: bool, ask: str | None, made: list[int]) -> list[Message]:
    """One more stretch of a session: the user's ask (None: the agent goes on with the same
    turn), tool rounds (some calls left unanswered) and an answer, the last results and the
    user's next words in one Anthropic message sometimes."""
    out: list[Message] = [] if ask is None else [{"role": "user", "content": f"{ask} " + _text(r, 1, 30)}]
    for _ in range(r.randint(1 if ask is None else 0, 3)):
        ids = [f"k{made[0] + k}" for k in range(r.choice([1, 1, 2]))]
        made[0] += len(ids)
        out.append(_call(r, native, ids, big=r.random() < 0.2))
        out += _results(r, native, [i for i in ids if r.random() < 0.85])
    if r.random() < 0.7:
        out.append({"role": "assistant", "content": _text(r, 1, 80)})
    return out


def _session(seed: int, preset: str, name: str, tmp: Path) -> list[Any]:
    """Twelve compactions of one working set, each followed by the next stretch of the session
    (a compaction's output is the next one's input, as a Session keeps it)."""
    r = random.Random(seed)
    native = r.random() < 0.5
    enc = r.choice(["approximate", "o200k_base"])
    store = ResultStore(tmp / f"s{seed}-{preset}")
    budget = r.choice([300, 600, 1_200, 2_500])
    live = r.random() < 0.4
    policy: Any = preset
    if live:
        reserve = r.choice([0, budget // 4])
        policy = replace(resolve_policy(preset), context_window=2 * budget, reserved_output=reserve,
                         safety_margin=r.choice([0, 50]))  # fmt: skip
    c = _compactor(r, policy, name, store)
    conv = ac.Conversation([], format="anthropic" if native else "auto", encoding=enc)
    made, ask, found = [0], None, []
    for step in range(12):
        if ask is None or r.random() < 0.6:
            ask = f"S{seed}T{step}X"
            new = _turn(r, native, ask, made)
        else:
            new = _turn(r, native, None, made)
        conv = ac.Conversation.concat([conv, ac.Conversation(new, format=conv.format, encoding=enc)])
        given = _messages(conv, native)
        try:
            result = c.maybe_compact(conv) if live else c.compact(conv, budget=budget, manual=r.random() < 0.1)
        except AgentContextError:
            continue
        if _messages(conv, native) != given:
            found.append((step, "input changed"))
        if result is None:
            continue
        found += [(step, *p) for p in _problems(given, result, native, ask, store)]
        conv = result.conversation
    return found


@pytest.mark.parametrize("block", range(2))
def test_repeated_compactions_keep_the_invariants(block: int, tmp_path: Path) -> None:
    found = {}
    for seed in range(block * 16, (block + 1) * 16):
        preset = PRESETS[seed % len(PRESETS)]
        name = list(SUMMARIZERS)[(seed // 3) % len(SUMMARIZERS)]
        if problems := _session(seed, preset, name, tmp_path):
            found[(seed, preset, name)] = problems
    assert not found, found


# -- each defect the seeded runs found, on its own ------------------------------------------------

W = "alpha beta gamma delta "


def _chat_call(i: str) -> Message:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": i, "type": "function", "function": {"name": "read", "arguments": "{}"}}]}  # fmt: skip


def _write_then_request() -> ac.Conversation:
    """A write with large arguments, then a latest request that carries its result (an Anthropic
    user message of a tool_result block and text), then the answer."""
    history = [
        {"role": "user", "content": "first " + W * 30},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "write", "input": {"p": W * 30}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": W * 60},
                                     {"type": "text", "text": "now do it"}]},
        {"role": "assistant", "content": "done"},
    ]  # fmt: skip
    return ac.Conversation(history, format="anthropic", encoding="approximate")


def test_the_drop_keeps_the_call_whose_result_the_request_carries() -> None:
    # The latest request carries the result of a call with large arguments (a write). With no
    # summary, the drop kept the request apart from the recent part and left the call out: a
    # tool_result without its tool_use (budgets 360 to 490).
    conv = _write_then_request()
    for budget in range(370, conv.tokens, 10):
        result = Compactor("openharness", summarizer=Raises(), fallback=None).compact(conv, budget=budget)
        out = _messages(result.conversation, native=True)
        assert [c for m in out for c in _calls_of(m)] == [c for m in out for c in _results_of(m)], budget
        assert "now do it" in json.dumps(out), budget
        assert result.fits, budget


def _split_turn() -> list[Message]:
    """Two short turns, then a turn of a request, one round and an answer (pi splits it)."""
    words = "alpha beta gamma delta epsilon zeta eta theta "
    return [
        {"role": "user", "content": "EARLIER ask " + words * 2}, {"role": "assistant", "content": words * 2},
        {"role": "user", "content": "OTHER ask " + words * 2}, {"role": "assistant", "content": words * 2},
        {"role": "user", "content": "LATEST ask: fix the parser " + words},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": "read", "arguments": json.dumps({"p": words * 2})}}]},
        {"role": "tool", "tool_call_id": "c0", "content": words * 3},
        {"role": "assistant", "content": words * 6},
    ]  # fmt: skip


def test_pi_keeps_the_latest_request_when_its_split_summary_is_made_smaller() -> None:
    # Pi summarizes a split turn's prefix (which holds the latest request) apart and joins it
    # after the summary of the history before the turn. Made smaller as one text, the history's
    # sections came first and the turn's prefix was cut away: the output named an earlier
    # request as the latest and the latest was nowhere (budgets 160 and 166).
    history = _split_turn()
    conv = ac.Conversation(history, encoding="approximate")
    for budget in range(150, 200, 2):
        result = Compactor("pi").compact(conv, budget=budget)
        assert "LATEST ask: fix the parser" in json.dumps(_messages(result.conversation, native=False)), budget
        assert result.fits, budget


def _tool_turn() -> list[Message]:
    return [
        {"role": "user", "content": "old ask " + W * 20},
        {"role": "assistant", "content": W * 20},
        {"role": "user", "content": "LATEST ask: fix the parser"},
        _chat_call("c1"), {"role": "tool", "tool_call_id": "c1", "content": W * 60},
        _chat_call("c2"), {"role": "tool", "tool_call_id": "c2", "content": W * 10},
        {"role": "assistant", "content": "done"},
    ]  # fmt: skip


def test_recompile_without_a_summary_keeps_the_latest_request() -> None:
    # No summary could be made: recompile kept the largest suffix that fits and dropped the
    # request before it (budgets 150 to 250); it keeps the request apart now, as the drop does.
    conv = ac.Conversation(_tool_turn(), encoding="approximate")
    for budget in (150, 200, 250):
        result = Compactor("openharness", summarizer=Raises(), fallback=None).recompile(conv, budget)
        assert "LATEST ask: fix the parser" in json.dumps(_messages(result.conversation, native=False)), budget
        assert result.fits, budget
        assert [s.detail.get("kept_request") for s in result.stages if s.stage == "drop"] == [2], budget
    # Not even the request and the last round fit beside the markers: refused, a round never split.
    with pytest.raises(CompactionError, match="latest user request"):
        Compactor("openharness", summarizer=Raises(), fallback=None).recompile(conv, 100)


def test_compacting_again_in_the_same_tool_turn_keeps_the_request() -> None:
    # The drop keeps the request apart between two markers. The next compaction (the agent went
    # on with the same turn) took the marker after it for the latest request and dropped the
    # user's own (steps 1 and on).
    conv = ac.Conversation(_tool_turn()[:-1], encoding="approximate")
    compactor = Compactor("goose", summarizer=Raises(), fallback=None)
    for step in range(6):
        result = compactor.compact(conv, budget=300)
        assert "LATEST ask: fix the parser" in json.dumps(_messages(result.conversation, native=False)), step
        assert result.fits, step
        more = [_chat_call(f"d{step}"), {"role": "tool", "tool_call_id": f"d{step}", "content": W * 40}]
        conv = ac.Conversation.concat([result.conversation, ac.Conversation(more, encoding="approximate")])


def test_the_cut_round_fits_when_a_message_counts_more_whole_than_its_texts() -> None:
    # An Anthropic message of a result block and text counts more whole than its texts and the
    # rest of it counted apart: the last rung planned no room for its texts (a negative one under
    # 370 tokens) and gave up ("does not fit even cut"), leaving 624 tokens, where 256 fit.
    conv = _write_then_request()
    for budget in range(270, 370, 10):
        result = Compactor("openharness", summarizer=Raises(), fallback=None).compact(conv, budget=budget)
        assert result.fits, (budget, result.reason)
        assert "now do it" in json.dumps(_messages(result.conversation, native=True)), budget


def test_the_summarize_event_counts_the_summary_used() -> None:
    # A summary made smaller for the room beside the last round is the one used: its event said
    # the tokens of the summary as written (59 for the 22 used).
    conv = ac.Conversation(_split_turn(), encoding="approximate")
    policy = Compactor("pi").policy
    seen = 0
    for budget in range(150, 200, 2):
        result = Compactor("pi").compact(conv, budget=budget)
        written = [s for s in result.stages if s.stage == "summarize" and "failed" not in s.detail]
        if result.summary is None or not written:
            continue
        assert written[-1].detail["summary_tokens"] == ac.count_tokens(result.summary, encoding=policy.encoding)
        seen += "summary_cut_to_tokens" in written[-1].detail
    assert seen, "some budget makes the summary smaller"
