"""A reminder rule is checked when it is made: a text field it cannot read ({turn[0]},
{tool.x}), a pattern that is not a string, a persist flag that is not a bool. Before, the first
two raised a bare TypeError/AttributeError from the agent loop when the event came, and
persist="no" kept the reminder in the history (a string is truthy)."""

from __future__ import annotations

from typing import Any

import pytest

from agentcontext.compiler.reminders import Reminder, Reminders
from agentcontext.errors import ArgumentTypeError, OptionError


@pytest.mark.parametrize(
    "kwargs",
    [
        {"on": "turn", "every": 1, "text": "turn {turn[0]}"},
        {"on": "tool", "text": "called {tool.name}"},
        {"on": "pressure", "text": "at {share.real}"},
    ],
)
def test_a_field_the_text_cannot_read_is_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(OptionError, match="names a field it cannot read"):
        Reminder(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"on": "tool", "text": "x", "tool": 5}, "reminder tool must be"),
        ({"on": "tool", "text": "x", "arguments": b"rm"}, "reminder arguments must be"),
        ({"on": "mode", "text": "x", "mode": 5}, "reminder mode must be"),
        ({"on": "tool", "text": "x", "persist": "no"}, "persist must be True or False"),
    ],
)
def test_wrong_types_are_typed_errors(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ArgumentTypeError, match=match):
        Reminder(**kwargs)


def test_literal_braces_and_good_fields_still_work() -> None:
    rules = Reminders(
        [
            Reminder(on="tool", text='Use {"json": 1} style; {tool} ran', tool="bash"),
            Reminder(on="turn", every=2, text="turn {turn}"),
            Reminder(on="pressure", text="window at {share}", share=0.5),
        ]
    )
    rules.tool_called("bash", "{}")
    rules.turn(2)
    rules.pressure(60, 100)
    # (A brace that is no field of the event stays as written; the fields it has are filled.)
    assert [t for _, t in rules.take()] == ['Use {"json": 1} style; bash ran', "turn 2", "window at 60%"]
