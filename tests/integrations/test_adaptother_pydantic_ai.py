"""Pydantic AI, 30 turns through the history processor with its own FunctionModel: a long static
system prompt, static and dynamic instructions and a tool whose every return is large. What the
model receives (instructions, messages, tool definitions, counted from what FunctionModel is
given) stays within the budget on every call, valid, with the latest prompt; a return bigger
than the whole budget is cut, not a BudgetError; misuse is a typed error naming the fix."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="Pydantic AI is not installed (pip install 'agentcontext[pydantic-ai]')")

from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import agentcontext as ac
from agentcontext.integrations.pydantic_ai import fit_messages, history_processor
from tests.integration_support import BIG_RESULT, LONG_SYSTEM, check_sent, pydantic_chat, tool_schema_tokens

BUDGET = 6_000


def received(messages: list[ModelMessage], info: AgentInfo) -> tuple[list[dict[str, Any]], int]:
    """What the model received, as Chat dicts (the instructions first), and its tool definitions' tokens."""
    out: list[dict[str, Any]] = [{"role": "system", "content": info.instructions}] if info.instructions else []
    out += pydantic_chat(messages)
    tools = sum(tool_schema_tokens(t.name, t.description, t.parameters_json_schema) for t in info.function_tools)
    return out, tools


def make_agent(
    budget: int | ac.Budget, result: str, reads: int = 1, small: str | None = None
) -> tuple[Agent[None, str], list[int]]:
    """An agent calling read_file ``reads`` times per prompt, then answering; records the tokens each call sent."""
    sent: list[int] = []
    asked: dict[str, int] = {}

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        dicts, tools = received(messages, info)
        prompt = [d["content"] for d in dicts if d["role"] == "user"][-1]
        sent.append(check_sent(dicts, prompt, BUDGET, tools))
        asked[prompt] = asked.get(prompt, 0) + 1
        if asked[prompt] <= reads:
            n = len(sent)
            return ModelResponse(parts=[ToolCallPart("read_file", {"path": f"src/mod_{n}.py"}, tool_call_id=f"c{n}")])
        return ModelResponse(parts=[TextPart("Reviewed.")])

    agent: Agent[None, str] = Agent(
        FunctionModel(respond),
        system_prompt=LONG_SYSTEM,
        instructions="Answer in one line. " * 40,
        capabilities=[ProcessHistory(history_processor(budget))],
    )

    @agent.instructions
    def reminder(ctx: RunContext[None]) -> str:
        return "Remember the file layout: " + " ".join(f"src/mod_{i}.py" for i in range(60))

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file of the code base and return it whole, with line numbers."""
        odd = small is not None and int(path.removesuffix(".py").rsplit("_", 1)[1]) % 2
        return f"# {path}\n{small if odd else result}"

    return agent, sent


def run_turns(agent: Agent[None, str], turns: int) -> list[ModelMessage]:
    async def run() -> list[ModelMessage]:
        history: list[ModelMessage] = []
        for t in range(turns):
            result = await agent.run(f"Turn {t}: review module {t} for leaks.", message_history=history)
            history = result.all_messages()
        return history

    return asyncio.run(run())


def test_thirty_turns_with_instructions_and_tools_stay_within_the_budget() -> None:
    # 3 prompts of 10 model turns each (9 reads, then the answer): 30 model calls. Every other
    # read is short, so the fit packs the budget closely: counting the messages alone (not the
    # ~650 tokens of instructions), 4 of these calls went over it, by up to 479 tokens.
    small = "\n".join(BIG_RESULT.splitlines()[:12])
    agent, sent = make_agent(BUDGET, BIG_RESULT, reads=9, small=small)
    history = run_turns(agent, 3)
    assert len(sent) == 30
    # The instructions, the system prompt and the tool schema alone are ~2,500 tokens of it.
    assert max(sent) <= BUDGET and max(sent) > BUDGET - 2_500
    prompts = [p.content for m in history for p in m.parts if isinstance(p, UserPromptPart)]
    assert prompts[-1] == "Turn 2: review module 2 for leaks."


def test_a_return_bigger_than_the_budget_is_cut_and_the_run_finishes() -> None:
    huge = "\n".join(f"{i:6d}  row {i}: value={i * 7919 % 10007}" for i in range(2_500))
    assert ac.count_tokens(huge) > 3 * BUDGET
    agent, sent = make_agent(BUDGET, huge)
    history = run_turns(agent, 2)
    assert len(sent) == 4 and max(sent) <= BUDGET
    returns = [p for m in history for p in m.parts if isinstance(p, ToolReturnPart)]
    assert returns and all(len(str(p.content)) < len(huge) for p in returns)


def test_misuse_is_a_typed_error_naming_the_fix() -> None:
    with pytest.raises(ac.InvalidMessageError, match=r"litellm\.fit_messages"):
        fit_messages([{"role": "user", "content": "hi"}], 1_000)  # type: ignore[list-item]
    with pytest.raises(ac.OptionError, match="encoding"):
        history_processor(ac.Budget(1_000, encoding="o300k"))  # type: ignore[arg-type]
    with pytest.raises(ac.ArgumentTypeError):
        history_processor("1000")  # type: ignore[arg-type]


def test_each_message_is_converted_once_across_calls() -> None:
    from agentcontext.integrations import pydantic_ai as adapter

    converted: list[int] = []
    original = adapter._dicts

    def counting(message: ModelMessage, index: int) -> list[dict[str, Any]]:
        converted.append(id(message))
        return original(message, index)

    history: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("Start.")])]
    process = history_processor(BUDGET)
    adapter._dicts = counting  # type: ignore[assignment]
    try:
        for n in range(20):
            history.append(ModelResponse(parts=[ToolCallPart("read_file", {"path": "a"}, tool_call_id=f"c{n}")]))
            history.append(ModelRequest(parts=[ToolReturnPart("read_file", BIG_RESULT, f"c{n}")]))
            history = process(None, history)  # type: ignore[arg-type]
    finally:
        adapter._dicts = original  # type: ignore[assignment]
    # Each message converted once (the cleared copies the processor returned are new messages).
    assert len(converted) == len(set(converted))
    assert len(converted) < 3 * 41
