"""Defects found attacking this session's adapter behaviours (h45-attack1), each with the input
that showed it."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import agentcontext as ac

TEXT = "é中文 ligne du fichier écrit\n" * 1500


def _escaped_chat(small: str) -> list[dict[str, Any]]:
    """A newest call writing a file of non-ASCII text, its arguments written by ``json.dumps``
    with its default ``ensure_ascii`` (``\\u4e2d``: several tokens a character), beside a
    small call whose arguments escape too."""
    big = json.dumps({"path": "a.py", "content": TEXT})
    return [
        {"role": "system", "content": "You write files."},
        {"role": "user", "content": "Write the file."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "write_file", "arguments": big}},
                {"id": "c2", "type": "function", "function": {"name": "read", "arguments": small}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "written"},
        {"role": "tool", "tool_call_id": "c2", "content": "read"},
    ]


@pytest.mark.parametrize("encoding", ["approximate", "o200k_base"])
def test_litellm_cuts_arguments_that_escape_non_ascii(encoding: str) -> None:
    """The room was counted on the unescaped values while the escaped arguments took several
    times their tokens: ``BudgetError`` though the cut call fits."""
    pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install 'agentcontext[litellm]')")
    from agentcontext.integrations import litellm

    small = json.dumps({"path": "é.py"})
    messages = _escaped_chat(small)
    before = copy.deepcopy(messages)
    out = litellm.fit_messages(messages, ac.Budget(4000, encoding=encoding))
    assert messages == before
    assert ac.Conversation(out, encoding=encoding).tokens <= 4000
    arguments = json.loads(out[2]["tool_calls"][0]["function"]["arguments"])
    assert arguments["path"] == "a.py"
    assert arguments["content"].startswith("é中文 ligne") and 'recall(id="c1#arguments")' in arguments["content"]
    # The call not cut is sent with the same arguments (its characters unescaped).
    assert json.loads(out[2]["tool_calls"][1]["function"]["arguments"]) == json.loads(small)
    assert out[3:] == messages[3:]


@pytest.mark.parametrize("reasoning", [False, True])
def test_agents_sdk_cuts_arguments_that_escape_non_ascii(reasoning: bool) -> None:
    pytest.importorskip(
        "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
    )
    from agentcontext.integrations.openai_agents import fit_items

    items: list[dict[str, Any]] = [
        {"role": "user", "content": "Write the file."},
        *([{"type": "reasoning", "id": "rs_1", "summary": []}] if reasoning else []),
        {"type": "function_call", "call_id": "c1", "name": "write_file",
         "arguments": json.dumps({"path": "a.py", "content": TEXT})},
        {"type": "function_call_output", "call_id": "c1", "output": "written"},
    ]  # fmt: skip
    before = copy.deepcopy(items)
    out = fit_items(items, ac.Budget(4000))
    assert items == before
    call = next(i for i in out if i.get("type") == "function_call")
    arguments = json.loads(call["arguments"])
    assert arguments["path"] == "a.py" and 'recall(id="c1#arguments")' in arguments["content"]
    assert len(json.dumps(out, ensure_ascii=False)) < len(TEXT) // 2


OUTPUT = "line of output from the tool\n" * 3000


def _orphan_after_request() -> list[dict[str, Any]]:
    """A long result whose call is not in the list (removed), right after the latest request:
    sent as a user message under the repair's note, the newest round."""
    return [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "First request."},
        {"role": "user", "content": "Latest request: please do X now."},
        {"role": "tool", "tool_call_id": "zz", "content": OUTPUT},
    ]


@pytest.mark.parametrize("encoding", ["approximate", "o200k_base"])
def test_litellm_cuts_a_long_result_whose_call_is_missing(encoding: str) -> None:
    """The result was cut to fit as a tool message, then the repair's note made it a few tokens
    longer: ``BudgetError`` (4006 tokens needed for 4000)."""
    pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install 'agentcontext[litellm]')")
    from agentcontext.integrations import litellm

    messages = _orphan_after_request()
    before = copy.deepcopy(messages)
    out = litellm.fit_messages(messages, ac.Budget(4000, encoding=encoding))
    assert messages == before
    assert ac.Conversation(out, encoding=encoding).tokens <= 4000
    assert [m["role"] for m in out][-2:] == ["user", "user"]
    assert out[-2]["content"] == "Latest request: please do X now."
    assert "zz" in out[-1]["content"] and "omitted" in out[-1]["content"]


def test_langchain_cuts_a_long_result_whose_call_is_missing() -> None:
    pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")
    from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

    from agentcontext.integrations import langchain

    messages = [
        SystemMessage("sys"),
        HumanMessage("Latest request: please do X now.", id="h1"),
        ToolMessage(OUTPUT, tool_call_id="zz", id="t1"),
    ]
    out = langchain.fit_messages(messages, ac.Budget(4000))
    dicts = [langchain.to_openai(m) for m in out]
    assert ac.Conversation(dicts).tokens <= 4000
    assert dicts[1]["content"] == "Latest request: please do X now."
    assert dicts[-1]["role"] == "user" and "omitted" in dicts[-1]["content"]
    assert messages[2].content == OUTPUT


BIG = "line of the file being written\n" * 4000


def _nested_arguments() -> dict[str, Any]:
    return {"edits": [{"path": "a.py", "content": BIG}, {"path": "b.py", "content": "short"}], "mode": "w"}


def _check_nested(arguments: dict[str, Any]) -> None:
    edits = arguments["edits"]
    assert arguments["mode"] == "w" and edits[1] == {"path": "b.py", "content": "short"}
    assert edits[0]["path"] == "a.py"
    content = edits[0]["content"]
    assert content.startswith("line of the file") and content.endswith("being written\n")
    assert 'recall(id="c1#arguments")' in content and len(content) < len(BIG) // 4


def test_litellm_cuts_a_long_string_nested_in_the_arguments() -> None:
    """A file inside the arguments' objects and lists (``{"edits": [{"content": ...}]}``) was not
    cut: ``BudgetError``."""
    pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install 'agentcontext[litellm]')")
    from agentcontext.integrations import litellm

    call = {"id": "c1", "type": "function", "function": {"name": "edit", "arguments": json.dumps(_nested_arguments())}}
    messages = [
        {"role": "system", "content": "You edit files."},
        {"role": "user", "content": "Edit them."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "edited"},
    ]
    before = copy.deepcopy(messages)
    out = litellm.fit_messages(messages, ac.Budget(4000))
    assert messages == before
    assert ac.Conversation(out).tokens <= 4000
    _check_nested(json.loads(out[2]["tool_calls"][0]["function"]["arguments"]))


def test_langchain_cuts_a_long_string_nested_in_the_arguments() -> None:
    pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    from agentcontext.integrations import langchain

    messages = [
        SystemMessage("You edit files."),
        HumanMessage("Edit them."),
        AIMessage("", tool_calls=[{"id": "c1", "name": "edit", "args": _nested_arguments()}], id="a1"),
        ToolMessage("edited", tool_call_id="c1", id="t1"),
    ]
    before = [m.model_copy(deep=True) for m in messages]
    out = langchain.fit_messages(messages, ac.Budget(4000))
    assert messages == before
    assert ac.Conversation([langchain.to_openai(m) for m in out]).tokens <= 4000
    _check_nested(out[2].tool_calls[0]["args"])


@pytest.mark.parametrize("reasoning", [False, True])
def test_agents_sdk_cuts_a_long_string_nested_in_the_arguments(reasoning: bool) -> None:
    pytest.importorskip(
        "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
    )
    from agentcontext.integrations.openai_agents import fit_items

    items: list[dict[str, Any]] = [
        {"role": "user", "content": "Edit them."},
        *([{"type": "reasoning", "id": "rs_1", "summary": []}] if reasoning else []),
        {"type": "function_call", "call_id": "c1", "name": "edit", "arguments": json.dumps(_nested_arguments())},
        {"type": "function_call_output", "call_id": "c1", "output": "edited"},
    ]
    before = copy.deepcopy(items)
    out = fit_items(items, ac.Budget(4000))
    assert items == before
    _check_nested(json.loads(next(i for i in out if i.get("type") == "function_call")["arguments"]))


def test_pydantic_ai_sends_a_given_result_before_the_prompt_of_the_same_request() -> None:
    """A request answering one of two calls and asking anew (a tool return and a user prompt in
    one ``ModelRequest``): the result given to the other call was sent after the whole request,
    after the prompt (a tool message after a user message: refused by OpenAI), the prompt no
    longer last."""
    pytest.importorskip("pydantic_ai", reason="Pydantic AI is not installed (pip install 'agentcontext[pydantic-ai]')")
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart, UserPromptPart

    from agentcontext.integrations import pydantic_ai

    messages = [
        ModelRequest(parts=[UserPromptPart("Read both.")]),
        ModelResponse(parts=[ToolCallPart("read", {"p": "a"}, "a"), ToolCallPart("read", {"p": "b"}, "b")]),
        ModelRequest(parts=[ToolReturnPart("read", "A", "a"), UserPromptPart("Latest.")]),
    ]
    before = copy.deepcopy(messages)
    out = pydantic_ai.fit_messages(messages, ac.Budget(4000))
    assert messages == before
    parts = [(type(p).__name__, getattr(p, "tool_call_id", None)) for m in out[2:] for p in m.parts]
    assert parts == [("ToolReturnPart", "a"), ("ToolReturnPart", "b"), ("UserPromptPart", None)]
    assert out[-1].parts[-1].content == "Latest."


@pytest.mark.parametrize("path", ["chat", "items"])
def test_arguments_over_the_budget_only_escaped_are_sent_unescaped(path: str) -> None:
    """Arguments over the budget only as ``\\u`` escapes (whole, unescaped, they fit): the cut
    found nothing to do (the round fit as read) and the fit raised ``BudgetError``."""
    text = "中文字符" * 700  # about 1,400 tokens as they are, several times that escaped
    arguments = json.dumps({"path": "a.py", "content": text})
    assert ac.count_tokens(arguments) > 4000 > ac.count_tokens(json.dumps({"content": text}, ensure_ascii=False))
    if path == "chat":
        pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install 'agentcontext[litellm]')")
        from agentcontext.integrations import litellm

        messages = [
            {"role": "user", "content": "Write the file."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "write_file", "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "written"},
        ]  # fmt: skip
        out = litellm.fit_messages(messages, ac.Budget(4000))
        assert ac.Conversation(out).tokens <= 4000
        sent = out[1]["tool_calls"][0]["function"]["arguments"]
    else:
        pytest.importorskip("agents", reason="the OpenAI Agents SDK is not installed")
        from agentcontext.integrations.openai_agents import fit_items

        items: list[dict[str, Any]] = [
            {"role": "user", "content": "Write the file."},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "call_id": "c1", "name": "write_file", "arguments": arguments},
            {"type": "function_call_output", "call_id": "c1", "output": "written"},
        ]
        out = fit_items(items, ac.Budget(4000))
        sent = next(i for i in out if i.get("type") == "function_call")["arguments"]
    assert json.loads(sent) == {"path": "a.py", "content": text}
