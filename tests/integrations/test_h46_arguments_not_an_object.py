"""A newest tool call whose arguments are over the budget but not a JSON object (a JSON list, a
bare JSON string, a text that is not JSON at all) still ended the fit with ``BudgetError``: only
the string values of an object were cut. Now the strings of a list, a bare string and a text
that is not JSON are cut too, head + marker + tail naming ``c1#arguments``; JSON stays valid
JSON of the same shape, and the caller's messages are not changed."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import agentcontext as ac

BIG = "line of the file being written\n" * 4000
MARKER = 'recall(id="c1#arguments")'

CASES: dict[str, str] = {
    "list": json.dumps(["a.py", BIG, {"mode": "w"}]),
    "string": json.dumps(BIG),
    "not_json": "path=a.py\n" + BIG + "\n(end",
    "escaped_list": json.dumps(["é.py", BIG + "é"]),
}


def _check(kind: str, arguments: str) -> None:
    if kind == "not_json":
        assert arguments.startswith("path=a.py\nline of the file") and arguments.endswith("written\n\n(end")
        text = arguments
    else:
        parsed = json.loads(arguments)
        if kind == "list":
            assert parsed[0] == "a.py" and parsed[2] == {"mode": "w"} and len(parsed) == 3
            text = parsed[1]
        elif kind == "escaped_list":
            assert parsed[0] == "é.py" and len(parsed) == 2
            text = parsed[1]
            assert text.endswith("é")
        else:
            assert isinstance(parsed, str)
            text = parsed
        assert text.startswith("line of the file")
    assert MARKER in text and len(text) < len(BIG) // 4


def _chat(arguments: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You write files."},
        {"role": "user", "content": "Write the file."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "write_file", "arguments": arguments}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "written"},
    ]


@pytest.mark.parametrize("encoding", ["approximate", "o200k_base"])
@pytest.mark.parametrize("kind", list(CASES))
def test_litellm_cuts_arguments_that_are_not_an_object(kind: str, encoding: str) -> None:
    pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install 'agentcontext[litellm]')")
    from agentcontext.integrations import litellm

    messages = _chat(CASES[kind])
    before = copy.deepcopy(messages)
    out = litellm.fit_messages(messages, ac.Budget(4000, encoding=encoding))
    assert messages == before
    assert ac.Conversation(out, encoding=encoding).tokens <= 4000
    _check(kind, out[2]["tool_calls"][0]["function"]["arguments"])
    assert out[3] == messages[3] and out[1] == messages[1]


@pytest.mark.parametrize("kind", list(CASES))
def test_agents_sdk_items_cut_arguments_that_are_not_an_object(kind: str) -> None:
    pytest.importorskip(
        "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
    )
    from agentcontext.integrations.openai_agents import fit_items

    items: list[dict[str, Any]] = [
        {"role": "user", "content": "Write the file."},
        {"type": "function_call", "call_id": "c1", "name": "write_file", "arguments": CASES[kind]},
        {"type": "function_call_output", "call_id": "c1", "output": "written"},
    ]
    before = copy.deepcopy(items)
    out = fit_items(items, ac.Budget(4000))
    assert items == before
    _check(kind, next(i for i in out if i.get("type") == "function_call")["arguments"])


def test_arguments_that_are_null_are_left_as_they_are() -> None:
    # (Arguments with no string to cut, a number or a list of numbers, raised BudgetError here;
    # they are cut whole since h47: tests/integrations/test_h47_arguments_no_strings.py.)
    pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install 'agentcontext[litellm]')")
    from agentcontext.integrations import litellm

    messages = _chat("null")
    messages[3]["content"] = "x " * 20_000  # over only by its result: that is cut
    out = litellm.fit_messages(messages, ac.Budget(4000))
    assert out[2] == messages[2]
