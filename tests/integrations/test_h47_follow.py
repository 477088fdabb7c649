"""Defects found following up h47-attack (h47-follow), each with the input that showed it."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import pickle
from typing import Any

import pytest

import agentcontext as ac


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((100,), {"recent_tool": 1}, "unknown option 'recent_tool' \\(did you mean recent_tools\\?\\)"),
        ((100,), {"colour": "red"}, "unknown option 'colour': it takes max_tokens, encoding, clear"),
        ((), {}, "Budget needs max_tokens"),
        ((100,), {"max_tokens": 5}, "Budget got max_tokens twice"),
        (tuple(range(1, 12)), {}, "at most 10 positional arguments, got 11"),
    ],
)
def test_budget_names_a_wrong_call(args: tuple[Any, ...], kwargs: dict[str, Any], message: str) -> None:
    """``Budget(100, recent_tool=1)`` was Python's bare ``TypeError`` from the dataclass (outside
    AgentContextError), where ``Budget.for_model`` names the closest option."""
    with pytest.raises(ac.ArgumentTypeError, match=message):
        ac.Budget(*args, **kwargs)


def test_budget_stays_a_dataclass() -> None:
    budget = ac.Budget(100, recent_tools=1)
    assert ac.Budget(max_tokens=100, recent_tools=1) == budget
    assert pickle.loads(pickle.dumps(budget)) == budget
    assert copy.copy(budget) == budget and copy.deepcopy(budget) == budget
    assert dataclasses.replace(budget, recent_tools=2).recent_tools == 2
    with pytest.raises(ac.ArgumentTypeError, match="did you mean recent_tools"):
        dataclasses.replace(budget, recent_tool=2)
    assert list(inspect.signature(ac.Budget).parameters)[:2] == ["max_tokens", "encoding"]


#: A pasted log or file of 78,000 o200k tokens: over the budget by itself.
HUGE = "x = 1  # line of code that goes on\n" * 6000
ASK = "Look at this log and fix what fails: " + HUGE
BUDGET = 8000
IMAGE = {"type": "image_url", "image_url": {"url": "https://example.com/failure.png"}}


def _check(dicts: list[dict[str, Any]], format: str = "openai") -> None:
    """Within the budget, pair-valid, the request's head and its short part there, both long texts cut."""
    conv = ac.Conversation(dicts, format=format)
    assert conv.tokens <= BUDGET
    assert conv.validate() == []
    sent = json.dumps(dicts)
    assert "Look at this log and fix what fails" in sent and "Only the failing test." in sent
    assert sent.count("omitted") == 2


def _parts(text_type: str = "text") -> list[dict[str, Any]]:
    return [{"type": text_type, "text": ASK}, {"type": text_type, "text": "Only the failing test."}]


@pytest.mark.parametrize("image", [False, True], ids=["texts", "texts-and-image"])
def test_litellm_cuts_a_long_request_of_text_parts_beside_a_long_newest_result(image: bool) -> None:
    """A request of text parts was planned whole (only a plain string was cut): ``BudgetError``."""
    pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install 'agentcontext[litellm]')")
    from agentcontext.integrations import litellm

    call = {"id": "c0", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    content = [*_parts(), *([IMAGE] if image else [])]
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": content},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c0", "content": HUGE},
    ]
    before = copy.deepcopy(messages)
    out = litellm.fit_messages(messages, BUDGET)
    assert messages == before
    _check(out)
    assert out[2] == messages[2]
    assert [p["type"] for p in out[1]["content"]] == [p["type"] for p in content]
    assert out[1]["content"][1] == content[1] and (not image or out[1]["content"][2] == content[2])


def test_langchain_cuts_a_long_request_of_text_parts_beside_a_long_newest_result() -> None:
    pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    from agentcontext.integrations import langchain

    messages = [
        SystemMessage("Be brief."),
        HumanMessage(_parts(), id="h1"),
        AIMessage("", tool_calls=[{"id": "c0", "name": "read", "args": {}}]),
        ToolMessage(HUGE, tool_call_id="c0"),
    ]
    out = langchain.fit_messages(messages, BUDGET)
    _check([langchain.to_openai(m) for m in out])
    assert isinstance(out[1], HumanMessage) and out[1].id == "h1"
    assert messages[1].content == _parts()


@pytest.mark.parametrize("reasoning", [False, True], ids=["message-items", "with-reasoning"])
def test_agents_sdk_cuts_a_long_request_of_text_parts_beside_a_long_newest_result(reasoning: bool) -> None:
    """A request of several parts has no Chat form: cut as items, its image part kept."""
    pytest.importorskip(
        "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
    )
    from agentcontext.integrations.openai_agents import fit_items

    items: list[dict[str, Any]] = [
        *([{"type": "reasoning", "id": "rs_1", "summary": []}] if reasoning else []),
        {
            "role": "user",
            "content": [*_parts("input_text"), {"type": "input_image", "image_url": "https://x.org/a.png"}],
        },
        {"type": "function_call", "call_id": "c0", "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c0", "output": HUGE},
    ]
    before = copy.deepcopy(items)
    out = fit_items(items, BUDGET, "Be brief.")
    assert items == before
    _check([{"role": "system", "content": "Be brief."}, *out], "responses")
    user = next(i for i in out if i.get("role") == "user")
    assert set(user) == {"role", "content"}
    assert [p["type"] for p in user["content"]] == ["input_text", "input_text", "input_image"]
    assert user["content"][1:] == items[-3]["content"][1:]


def test_pydantic_ai_cuts_a_long_request_with_an_image_beside_a_long_newest_result() -> None:
    """A prompt of a text and an image is a request of parts: ``BudgetError`` before."""
    pytest.importorskip("pydantic_ai", reason="Pydantic AI is not installed (pip install 'agentcontext[pydantic-ai]')")
    from pydantic_ai.messages import (
        ImageUrl,
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    from agentcontext.integrations import pydantic_ai

    image = ImageUrl("https://example.com/failure.png")
    messages = [
        ModelRequest(parts=[SystemPromptPart("Be brief."), UserPromptPart([ASK, image])]),
        ModelResponse(parts=[ToolCallPart("read", {}, tool_call_id="c0")]),
        ModelRequest(parts=[ToolReturnPart("read", HUGE, tool_call_id="c0")]),
    ]
    out = pydantic_ai.fit_messages(messages, BUDGET)
    prompt, result = out[0].parts[1], out[2].parts[0]
    assert isinstance(prompt, UserPromptPart) and isinstance(prompt.content, list)
    assert isinstance(result, ToolReturnPart) and isinstance(result.content, str)
    text = prompt.content[0]
    assert isinstance(text, str) and text.startswith("Look at this log and fix what fails")
    assert prompt.content[1] == image
    assert "omitted" in text and "omitted" in result.content
    assert ac.count_tokens(text) + ac.count_tokens(result.content) <= BUDGET
    assert out[1] is messages[1]
