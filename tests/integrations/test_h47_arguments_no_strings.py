"""A newest tool call whose JSON arguments are far over the budget and not an object, with no
string long enough to cut (a number of 60,000 digits, a list of numbers, a list of many short
strings), still ended the fit with ``BudgetError``: only string values were cut. Such arguments
are now cut whole, head + marker + tail, written back as a JSON string (JSON stays JSON; the
marker names ``c1#arguments``, the original in the framework's history)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import agentcontext as ac

MARKER = 'recall(id="c1#arguments")'

CASES: dict[str, str] = {
    "integer": "1" * 60_000,
    "digits": "12" * 20_000,  # (test_h46_arguments_not_an_object expected BudgetError for these two)
    "ones": "[" + "1," * 20_000 + "1]",
    "float": "-1." + "2" * 60_000 + "e5",
    "numbers": json.dumps(list(range(20_000))),
    "nested": json.dumps([[i, None, True] for i in range(10_000)]),
    "short strings": json.dumps(["x" * 10 for _ in range(10_000)]),
}


def _chat(arguments: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Write the numbers."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "write", "arguments": arguments}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "written"},
    ]


def _check(sent: str, arguments: str) -> None:
    text = json.loads(sent)
    assert isinstance(text, str) and MARKER in text
    head, _, tail = text.partition("[...")
    assert arguments.startswith(head.rstrip("\n")) and arguments.endswith(tail.rpartition("...]")[2].lstrip("\n"))
    assert len(sent) < len(arguments) // 2


@pytest.mark.parametrize("kind", list(CASES))
def test_litellm_cuts_arguments_with_no_long_string(kind: str) -> None:
    pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install 'agentcontext[litellm]')")
    from agentcontext.integrations.litellm import fit_messages

    messages = _chat(CASES[kind])
    given = copy.deepcopy(messages)
    fitted = fit_messages(messages, ac.Budget(4_000))
    assert messages == given
    assert ac.Conversation(fitted).tokens <= 4_000
    _check(fitted[1]["tool_calls"][0]["function"]["arguments"], CASES[kind])


@pytest.mark.parametrize("kind", ["integer", "numbers"])
def test_agents_fit_items_cuts_arguments_with_no_long_string(kind: str) -> None:
    pytest.importorskip(
        "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
    )
    from agentcontext.integrations.openai_agents import fit_items

    items = [
        {"role": "user", "content": "Write the numbers."},
        {"type": "function_call", "call_id": "c1", "name": "write", "arguments": CASES[kind]},
        {"type": "function_call_output", "call_id": "c1", "output": "written"},
    ]
    fitted = fit_items(items, ac.Budget(4_000))
    _check(fitted[1]["arguments"], CASES[kind])
