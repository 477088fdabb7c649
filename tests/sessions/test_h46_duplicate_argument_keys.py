"""A deny rule sees the value a repeated JSON key shadows: ``{"command": "rm -rf /", "command":
"ls"}`` was decided as ``ls`` (``json.loads`` keeps the last value), while a tool reading the
arguments with a parser where the first key wins would run ``rm -rf /``."""

from __future__ import annotations

from agentcontext.sessions.permissions import Arguments, Permissions, Rule


def test_a_deny_rule_sees_a_shadowed_value() -> None:
    rules = Permissions([Rule("bash", "deny", r"rm\s+-rf"), Rule("bash", "allow")])
    assert rules.decide("bash", '{"command": "rm -rf /", "command": "ls"}') == "deny"
    assert rules.decide("bash", '{"x": {"command": "rm -rf /", "command": "ls"}}') == "deny"
    assert rules.decide("bash", '{"command": "ls"}') == "allow"


def test_an_allow_rule_is_not_met_by_a_shadowed_value() -> None:
    # The canonical rendering (what the tools get) decides an allow rule: a shadowed "ls" does
    # not allow the "rm -rf /" that runs.
    rules = Permissions([Rule("bash", "allow", r'"command":"ls"')], default="deny")
    assert rules.decide("bash", '{"command": "ls", "command": "rm -rf /"}') == "deny"


def test_the_canonical_rendering_keeps_the_last_value() -> None:
    seen = Arguments('{"a": "first", "a": "second", "b": ["x"]}')
    assert seen.canonical == '{"a":"second","b":["x"]}'
    assert set(seen.strings) == {"a", "first", "second", "b", "x"}
