"""Issue 27: where the last round must be cut (the oversized rung), the tool output gives way
before the user request, and the cut texts take the room the cuts left unused — the request
keeps its opening in a budget a whole round does not fit."""

from __future__ import annotations

from typing import Any

from agentcontext import Conversation
from agentcontext.compaction import Compactor
from agentcontext.probes import OPENING, fold

TASK = "We are currently solving the following issue within our repository, the parser rejects empty input. " + (
    "Details of the issue and the rules of the environment follow on many lines.\n" * 60
)


def _session() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": TASK},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "name": "bash", "arguments": '{"command": "python -m pytest -q"}'}]},
        {"role": "tool", "tool_call_id": "c1", "content": "test output line\n" * 120},
    ]  # fmt: skip


def test_the_tool_output_is_cut_before_the_request_and_the_room_is_spent() -> None:
    conv = Conversation(_session(), format="jsonl", encoding="o200k_base")
    budget = 160
    result = Compactor("openharness").compact(conv, budget=budget)
    assert result.fits, result.reason
    messages = result.conversation.to_jsonl()
    request = next(m["content"] for m in messages if m["role"] == "user")
    output = next(m["content"] for m in messages if m["role"] == "tool")
    # The request keeps its opening (what names it), the output gives way first.
    assert fold(TASK)[:OPENING] in fold(request)
    tokens = result.conversation.message_tokens()
    at = {m["role"]: k for k, m in enumerate(messages)}
    assert tokens[at["user"]] > tokens[at["tool"]], (request, output)
    # The cut texts took the room the cuts left: the working set is within a few tokens of the budget.
    assert budget - 8 <= result.conversation.tokens <= budget
    assert "cut" in [s.stage for s in result.stages]
