"""Responses output items whose ``output`` is neither a string nor a list of parts.

A function's output (``function_call_output``, ``custom_tool_call_output``) must be a string or
a list of parts, as a Chat tool message's content or an Anthropic tool_result's must: anything
else is refused with an InvalidMessageError naming the item (it was read as an output of 0
tokens and sent whole, past the budget). A built-in tool's structured output (a
``computer_call_output`` screenshot) still goes back as it came, and is counted.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.errors import InvalidMessageError

BIG = {"rows": [{"id": i, "name": f"row number {i}", "payload": "x" * 40} for i in range(200)]}


def _items(output: Any, kind: str = "function_call_output") -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "list the rows"},
        {"type": "function_call", "call_id": "c1", "name": "rows", "arguments": "{}"},
        {"type": kind, "call_id": "c1", "output": output},
        {"role": "user", "content": "thanks"},
    ]


@pytest.mark.parametrize("kind", ["function_call_output", "custom_tool_call_output"])
@pytest.mark.parametrize("output", [BIG, 3, True, None])
def test_a_function_output_that_is_not_text_or_parts_is_refused(kind: str, output: Any) -> None:
    with pytest.raises(InvalidMessageError, match=rf'{kind} "c1": `output` must be a string or a list of parts') as e:
        ac.Conversation(_items(output, kind), format="responses")
    assert e.value.index == 2


def test_trim_refuses_it_rather_than_sending_it_uncounted() -> None:
    # Before: the output counted 0 tokens, so the whole list "fit" a budget far below its size.
    assert len(json.dumps(BIG)) > 8 * 1_000
    with pytest.raises(InvalidMessageError):
        ac.trim_messages(_items(BIG), 1_000, format="responses")


def test_the_agents_sdk_fit_refuses_it() -> None:
    pytest.importorskip("agents")
    from agentcontext.integrations.openai_agents import fit_items

    with pytest.raises(InvalidMessageError):
        fit_items(_items(BIG), 1_000)


def _computer(output: Any) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "open the page"},
        {
            "type": "computer_call",
            "id": "cu_1",
            "call_id": "k1",
            "action": {"type": "screenshot"},
            "pending_safety_checks": [],
            "status": "completed",
        },
        {"type": "computer_call_output", "call_id": "k1", "output": output},
    ]


SCREENSHOT = {"type": "computer_screenshot", "image_url": "data:image/png;base64," + "iVBORw0KGgo" * 300}


def test_a_built_in_structured_output_round_trips_and_is_counted() -> None:
    items = _computer(SCREENSHOT)
    conv = ac.Conversation(items, format="responses")
    assert conv.to_responses() == items
    # Counted as an image the model reads (tests/formats/test_h44_opaque_images.py): this data's
    # header reads as a huge PNG, which costs the most an image costs.
    assert conv.tokens > 1_534


def test_a_trim_over_a_built_in_structured_output_stays_within_budget() -> None:
    items = [{"role": "user", "content": "earlier " * 50}, *_computer(SCREENSHOT), {"role": "user", "content": "go on"}]
    budget = 600
    assert len(json.dumps(SCREENSHOT)) > 4 * budget
    out = ac.trim_messages(items, budget, format="responses")
    assert ac.Conversation(out, format="responses").tokens <= budget
    # The screenshot alone is over the budget; it takes no text in its place (the API takes
    # none there), so it left with its turn (before: counted 0 and kept).
    assert not any(i.get("type") == "computer_call_output" for i in out)
    assert out[-1] == {"role": "user", "content": "go on"}


def _shell(n: int) -> list[dict[str, Any]]:
    """A hosted shell tool's call and output: ``output`` is a list of ``{stdout, stderr, outcome}``
    objects (no ``type``), one of a built-in tool's structured outputs."""
    return [
        {"role": "user", "content": "list the files"},
        {"type": "shell_call", "call_id": "sh1", "action": {"commands": ["ls"]}, "status": "completed"},
        {
            "type": "shell_call_output",
            "call_id": "sh1",
            "output": [{"stdout": "file.py\n" * n, "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}],
        },
        {"role": "user", "content": "thanks"},
    ]


def test_a_shell_output_list_is_counted_and_written_back_as_it_came() -> None:
    small, large = ac.Conversation(_shell(1), format="responses"), ac.Conversation(_shell(500), format="responses")
    assert small.to_format("responses") == _shell(1)
    assert large.to_format("responses") == _shell(500)
    assert large.tokens - small.tokens > 500  # its stdout is counted


def test_a_bad_part_of_a_function_output_names_the_item() -> None:
    with pytest.raises(
        InvalidMessageError, match=r'^message 2: function_call_output "c1": a content part must be an object'
    ):
        ac.Conversation(_items([1]), format="responses")
