"""A newest tool call whose arguments alone are over the budget (the model wrote a whole file
into a ``write_file`` call) ended the agent run with ``BudgetError`` in every adapter. The fit
now cuts the long string values of that call's JSON arguments head + marker + tail, as it cuts
an oversized newest result: the arguments stay valid JSON, their short values whole, the marker
names ``<call id>#arguments`` (the call's arguments in the framework's own history), and the
caller's messages are not changed."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import agentcontext as ac

BIG = "line of the file being written\n" * 4000


def _chat() -> list[dict[str, Any]]:
    arguments = json.dumps({"path": "a.py", "content": BIG})
    return [
        {"role": "system", "content": "You write files."},
        {"role": "user", "content": "Write the file."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "write_file", "arguments": arguments}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "written"},
    ]


def _paired(dicts: list[dict[str, Any]]) -> bool:
    """Every call answered by the result that follows it, every result after its call (checked
    here, not by the library)."""
    open_ids: list[str] = []
    for d in dicts:
        if d.get("role") == "tool":
            if d.get("tool_call_id") not in open_ids:
                return False
            open_ids.remove(d["tool_call_id"])
        else:
            if open_ids:
                return False
            open_ids = [c["id"] for c in d.get("tool_calls") or ()]
    return not open_ids


def _check_cut(arguments: dict[str, Any], marker: str) -> None:
    assert arguments["path"] == "a.py"
    content = arguments["content"]
    assert content.startswith("line of the file") and content.endswith("being written\n")
    assert len(content) < len(BIG) // 4
    assert marker in content


@pytest.mark.parametrize("encoding", ["approximate", "o200k_base"])
def test_litellm_cuts_the_newest_calls_arguments(encoding: str) -> None:
    pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install 'agentcontext[litellm]')")
    from agentcontext.integrations import litellm

    messages = _chat()
    before = copy.deepcopy(messages)
    out = litellm.fit_messages(messages, ac.Budget(4000, encoding=encoding))
    assert messages == before
    assert _paired(out)
    assert ac.Conversation(out, encoding=encoding).tokens <= 4000
    _check_cut(json.loads(out[2]["tool_calls"][0]["function"]["arguments"]), 'recall(id="c1#arguments")')
    assert out[3] == messages[3] and out[1] == messages[1]


@pytest.mark.parametrize("encoding", ["approximate", "o200k_base"])
def test_langchain_cuts_the_newest_calls_arguments(encoding: str) -> None:
    pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    from agentcontext.integrations import langchain

    call = {"id": "c1", "name": "write_file", "args": {"path": "a.py", "content": BIG}}
    messages = [
        SystemMessage("You write files."),
        HumanMessage("Write the file."),
        AIMessage("", tool_calls=[call], id="a1"),
        ToolMessage("written", tool_call_id="c1", id="t1"),
    ]
    before = [m.model_copy(deep=True) for m in messages]
    out = langchain.fit_messages(messages, ac.Budget(4000, encoding=encoding))
    assert messages == before
    dicts = [langchain.to_openai(m) for m in out]
    assert _paired(dicts)
    assert ac.Conversation(dicts, encoding=encoding).tokens <= 4000
    assert out[2] is not messages[2] and out[2].id == "a1"
    _check_cut(out[2].tool_calls[0]["args"], 'recall(id="c1#arguments")')


def test_pydantic_ai_cuts_the_newest_calls_arguments() -> None:
    pytest.importorskip("pydantic_ai", reason="Pydantic AI is not installed (pip install 'agentcontext[pydantic-ai]')")
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart, UserPromptPart

    from agentcontext.integrations import pydantic_ai

    messages = [
        ModelRequest(parts=[UserPromptPart("Write the file.")]),
        ModelResponse(parts=[ToolCallPart("write_file", {"path": "a.py", "content": BIG}, tool_call_id="c1")]),
        ModelRequest(parts=[ToolReturnPart("write_file", "written", tool_call_id="c1")]),
    ]
    before = copy.deepcopy(messages)
    out = pydantic_ai.fit_messages(messages, ac.Budget(4000))
    assert messages == before
    assert isinstance(out[1], ModelResponse) and isinstance(out[2], ModelRequest)
    arguments = out[1].parts[0].args
    assert isinstance(arguments, dict)
    _check_cut(arguments, "omitted")


def test_a_call_without_long_strings_is_still_refused() -> None:
    """Arguments over the budget with no long string to cut (a long list of numbers) cannot be
    cut into valid JSON: the fit still refuses them, with the typed error."""
    pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install 'agentcontext[litellm]')")
    from agentcontext.integrations import litellm

    messages = _chat()
    messages[2]["tool_calls"][0]["function"]["arguments"] = json.dumps({"values": list(range(20000))})
    with pytest.raises(ac.errors.BudgetError):
        litellm.fit_messages(messages, ac.Budget(4000))


@pytest.mark.parametrize("reasoning", [False, True], ids=["chat-turns", "items"])
def test_agents_sdk_cuts_the_newest_calls_arguments(reasoning: bool) -> None:
    """``fit_items``, on the Chat path and (a reasoning item in the list) on the items' own."""
    pytest.importorskip(
        "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
    )
    from agentcontext.integrations.openai_agents import fit_items

    arguments = json.dumps({"path": "a.py", "content": BIG})
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "Write the file."},
        *([{"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "A file."}]}] * reasoning),
        {"type": "function_call", "call_id": "c1", "name": "write_file", "arguments": arguments, "id": "fc_1"},
        {"type": "function_call_output", "call_id": "c1", "output": "written"},
    ]
    before = copy.deepcopy(items)
    out = fit_items(items, ac.Budget(4000))
    assert items == before
    assert [i.get("type") for i in out] == [i.get("type") for i in items]
    call = out[-2]
    assert call["id"] == "fc_1" and call["call_id"] == "c1" and call["name"] == "write_file"
    _check_cut(json.loads(call["arguments"]), 'recall(id="c1#arguments")')
    assert out[-1] is items[-1] and out[0] is items[0]
    assert ac.Conversation(out, format="responses").tokens <= 4000
