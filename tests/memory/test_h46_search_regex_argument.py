"""The conversation_search tool's ``regex`` argument is true or false: a string was read by
``bool()``, so ``"regex": "false"`` searched the query as a regular expression (``a.b`` then
matched ``axb``) and ``"regex": "yes"`` did the same without saying so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentcontext import Conversation
from agentcontext.memory.conversation import ConversationSearch
from agentcontext.sessions.log import SessionLog


def _log(tmp_path: Path) -> SessionLog:
    log = SessionLog(tmp_path / "s.jsonl", format="openai")
    log.append(Conversation([{"role": "user", "content": "the value axb is set"}], format="openai"))
    return log


@pytest.mark.parametrize("value", ["false", "true", "yes", 0, 1, [], {}])
def test_a_regex_that_is_not_true_or_false_is_an_error_result(tmp_path: Path, value: Any) -> None:
    text = ConversationSearch(_log(tmp_path).path).execute({"query": "a.b", "regex": value})
    assert text.startswith("Error: regex must be true or false"), text


@pytest.mark.parametrize(("value", "found"), [(True, True), (False, False), (None, False)])
def test_true_false_and_null(tmp_path: Path, value: Any, found: bool) -> None:
    text = ConversationSearch(_log(tmp_path).path).execute({"query": "a.b", "regex": value})
    assert not text.startswith("Error")
    assert ("axb" in text) is found
