"""A reminder's text is filled field by field: one field it does not know (``{arguments}``) left
the whole text unfilled, ``{tool}`` too; and an attribute of a value (``{tool.__class__}``) was
read and shown."""

from __future__ import annotations

import pytest

from agentcontext.compiler.reminders import Reminder, Reminders, _filled


def test_an_unknown_field_leaves_the_known_ones_filled() -> None:
    reminders = Reminders([Reminder("tool", "ran {tool} with {arguments}", tool="bash")])
    reminders.tool_called("bash", '{"command": "ls"}')
    assert [text for _, text in reminders.pending] == ["ran bash with {arguments}"]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("{tool}", "bash"),
        ("{tool!r} at {share:>5}", "'bash' at   75%"),
        ("{tool.__class__} {tool}", "{tool.__class__} bash"),
        ("{turn[0]} {turn}", "{turn[0]} 3"),
        ("{{literal}} {tool}", "{literal} bash"),
        ("unbalanced { {tool}", "unbalanced { {tool}"),
        ("{turn:x}", "3"),
        ("{tool:d}", "{tool:d}"),
        ("no fields", "no fields"),
    ],
)
def test_filled(text: str, want: str) -> None:
    assert _filled(text, {"tool": "bash", "turn": 3, "share": "75%"}) == want
