"""Two calls of one id in ONE assistant message (some servers number the calls of a turn
``call_0`` each): the pairing matched a result to the latest call of its id, so the first result
went to the second call (renamed ``call_0#2``), the first call got an "interrupted" result and the
second result became a user note; trim_messages then dropped the whole call round, and an
adapter sent the request without it. The results now pair in order with the calls of their id
in that message: validate finds only the reused id, repair renames it with its own result, the
fit keeps the round whole, and recall names each result after its own call."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import agentcontext as ac
from agentcontext import Recall

BIG = "line of the file being written\n" * 3000


def _call(call_id: str, arguments: dict[str, Any], name: str = "write_file") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def _messages(first: str = "small a") -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You write files."},
        {"role": "user", "content": "Write both files."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                _call("call_0", {"path": "a.py", "content": first}),
                _call("call_0", {"path": "b.py", "content": "small b"}),
            ],
        },
        {"role": "tool", "tool_call_id": "call_0", "content": "wrote a.py"},
        {"role": "tool", "tool_call_id": "call_0", "content": "wrote b.py"},
        {"role": "assistant", "content": "Both written."},
        {"role": "user", "content": "Now run the tests."},
    ]


def _round(out: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(m["role"], m.get("tool_call_id") or [c["id"] for c in m.get("tool_calls") or ()]) for m in out]


def test_validate_and_repair_pair_the_results_in_order() -> None:
    msgs = _messages()
    assert [v["kind"] for v in ac.validate(msgs)] == ["duplicate_id"]
    fixed, changes = ac.repair(msgs)
    assert [c["kind"] for c in changes] == ["renamed_id"]
    assert [c["id"] for c in fixed[2]["tool_calls"]] == ["call_0", "call_0#2"]
    assert [(m["tool_call_id"], m["content"]) for m in fixed[3:5]] == [
        ("call_0", "wrote a.py"),
        ("call_0#2", "wrote b.py"),
    ]
    assert ac.validate(fixed) == []


@pytest.mark.parametrize("share", [1.0, 0.8])
def test_trim_messages_keeps_the_round(share: float) -> None:
    msgs = _messages()
    before = copy.deepcopy(msgs)
    budget = int(ac.Conversation(msgs).tokens * share) + 1
    out = ac.trim_messages(msgs, budget)
    assert msgs == before
    if share == 1.0:
        assert out == msgs  # it fits: sent as it is (before, repaired without the round)
    rounds = [r for r in _round(out) if r[0] != "system"]
    assert ("assistant", ["call_0", "call_0"]) in rounds or rounds[0] == ("user", [])
    assert not any(m["role"] == "user" and m["content"].startswith("[another tool result") for m in out)


def test_a_huge_argument_in_the_round_keeps_the_round_in_the_fit() -> None:
    pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install 'agentcontext[litellm]')")
    from agentcontext.integrations import litellm

    msgs = _messages(first=BIG)[:5]
    out = litellm.fit_messages(msgs, ac.Budget(4000))
    assert ac.Conversation(out).tokens <= 4000
    assert _round(out)[2:] == [("assistant", ["call_0", "call_0"]), ("tool", "call_0"), ("tool", "call_0")]
    assert [m["content"] for m in out[3:]] == ["wrote a.py", "wrote b.py"]
    content = json.loads(out[2]["tool_calls"][0]["function"]["arguments"])["content"]
    assert content.startswith("line of the file") and len(content) < len(BIG) // 4


def test_recall_names_each_result_after_its_own_call() -> None:
    msgs = _messages()
    recall = Recall(originals=msgs)
    assert recall.original("call_0") == "wrote a.py"
    assert recall.original("call_0#2") == "wrote b.py"
