"""``conversation_search(log, ...)`` and ``ConversationSearch(log)`` take the ``SessionLog`` itself,
as the memory guide writes them (``conversation_search(log, "vault token")`` "searches every
message of a SessionLog"). Before, the object was an ArgumentTypeError ('path must be a str or an
os.PathLike') in one and a bare TypeError in the other, and ``ConversationSearch`` took any
``max_limit`` (0: every call an error) and any path (5: a bare TypeError). A log named through a
symlink (not followed) was refused with the system's "Too many levels of symbolic links"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import agentcontext as ac
from agentcontext.errors import ArgumentTypeError, FileReadError, OptionError
from agentcontext.memory import ConversationSearch


def a_log(tmp_path: Path) -> ac.SessionLog:
    log = ac.SessionLog(tmp_path / "session.jsonl")
    log.append(ac.Conversation([{"role": "user", "content": "the vault token is in vault.env"}]))
    return log


def test_conversation_search_takes_the_session_log(tmp_path: Path) -> None:
    log = a_log(tmp_path)
    assert ac.conversation_search(log, "vault token")["matched"] == 1
    assert ac.conversation_search(log, "vault token") == ac.conversation_search(log.path, "vault token")


def test_the_tool_takes_the_session_log(tmp_path: Path) -> None:
    log = a_log(tmp_path)
    tool = ConversationSearch(log)
    assert tool.log == str(log.path)
    assert tool.execute({"query": "vault"}).startswith("1 matching messages")


@pytest.mark.parametrize("log", [5, None, b"session.jsonl"])
def test_the_tool_refuses_what_is_not_a_log_or_a_path(log: object) -> None:
    with pytest.raises(ArgumentTypeError, match=re.escape("log must be a SessionLog, a str or os.PathLike")):
        ConversationSearch(log)  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "value"), [("max_limit", 0), ("max_limit", -1), ("snippet_chars", 0)])
def test_the_tools_limits_are_positive(tmp_path: Path, name: str, value: int) -> None:
    with pytest.raises(OptionError, match=f"{name} must be a positive integer"):
        ConversationSearch(tmp_path / "session.jsonl", **{name: value})  # type: ignore[arg-type]


def test_a_symlinked_log_says_so_and_names_the_file(tmp_path: Path) -> None:
    log = a_log(tmp_path)
    (tmp_path / "link.jsonl").symlink_to(log.path)
    with pytest.raises(
        FileReadError, match=re.escape("link.jsonl is a symlink; a session log is searched only")
    ) as info:
        ac.conversation_search(tmp_path / "link.jsonl", "vault")
    assert info.value.kind == "io" and str(log.path) in str(info.value)
