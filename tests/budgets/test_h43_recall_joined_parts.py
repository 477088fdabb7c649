"""Recall of a result made of text parts gives back the text its cut was made from.

A tool result whose content is a list of text parts only (an Agents SDK ``function_call_output``
of ``input_text`` parts, a Chat tool message of ``text`` parts) is cut as its texts joined by
newlines, and the marker counts the lines of that text. ``Recall`` gave the parts back as one
line of JSON, so paging by the marker's line numbers read something else.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.budgets import Recall, result_text

LINES = [f"row {i:04d}: " + "value " * 12 for i in range(600)]
PARTS = [{"type": "input_text", "text": "\n".join(LINES[:300])}, {"type": "input_text", "text": "\n".join(LINES[300:])}]
JOINED = "\n".join(LINES)


def _items() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Read the table."},
        # A reasoning item: the list is fitted as Responses items, not on the Chat path.
        {"type": "reasoning", "id": "rs_0", "summary": [{"type": "summary_text", "text": "I will read it."}]},
        {"type": "function_call", "call_id": "call_0", "name": "read_table", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_0", "output": PARTS},
    ]


def test_result_text_joins_text_parts_and_keeps_other_lists_as_json() -> None:
    assert result_text([{"type": "text", "text": "a\nb"}, {"type": "text", "text": "c"}]) == "a\nb\nc"
    assert result_text("as is") == "as is"
    image = [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]
    assert (
        result_text(image)
        == '[{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]'
    )
    assert result_text([]) == "[]"


def test_recall_pages_a_cut_parts_output_by_the_lines_its_marker_names() -> None:
    pytest.importorskip("agents")
    from agentcontext.integrations.openai_agents import fit_items

    items = _items()
    fitted = fit_items(items, 3_000)
    cut = fitted[-1]["output"]
    assert isinstance(cut, str) and "recall(id=call_0" in cut.replace('"', "")
    head, marker_line, tail = re.split(r"\n?(\[\.\.\. \d+ lines, \d+ chars omitted[^\n]*\])\n?", cut)
    omitted = re.match(r"\[\.\.\. (\d+) lines, (\d+) chars omitted", marker_line)
    assert omitted is not None
    lines, chars = map(int, omitted.groups())
    recall = Recall(originals=items)
    text = recall.original("call_0")
    assert text == JOINED
    # What the marker says is left out is what the recalled text holds between head and tail:
    # paging it from the line after the head gives the omitted lines.
    assert text.startswith(head) and text.endswith(tail)
    first = len(head.splitlines()) + 1
    page = recall.page("call_0", offset=first, lines=lines, max_chars=10**6)
    assert page.total_lines == len(LINES)
    assert page.text.splitlines() == LINES[first - 1 : first - 1 + lines]
    assert len(text[len(head) + 1 : len(text) - len(tail)]) == chars


def test_a_chat_tool_message_of_text_parts_is_recalled_as_its_joined_text() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": p["text"]} for p in PARTS]},
    ]
    assert Recall(originals=messages).original("c1") == JOINED
    assert ac.Conversation(messages).tokens > 0
