"""The OpenAI Agents SDK, 30 model calls over its real Runner with a fake Model: long
instructions, a tool whose every output is large. What the model receives (instructions, items,
tool definitions, as the fake Model is given them) stays within the budget on every call, valid,
with the latest request; an output bigger than the whole budget is cut, not a BudgetError; the
compacting session stores each function call once; misuse is a typed error naming the fix."""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
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
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

import agentcontext as ac
from agentcontext.integrations import _responses
from agentcontext.integrations.openai_agents import CompactingSession, fit_items, input_filter
from tests.integration_support import BIG_RESULT, LONG_SYSTEM, check_sent, tool_schema_tokens

set_tracing_disabled(True)

BUDGET = 6_000


class FakeModel(Model):
    """``reads`` tool calls after each user message, then an answer; checks what each call received."""

    def __init__(self, reads: int, budget: int = BUDGET) -> None:
        self.reads, self.budget = reads, budget
        self.sent: list[int] = []
        self.counter = itertools.count()
        self.in_turn = 0

    async def get_response(
        self, system_instructions: str | None, input: Any, model_settings: Any, tools: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        system = [{"role": "system", "content": system_instructions}] if system_instructions else []
        beside = sum(tool_schema_tokens(t.name, t.description, t.params_json_schema) for t in tools)
        request = [i["content"] for i in items if i.get("role") == "user" and not str(i["content"]).startswith("[")][-1]
        self.sent.append(check_sent([*system, *items], request, self.budget, beside, format="responses"))
        if items[-1].get("role") == "user":
            self.in_turn = 0
        i = next(self.counter)
        if self.in_turn < self.reads:
            self.in_turn += 1
            call = ResponseFunctionToolCall(
                type="function_call",
                call_id=f"call_{i}",
                name="read_file",
                arguments=f'{{"path": "m{i}.py"}}',
                id=f"fc_{i}",
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        text = ResponseOutputText(type="output_text", text="Reviewed.", annotations=[])
        message = ResponseOutputMessage(
            id=f"msg_{i}", type="message", role="assistant", status="completed", content=[text]
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise AssertionError("FakeModel answers get_response only")


def make_agent(model: FakeModel, result: str) -> Agent[Any]:
    @function_tool
    def read_file(path: str) -> str:
        """Read a file of the code base and return it whole, with line numbers."""
        return f"# {path}\n{result}"

    return Agent(name="reviewer", instructions=LONG_SYSTEM, model=model, tools=[read_file])


def run(agent: Agent[Any], prompts: list[str], session: Any, config: RunConfig | None = None) -> None:
    async def go() -> None:
        for prompt in prompts:
            await Runner.run(agent, prompt, session=session, run_config=config, max_turns=50)

    asyncio.run(go())


def test_thirty_calls_with_instructions_and_tools_stay_within_the_budget() -> None:
    model = FakeModel(reads=9)
    config = RunConfig(call_model_input_filter=input_filter(BUDGET))
    run(make_agent(model, BIG_RESULT), [f"Turn {t}: review module {t}." for t in range(3)], SQLiteSession("a"), config)
    assert len(model.sent) == 30
    assert max(model.sent) <= BUDGET and max(model.sent) > BUDGET - 2_500


def test_an_output_bigger_than_the_budget_is_cut_and_the_run_finishes() -> None:
    huge = "\n".join(f"{i:6d}  row {i}: value={i * 7919 % 10007}" for i in range(2_500))
    model = FakeModel(reads=1)
    config = RunConfig(call_model_input_filter=input_filter(BUDGET))
    session = SQLiteSession("b")
    run(make_agent(model, huge), ["Read the table."], session, config)
    assert len(model.sent) == 2 and max(model.sent) <= BUDGET
    # View-only: the session keeps the output whole; the model got it cut, naming its call id.
    stored = asyncio.run(session.get_items())
    assert any(huge in str(x.get("output")) for x in stored)
    items = stored[:-1]
    cut = [x for x in fit_items(items, BUDGET, LONG_SYSTEM) if x.get("type") == "function_call_output"]
    assert len(cut) == 1 and len(cut[0]["output"]) < len(huge) and "call_0" in cut[0]["output"]


def test_compacting_session_stores_each_function_call_once() -> None:
    # Before: each compaction appended again every item it kept (192 function_call items for 90
    # calls after 43 compactions); now it names where they are in the log.
    model = FakeModel(reads=3, budget=8_000)
    inner = SQLiteSession("c")
    session = CompactingSession(inner, ac.Budget(BUDGET, clear=False, recent_tools=1, recent_messages=2))
    config = RunConfig(call_model_input_filter=input_filter(8_000))
    run(make_agent(model, BIG_RESULT), [f"Request {t}: review group {t}." for t in range(6)], session, config)
    log = asyncio.run(inner.get_items())
    calls = Counter(x["call_id"] for x in log if x.get("type") == "function_call")
    assert session.compactions >= 3
    assert len(calls) == 18 and set(calls.values()) == {1}
    view = asyncio.run(session.get_items())
    conv = ac.Conversation(view, format="responses")
    assert conv.validate() == [] and conv.tokens <= BUDGET and "Request 5" in str(view)


def test_misuse_is_a_typed_error_naming_the_fix() -> None:
    with pytest.raises(ac.ArgumentTypeError, match=r"SQLiteSession\('user-1', 'chat.db'\)"):
        CompactingSession("user-1", 8000)
    with pytest.raises(ac.ArgumentTypeError, match="budget"):
        CompactingSession(SQLiteSession("d"), "8000")  # type: ignore[arg-type]
    with pytest.raises(ac.OptionError, match="encoding"):
        input_filter(ac.Budget(8000, encoding="o300k"))  # type: ignore[arg-type]
    with pytest.raises(ac.InvalidMessageError, match="Responses input item"):
        fit_items([object()], 8000)


def test_each_item_is_converted_once_across_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    original = _responses.piece

    def counting(d: dict[str, Any]) -> Any:
        seen.append(id(d))
        return original(d)

    monkeypatch.setattr(_responses, "piece", counting)
    items: list[Any] = [{"role": "user", "content": "Read them all."}]
    for n in range(30):
        items.append({"type": "function_call", "call_id": f"c{n}", "name": "read_file", "arguments": "{}"})
        items.append({"type": "function_call_output", "call_id": f"c{n}", "output": BIG_RESULT})
        fitted = fit_items(items, BUDGET, LONG_SYSTEM)
        assert ac.Conversation(fitted, format="responses").tokens <= BUDGET - ac.count_tokens(LONG_SYSTEM)
    assert len(seen) == len(items) == len(set(seen))
