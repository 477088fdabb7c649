"""CompactionFinished.recall_ids names only the ids the output names as whole ids. Call ids are
recall ids too (a cleared result is stored under its call id), and before, an id was reported
when it was a part of a longer one: with calls c1..c15, a compaction whose output names c13 and
c15 reported c1 and c5 as well, whose results the summary had replaced."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.compaction import Compactor
from agentcontext.observe import CompactionFinished


def _conv() -> ac.Conversation:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "please fix the bug in src/app.py"}]
    for k in range(1, 16):
        call = {"id": f"c{k}", "type": "function", "function": {"name": "read", "arguments": json.dumps({"path": f"src/f{k}.py"})}}  # fmt: skip
        msgs.append({"role": "assistant", "content": None, "tool_calls": [call]})
        msgs.append({"role": "tool", "tool_call_id": f"c{k}", "content": f"line of file {k}\n" * 300})
    msgs.append({"role": "user", "content": "now continue"})
    return ac.Conversation(msgs, format="openai")


@pytest.mark.parametrize("share", [0.5, 0.3, 0.15, 0.05])
def test_recall_ids_are_whole_ids_the_output_names(share: float, tmp_path: Path) -> None:
    conv = _conv()
    events: list[Any] = []
    compactor = Compactor("openharness", store=ac.ResultStore(tmp_path), on_event=events.append)
    result = compactor.compact(conv, budget=int(conv.tokens * share))
    finished = events[-1]
    assert isinstance(finished, CompactionFinished) and finished.recall_ids
    text = json.dumps(result.conversation.to_jsonl(), ensure_ascii=False)
    named = {m for m in re.findall(r"(?<![\w#-])(c\d+|r-[0-9a-f]+)(?![\w#-])", text)}
    assert set(finished.recall_ids) <= named, sorted(set(finished.recall_ids) - named)
