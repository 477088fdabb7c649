"""LiteLLM's loop, 30 model calls with a fake ``completion`` (LiteLLM's own is not needed: the
adapter imports nothing of it) that answers with pydantic message objects as LiteLLM's
``Message`` does: a long system prompt, tools passed with ``tools=``, every tool output large.
What ``completion`` receives (messages and tool definitions) stays within the budget on every
call, valid, with the latest request; an output bigger than the whole budget is cut; each message
is converted once."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.integrations import litellm as adapter
from agentcontext.integrations.litellm import fit_messages
from tests.integration_support import (
    BIG_RESULT,
    LONG_SYSTEM,
    Function,
    Message,
    ToolCall,
    check_sent,
    tool_schema_tokens,
)

BUDGET = 6_000

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the code base and return it whole, with line numbers.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]


class FakeCompletion:
    """``reads`` tool calls after each user message, then an answer; checks what each call received."""

    def __init__(self, reads: int) -> None:
        self.reads = reads
        self.sent: list[int] = []
        self.counter = itertools.count()
        self.in_turn = 0

    def __call__(self, model: str, messages: list[Any], tools: list[dict[str, Any]]) -> Message:
        dicts = [adapter.to_dict(m, i) for i, m in enumerate(messages)]
        beside = sum(
            tool_schema_tokens(t["function"]["name"], t["function"]["description"], t["function"]["parameters"])
            for t in tools
        )
        request = [d["content"] for d in dicts if d["role"] == "user"][-1]
        self.sent.append(check_sent(dicts, request, BUDGET, beside))
        if dicts[-1]["role"] == "user":
            self.in_turn = 0
        i = next(self.counter)
        if self.in_turn < self.reads:
            self.in_turn += 1
            call = ToolCall(
                id=f"call_{i}", function=Function(name="read_file", arguments=json.dumps({"path": f"m{i}.py"}))
            )
            return Message(tool_calls=[call])
        return Message(content="Reviewed.")


def agent_loop(completion: FakeCompletion, prompts: list[str], result: str) -> list[Any]:
    messages: list[Any] = [{"role": "system", "content": LONG_SYSTEM}]
    for prompt in prompts:
        messages.append({"role": "user", "content": prompt})
        while True:
            reply = completion("gpt-4.1", fit_messages(messages, BUDGET, tools=TOOLS), TOOLS)
            messages.append(reply)
            if not reply.tool_calls:
                break
            for call in reply.tool_calls:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": f"# {call.id}\n{result}"})
    return messages


def test_thirty_calls_with_a_system_prompt_and_tools_stay_within_the_budget() -> None:
    completion = FakeCompletion(reads=9)
    messages = agent_loop(completion, [f"Turn {t}: review module {t}." for t in range(3)], BIG_RESULT)
    assert len(completion.sent) == 30
    # The system prompt and the tool schema are ~1,400 tokens of it.
    assert max(completion.sent) <= BUDGET and max(completion.sent) > BUDGET - 2_500
    # The caller's list is whole; what was sent holds its own objects where unchanged.
    assert sum(isinstance(m, Message) for m in messages) == 30
    sent = fit_messages(messages, BUDGET, tools=TOOLS)
    assert any(m is messages[-1] for m in sent) and any(m is messages[0] for m in sent)


def test_an_output_bigger_than_the_budget_is_cut_and_the_loop_finishes() -> None:
    huge = "\n".join(f"{i:6d}  row {i}: value={i * 7919 % 10007}" for i in range(2_500))
    completion = FakeCompletion(reads=1)
    messages = agent_loop(completion, ["Read the table."], huge)
    assert len(completion.sent) == 2 and max(completion.sent) <= BUDGET
    fitted = fit_messages(messages[:-1], BUDGET, tools=TOOLS)  # as the last call received it
    cut = [m for m in fitted if isinstance(m, dict) and m["role"] == "tool"]
    assert len(cut) == 1 and len(cut[0]["content"]) < len(huge) and "call_0" in cut[0]["content"]


def test_each_message_is_converted_once_across_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    converted: list[int] = []
    original = adapter.to_dict

    def counting(message: Any, index: int = 0) -> dict[str, Any]:
        converted.append(id(message))
        return original(message, index)

    monkeypatch.setattr(adapter, "to_dict", counting)
    messages: list[Any] = [{"role": "system", "content": LONG_SYSTEM}, {"role": "user", "content": "Read them."}]
    for n in range(30):
        call = ToolCall(id=f"c{n}", function=Function(name="read_file", arguments="{}"))
        messages.append(Message(tool_calls=[call]))
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": BIG_RESULT})
        fit_messages(messages, BUDGET, tools=TOOLS)
    # Each message object once; the plain dicts are fitted as they are (never converted).
    assert len(converted) == 30 == len(set(converted))
    assert set(converted) == {id(m) for m in messages if isinstance(m, Message)}


def test_bad_tools_are_a_typed_error() -> None:
    with pytest.raises(ac.ArgumentTypeError, match="tools must be"):
        fit_messages([{"role": "user", "content": "hi"}], BUDGET, tools="read_file")  # type: ignore[arg-type]
    with pytest.raises(ac.OptionError, match="encoding"):
        fit_messages([{"role": "user", "content": "hi"}], ac.Budget(BUDGET, encoding="o300k"))  # type: ignore[arg-type]
