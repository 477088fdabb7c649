"""Two calls of one id in one message (a server numbering calls afresh each turn): the recall
names of their arguments were keyed by (message, call id), so both calls' arguments went under
the second's name (``call_0#2#arguments``) and the first's, which its placeholder names
``call_0#arguments``, was not found (Recall) or stored under the other's (the ladder's store).
Each call's arguments now have their own name, the one the core's placeholder shows."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import agentcontext as ac
from agentcontext.budgets.recall import Recall
from agentcontext.compaction.presets import PRESETS

A1 = json.dumps({"path": "a.py", "content": "alpha " * 600})
A2 = json.dumps({"path": "b.py", "content": "beta " * 600})


def _messages() -> list[dict[str, Any]]:
    calls = [{"id": "call_0", "type": "function", "function": {"name": "write", "arguments": a}} for a in (A1, A2)]
    return [
        {"role": "user", "content": "Write both."},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call_0", "content": "wrote a.py"},
        {"role": "tool", "tool_call_id": "call_0", "content": "wrote b.py"},
        *[
            m
            for k in range(4)
            for m in ({"role": "user", "content": f"Next {k}."}, {"role": "assistant", "content": "ok"})
        ],
    ]


def test_recall_gives_each_calls_arguments() -> None:
    recall = Recall(originals=_messages())
    assert recall.original("call_0#arguments") == A1
    assert recall.original("call_0#2#arguments") == A2


def test_the_ladder_stores_each_calls_cleared_arguments_under_its_placeholders_name(tmp_path: Path) -> None:
    conv = ac.Conversation(_messages())
    policy = replace(
        PRESETS["openharness"].compaction, clear_tool_inputs=True, summarize=False, recent_tools=0, recent_messages=2
    )
    store = ac.ResultStore(tmp_path)
    result = ac.Compactor(policy, store=store).compact(conv, budget=conv.tokens - 600)
    calls = result.conversation.to_format("openai")[1]["tool_calls"]
    shown = [json.loads(c["function"]["arguments"])["cleared"] for c in calls]
    assert shown[0].endswith("recall id call_0#arguments]") and shown[1].endswith("recall id call_0#2#arguments]")
    recall = Recall(store=store)
    assert recall.original("call_0#arguments") == A1
    assert recall.original("call_0#2#arguments") == A2
