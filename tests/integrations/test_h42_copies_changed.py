"""An adapter gives an object whose old result it cleared as a copy, made once and given again on
later calls while the object is unchanged. The copy itself belongs to whoever it was given to (the
fitted list goes to a model client, a processor after this one, the caller's code): one of its
fields set anew in place there was given again as it had become, on every later call (the
mutated content sent in place of the cleared result, over the budget). A copy is now given again
only while it holds its own fields as made, else made again."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

import agentcontext as ac
from tests.integration_support import BIG_RESULT

MUTATED = "CHANGED IN PLACE DOWNSTREAM " + BIG_RESULT * 3


def _chat(i: int, result: Callable[[str], Any]) -> list[Any]:
    call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    return [
        {"role": "user", "content": f"Review module {i}."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        result(f"c{i}"),
        {"role": "assistant", "content": f"Module {i} reviewed."},
    ]


def _content(m: Any) -> Any:
    return m.get("content") if isinstance(m, dict) else m.content


@pytest.mark.parametrize("calls_before", [1, 2, 3])
def test_litellm_a_copy_changed_in_place_is_made_again(calls_before: int) -> None:
    from pydantic import BaseModel, ConfigDict

    from agentcontext.integrations.litellm import fit_messages

    class Tool(BaseModel):
        model_config = ConfigDict(extra="allow")
        role: str = "tool"
        content: str | None = None

    history = [m for i in range(6) for m in _chat(i, lambda cid: Tool(content=BIG_RESULT, tool_call_id=cid))]
    budget = 7_000
    for _ in range(calls_before):
        out = fit_messages(history, budget)
    [cleared] = [m for m in out if getattr(m, "tool_call_id", None) == "c0"]
    assert cleared is not history[2] and cleared.content != BIG_RESULT
    cleared.content = MUTATED
    again = fit_messages(history, budget)
    fresh = fit_messages(copy.deepcopy(history), budget)
    # Before: the mutated copy went out again (3 times the result, over the budget).
    assert [_content(m) for m in again] == [_content(m) for m in fresh]
    assert ac.Conversation([m if isinstance(m, dict) else m.model_dump() for m in again]).tokens <= budget


def _item_round(i: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"Review module {i}."},
        {"type": "function_call", "call_id": f"c{i}", "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": f"c{i}", "output": BIG_RESULT},
        {"role": "assistant", "content": f"Module {i} reviewed."},
    ]


@pytest.mark.parametrize("calls_before", [1, 2, 3])
def test_fit_items_a_copy_changed_in_place_is_made_again(calls_before: int) -> None:
    pytest.importorskip("agents")
    from agentcontext.integrations.openai_agents import _Fitter

    fitter = _Fitter()
    items = [x for i in range(6) for x in _item_round(i)]
    budget = ac.Budget(7_000)
    for _ in range(calls_before):
        out = fitter.fit(items, budget, None, ())
    [cleared] = [x for x in out if x.get("call_id") == "c0" and x.get("type") == "function_call_output"]
    assert cleared is not items[2] and cleared["output"] != BIG_RESULT
    cleared["output"] = MUTATED
    again = fitter.fit(items, budget, None, ())
    fresh = _Fitter().fit(copy.deepcopy(items), budget, None, ())
    assert again == fresh
    assert ac.Conversation(again, format="responses").tokens <= budget.max_tokens


@pytest.mark.parametrize("calls_before", [1, 2, 3])
def test_pydantic_ai_a_copy_changed_in_place_is_made_again(calls_before: int) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart

    from agentcontext.integrations.pydantic_ai import _dicts, converted, fit_messages

    history: list[Any] = []
    for i in range(6):
        history += [
            ModelRequest(parts=[UserPromptPart(f"Review module {i}.")]),
            ModelResponse(parts=[ToolCallPart("read", {}, tool_call_id=f"c{i}")]),
            ModelRequest(parts=[ToolReturnPart("read", BIG_RESULT, tool_call_id=f"c{i}")]),
            ModelResponse(parts=[TextPart(f"Module {i} reviewed.")]),
        ]
    cache = converted()
    budget = 7_000
    for _ in range(calls_before):
        out = fit_messages(history, budget, cache=cache)
    [cleared] = [m for m in out if getattr(m.parts[0], "tool_call_id", None) == "c0" and isinstance(m, ModelRequest)]
    assert cleared is not history[2]
    cleared.parts[0].content = MUTATED  # (the copy's own part: the cleared return)
    again = fit_messages(history, budget, cache=cache)
    fresh = fit_messages(copy.deepcopy(history), budget)
    assert [_dicts(m, 0) for m in again] == [_dicts(m, 0) for m in fresh]
