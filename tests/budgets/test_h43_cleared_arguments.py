"""The arguments ``clear_tool_inputs`` clears are recalled by the name their placeholder gives
(``recall id <call id>#arguments``), byte for byte, from every source :class:`Recall` reads (the
caller's messages, a compactor's store, a session's log); where nothing keeps them (hooks whose
fitted list replaces the framework's history) the placeholder says they are not stored."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.budgets import Recall, ResultStore
from agentcontext.compaction.presets import PRESETS
from agentcontext.errors import RecallError
from agentcontext.integrations import Budget

_NAMED = re.compile(r"; recall id (\S+)\]$")


def _writes(n: int, result: str = "ok") -> list[dict[str, Any]]:
    """A Chat session of ``n`` write calls whose arguments carry a file (spaced and escaped as a
    client might send them), each answered ``result``."""
    out: list[dict[str, Any]] = [{"role": "user", "content": "write the modules"}]
    for k in range(n):
        args = json.dumps({"path": f"src/m{k}.py", "content": f"def f{k}():  # é\n    return {k}\n" * 150}, indent=1)
        out.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{k}", "type": "function", "function": {"name": "write", "arguments": args}}]})  # fmt: skip
        out.append({"role": "tool", "tool_call_id": f"c{k}", "content": result})
    out.append({"role": "user", "content": "now run the tests"})
    return out


def _calls(messages: list[dict[str, Any]]) -> dict[str, str]:
    return {c["id"]: c["function"]["arguments"] for m in messages for c in m.get("tool_calls") or []}


def _named(arguments: str) -> str | None:
    """The recall id a cleared call's placeholder names (None: not a placeholder naming one)."""
    value = json.loads(arguments)
    if list(value) != ["cleared"]:
        return None
    found = _NAMED.search(value["cleared"])
    return found.group(1) if found else None


def test_trim_messages_then_recall_from_the_originals_gives_the_arguments_back() -> None:
    messages = _writes(6)
    fitted = ac.trim_messages(
        messages, ac.Conversation(messages).tokens - 100, recent_tools=2, recent_messages=2, clear_tool_inputs=True
    )
    before, after = _calls(messages), _calls(fitted)
    named = {cid: _named(a) for cid, a in after.items() if a != before[cid]}
    assert named == {f"c{k}": f"c{k}#arguments" for k in range(4)}
    recall = Recall(originals=messages)
    for cid, name in named.items():
        assert name is not None
        assert recall.original(name) == before[cid]  # byte for byte
        assert recall.original(cid) == "ok"  # the call id itself still names the result
        assert recall({"id": name}) == before[cid]  # the tool's executor
    # The recall of the fitted list (placeholders only) finds no arguments, and says so.
    with pytest.raises(RecallError, match="no stored arguments or result with recall id 'c0#arguments'"):
        Recall(originals=fitted).original("c0#arguments")


def test_a_compactor_with_a_store_keeps_the_arguments_it_clears(tmp_path: Path) -> None:
    # (Results large enough that clearing them reaches the target: the ladder clears then.)
    messages = _writes(6, "wrote it\n" * 600)
    conv = ac.Conversation(messages)
    policy = replace(PRESETS["openharness"].compaction, clear_tool_inputs=True, recent_tools=2, recent_messages=2)
    store = ResultStore(tmp_path)
    result = ac.Compactor(policy, store=store).compact(conv, budget=conv.tokens - 200)
    after = _calls(result.conversation.to_format("openai"))
    before = _calls(messages)
    named = {cid: _named(a) for cid, a in after.items() if a != before[cid]}
    assert named and all(name == f"{cid}#arguments" for cid, name in named.items())
    for cid, name in named.items():
        assert name is not None
        assert Recall(store).original(name) == before[cid]
        assert Recall(store).recall(name, lines=10_000, max_chars=1_000_000) == before[cid]
    # Without a store nothing keeps them, and the placeholder says so.
    bare = ac.Compactor(policy).compact(conv, budget=conv.tokens - 200)
    cleared = [a for a in _calls(bare.conversation.to_format("openai")).values() if a.startswith('{"cleared"')]
    assert cleared and all(json.loads(a)["cleared"].endswith(" tokens; not stored]") for a in cleared)


def test_a_session_with_a_log_recalls_the_arguments(tmp_path: Path) -> None:
    from agentcontext import Session
    from agentcontext.providers.scripted import ScriptedChatProvider

    messages = _writes(4)
    log = ac.SessionLog(tmp_path / "log.jsonl", format="openai")
    session = Session(ScriptedChatProvider(["done"]), conversation=messages, log=log)
    cleared, _ = session.conversation.clear_tool_results(recent_tools=1, recent_messages=1, clear_tool_inputs=True)
    name = _named(_calls(cleared.to_format("openai"))["c0"])
    assert name == "c0#arguments"
    assert session.recall.original(name) == _calls(messages)["c0"]
    # A log read again from its file (another process) gives the same.
    assert Recall(log=ac.SessionLog(tmp_path / "log.jsonl")).original(name) == _calls(messages)["c0"]


def test_an_id_ending_in_arguments_that_names_no_call_is_looked_up_as_it_is() -> None:
    call = {"name": "f", "arguments": "{}"}
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "odd#arguments", "function": call}]},
        {"role": "tool", "tool_call_id": "odd#arguments", "content": "the result"},
    ]
    assert Recall(originals=messages).original("odd#arguments") == "the result"


def test_fits_that_replace_the_history_say_the_arguments_are_not_stored() -> None:
    messages = _writes(6)
    budget = Budget(ac.Conversation(messages).tokens - 100, recent_tools=2, recent_messages=2, clear_tool_inputs=True)
    kept = _calls(budget.fit_dicts(messages, "openai"))
    gone = _calls(budget.fit_dicts(messages, "openai", recall_ids=False))
    assert _named(kept["c0"]) == "c0#arguments"
    assert json.loads(gone["c0"])["cleared"].endswith(" tokens; not stored]")
    # The same through trim_messages' fast path twice (its memo must not mix the two).
    for recall_ids, tail in ((True, "; recall id c1#arguments]"), (False, "; not stored]"), (True, "#arguments]")):
        out = ac.trim_messages(
            messages,
            budget.max_tokens,
            recent_tools=2,
            recent_messages=2,
            clear_tool_inputs=True,
            recall_ids=recall_ids,
        )
        assert json.loads(_calls(out)["c1"])["cleared"].endswith(tail)


def test_langgraph_compact_hook_says_the_arguments_are_not_stored() -> None:
    pytest.importorskip("langgraph")
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from agentcontext.integrations.langgraph import compact_hook, fit_hook

    history: list[Any] = [HumanMessage("write the modules")]
    for m in _writes(6)[1:-1]:
        if m["role"] == "assistant":
            c = m["tool_calls"][0]
            history.append(AIMessage("", tool_calls=[{"id": c["id"], "name": "write", "args": json.loads(c["function"]["arguments"])}]))  # fmt: skip
        else:
            history.append(ToolMessage("ok", tool_call_id=m["tool_call_id"]))
    history.append(HumanMessage("now run the tests"))
    budget = Budget(6_000, recent_tools=2, recent_messages=2, clear_tool_inputs=True)
    replaced = compact_hook(budget).invoke({"messages": history})["messages"][1:]
    cleared = [c["args"] for m in replaced if isinstance(m, AIMessage) for c in m.tool_calls if "cleared" in c["args"]]
    assert cleared and all(a["cleared"].endswith(" tokens; not stored]") for a in cleared)
    # fit_hook leaves the state's history whole: there the placeholder names the recall id.
    sent = fit_hook(budget).invoke({"messages": history})["llm_input_messages"]
    named = [c["args"] for m in sent if isinstance(m, AIMessage) for c in m.tool_calls if "cleared" in c["args"]]
    assert named and all(a["cleared"].endswith("#arguments]") for a in named)


def test_pydantic_ai_history_processor_says_the_arguments_are_not_stored() -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart, UserPromptPart

    from agentcontext.integrations.pydantic_ai import history_processor

    history: list[Any] = [ModelRequest(parts=[UserPromptPart("write the modules")])]
    for m in _writes(6)[1:-1]:
        if m["role"] == "assistant":
            c = m["tool_calls"][0]
            history.append(
                ModelResponse(parts=[ToolCallPart("write", c["function"]["arguments"], tool_call_id=c["id"])])
            )
        else:
            history.append(ModelRequest(parts=[ToolReturnPart("write", "ok", m["tool_call_id"])]))
    history.append(ModelRequest(parts=[UserPromptPart("now run the tests")]))
    budget = Budget(6_000, recent_tools=2, recent_messages=2, clear_tool_inputs=True)
    out = history_processor(budget)(None, history)  # type: ignore[arg-type]
    args = [p.args for m in out if isinstance(m, ModelResponse) for p in m.parts if isinstance(p, ToolCallPart)]
    cleared = [json.loads(a)["cleared"] if isinstance(a, str) else a["cleared"] for a in args if "cleared" in a]
    assert cleared and all(c.endswith(" tokens; not stored]") for c in cleared)
