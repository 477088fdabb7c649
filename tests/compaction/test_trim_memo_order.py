"""``trim_messages``' whole-list fast path keeps the last call's placeholder lookups in order and
reads the next call's at the same places: whatever the caller does to its list or its dicts
between calls (the same list again, a longer one, one cut at the front, dicts and strings changed
in place, strings replaced by others of the same length), each call returns what the general path
returns for the list as it is then; so it does when the memo starts again in the middle of a call."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

import agentcontext as ac
from tests import support

Messages = list[dict[str, Any]]


def writes_session(rounds: int = 40) -> Messages:
    """Chat dicts whose calls carry much of the text (whole files written, parallel reads), so that
    clearing arguments changes them."""
    out: Messages = [{"role": "system", "content": "You edit files."}]
    for r in range(rounds):
        if r % 7 == 0:
            out.append({"role": "user", "content": f"Task {r}: rewrite module {r}."})
        body = "\n".join(f"def f{k}_{r}(x):\n    return x * {k}" for k in range(10 + (r * 3) % 25))
        tool_calls = [
            {
                "id": f"w{r}",
                "type": "function",
                "function": {"name": "write_file", "arguments": json.dumps({"path": f"m{r}.py", "content": body})},
            }
        ]
        if r % 3 == 0:
            args = json.dumps({"path": f"src/m{r}.py"})
            tool_calls.append({"id": f"r{r}", "type": "function", "function": {"name": "read_file", "arguments": args}})
        out.append({"role": "assistant", "content": None if r % 2 else f"Round {r}.", "tool_calls": tool_calls})
        for c in tool_calls:
            size = 40 + r * 9 if c["id"].startswith("r") else 1
            out.append({"role": "tool", "tool_call_id": c["id"], "content": f"ok {c['id']}\n" * size})
    out.append({"role": "assistant", "content": "All done."})
    return out


SESSIONS: dict[str, Callable[[], Messages]] = {
    "synthetic": lambda: support.synthetic_session(300),
    "writes": writes_session,
}


def general(messages: Messages, budget: int, encoding: str, inputs: bool) -> Any:
    """The general path's answer (a tuple is not a list: it is parsed)."""
    return ac.trim_messages(tuple(messages), budget, encoding=encoding, clear_tool_inputs=inputs)  # type: ignore[call-overload]


def fast(messages: Messages, budget: int, encoding: str, inputs: bool) -> Any:
    return ac.trim_messages(messages, budget, encoding=encoding, clear_tool_inputs=inputs)  # type: ignore[call-overload]


def same_length_other(text: str) -> str:
    """A different string of the same length (and so the same approximate count)."""
    return text[::-1] if text[::-1] != text else text.swapcase()


def results(messages: Messages) -> list[int]:
    return [i for i, m in enumerate(messages) if m["role"] == "tool"]


def calls(messages: Messages) -> list[dict[str, Any]]:
    return [c for m in messages for c in (m.get("tool_calls") or [])]


def replace_content(messages: Messages) -> None:
    m = messages[results(messages)[3]]
    m["content"] = same_length_other(m["content"])


def placeholder_content(messages: Messages) -> None:
    """An old result that now reads as an earlier clearing's placeholder, of the same length."""
    m = messages[results(messages)[4]]
    head = "[cleared: read_file(path='x') -> 10 tokens] "
    m["content"] = (head + "x" * len(m["content"]))[: max(len(m["content"]), len(head))]


def replace_arguments(messages: Messages) -> None:
    f = calls(messages)[5]["function"]
    f["arguments"] = json.dumps({"path": "src/other_module.py"})[: len(f["arguments"])].ljust(len(f["arguments"]))


def same_length_arguments(messages: Messages) -> None:
    f = calls(messages)[6]["function"]
    f["arguments"] = same_length_other(f["arguments"])


def rename_tool(messages: Messages) -> None:
    calls(messages)[7]["function"]["name"] = "grep"


def swap_ids(messages: Messages) -> None:
    """Two calls and their results trade ids, in place."""
    a, b = results(messages)[8], results(messages)[9]
    ida, idb = messages[a]["tool_call_id"], messages[b]["tool_call_id"]
    for c in calls(messages):
        if c["id"] == ida:
            c["id"] = idb
        elif c["id"] == idb:
            c["id"] = ida
    messages[a]["tool_call_id"], messages[b]["tool_call_id"] = idb, ida


def drop_a_call(messages: Messages) -> None:
    """An assistant message loses its last call (its list changed in place) and that result goes."""
    for i, m in enumerate(messages):
        tool_calls = m.get("tool_calls") or []
        if len(tool_calls) > 1:
            gone = tool_calls.pop()
            del messages[next(j for j in range(i, len(messages)) if messages[j].get("tool_call_id") == gone["id"])]
            return
    raise AssertionError("no message with parallel calls")


def reorder_keys(messages: Messages) -> None:
    """A result's keys in another order, the same objects (the copy follows the caller's order)."""
    m = messages[results(messages)[2]]
    role = m.pop("role")
    m["role"] = role


CHANGES: dict[str, Callable[[Messages], None]] = {
    "content of the same length": replace_content,
    "content now a placeholder": placeholder_content,
    "arguments replaced": replace_arguments,
    "arguments of the same length": same_length_arguments,
    "tool renamed": rename_tool,
    "ids swapped": swap_ids,
    "a call dropped": drop_a_call,
    "keys reordered": reorder_keys,
}


@pytest.mark.parametrize("inputs", [False, True])
@pytest.mark.parametrize("encoding", ["approximate", "o200k_base"])
@pytest.mark.parametrize("change", list(CHANGES))
@pytest.mark.parametrize("shape", list(SESSIONS))
def test_a_list_changed_in_place_between_calls_gets_the_general_paths_answer(
    shape: str, change: str, encoding: str, inputs: bool
) -> None:
    messages = SESSIONS[shape]()
    budget = ac.Conversation(messages, encoding=encoding).tokens // 2  # type: ignore[arg-type]
    first = fast(messages, budget, encoding, inputs)
    assert first == general(messages, budget, encoding, inputs)
    CHANGES[change](messages)
    for _ in range(2):
        again = fast(messages, budget, encoding, inputs)
        assert again == general(messages, budget, encoding, inputs)


@pytest.mark.parametrize("inputs", [False, True])
def test_the_same_list_a_longer_one_and_one_cut_at_the_front(inputs: bool) -> None:
    messages = support.synthetic_session(400)
    budget = ac.Conversation(messages[:300], encoding="approximate").tokens // 2
    lists = [messages[:300], messages[:300], messages[:320], messages[:400], [messages[0], *messages[60:400]]]
    for lst in lists + lists[::-1]:
        assert fast(lst, budget, "approximate", inputs) == general(lst, budget, "approximate", inputs)


def test_the_memo_starting_again_in_the_middle_of_a_call() -> None:
    """Arguments of several MiB: the memo (16 MiB of arguments at most) starts again while a call
    looks its results up; that call's order is not kept, and every call still answers right."""
    big = "x" * (2 << 20)
    out: Messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "Do it."}]
    # 14 calls, the last 3 protected: 11 candidates of 2 MiB each.
    for r in range(14):
        args = json.dumps({"path": f"f{r}.py", "content": big[: (2 << 20) - r]})
        call = {"id": f"c{r}", "type": "function", "function": {"name": "write_file", "arguments": args}}
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        out.append({"role": "tool", "tool_call_id": f"c{r}", "content": f"wrote f{r}.py\n" * 400})
    for r in range(20):
        out.append({"role": "assistant", "content": f"step {r} " * 50})
    out.append({"role": "user", "content": "Next."})
    budget = ac.Conversation(out, encoding="approximate").tokens - 1000
    for inputs in (False, True, False, True):
        assert fast(out, budget, "approximate", inputs) == general(out, budget, "approximate", inputs)
    replace_content(out)
    assert fast(out, budget, "approximate", False) == general(out, budget, "approximate", False)
