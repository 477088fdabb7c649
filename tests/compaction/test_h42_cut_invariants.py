"""Seeded random histories with tool calls left without a result in many places (abandoned before
the user's next turn, several in a row, first after the system message, parallel calls answered
in part, Anthropic results as blocks of a user message, orphan results, reused ids), run through
`trim_messages`, `Conversation.recent_suffix`, `Conversation.split` and the compaction ladder.

What every output must hold: a call and its (one) result are kept or dropped together, the
latest user ask is kept (whole or cut head + marker + tail), the output is a subsequence of the
input when nothing is cleared, the budget holds, a list (the fast path) and a tuple (the general
path) give the same answer, a refusal's `needed` is over the budget it refused and is a budget
that works, and nothing fails untyped."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.compaction import Compactor
from agentcontext.errors import AgentContextError, BudgetError

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
Message = dict[str, Any]


def _text(r: random.Random, lo: int = 1, hi: int = 60) -> str:
    return " ".join(r.choice(WORDS) for _ in range(r.randint(lo, hi)))


def _history(r: random.Random, native: bool) -> list[Message]:
    out: list[Message] = []
    made = 0

    def new_id() -> str:
        nonlocal made
        if made and r.random() < 0.05:
            return f"c{r.randrange(made)}"  # an id used before
        made += 1
        return f"c{made}"

    if not native and r.random() < 0.6:
        out.append({"role": "system", "content": _text(r, 1, 20)})
    for _ in range(r.randint(1, 14)):
        kind = r.random()
        if kind < 0.3:
            out.append({"role": "user", "content": _text(r)})
        elif kind < 0.5:
            out.append({"role": "assistant", "content": _text(r)})
        else:
            ids = [new_id() for _ in range(r.choice([1, 1, 2, 3]))]
            if native:
                blocks: list[Message] = [{"type": "text", "text": _text(r, 1, 10)}] if r.random() < 0.5 else []
                blocks += [{"type": "tool_use", "id": i, "name": "read", "input": {"p": _text(r, 1, 8)}} for i in ids]
                out.append({"role": "assistant", "content": blocks})
            else:
                calls = [
                    {
                        "id": i,
                        "type": "function",
                        "function": {"name": "read", "arguments": json.dumps({"p": _text(r, 1, 8)})},
                    }
                    for i in ids
                ]
                out.append({"role": "assistant", "content": None, "tool_calls": calls})
            mode = r.random()
            answered = [] if mode < 0.25 else [i for i in ids if r.random() < 0.5] if mode < 0.5 else list(ids)
            if r.random() < 0.1:
                answered.append(f"orphan{r.randrange(100)}")
            if r.random() < 0.1:
                answered.append(f"c{r.randint(1, made)}")  # a late or second result of an earlier call
            if native and answered:
                results: list[Message] = [
                    {"type": "tool_result", "tool_use_id": i, "content": _text(r, 1, 80)} for i in answered
                ]
                if r.random() < 0.15:
                    results.append({"type": "text", "text": _text(r, 1, 10)})
                out.append({"role": "user", "content": results})
            else:
                out += [{"role": "tool", "tool_call_id": i, "content": _text(r, 1, 80)} for i in answered]
    if r.random() < 0.7:
        out.append({"role": "user", "content": "final ask " + _text(r, 1, 10)})
    return out


def _calls(m: Message) -> list[str]:
    if m["role"] != "assistant":
        return []
    if isinstance(m.get("content"), list):
        return [b["id"] for b in m["content"] if b.get("type") == "tool_use"]
    return [c["id"] for c in m.get("tool_calls") or []]


def _results(m: Message) -> list[str]:
    if m["role"] == "tool":
        return [m["tool_call_id"]]
    if m["role"] == "user" and isinstance(m["content"], list):
        return [b["tool_use_id"] for b in m["content"] if b.get("type") == "tool_result"]
    return []


#: How the repair's user notes open (a result without its call, a second result of a call).
NOTES = ("[tool result for call ", "[another tool result for call ")


def _user_turn(m: Message) -> bool:
    if m["role"] != "user":
        return False
    return not isinstance(m["content"], list) or any(b.get("type") != "tool_result" for b in m["content"])


def _pairs(msgs: list[Message]) -> list[tuple[int, int, str]]:
    """(call message, result message, id) of every call whose id is used by one call and one result."""
    results = Counter(c for m in msgs for c in _results(m))
    calls = Counter(c for m in msgs for c in _calls(m))
    out = []
    for i, m in enumerate(msgs):
        for cid in _calls(m):
            if calls[cid] == 1 and results[cid] == 1:
                out += [(i, j, cid) for j in range(i + 1, len(msgs)) if cid in _results(msgs[j])]
    return out


def _safe(msgs: list[Message], cut: int) -> bool:
    return all(not (i < cut <= j) for i, j, _ in _pairs(msgs))


def _same(m: Message, o: Message) -> bool:
    """`o` is `m`, or the user's `m` cut head + marker + tail."""
    if json.dumps(m, sort_keys=True) == json.dumps(o, sort_keys=True):
        return True
    c, d = m.get("content"), o.get("content")
    if not (m["role"] == o["role"] == "user" and isinstance(c, str) and isinstance(d, str) and "omitted" in d):
        return False
    return c.startswith(d.split("\n[...")[0]) and c.endswith(d.rsplit("]\n", 1)[1])


def _split_pairs(msgs: list[Message], out: list[Message]) -> list[str]:
    calls = {c for m in out for c in _calls(m)}
    results = {c for m in out for c in _results(m)}
    return [cid for _, _, cid in _pairs(msgs) if (cid in calls) != (cid in results)]


def _setting(seed: int) -> tuple[random.Random, list[Message], str, str]:
    r = random.Random(seed)
    native = r.random() < 0.35
    return r, _history(r, native), "anthropic" if native else "auto", r.choice(["approximate", "o200k_base"])


def _trim(given: type, msgs: list[Message], budget: int, kwargs: dict[str, Any]) -> Any:
    try:
        out = ac.trim_messages(given(msgs), budget, **kwargs)
    except BudgetError as e:
        return ("refused", e.needed, str(e))
    return ("ok", out["messages"] if isinstance(out, dict) else out)


@pytest.mark.parametrize("block", range(4))
def test_trim_messages_keeps_the_invariants(block: int) -> None:
    for seed in range(block * 150, (block + 1) * 150):
        r, msgs, fmt, enc = _setting(seed)
        clear = r.random() < 0.5
        kwargs: dict[str, Any] = {
            "encoding": enc,
            "format": fmt,
            "clear": clear,
            "reserved_output": r.choice([0, 0, 10, 50]),
            "recent_messages": r.choice([0, 2, 12]),
            "recent_tools": r.choice([0, 1, 3]),
            "clear_tool_inputs": r.random() < 0.3,
            "safety_margin": r.choice([0, 0, 7]),
        }
        total = ac.Conversation(msgs, encoding=enc, format=fmt).tokens
        budget = max(1, int(total * r.uniform(0.1, 1.1)))
        fast, general = _trim(list, msgs, budget, kwargs), _trim(tuple, msgs, budget, kwargs)
        assert fast == general, seed
        if fast[0] == "refused":
            needed = fast[1]
            assert needed > budget, (seed, fast)
            assert _trim(list, msgs, needed, kwargs)[0] == "ok", (seed, fast)
            continue
        out = fast[1]
        reserve = kwargs["reserved_output"] + kwargs["safety_margin"]
        if out:
            assert ac.Conversation(out, encoding=enc, format=fmt).tokens + reserve <= budget, seed
        assert not _split_pairs(msgs, out), seed
        if not clear:
            # The list as the trim repairs it when it is not pair-valid (nothing dropped): a user
            # message holding results and text keeps its text apart, a result without its call
            # (or a second one) becomes a user note, never the request.
            whole = _trim(list, msgs, 10**12, {**kwargs, "reserved_output": 0, "safety_margin": 0})[1]
            asks = [m for m in whole if _user_turn(m) and not str(m["content"]).startswith(NOTES)]
            if asks:
                assert any(_same(asks[-1], m) for m in out), seed
            left = iter(whole)
            assert all(any(_same(m, o) for m in left) for o in out), f"{seed}: not a subsequence"


def test_recent_suffix_and_split_cut_no_call_from_its_result() -> None:
    for seed in range(400):
        r, msgs, fmt, enc = _setting(seed)
        conv = ac.Conversation(msgs, encoding=enc, format=fmt)
        again = ac.Conversation(tuple(msgs), encoding=enc, format=fmt)
        budget = max(1, int(conv.tokens * r.uniform(0.05, 1.1)))
        reserve = r.choice([0, 0, 10])
        suffix = conv.recent_suffix(budget, reserved_output=reserve)
        assert suffix == again.recent_suffix(budget, reserved_output=reserve), seed
        assert _safe(msgs, suffix["start"]), (seed, suffix)
        if suffix["fits"]:
            assert suffix["tokens"] <= suffix["available"], (seed, suffix)
        k = r.randint(1, 6)
        parts = conv.split(k)
        assert parts == again.split(k), seed
        assert all(_safe(msgs, a) and _safe(msgs, b) for a, b in parts), (seed, parts)
        if parts:
            assert parts[-1][1] == len(msgs), (seed, parts)


def test_the_compaction_ladder_keeps_the_invariants() -> None:
    for seed in range(250):
        r, msgs, fmt, enc = _setting(seed)
        conv = ac.Conversation(msgs, encoding=enc, format=fmt)
        budget = max(1, int(conv.tokens * r.uniform(0.1, 1.1)))
        try:
            result = Compactor("openharness").compact(conv, budget=budget, manual=r.random() < 0.2)
        except AgentContextError:
            continue
        out = result.conversation.to_format("anthropic" if fmt == "anthropic" else "openai")
        out = out["messages"] if isinstance(out, dict) else out
        if result.fits:
            assert result.conversation.tokens <= budget, seed
        assert not _split_pairs(msgs, out), seed
        asks = [m for m in msgs if _user_turn(m)]
        if asks:
            ask = asks[-1]["content"]
            text = ask if isinstance(ask, str) else next(b["text"] for b in ask if b.get("type") == "text")
            assert text.split()[0] in json.dumps(out), seed
