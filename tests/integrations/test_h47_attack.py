"""Defects found attacking the adapters (h47-attack), each with the input that showed it."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import agentcontext as ac

#: A pasted log or file of 78,000 o200k tokens: over the budget by itself.
HUGE = "x = 1  # line of code that goes on\n" * 6000
ASK = "Look at this log and fix what fails: " + HUGE
BUDGET = 8000


def _check(dicts: list[dict[str, Any]], format: str = "openai") -> None:
    """Within the budget, pair-valid, the request's head there and both long texts cut."""
    conv = ac.Conversation(dicts, format=format)
    assert conv.tokens <= BUDGET
    assert conv.validate() == []
    sent = json.dumps(dicts)
    assert "Look at this log and fix what fails" in sent
    assert sent.count("omitted") == 2


def test_litellm_cuts_a_long_request_beside_a_long_newest_result() -> None:
    """A user who pasted a long text, then a tool result over the budget by itself: the result was
    not cut (the cut planned the request whole), so the call failed with ``BudgetError``."""
    pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install 'agentcontext[litellm]')")
    from agentcontext.integrations import litellm

    call = {"id": "c0", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": ASK},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c0", "content": HUGE},
    ]
    before = copy.deepcopy(messages)
    out = litellm.fit_messages(messages, BUDGET)
    assert messages == before
    _check(out)
    assert out[2] is messages[2]


def test_langchain_cuts_a_long_request_beside_a_long_newest_result() -> None:
    pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    from agentcontext.integrations import langchain

    messages = [
        SystemMessage("Be brief."),
        HumanMessage(ASK, id="h1"),
        AIMessage("", tool_calls=[{"id": "c0", "name": "read", "args": {}}]),
        ToolMessage(HUGE, tool_call_id="c0"),
    ]
    out = langchain.fit_messages(messages, BUDGET)
    _check([langchain.to_openai(m) for m in out])
    assert isinstance(out[1], HumanMessage) and out[1].id == "h1"
    assert messages[1].content == ASK


def test_pydantic_ai_cuts_a_long_request_beside_a_long_newest_result() -> None:
    pytest.importorskip("pydantic_ai", reason="Pydantic AI is not installed (pip install 'agentcontext[pydantic-ai]')")
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    from agentcontext.integrations import pydantic_ai
    from tests.integration_support import pydantic_chat

    messages = [
        ModelRequest(parts=[SystemPromptPart("Be brief."), UserPromptPart(ASK)]),
        ModelResponse(parts=[ToolCallPart("read", {}, tool_call_id="c0")]),
        ModelRequest(parts=[ToolReturnPart("read", HUGE, tool_call_id="c0")]),
    ]
    out = pydantic_ai.fit_messages(messages, BUDGET)
    _check(pydantic_chat(out))
    assert out[1] is messages[1]


@pytest.mark.parametrize("reasoning", [False, True], ids=["chat-path", "items-path"])
def test_agents_sdk_cuts_a_long_request_beside_a_long_newest_result(reasoning: bool) -> None:
    """Both paths: items the Chat form holds, and a list with a reasoning item (cut as items)."""
    pytest.importorskip(
        "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
    )
    from agentcontext.integrations.openai_agents import fit_items

    items: list[dict[str, Any]] = [
        *([{"type": "reasoning", "id": "rs_1", "summary": []}] if reasoning else []),
        {"role": "user", "content": ASK},
        {"type": "function_call", "call_id": "c0", "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c0", "output": HUGE},
    ]
    before = copy.deepcopy(items)
    out = fit_items(items, BUDGET, "Be brief.")
    assert items == before
    _check([{"role": "system", "content": "Be brief."}, *out], "responses")
    user = next(i for i in out if i.get("role") == "user")
    assert set(user) == {"role", "content"}


def _factories() -> dict[str, Any]:
    """Each adapter's constructor or factory, given a budget (only those whose framework is installed)."""
    out: dict[str, Any] = {"Budget": lambda b: ac.Budget(b)}
    try:
        from agentcontext.integrations import langchain, langgraph

        out["AgentContextMiddleware"] = langchain.AgentContextMiddleware
        out["fit_hook"] = langgraph.fit_hook
        out["compact_hook"] = langgraph.compact_hook
    except ImportError:
        pass
    try:
        from agents import SQLiteSession

        from agentcontext.integrations import openai_agents

        out["input_filter"] = openai_agents.input_filter
        out["CompactingSession"] = lambda b: openai_agents.CompactingSession(SQLiteSession("s"), b)
    except ImportError:
        pass
    try:
        from agentcontext.integrations import pydantic_ai

        out["history_processor"] = pydantic_ai.history_processor
    except ImportError:
        pass
    return out


@pytest.mark.parametrize("factory", list(_factories()))
def test_a_budget_of_0_tokens_is_refused_at_construction(factory: str) -> None:
    """A budget of 0 was taken, and every model call then failed with ``BudgetError``."""
    make = _factories()[factory]
    with pytest.raises(ac.OptionError, match=r"(budget|max_tokens) must be a positive integer, got 0"):
        make(0)
    make(1)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"recent_tool": 1}, "unknown option 'recent_tool' \\(did you mean recent_tools\\?\\)"),
        ({"max_tokens": 5000}, "unknown option 'max_tokens' \\(a share of the window is fraction="),
        ({"colour": "red"}, "unknown option 'colour': it takes clear, recent_messages"),
    ],
)
def test_for_model_names_an_unknown_option(options: dict[str, Any], message: str) -> None:
    """A misspelt option was a bare ``TypeError`` from the dataclass (no AgentContextError)."""
    with pytest.raises(ac.ArgumentTypeError, match=message):
        ac.Budget.for_model("gpt-4o", **options)
    assert ac.Budget.for_model("gpt-4o", recent_tools=1).recent_tools == 1


def _foreign(kind: str) -> list[Any]:
    if kind == "langchain":
        pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")
        from langchain_core.messages import AIMessage, HumanMessage

        return [HumanMessage("hi"), AIMessage("hello")]
    pytest.importorskip("pydantic_ai", reason="Pydantic AI is not installed (pip install 'agentcontext[pydantic-ai]')")
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    return [ModelRequest(parts=[UserPromptPart("hi")]), ModelResponse(parts=[TextPart("hello")])]


@pytest.mark.parametrize("kind", ["langchain", "pydantic_ai"])
@pytest.mark.parametrize("adapter", ["litellm", "openai_agents"])
def test_another_frameworks_messages_are_refused_naming_its_adapter(adapter: str, kind: str) -> None:
    """LangChain messages have ``model_dump``: LiteLLM's fit read their dumps and failed with
    "missing `role`", and the Agents SDK's ``fit_items`` sent them on as unknown items."""
    messages = _foreign(kind)
    if adapter == "litellm":
        pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install 'agentcontext[litellm]')")
        from agentcontext.integrations.litellm import fit_messages as fit
    else:
        pytest.importorskip("agents", reason="the OpenAI Agents SDK is not installed")
        from agentcontext.integrations.openai_agents import fit_items as fit
    with pytest.raises(ac.InvalidMessageError, match=f"another framework's message: agentcontext.integrations.{kind}"):
        fit(messages, 1000)


def test_agents_sdk_items_path_cuts_the_newest_round_as_the_chat_path_does() -> None:
    """Items the Chat form cannot hold (a reasoning item per round) are cut as items; the newest
    round was taken to start at the latest request (the library's form of an item's calls was not
    recognised), so every round of the turn kept a share of the room: five results of 78,000
    tokens each were all sent, cut to about 1,500 tokens each, the newest one among them."""
    pytest.importorskip(
        "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
    )
    from agentcontext.integrations.openai_agents import fit_items

    for reasoning in (False, True):
        items: list[dict[str, Any]] = [{"role": "user", "content": "Read the five logs."}]
        for r in range(5):
            if reasoning:
                items.append({"type": "reasoning", "id": f"rs_{r}", "summary": []})
            items.append({"type": "function_call", "call_id": f"c{r}", "name": "read", "arguments": "{}"})
            items.append({"type": "function_call_output", "call_id": f"c{r}", "output": HUGE})
        out = fit_items(items, BUDGET)
        conv = ac.Conversation(out, format="responses")
        assert conv.tokens <= BUDGET and conv.validate() == []
        outputs = [i for i in out if i.get("type") == "function_call_output"]
        assert [i["call_id"] for i in outputs] == ["c4"], reasoning
        assert ac.count_tokens(outputs[0]["output"]) > BUDGET * 3 // 4
