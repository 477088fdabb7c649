"""Wrong-typed or out-of-range arguments to the compiler's public functions are typed errors
(agentcontext.errors) naming the argument, raised when the object is made, not a TypeError from
deep inside at judge time, and never a check that silently can never be met."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

import agentcontext as ac
from agentcontext.compiler.environment import environment_section, git_state
from agentcontext.compiler.goal import CommandExited, EvidenceJudge, FileContains, Goal, LLMJudge
from agentcontext.compiler.instructions import project_instructions
from agentcontext.compiler.skills import discover_skills
from agentcontext.errors import ArgumentTypeError, OptionError

RUN = ac.Conversation(
    [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"c": "pytest"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "5 passed\nexit code: 0"},
    ]
)


def test_command_exited_code_given_as_a_string_is_refused() -> None:
    # Before: CommandExited("pytest", code="0") was never met, whatever the run returned.
    with pytest.raises(ArgumentTypeError, match="code must be an int"):
        CommandExited("pytest", code="0")  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="code must be an int"):
        CommandExited("pytest", code=True)
    assert EvidenceJudge(CommandExited("pytest", code=0)).judge("g", RUN).met


@pytest.mark.parametrize("command", [5, "", None])
def test_command_exited_command_must_be_a_string(command: object) -> None:
    with pytest.raises(ArgumentTypeError, match="command must be a non-empty string"):
        CommandExited(command)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("pattern", "match"),
    [("(a)(b)", "exactly one group"), ("exit", "exactly one group"), ("(", "not a regular expression")],
)
def test_command_exited_pattern_needs_one_group(pattern: str, match: str) -> None:
    with pytest.raises(OptionError, match=match):
        CommandExited("pytest", pattern=pattern)


def test_command_exited_tool_must_be_a_name() -> None:
    with pytest.raises(ArgumentTypeError, match="tool must be a tool name"):
        CommandExited("pytest", tool=3)  # type: ignore[arg-type]


def test_file_contains_arguments() -> None:
    with pytest.raises(ArgumentTypeError, match="FileContains path"):
        FileContains(5)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="FileContains path"):
        FileContains("a\0b")
    with pytest.raises(ArgumentTypeError, match="FileContains text"):
        FileContains("a.txt", 5)  # type: ignore[arg-type]


def test_evidence_judge_checks_need_a_check_method() -> None:
    with pytest.raises(ArgumentTypeError, match="check 1 must have a check"):
        EvidenceJudge(FileContains("a"), "pytest")  # type: ignore[arg-type]


def test_goal_status_and_continuations() -> None:
    judge = EvidenceJudge(FileContains("a"))
    with pytest.raises(OptionError, match="status must be"):
        Goal("done", judge, status="finished")  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="continuations"):
        Goal("done", judge, continuations=-1)


def test_llm_judge_per_message_chars_is_checked_when_made() -> None:
    # Before: accepted here, then an OptionError from evidence_text at the first judge() call.
    class Provider:
        def complete(self, *args: object, **kwargs: object) -> None: ...

    with pytest.raises(OptionError, match="per_message_chars"):
        LLMJudge(Provider(), per_message_chars=50)
    LLMJudge(Provider(), per_message_chars=100)


@pytest.mark.parametrize("workspace", [5, None, "a\0b"])
def test_project_instructions_workspace(workspace: object) -> None:
    with pytest.raises(OptionError, match="workspace"):
        project_instructions(workspace)  # type: ignore[arg-type]


@pytest.mark.parametrize("workspace", [5, "a\0b"])
def test_environment_workspace(workspace: object) -> None:
    with pytest.raises(OptionError, match="workspace"):
        environment_section(workspace)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="workspace"):
        git_state(workspace)  # type: ignore[arg-type]


def test_environment_today_git_and_timeout(tmp_path: Path) -> None:
    with pytest.raises(ArgumentTypeError, match="today"):
        environment_section(tmp_path, today="2026-01-01")  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="git must be True or False"):
        environment_section(tmp_path, git="no")  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="git_timeout"):
        environment_section(tmp_path, git_timeout=-1)
    text = environment_section(tmp_path, git=False, today=datetime.date(2026, 1, 2))
    assert "Date: 2026-01-02" in text


@pytest.mark.parametrize("directories", [5, None, [5], ["a\0b"], [b"a\0b"]])
def test_discover_skills_directories(directories: object) -> None:
    with pytest.raises(OptionError, match="directories"):
        discover_skills(directories)  # type: ignore[arg-type]
