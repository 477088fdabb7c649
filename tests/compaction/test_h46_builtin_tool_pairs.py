"""Responses built-in tool calls answered by an output item of their own (``computer_call`` and
``computer_call_output``; ``local_shell_call``, ``shell_call``, ``apply_patch_call`` and theirs,
when they carry a ``call_id``) were not paired: ``ac.validate`` called the output an orphan,
``ac.repair`` made it a user note, and ``trim_messages`` could cut between the call and its
output. They are now a pair in validate, repair and trim alike (a call without its output: see
test_h47_unanswered_builtin_calls.py), and an ``mcp_call``, which holds its own output, is no
pair."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import agentcontext as ac


def _computer(call_id: str) -> list[dict[str, Any]]:
    return [
        {"type": "computer_call", "call_id": call_id, "id": f"cu_{call_id}", "action": {"type": "screenshot"},
         "status": "completed", "pending_safety_checks": []},
        {"type": "computer_call_output", "call_id": call_id,
         "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64," + "A" * 40}},
    ]  # fmt: skip


def _items() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Open the settings."},
        *_computer("k1"),
        {"type": "shell_call", "call_id": "s1", "action": {"commands": ["ls"]}, "status": "completed"},
        {"type": "shell_call_output", "call_id": "s1",
         "output": [{"stdout": "a.txt\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]},
        {"type": "local_shell_call", "call_id": "l1", "id": "lsh_1", "status": "completed",
         "action": {"type": "exec", "command": ["pwd"], "env": {}}},
        {"type": "local_shell_call_output", "call_id": "l1", "output": "/work"},
        {"type": "mcp_call", "id": "mcp_1", "name": "fetch", "server_label": "web", "arguments": "{}", "output": "ok"},
        {"role": "user", "content": "What does it show?"},
    ]  # fmt: skip


def test_validate_and_repair_see_the_pairs() -> None:
    items = _items()
    assert ac.validate(items, format="responses") == []
    fixed, changes = ac.repair(items, format="responses")
    assert changes == [] and fixed == items


def test_an_output_after_a_user_message_moves_back_to_its_call() -> None:
    call, output = _computer("k1")
    items = [{"role": "user", "content": "Look."}, call, {"role": "user", "content": "wait"}, output]
    assert [v["kind"] for v in ac.validate(items, format="responses")] == ["misplaced_result"]
    fixed, changes = ac.repair(items, format="responses")
    assert [c["kind"] for c in changes] == ["moved_result"]
    assert fixed == [items[0], call, output, items[2]]


def test_repaired_for_an_orphan_the_pairs_stay() -> None:
    items = [*_items(), {"type": "function_call_output", "call_id": "ghost", "output": "lost"}]
    fixed, changes = ac.repair(items, format="responses")
    assert [c["kind"] for c in changes] == ["orphan_to_user"]
    assert fixed[: len(items) - 1] == items[:-1]
    # trim_messages repairs it the same way before it selects (the orphan was the only reason).
    assert ac.trim_messages(items, 10**6, format="responses")[: len(items) - 1] == items[:-1]


@pytest.mark.parametrize("share", [0.9, 0.7, 0.5, 0.3])
def test_trim_never_cuts_a_call_from_its_output(share: float) -> None:
    items: list[dict[str, Any]] = [{"role": "user", "content": "Go through the pages."}]
    for k in range(6):
        items += [*_computer(f"k{k}"), {"role": "assistant", "content": f"page {k}: " + "seen " * 60}]
    items.append({"role": "user", "content": "Summarize."})
    before = copy.deepcopy(items)
    budget = int(ac.Conversation(items, format="responses").tokens * share)
    out = ac.trim_messages(items, budget, format="responses")
    assert items == before
    assert ac.validate(out, format="responses") == []
    calls = [i["call_id"] for i in out if i.get("type") == "computer_call"]
    outputs = [i["call_id"] for i in out if i.get("type") == "computer_call_output"]
    assert calls == outputs
