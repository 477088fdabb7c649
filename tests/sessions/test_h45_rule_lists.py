"""Permissions and Reminders take a list of rules; one rule given alone, or a value that is not
a list, raised a bare TypeError ("'Rule' object is not iterable")."""

from __future__ import annotations

import pytest

from agentcontext.compiler.reminders import Reminder, Reminders
from agentcontext.errors import ArgumentTypeError, OptionError
from agentcontext.sessions.permissions import Permissions, Rule


def test_one_permission_rule() -> None:
    permissions = Permissions(Rule("bash", "deny", "rm -rf"))
    assert permissions.decide("bash", '{"command": "rm -rf /"}') == "deny"
    assert permissions.decide("bash", '{"command": "ls"}') == "ask"


def test_one_reminder_rule() -> None:
    reminders = Reminders(Reminder(on="tool", text="ran {tool}"))  # type: ignore[arg-type]
    reminders.tool_called("bash", "{}")
    assert [t for _, t in reminders.take()] == ["ran bash"]


@pytest.mark.parametrize("rules", [5, None, {"tool": "bash"}])
def test_rules_that_are_not_a_list(rules: object) -> None:
    with pytest.raises(ArgumentTypeError, match="rules must be a list of Rule"):
        Permissions(rules)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="rules must be a list of Reminder"):
        Reminders(rules)  # type: ignore[arg-type]


def test_a_string_is_not_a_list_of_rules() -> None:
    with pytest.raises(OptionError):
        Permissions("bash")  # type: ignore[arg-type]
    with pytest.raises(OptionError):
        Reminders("bash")  # type: ignore[arg-type]
