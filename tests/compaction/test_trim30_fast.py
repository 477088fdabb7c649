"""``trim_messages``' whole-list fast path (issue 30): clearing old calls' arguments
(``clear_tool_inputs``) without leaving it, the placeholders it keeps across calls, and its switches
refused with a typed error naming them."""

from __future__ import annotations

import json
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.errors import ArgumentTypeError
from tests import support


def writes_session(rounds: int = 40, seed: int = 3) -> list[dict[str, Any]]:
    """Chat dicts of an agent whose calls carry most of the text (whole files written), some
    results long (files read), some calls parallel, one id reused."""
    out: list[dict[str, Any]] = [{"role": "system", "content": "You edit files."}]
    for r in range(rounds):
        if r % 7 == 0:
            out.append({"role": "user", "content": f"Task {r}: rewrite module {r}."})
        ids = [f"w{r}"] + ([f"r{r}"] if r % 3 == 0 else [])
        if r == rounds - 5:
            ids[0] = "w1"  # an id of an earlier turn used again: it pairs with its latest call
        calls = []
        for cid in ids:
            if cid.startswith("r"):
                args = {"path": f"src/m{r}.py"}
                name = "read_file"
            else:
                body = "\n".join(f"def f{k}_{r}(x):\n    return x * {k + seed}" for k in range(10 + (r * seed) % 25))
                args = {"path": f"src/m{r}.py", "content": body}
                name = "write_file"
            calls.append({"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}})
        out.append({"role": "assistant", "content": None if r % 2 else f"Round {r}.", "tool_calls": calls})
        for c in calls:
            size = 40 + r * 9 if c["function"]["name"] == "read_file" else 1
            out.append({"role": "tool", "tool_call_id": c["id"], "content": f"ok {c['id']}\n" * size})
    out.append({"role": "assistant", "content": "All done."})
    return out


def native(chat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = ac.Conversation(chat).to_format("native")
    return out


def cleared_arguments(messages: list[dict[str, Any]]) -> int:
    return sum(
        '"cleared"' in (c.get("function", c)["arguments"]) for m in messages for c in (m.get("tool_calls") or [])
    )


@pytest.mark.parametrize("encoding", ["approximate", "heuristic", "o200k_base"])
@pytest.mark.parametrize("shape", ["chat", "native"])
def test_clearing_inputs_on_the_fast_path_matches_the_general_path(encoding: str, shape: str) -> None:
    session = writes_session()
    messages = session if shape == "chat" else native(session)
    before = json.dumps(messages)
    total = ac.Conversation(messages, encoding=encoding).tokens  # type: ignore[arg-type]
    seen_cleared = 0
    for share in (0.1, 0.3, 0.6, 0.95):
        for clear_at_least in (0, 10**9):
            kwargs: dict[str, Any] = {"encoding": encoding, "clear_tool_inputs": True, "clear_at_least": clear_at_least}
            budget = int(total * share)
            try:
                fast = ac.trim_messages(messages, budget, **kwargs)
            except ac.BudgetError as e:
                with pytest.raises(ac.BudgetError) as again:
                    ac.trim_messages(tuple(messages), budget, **kwargs)  # type: ignore[arg-type]
                assert again.value.needed == e.needed
                continue
            general = ac.trim_messages(tuple(messages), budget, **kwargs)  # type: ignore[arg-type]
            assert fast == general, (share, clear_at_least)
            # Only the fast path returns the caller's own objects for the messages it left alone.
            mine = {id(m) for m in messages}
            assert any(id(m) in mine for m in fast)
            seen_cleared += cleared_arguments(fast)
            if clear_at_least:
                assert cleared_arguments(fast) == 0, "nothing is cleared below clear_at_least"
    assert seen_cleared > 0, "some old arguments were cleared"
    assert json.dumps(messages) == before, "the input is never mutated"


def test_cleared_arguments_name_the_call_and_are_not_cleared_again() -> None:
    session = writes_session()
    budget = ac.Conversation(session, encoding="approximate").tokens // 3
    once = ac.trim_messages(session, budget, encoding="approximate", clear_tool_inputs=True)
    cleared = [
        (c["id"], json.loads(c["function"]["arguments"])["cleared"])
        for m in once
        for c in (m.get("tool_calls") or [])
        if '"cleared"' in c["function"]["arguments"]
    ]
    assert cleared and all(text.startswith("[cleared: arguments of write_file(") for _, text in cleared)
    assert all(f"recall id {cid}#arguments]" in text for cid, text in cleared)
    # Trimmed again (a framework that keeps the trimmed list): the placeholders stay as they are.
    again = ac.trim_messages(once, ac.Conversation(once, encoding="approximate").tokens - 1, encoding="approximate")
    kept = {c["id"]: c["function"]["arguments"] for m in again for c in (m.get("tool_calls") or [])}
    for cid, text in cleared:
        if cid in kept:
            assert json.loads(kept[cid])["cleared"] == text


@pytest.mark.parametrize("encoding", ["approximate", "o200k_base"])
def test_placeholders_kept_across_calls_follow_the_strings_they_describe(encoding: str) -> None:
    session = support.synthetic_session(300, seed=4)
    budget = ac.Conversation(session, encoding=encoding).tokens // 3  # type: ignore[arg-type]
    first = ac.trim_messages(session, budget, encoding=encoding)  # type: ignore[arg-type]
    assert ac.trim_messages(session, budget, encoding=encoding) == first  # type: ignore[arg-type]
    # The same call ids and names with other arguments and longer results: new placeholders.
    changed = json.loads(json.dumps(session))
    for m in changed:
        for c in m.get("tool_calls") or []:
            c["function"]["arguments"] = json.dumps({"path": "other/" + c["id"] + ".py"})
        if m["role"] == "tool":
            m["content"] += "\nmore output " * 20
    fast = ac.trim_messages(changed, budget, encoding=encoding)  # type: ignore[arg-type]
    assert fast == ac.trim_messages(tuple(changed), budget, encoding=encoding)  # type: ignore[arg-type]
    placeholders = [m["content"] for m in fast if m["role"] == "tool" and m["content"].startswith("[cleared:")]
    assert placeholders and all("(path=other/" in p for p in placeholders)
    ac.token_cache_clear()
    assert ac.trim_messages(session, budget, encoding=encoding) == first  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["clear", "clear_tool_inputs"])
@pytest.mark.parametrize("value", ["yes", 1, None])
def test_switches_must_be_true_or_false(name: str, value: object) -> None:
    messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(ArgumentTypeError, match=rf"^{name} must be True or False, got "):
        ac.trim_messages(messages, 100, **{name: value})  # type: ignore[arg-type]


def test_cleared_arguments_kept_across_calls_follow_the_arguments() -> None:
    session = writes_session()
    budget = ac.Conversation(session, encoding="approximate").tokens // 3
    kwargs: dict[str, Any] = {"encoding": "approximate", "clear_tool_inputs": True}
    first = ac.trim_messages(session, budget, **kwargs)
    assert ac.trim_messages(session, budget, **kwargs) == first
    changed = json.loads(json.dumps(session))
    for m in changed:
        for c in m.get("tool_calls") or []:
            args = json.loads(c["function"]["arguments"])
            c["function"]["arguments"] = json.dumps({**args, "path": "moved/" + args["path"]})
    fast = ac.trim_messages(changed, budget, **kwargs)
    assert fast == ac.trim_messages(tuple(changed), budget, **kwargs)  # type: ignore[arg-type]
    texts = [
        json.loads(c["function"]["arguments"])["cleared"]
        for m in fast
        for c in (m.get("tool_calls") or [])
        if '"cleared"' in c["function"]["arguments"]
    ]
    assert texts and all("path=moved/" in t for t in texts)
