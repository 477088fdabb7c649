"""A latest user request that sits inside a tool interaction (an Anthropic user message carrying a
call's result and the user's next words) is kept with the call it answers, from the start of the
group holding both: a refusal counts them (`needed` is a budget that works, over the budget
refused), and the compaction ladder's last rung keeps the call beside the request."""

from __future__ import annotations

import json

import pytest

import agentcontext as ac
from agentcontext.errors import BudgetError

WORDS = "alpha beta gamma delta " * 12


def _history() -> list[dict]:
    return [
        {"role": "user", "content": "first " + WORDS},
        {"role": "user", "content": "second " + WORDS},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "read", "input": {"p": WORDS}}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": WORDS},
                {"type": "text", "text": "now " + WORDS},
            ],
        },
    ]


@pytest.mark.parametrize("encoding", ["o200k_base", "approximate"])
@pytest.mark.parametrize("given", [list, tuple])
def test_the_refusal_counts_the_call_the_request_answers(encoding: str, given: type) -> None:
    history = _history()
    kwargs = {"encoding": encoding, "format": "anthropic"}
    call_and_request = ac.Conversation(history[2:], **kwargs).tokens
    request = ac.Conversation(history[3:], **kwargs).tokens
    budget = (call_and_request + request) // 2  # over the request alone, under it with its call
    assert request < budget < call_and_request
    with pytest.raises(BudgetError) as refused:
        ac.trim_messages(given(history), budget, **kwargs)
    # (It said the request alone was needed: fewer tokens than the budget it refused.)
    assert refused.value.needed > budget
    out = ac.trim_messages(given(history), refused.value.needed, **kwargs)["messages"]
    assert out == history[1:]  # from the user turn that began the call's group
    assert ac.Conversation(out, **kwargs).tokens <= refused.value.needed


def test_the_ladder_keeps_the_call_whose_result_the_request_carries() -> None:
    # The oversized rung kept the request (result c4 + "now do it") beside the last round and
    # dropped the call before it: a tool_result whose tool_use was gone (budgets 220 and on).
    words = "alpha beta gamma delta " * 30
    history = [
        {"role": "user", "content": "first " + words},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c4", "name": "read", "input": {"p": "x"}}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c4", "content": words},
                {"type": "text", "text": "now do it"},
            ],
        },
        {"role": "assistant", "content": "done " + words},
    ]
    conv = ac.Conversation(history, format="anthropic", encoding="approximate")
    seen = 0
    for budget in range(200, conv.tokens, 20):
        result = ac.Compactor("openharness").compact(conv, budget=budget)
        blocks = [b for m in result.conversation.to_format("anthropic") if isinstance(m["content"], list)
                  for b in m["content"]]  # fmt: skip
        uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
        results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        assert uses == results, budget
        assert "now do it" in json.dumps(result.conversation.to_format("anthropic")), budget
        seen += bool(results) and result.tokens_after < conv.tokens
    assert seen, "some budget keeps the call and its result, compacted"
