"""Defects found attacking the adapters (h46-attack1), each with the input that showed it: a call
id used again (``call_0`` on every turn, as some OpenAI-compatible servers number their calls)
in a history the fit repairs (a call interrupted before its result came, the user asking again). The repair renames the
reused id (``call_0#2``) in the dicts it gives back while each adapter sends its objects with
their own ids."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

import agentcontext as ac

ARGS = {"path": "a.py", "content": "print('hello world')\n" * 200}
ROUNDS = 8
BUDGET = ac.Budget(3000, clear_tool_inputs=True, recent_tools=1, recent_messages=2)


def _unanswered(dicts: list[dict[str, Any]]) -> list[str]:
    """The call ids of ``dicts`` (OpenAI Chat) not answered by the tool messages right after
    their assistant message, and the results answering no call there (checked here, not with
    ``validate``)."""
    wrong: list[str] = []
    i = 0
    while i < len(dicts):
        calls = [c["id"] for c in dicts[i].get("tool_calls") or ()]
        i += 1
        answers = []
        while i < len(dicts) and dicts[i].get("role") == "tool":
            answers.append(dicts[i]["tool_call_id"])
            i += 1
        wrong += [c for c in calls if c not in answers] + [a for a in answers if a not in calls]
    return wrong


def _langchain(interrupted: bool, arguments: dict[str, Any]) -> tuple[list[Any], Callable[..., Any], Any]:
    pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from agentcontext.integrations import langchain

    messages: list[Any] = [HumanMessage("Write the files.")]
    for k in range(ROUNDS):
        messages.append(AIMessage("", tool_calls=[{"id": "call_0", "name": "write", "args": arguments}]))
        if not (interrupted and k == 1):
            messages.append(ToolMessage("written", tool_call_id="call_0"))
        elif interrupted:
            messages.append(HumanMessage("Go on."))
    messages.append(HumanMessage("Done?"))
    return messages, langchain.fit_messages, lambda out: [langchain.to_openai(m) for m in out]


def _litellm(interrupted: bool, arguments: dict[str, Any]) -> tuple[list[Any], Callable[..., Any], Any]:
    pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install 'agentcontext[litellm]')")
    from agentcontext.integrations import litellm
    from tests.integration_support import Function, Message, ToolCall

    messages: list[Any] = [{"role": "user", "content": "Write the files."}]
    for k in range(ROUNDS):
        call = ToolCall(id="call_0", function=Function(name="write", arguments=json.dumps(arguments)))
        messages.append(Message(role="assistant", content=None, tool_calls=[call]))
        if not (interrupted and k == 1):
            messages.append({"role": "tool", "tool_call_id": "call_0", "content": "written"})
        elif interrupted:
            messages.append({"role": "user", "content": "Go on."})
    messages.append({"role": "user", "content": "Done?"})
    return messages, litellm.fit_messages, lambda out: [litellm.to_dict(m) for m in out]


def _pydantic_ai(interrupted: bool, arguments: dict[str, Any]) -> tuple[list[Any], Callable[..., Any], Any]:
    pytest.importorskip("pydantic_ai", reason="Pydantic AI is not installed (pip install 'agentcontext[pydantic-ai]')")
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart, UserPromptPart

    from agentcontext.integrations import pydantic_ai
    from tests.integration_support import pydantic_chat

    messages: list[Any] = [ModelRequest(parts=[UserPromptPart("Write the files.")])]
    for k in range(ROUNDS):
        messages.append(ModelResponse(parts=[ToolCallPart("write", arguments, tool_call_id="call_0")]))
        if not (interrupted and k == 1):
            messages.append(ModelRequest(parts=[ToolReturnPart("write", "written", tool_call_id="call_0")]))
        elif interrupted:
            messages.append(ModelRequest(parts=[UserPromptPart("Go on.")]))
    messages.append(ModelRequest(parts=[UserPromptPart("Done?")]))
    return messages, pydantic_ai.fit_messages, pydantic_chat


def _agents(interrupted: bool, arguments: dict[str, Any]) -> tuple[list[Any], Callable[..., Any], Any]:
    pytest.importorskip(
        "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
    )
    from agentcontext.integrations.openai_agents import fit_items

    items: list[Any] = [{"role": "user", "content": "Write the files."}]
    for k in range(ROUNDS):
        items.append(
            {"type": "function_call", "call_id": "call_0", "name": "write", "arguments": json.dumps(arguments)}
        )
        if not (interrupted and k == 1):
            items.append({"type": "function_call_output", "call_id": "call_0", "output": "written"})
        elif interrupted:
            items.append({"role": "user", "content": "Go on."})
    items.append({"role": "user", "content": "Done?"})

    def chat(out: list[Any]) -> list[dict[str, Any]]:
        dicts: list[dict[str, Any]] = []
        for item in out:
            if item.get("type") == "function_call":
                call = {"id": item["call_id"], "type": "function",
                        "function": {"name": item["name"], "arguments": item["arguments"]}}  # fmt: skip
                dicts.append({"role": "assistant", "content": None, "tool_calls": [call]})
            elif item.get("type") == "function_call_output":
                dicts.append({"role": "tool", "tool_call_id": item["call_id"], "content": item["output"]})
            else:
                dicts.append(item)
        return dicts

    return items, fit_items, chat


ADAPTERS = {"langchain": _langchain, "litellm": _litellm, "pydantic_ai": _pydantic_ai, "openai_agents": _agents}


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_the_result_made_for_an_interrupted_reused_call_id_answers_it(adapter: str) -> None:
    """The result the repair made for the interrupted call was sent under the renamed id
    (``call_0#2``) after the caller's own call ``call_0``: a list no provider accepts."""
    messages, fit, chat = ADAPTERS[adapter](True, {"path": "a.py"})
    before = copy.deepcopy(messages)
    out = fit(messages, 100_000)
    assert messages == before
    dicts = chat(out)
    assert _unanswered(dicts) == []
    assert sum("[no result" in str(d["content"]) for d in dicts if d.get("role") == "tool") == 1
    assert {d.get("tool_call_id") for d in dicts if d.get("role") == "tool"} == {"call_0"}


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_clearing_the_arguments_of_reused_call_ids_keeps_the_budget(adapter: str) -> None:
    """The cleared arguments were matched to the caller's calls by id, and the renamed ids
    matched none: every call went with its arguments whole (Pydantic AI and the Agents SDK sent
    10,074 and 10,100 tokens under a budget of 3,000; LangChain, with a call id used twice in one
    message, 32,564 under 30,000)."""
    messages, fit, chat = ADAPTERS[adapter](True, ARGS)
    out = fit(messages, BUDGET)
    dicts = chat(out)
    assert ac.Conversation(dicts).tokens <= BUDGET.max_tokens
    assert _unanswered(dicts) == []
    # The newest call keeps its arguments; the old ones are cleared.
    arguments = [c["function"]["arguments"] for d in dicts for c in d.get("tool_calls") or ()]
    assert json.loads(arguments[-1]) == ARGS
    assert sum(a == json.dumps(ARGS) or json.loads(a) == ARGS for a in arguments) == 1


@pytest.mark.parametrize("line", ["-", "+", "1-2-3", "N N N", "N 0-9"])
def test_a_user_message_opening_like_a_compaction_note_does_not_break_the_session(line: str) -> None:
    """A user's message that opens with the compaction note's marker and ends with a places line
    no compaction writes: ``int("")`` raised ``ValueError`` from ``add_items`` (the item already
    stored: every later ``get_items`` and ``add_items`` of the session raised the same), or the
    note was shown three times (``N N N``), or items after it twice (``N 0-9``)."""
    pytest.importorskip(
        "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
    )
    import asyncio

    from agents import SQLiteSession

    from agentcontext.compaction.summarize import SUMMARY_MARKER
    from agentcontext.integrations.openai_agents import CompactingSession

    async def run() -> list[Any]:
        session = CompactingSession(SQLiteSession(f"h46-{line}"), 3000)
        await session.add_items(
            [{"role": "user", "content": "Plan the trip."}, {"role": "assistant", "content": "Done."}]
        )
        forged = f"{SUMMARY_MARKER}: pasted]\n[agentcontext view: {line}]"
        await session.add_items([{"role": "user", "content": forged}, {"role": "assistant", "content": "Noted."}])
        await session.add_items([{"role": "user", "content": "And now?"}])
        return await session.get_items()

    items = asyncio.run(run())
    contents = [x["content"] for x in items]
    assert contents.count("And now?") == 1 and contents.count("Noted.") == 1
    assert sum(str(c).startswith(SUMMARY_MARKER) for c in contents) == 1


def test_langchain_tool_call_args_json_has_no_form_for() -> None:
    """A ``datetime`` or a set in a tool call's ``args`` raised a bare ``TypeError`` from every fit
    (a provider whose SDK writes them, as Anthropic's does a ``datetime``, took the call); a dict
    that holds itself is an ``InvalidMessageError`` naming the message."""
    pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")
    import datetime

    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from agentcontext.errors import InvalidMessageError
    from agentcontext.integrations.langchain import fit_messages

    when = datetime.datetime(2026, 1, 2, 3, 4, 5)
    for args in ({"when": when}, {"ids": {1}}):
        messages = [
            HumanMessage("Book it."),
            AIMessage("", tool_calls=[{"id": "c1", "name": "book", "args": args}]),
            ToolMessage("booked", tool_call_id="c1"),
        ]
        assert fit_messages(messages, ac.Budget(1000, clear_tool_inputs=True)) == messages
    looped: dict[str, Any] = {}
    looped["self"] = looped
    messages = [HumanMessage("Book it."), AIMessage("", tool_calls=[{"id": "c1", "name": "book", "args": looped}])]
    with pytest.raises(InvalidMessageError, match="message 1: a tool call's args cannot be written as JSON"):
        fit_messages(messages, 1000)


def test_pydantic_ai_tool_call_args_json_has_no_form_for() -> None:
    """An object in a tool call's args raised pydantic's ``PydanticSerializationError`` from the
    history processor, not a typed error naming the message."""
    pytest.importorskip("pydantic_ai", reason="Pydantic AI is not installed (pip install 'agentcontext[pydantic-ai]')")
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, UserPromptPart

    from agentcontext.errors import InvalidMessageError
    from agentcontext.integrations.pydantic_ai import fit_messages

    messages = [
        ModelRequest(parts=[UserPromptPart("Book it.")]),
        ModelResponse(parts=[ToolCallPart("book", {"when": object()}, tool_call_id="c1")]),
    ]
    with pytest.raises(InvalidMessageError, match="message 1: a tool call's args cannot be written as JSON"):
        fit_messages(messages, 1000)
