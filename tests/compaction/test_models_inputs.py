"""Clearing old tool-call arguments (``clear_tool_inputs``) through the public surfaces:
``Conversation.clear_tool_results``, ``trim_messages``, the ladder's policy and the adapters'
``Budget``."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import agentcontext as ac
from agentcontext.compaction.presets import PRESETS
from agentcontext.integrations import Budget


def _writes(n: int, *, result: str = "ok") -> list[dict[str, Any]]:
    """A Chat session of ``n`` write calls, each carrying a file, each answered ``result``."""
    out: list[dict[str, Any]] = [{"role": "user", "content": "write the modules"}]
    for k in range(n):
        args = json.dumps({"path": f"src/m{k}.py", "content": f"def f{k}():\n    return {k}\n" * 150})
        out.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{k}", "type": "function", "function": {"name": "write", "arguments": args}}]})  # fmt: skip
        out.append({"role": "tool", "tool_call_id": f"call_{k}", "content": result})
    out.append({"role": "user", "content": "now run the tests"})
    return out


def _arguments(messages: list[dict[str, Any]]) -> list[str]:
    return [c["function"]["arguments"] for m in messages for c in m.get("tool_calls") or []]


def test_conversation_clears_old_arguments_and_keeps_ids_names_and_the_newest_calls() -> None:
    conv = ac.Conversation(_writes(6))
    cleared, report = conv.clear_tool_results(recent_messages=2, recent_tools=2, clear_tool_inputs=True)
    assert report["cleared"] == []  # the results ("ok") are too small to clear
    assert report["inputs_cleared"] == [1, 3, 5, 7]
    assert report["tokens_freed"] == conv.tokens - cleared.tokens > 3_000
    out = cleared.to_format("openai")
    args = _arguments(out)
    for k, a in enumerate(args[:4]):
        value = json.loads(a)
        assert list(value) == ["cleared"]
        assert value["cleared"].startswith(f"[cleared: arguments of write(path=src/m{k}.py, content=def f{k}")
        assert value["cleared"].endswith(f"tokens; recall id call_{k}#arguments]")
    assert args[4:] == _arguments(_writes(6))[4:]
    assert [c["id"] for m in out for c in m.get("tool_calls") or []] == [f"call_{k}" for k in range(6)]
    assert ac.validate(out) == []
    # Without recall ids the placeholder says nothing is stored; excluded tools keep theirs.
    no_ids, _ = conv.clear_tool_results(recent_messages=2, recent_tools=2, clear_tool_inputs=True, recall_ids=False)
    assert json.loads(_arguments(no_ids.to_format("openai"))[0])["cleared"].endswith("tokens; not stored]")
    kept, report = conv.clear_tool_results(recent_tools=2, clear_tool_inputs=True, exclude_tools=["write"])
    assert (report["inputs_cleared"], kept.tokens) == ([], conv.tokens)


def test_trim_messages_clears_arguments_only_when_asked() -> None:
    messages = _writes(8)
    total = ac.Conversation(messages).tokens
    plain = ac.trim_messages(messages, total - 100, recent_tools=2, recent_messages=2)
    assert len(plain) < len(messages)  # without it, whole rounds are dropped
    assert not any(a.startswith('{"cleared":') for a in _arguments(plain))
    fitted = ac.trim_messages(messages, total - 100, recent_tools=2, recent_messages=2, clear_tool_inputs=True)
    assert len(fitted) == len(messages)  # clearing the arguments was enough: nothing dropped
    assert sum(a.startswith('{"cleared":') for a in _arguments(fitted)) == 6
    assert ac.validate(fitted) == []


def test_the_ladder_clears_arguments_when_the_policy_says_so() -> None:
    messages = _writes(10)
    conv = ac.Conversation(messages)
    policy = replace(PRESETS["openharness"].compaction, clear_tool_inputs=True, summarize=False, recent_tools=2)
    result = ac.Compactor(policy).compact(conv, budget=conv.tokens - 3_000)
    out = result.conversation.to_format("openai")
    assert [e.stage for e in result.stages] == ["clear"]
    assert result.stages[0].detail["results_cleared"] == 0
    assert result.conversation.tokens <= conv.tokens - 3_000
    assert len(out) == len(messages)
    assert any(a.startswith('{"cleared":') for a in _arguments(out))
    assert ac.validate(out) == []


def test_presets_leave_arguments_alone() -> None:
    assert not any(p.compaction.clear_tool_inputs for p in PRESETS.values())


def test_budget_clear_tool_inputs_reaches_the_fit() -> None:
    messages = _writes(8)
    total = ac.Conversation(messages).tokens
    budget = Budget(total - 100, recent_tools=2, recent_messages=2, clear_tool_inputs=True)
    fitted = budget.fit_dicts(messages)
    assert len(fitted) == len(messages)
    assert sum(a.startswith('{"cleared":') for a in _arguments(fitted)) == 6
