"""CommandExited finds its command as a whole: ``make checkout`` exiting 0 met a goal of
``make check`` passing (the command was looked for as any substring of the arguments)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentcontext import Conversation
from agentcontext.compiler.goal import CommandExited, EvidenceJudge


def ran(command: str, out: str = "ok\nexit code: 0") -> Conversation:
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": command})}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "make the checks pass"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": out},
    ]
    return Conversation(messages, format="openai")


@pytest.mark.parametrize("command", ["make checkout", "xmake check", "make check_all", "make check-docs"])
def test_another_command_holding_it_is_not_a_run(command: str) -> None:
    assert not EvidenceJudge(CommandExited("make check")).judge("checks pass", ran(command)).met


@pytest.mark.parametrize(
    "command",
    [
        "make check",
        "make check -j4",
        "cd repo && make check",
        "bash -c 'make check'",
        "(make check)",
        "make check;echo",
    ],
)
def test_the_command_in_a_shell_line_is_a_run(command: str) -> None:
    assert EvidenceJudge(CommandExited("make check")).judge("checks pass", ran(command)).met
