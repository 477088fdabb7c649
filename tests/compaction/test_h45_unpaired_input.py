"""``trim_messages`` given a list that is already not pair-valid (a tool result removed, a call
interrupted before its result came, a result whose call was removed) returns one every provider
accepts: the call gets the result ``repair`` gives an interrupted call, the result with no call
becomes a user message saying so, as ``repair`` writes it. The validity is judged here by a
checker of this file, not by the library's validator; the caller's list is never changed."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import agentcontext as ac

#: What ``repair`` gives a call that has no result (``src/compact/repair.rs``, ``INTERRUPTED``).
INTERRUPTED = "[no result: the tool call was interrupted before it returned]"


def chat_problems(messages: list[dict[str, Any]]) -> list[str]:
    """OpenAI Chat's rule, checked independently: an assistant message with ``tool_calls`` is
    followed by one tool message per call id before anything else, and every tool message
    answers a call of the assistant message before that run. The calls of the last assistant
    message may still wait for results (nothing after them)."""
    problems = []
    waiting: set[str] = set()
    for i, m in enumerate(messages):
        if m["role"] == "tool":
            if m["tool_call_id"] not in waiting:
                problems.append(f"{i}: result {m['tool_call_id']} answers no call before it")
            waiting.discard(m["tool_call_id"])
            continue
        if waiting:
            problems.append(f"{i}: calls {sorted(waiting)} have no result before it")
        waiting = {c["id"] for c in m.get("tool_calls") or []}
    return problems


def anthropic_problems(messages: list[dict[str, Any]]) -> list[str]:
    """Anthropic's rule, checked independently: the ``tool_use`` ids of an assistant message are
    answered by ``tool_result`` blocks of the user message right after it, and a ``tool_result``
    answers a ``tool_use`` of the message right before it."""
    problems = []
    before: set[str] = set()
    for i, m in enumerate(messages):
        blocks = m["content"] if isinstance(m["content"], list) else []
        results = {b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"}
        if results - before:
            problems.append(f"{i}: results {sorted(results - before)} answer no call right before")
        if before - results and i > 0:
            problems.append(f"{i - 1}: calls {sorted(before - results)} get no result right after")
        before = {b["id"] for b in blocks if b.get("type") == "tool_use"}
    return problems


def call(i: str, name: str = "read_file") -> dict[str, Any]:
    return {"id": i, "type": "function", "function": {"name": name, "arguments": json.dumps({"path": f"{i}.py"})}}


def session(rounds: int = 6, size: int = 300) -> list[dict[str, Any]]:
    """A Chat agent session: system, request, ``rounds`` tool rounds, a reply, the latest request."""
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Review the handlers."},
    ]
    for r in range(rounds):
        out.append({"role": "assistant", "content": None, "tool_calls": [call(f"c{r}")]})
        out.append({"role": "tool", "tool_call_id": f"c{r}", "content": f"output {r} " + "line " * size})
    out.append({"role": "assistant", "content": "Done."})
    out.append({"role": "user", "content": "Now the loaders."})
    return out


def without(messages: list[dict[str, Any]], pick: Any) -> list[dict[str, Any]]:
    return [m for m in messages if not pick(m)]


# Each case: the list, the call left without a result, the result left without a call.
CASES = {
    "result_removed": (without(session(), lambda m: m.get("tool_call_id") == "c4"), "c4", None),
    "call_removed": (without(session(), lambda m: any(c["id"] == "c1" for c in m.get("tool_calls") or [])), None, "c1"),
    "interrupted_then_asked": (
        [*session()[:-2], {"role": "assistant", "content": None, "tool_calls": [call("c9")]}, session()[-1]],
        "c9",
        None,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("share", [2.0, 0.5, 0.25])
def test_trim_messages_returns_a_pair_valid_list(case: str, share: float) -> None:
    messages, orphan_call, orphan_result = CASES[case]
    assert chat_problems(messages)
    before = copy.deepcopy(messages)
    budget = int(ac.Conversation(messages).tokens * share)
    out = ac.trim_messages(messages, budget, recent_tools=1, recent_messages=2)
    assert chat_problems(out) == [], chat_problems(out)
    assert messages == before, "the caller's list was changed"
    assert ac.Conversation(out).tokens <= budget
    assert out[-1] == {"role": "user", "content": "Now the loaders."}
    sent = json.dumps(out)
    if orphan_call is not None and f'"{orphan_call}"' in sent:
        # The call is kept: its result is the one repair gives an interrupted call.
        results = [m for m in out if m.get("tool_call_id") == orphan_call]
        assert [m["content"] for m in results] == [INTERRUPTED]
    if orphan_result is not None and share >= 1:
        notes = [m for m in out if m["role"] == "user" and f"call {orphan_result}," in str(m["content"])]
        assert len(notes) == 1 and "output 1 line" in notes[0]["content"]


def test_the_same_repair_as_repair_gives_when_everything_fits() -> None:
    messages, _, _ = CASES["result_removed"]
    fixed, _changes = ac.repair(messages)
    assert ac.trim_messages(messages, 10**6) == fixed


def test_calls_still_waiting_for_results_at_the_end_are_left_open() -> None:
    # An agent's loop between a call and its result: nothing synthesized for it.
    messages = [*session(2, 10), {"role": "assistant", "content": None, "tool_calls": [call("a"), call("b")]}]
    messages.append({"role": "tool", "tool_call_id": "a", "content": "A"})
    assert ac.trim_messages(messages, 10**6) == messages
    assert INTERRUPTED not in json.dumps(ac.trim_messages(messages, 200))


def test_anthropic_lists_are_repaired_in_their_own_form() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Review the handlers."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {}}]},
        {"role": "user", "content": "Go on without it."},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "gone", "content": "late"}]},
        {"role": "user", "content": "Now the loaders."},
    ]
    before = copy.deepcopy(messages)
    assert anthropic_problems(messages)
    request = ac.trim_messages(messages, 10**6, format="anthropic")
    assert anthropic_problems(request["messages"]) == [], anthropic_problems(request["messages"])
    assert messages == before
    assert INTERRUPTED in json.dumps(request["messages"])


@pytest.mark.parametrize("share", [0.5, 0.25, 0.15])
def test_a_result_without_its_call_after_the_request_is_not_taken_for_it(share: float) -> None:
    # Repaired into a user message that says what it is, it is never the latest request: the
    # user's own is kept.
    messages = [*session(), {"role": "assistant", "content": None, "tool_calls": [call("d1")]}]
    messages.append({"role": "tool", "tool_call_id": "d1", "content": "loader " * 300})
    messages.append({"role": "assistant", "content": None, "tool_calls": [call("d2")]})
    messages.append({"role": "tool", "tool_call_id": "d2", "content": "loader " * 300})
    messages.append({"role": "tool", "tool_call_id": "ghost", "content": "late " * 50})
    budget = int(ac.Conversation(messages).tokens * share)
    out = ac.trim_messages(messages, budget, recent_tools=1, recent_messages=2)
    assert chat_problems(out) == []
    assert {"role": "user", "content": "Now the loaders."} in out
    assert out[-1]["content"].startswith("[tool result for call ghost, which is not in the conversation]\nlate")


def test_the_output_of_a_computer_call_is_left_paired() -> None:
    # The library keeps a Responses computer_call opaque; its output is the provider's pair.
    items = [
        {"role": "user", "content": "Look."},
        {
            "type": "computer_call",
            "call_id": "k1",
            "id": "cu1",
            "action": {"type": "screenshot"},
            "status": "completed",
        },
        {"type": "computer_call_output", "call_id": "k1", "output": {"type": "computer_screenshot", "file_id": "f1"}},
        {"role": "user", "content": "What does it show?"},
    ]
    assert ac.trim_messages(items, 10**6, format="responses") == items
