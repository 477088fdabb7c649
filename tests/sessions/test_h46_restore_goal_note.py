"""A snapshot's goal with no condition text is named as "the saved goal" in the note of what a
resume did not restore (it read "the goal None was not restored")."""

from __future__ import annotations

from typing import Any

import pytest

from agentcontext import Conversation
from agentcontext.sessions.snapshots import Snapshot
from agentcontext.sessions.state import restore


class _Bare:
    """A session with no compiler: what ``restore`` reads of one."""

    compiler = None
    permissions = None
    subagents = None
    pending_permission = None


@pytest.mark.parametrize(
    ("goal", "note"),
    [
        ({"status": "active"}, "the saved goal was not restored: this session has no goal"),
        ({"condition": None}, "the saved goal was not restored: this session has no goal"),
        ({"condition": "tests pass"}, "the goal 'tests pass' was not restored: this session has no goal"),
    ],
)
def test_the_note_names_the_goal_only_by_its_text(goal: dict[str, Any], note: str) -> None:
    snapshot = Snapshot(Conversation([]), control={"goal": goal})
    assert note in restore(_Bare(), snapshot)  # type: ignore[arg-type]
