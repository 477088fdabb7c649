"""The OpenAI Agents SDK, a model that reasons and searches the web before it calls a tool whose
output alone is over the budget: the input list holds reasoning and built-in tool items, so it is
fitted as Responses items (not on the Chat path), and the oversized output is cut there too —
head + marker + tail naming its call id — instead of ending the run with a BudgetError; the
reasoning and web search items reach the model as they were emitted."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
)

from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseFunctionWebSearch,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)
from openai.types.responses.response_function_web_search import ActionSearch
from openai.types.responses.response_reasoning_item import Summary

import agentcontext as ac
from agentcontext.integrations.openai_agents import CompactingSession, fit_items, input_filter
from tests.integration_support import LONG_SYSTEM, check_sent, tool_schema_tokens

set_tracing_disabled(True)

BUDGET = 6_000
HUGE = "\n".join(f"{i:6d}  row {i}: value={i * 7919 % 10007}" for i in range(2_500))


def _emitted(n: int) -> list[Any]:
    """What the model emits before its call ``n``: a reasoning item and a web search."""
    reasoning = ResponseReasoningItem(
        id=f"rs_{n}",
        type="reasoning",
        summary=[Summary(type="summary_text", text=f"Plan {n}: search, then read the table.")],
        encrypted_content="gAAAAB" + "x" * 400,
    )
    search = ResponseFunctionWebSearch(
        id=f"ws_{n}", type="web_search_call", status="completed", action=ActionSearch(type="search", query="table")
    )
    return [reasoning, search]


class ReasoningModel(Model):
    """Reasons, searches and calls ``read_table`` once per request, then answers; keeps what it got."""

    def __init__(self) -> None:
        self.counter = itertools.count()
        self.sent: list[int] = []
        self.inputs: list[list[dict[str, Any]]] = []

    async def get_response(
        self, system_instructions: str | None, input: Any, model_settings: Any, tools: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.inputs.append(items)
        system = [{"role": "system", "content": system_instructions}] if system_instructions else []
        beside = sum(tool_schema_tokens(t.name, t.description, t.params_json_schema) for t in tools)
        request = [i["content"] for i in items if i.get("role") == "user"][-1]
        self.sent.append(check_sent([*system, *items], request, BUDGET, beside, format="responses"))
        i = next(self.counter)
        if items[-1].get("role") == "user":
            call = ResponseFunctionToolCall(
                type="function_call", call_id=f"call_{i}", name="read_table", arguments="{}", id=f"fc_{i}"
            )
            return ModelResponse(output=[*_emitted(i), call], usage=Usage(), response_id=None)
        text = ResponseOutputText(type="output_text", text="Read.", annotations=[])
        message = ResponseOutputMessage(
            id=f"msg_{i}", type="message", role="assistant", status="completed", content=[text]
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise AssertionError("ReasoningModel answers get_response only")


def _agent(model: ReasoningModel) -> Agent[Any]:
    @function_tool
    def read_table() -> str:
        """Read the whole table."""
        return HUGE

    return Agent(name="reader", instructions=LONG_SYSTEM, model=model, tools=[read_table])


def _run(agent: Agent[Any], prompts: list[str], session: Any, config: RunConfig | None = None) -> None:
    async def go() -> None:
        for prompt in prompts:
            await Runner.run(agent, prompt, session=session, run_config=config, max_turns=10)

    asyncio.run(go())


def test_an_oversized_output_beside_reasoning_and_web_search_is_cut_and_the_run_finishes() -> None:
    model = ReasoningModel()
    _run(
        _agent(model), ["Read the table."], SQLiteSession("r1"), RunConfig(call_model_input_filter=input_filter(BUDGET))
    )
    assert len(model.sent) == 2 and max(model.sent) <= BUDGET
    second = model.inputs[1]
    emitted = [x.model_dump(mode="json", exclude_none=True) for x in _emitted(0)]
    # The reasoning and the web search went through as the model emitted them.
    assert [x for x in second if x.get("type") in ("reasoning", "web_search_call")] == emitted
    (out,) = [x for x in second if x.get("type") == "function_call_output"]
    assert len(out["output"]) < len(HUGE) and "call_0" in out["output"]
    assert out["output"].startswith(HUGE[:100]) and out["output"].endswith(HUGE[-100:])


def test_fit_items_cuts_only_the_output_and_returns_the_other_items_as_they_are() -> None:
    items: list[Any] = [
        {"role": "user", "content": "Read the table."},
        *[x.model_dump(mode="json", exclude_none=True) for x in _emitted(0)],
        {"type": "function_call", "call_id": "call_0", "name": "read_table", "arguments": "{}", "id": "fc_0"},
        {"type": "function_call_output", "call_id": "call_0", "output": HUGE},
    ]
    with pytest.raises(ac.BudgetError):
        ac.trim_messages(items, BUDGET, format="responses")
    fitted = fit_items(items, BUDGET, LONG_SYSTEM)
    assert len(fitted) == len(items)
    assert all(a is b for a, b in zip(fitted[:-1], items[:-1], strict=True))
    assert set(fitted[-1]) == set(items[-1]) and fitted[-1]["call_id"] == "call_0"
    assert len(fitted[-1]["output"]) < len(HUGE) and "call_0" in fitted[-1]["output"]
    budget = BUDGET - ac.Conversation([{"role": "system", "content": LONG_SYSTEM}], format="openai").tokens
    assert ac.Conversation(fitted, format="responses").tokens <= budget
    # Nothing to cut (no output long enough): the BudgetError stays.
    with pytest.raises(ac.BudgetError):
        fit_items([items[0], *items[1:4], {**items[-1], "output": "short"}], 40, LONG_SYSTEM)


def test_a_compacting_session_reads_back_a_newest_oversized_output_beside_reasoning_cut() -> None:
    session = CompactingSession(SQLiteSession("r2"), BUDGET)
    items: list[Any] = [
        {"role": "user", "content": "Read the table."},
        *[x.model_dump(mode="json", exclude_none=True) for x in _emitted(0)],
        {"type": "function_call", "call_id": "call_0", "name": "read_table", "arguments": "{}", "id": "fc_0"},
        {"type": "function_call_output", "call_id": "call_0", "output": HUGE},
    ]
    asyncio.run(session.add_items(items))
    view = asyncio.run(session.get_items())
    assert view[:-1] == items[:-1]
    assert ac.Conversation(view, format="responses").tokens <= BUDGET
    assert "call_0" in view[-1]["output"] and len(view[-1]["output"]) < len(HUGE)
