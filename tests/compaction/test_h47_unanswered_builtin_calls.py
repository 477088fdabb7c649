"""A Responses built-in tool call with no output item after it (a ``computer_call`` without its
``computer_call_output``) passed ``validate`` and ``repair`` unseen, though the API refuses the
request ("No tool output found for computer call ..."), as it does a ``function_call`` without
output. It is now reported (``missing_result``) and repaired: dropped (``dropped_call``: its
output, a screenshot, cannot be written), or left as it is with ``leave_open=True`` when it is
the call the loop waits on."""

from __future__ import annotations

from typing import Any

import agentcontext as ac


def _call(call_id: str, kind: str = "computer_call") -> dict[str, Any]:
    return {"type": kind, "call_id": call_id, "id": f"cu_{call_id}", "action": {"type": "click", "x": 1, "y": 2},
            "status": "completed", "pending_safety_checks": []}  # fmt: skip


def test_a_computer_call_without_output_is_reported_like_a_function_call() -> None:
    items = [{"role": "user", "content": "Click it."}, _call("k1"), {"role": "user", "content": "Next."}]
    found = ac.validate(items, format="responses")
    assert [(v["kind"], v["index"], v["id"]) for v in found] == [("missing_result", 1, "k1")]
    assert "computer_call" in found[0]["detail"]


def test_repair_drops_it_and_the_rest_stays() -> None:
    answered = [
        _call("k0"),
        {"type": "computer_call_output", "call_id": "k0", "output": {"type": "computer_screenshot", "file_id": "f"}},
    ]
    items = [{"role": "user", "content": "Click it."}, *answered, _call("k1"), {"role": "user", "content": "Next."}]
    fixed, changes = ac.repair(items, format="responses")
    assert ("dropped_call", "k1") in [(c["kind"], c["id"]) for c in changes]
    assert fixed == [items[0], *answered, items[-1]]
    assert ac.validate(fixed, format="responses") == []
    assert ac.repair(fixed, format="responses") == (fixed, [])


def test_leave_open_keeps_the_call_the_loop_waits_on() -> None:
    items = [{"role": "user", "content": "Click it."}, _call("k1")]
    assert ac.repair(items, format="responses", leave_open=True) == (items, [])
    fixed, changes = ac.repair(items, format="responses")
    assert fixed == items[:1] and changes[0]["kind"] == "dropped_call"


def test_a_shell_call_without_output_too() -> None:
    items = [{"role": "user", "content": "List."}, _call("s1", "local_shell_call"), {"role": "user", "content": "?"}]
    assert [v["kind"] for v in ac.validate(items, format="responses")] == ["missing_result"]
