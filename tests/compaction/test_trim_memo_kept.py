"""``trim_messages``' whole-list fast path across calls: a result that stays whole because its
placeholder would not be smaller stays whole on every call (the placeholder memo remembers that
too) and follows its own size; roles that are not interned strings are read as their text."""

from __future__ import annotations

import json
from typing import Any

import pytest

import agentcontext as ac


def session(rounds: int = 30) -> list[dict[str, Any]]:
    """Chat dicts whose old results alternate between tiny (no placeholder is smaller) and long."""
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the parser."},
    ]
    for r in range(rounds):
        cid = f"call_{r}"
        args = json.dumps({"path": f"src/module_{r}/parser_{r}.py", "mode": "full"})
        call = {"id": cid, "type": "function", "function": {"name": "read_file", "arguments": args}}
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        content = "ok" if r % 2 else f"line {r}: parse(tokens) -> tree\n" * 40
        out.append({"role": "tool", "tool_call_id": cid, "content": content})
    out.append({"role": "assistant", "content": "Done."})
    return out


def tiny_results(messages: list[dict[str, Any]]) -> list[int]:
    return [i for i, m in enumerate(messages) if m["role"] == "tool" and m["content"] == "ok"]


@pytest.mark.parametrize("encoding", ["approximate", "o200k_base"])
def test_results_left_whole_stay_whole_on_every_call(encoding: str) -> None:
    messages = session()
    budget = ac.Conversation(messages, encoding=encoding).tokens // 2  # type: ignore[arg-type]
    general = ac.trim_messages(tuple(messages), budget, encoding=encoding)  # type: ignore[arg-type]
    tiny = {id(messages[i]) for i in tiny_results(messages)}
    for _ in range(3):
        fast = ac.trim_messages(messages, budget, encoding=encoding)  # type: ignore[arg-type]
        assert fast == general
        kept_tiny = [m for m in fast if m["role"] == "tool" and m["content"] == "ok"]
        assert kept_tiny, "some tiny old results are kept"
        # Left whole: the caller's own objects, every time.
        assert all(id(m) in tiny for m in kept_tiny)
        assert any(m["role"] == "tool" and m["content"].startswith("[cleared:") for m in fast)


@pytest.mark.parametrize("encoding", ["approximate", "o200k_base"])
def test_a_result_left_whole_is_cleared_once_it_grows(encoding: str) -> None:
    messages = session()
    budget = ac.Conversation(messages, encoding=encoding).tokens // 2  # type: ignore[arg-type]
    ac.trim_messages(messages, budget, encoding=encoding)  # type: ignore[arg-type]
    # The same call dicts (the same id, name and arguments strings), the tiny results now long.
    grown = [
        dict(m, content="grown output line\n" * 60) if i in tiny_results(messages) else m
        for i, m in enumerate(messages)
    ]
    fast = ac.trim_messages(grown, budget, encoding=encoding)  # type: ignore[arg-type]
    assert fast == ac.trim_messages(tuple(grown), budget, encoding=encoding)  # type: ignore[arg-type]
    assert not any(m["role"] == "tool" and m["content"].startswith("grown") for m in fast[:-10])


def test_roles_that_are_not_interned_are_read_as_their_text() -> None:
    messages = session()
    copied = [dict(m, role="".join(list(m["role"]))) for m in messages]
    assert all(c["role"] is not m["role"] for c, m in zip(copied, messages, strict=True))
    budget = ac.Conversation(messages, encoding="approximate").tokens // 2
    fast = ac.trim_messages(copied, budget, encoding="approximate")
    assert fast == ac.trim_messages(messages, budget, encoding="approximate")
    # Still the fast path: the messages it left alone are the caller's own objects.
    assert any(any(m is c for c in copied) for m in fast)
