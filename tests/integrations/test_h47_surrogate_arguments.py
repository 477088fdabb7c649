"""A newest tool call whose JSON arguments escape a lone surrogate (``\\ud800``: JSON may, UTF-8
cannot) and are over the budget: the cut read the value as a ``str`` holding the surrogate and
raised ``InvalidMessageError`` counting it. The value is cut with U+FFFD in the surrogate's
place (as the importers put one); a value not cut keeps its escape."""

from __future__ import annotations

import json
from typing import Any

import pytest

import agentcontext as ac

BIG = "line of the file being written\n" * 3000
LONE = "\ud800"


def _chat(arguments: str) -> list[dict[str, Any]]:
    return [
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


CASES = {
    "in the long value": {"path": "a.py", "content": BIG + LONE + BIG},
    "at the cut's head": {"path": "a.py", "content": LONE + BIG + BIG},
    "in a short value": {"path": f"a{LONE}.py", "content": BIG + BIG},
    "a JSON string": BIG + LONE + BIG,
}


@pytest.mark.parametrize("case", list(CASES))
def test_litellm_cuts_arguments_escaping_a_lone_surrogate(case: str) -> None:
    pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install 'agentcontext[litellm]')")
    from agentcontext.integrations.litellm import fit_messages

    value = CASES[case]
    arguments = json.dumps(value)  # (ensure_ascii: the surrogate escaped)
    fitted = fit_messages(_chat(arguments), ac.Budget(2_000))
    sent = fitted[1]["tool_calls"][0]["function"]["arguments"]
    assert len(sent) < len(arguments) // 4 and "chars omitted" in sent
    ac.Conversation(fitted, format="openai")  # text the core reads
    back = json.loads(sent)
    if case == "in a short value":
        assert back["path"] == f"a{LONE}.py"  # not cut: its escape kept
    if case == "at the cut's head":
        assert back["content"].startswith("\ufffdline of the file")


def test_agents_fit_items_cuts_arguments_escaping_a_lone_surrogate() -> None:
    pytest.importorskip(
        "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
    )
    from agentcontext.integrations.openai_agents import fit_items

    arguments = json.dumps({"path": "a.py", "content": BIG + LONE + BIG})
    items = [
        {"role": "user", "content": "Write the file."},
        {"type": "function_call", "call_id": "c1", "name": "write_file", "arguments": arguments},
        {"type": "function_call_output", "call_id": "c1", "output": "written"},
    ]
    fitted = fit_items(items, ac.Budget(2_000))
    assert len(fitted[1]["arguments"]) < len(arguments) // 4
    assert json.loads(fitted[1]["arguments"])["path"] == "a.py"


def test_arguments_text_escapes_only_lone_surrogates() -> None:
    from agentcontext.compaction.fill import _arguments_text

    assert _arguments_text({"a": f"é{LONE}😀"}) == '{"a": "é\\ud800😀"}'
    assert json.loads(_arguments_text([LONE, "\udfff"])) == [LONE, "\udfff"]
