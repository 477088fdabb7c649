"""Workspace anchors: the plan file survives any number of compactions, within its budget."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentcontext import Conversation, count_tokens
from agentcontext.compaction import Compactor
from agentcontext.errors import OptionError
from agentcontext.memory.anchors import WorkspaceAnchors


def _turns(start: int, n: int) -> list[dict]:
    out: list[dict] = []
    for i in range(start, start + n):
        out.append({"role": "user", "content": f"step {i}: " + "details " * 200})
        out.append({"role": "assistant", "content": f"did step {i} " + "words " * 200})
    return out


def test_plan_survives_repeated_compactions(tmp_path: Path) -> None:
    plan = tmp_path / "PLAN.md"
    anchors = WorkspaceAnchors([plan, tmp_path / "absent.md"], max_tokens=500)
    conv = Conversation([{"role": "system", "content": "agent"}, *_turns(0, 10)], format="openai")
    for round_ in range(4):
        plan.write_text(f"# Plan\n- [x] round {round_} done\n- [ ] ship the fix for ticket PAY-{4400 + round_}\n")
        result = Compactor("openharness").compact(conv, budget=conv.tokens // 3)
        conv = result.conversation
        conv.extend(anchors.messages())
        text = str(conv.to_openai())
        assert f"PAY-{4400 + round_}" in text  # the current plan, re-read now
        assert f"PAY-{4399 + round_}" not in text or round_ == 0
        conv.extend(_turns(100 * (round_ + 1), 8))
    assert len(anchors.messages()) == 1  # the absent file is skipped


def test_budget_is_shared_and_large_files_are_cut(tmp_path: Path) -> None:
    notes, todo, third = tmp_path / "NOTES.md", tmp_path / "TODO.md", tmp_path / "MORE.md"
    notes.write_text("\n".join(f"note {i}: remember the thing number {i}" for i in range(2000)))
    todo.write_text("- [ ] a\n- [ ] b\n")
    third.write_text("more\n")
    anchors = WorkspaceAnchors([notes, todo, third], max_tokens=300)
    msgs = anchors.messages()
    assert sum(count_tokens(m["content"]) for m in msgs) <= 300
    assert "omitted" in msgs[0]["content"] and str(notes) in msgs[0]["content"]
    # The small files come whole; the big one gets what they leave.
    assert [m["content"].split("\n", 1)[1] for m in msgs[1:]] == ["- [ ] a\n- [ ] b\n", "more\n"]
    # A budget too small for a cut file: it is named instead. The room is what the two paths take
    # (the TODO's header, the note naming NOTES.md) plus 50: the same test under any temp folder.
    small = 50 + count_tokens(str(notes)) + count_tokens(str(todo))
    msgs = WorkspaceAnchors([notes, todo], max_tokens=small).messages()
    assert msgs[0]["content"].endswith("- [ ] a\n- [ ] b\n")
    assert msgs[-1]["content"].startswith(f"[Not re-attached (token budget spent): {notes}")
    assert sum(count_tokens(m["content"]) for m in msgs) <= small


def test_special_files_and_bad_options(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.truncate(10**10)
    msgs = WorkspaceAnchors([tmp_path / "fifo", tmp_path / "dir", big], max_tokens=1000).messages()
    assert [m["content"].splitlines()[1] for m in msgs] == [
        "(not re-attached: is a FIFO (named pipe), not a regular file)",
        "(not re-attached: is a directory, not a regular file)",
        "(not re-attached: is 10,000,000,000 bytes, over the 1,000,000-byte limit; not read)",
    ]
    for bad in ({"max_tokens": 0}, {"max_bytes": -1}):
        with pytest.raises(OptionError):
            WorkspaceAnchors([], **bad)  # type: ignore[arg-type]
