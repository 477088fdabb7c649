"""Pydantic AI with the agentcontext history processor, end to end with FunctionModel: a
multi-turn, tool-using run whose history exceeds the budget. Every request the model receives
fits, is valid and keeps the latest user prompt; Pydantic AI keeps what the processor returns as
the run's history, so the stored history is the compacted one, its unchanged messages the run's
own objects."""

from __future__ import annotations

import asyncio
import gc
import warnings
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="Pydantic AI is not installed (pip install 'agentcontext[pydantic-ai]')")

from pydantic_ai import Agent
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
from agentcontext.integrations.pydantic_ai import _dicts, fit_messages, history_processor
from tests.integration_support import BIG_RESULT, BUDGET, check_call

REQUESTS = ["Please review the session handlers for leaks.", "Now check the request loaders as well."]


def close_run_sync_loop() -> None:
    """Close the event loop Agent.run_sync leaves set (else its warnings surface in a later test)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        policy = asyncio.get_event_loop_policy()
        loop = policy.get_event_loop()
        loop.close()
        policy.set_event_loop(None)
        gc.collect()


def as_dicts(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    return [d for i, m in enumerate(messages) for d in _dicts(m, i)]


def latest_prompt(messages: list[ModelMessage]) -> str:
    prompts = [
        p.content
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart) and isinstance(p.content, str)
    ]
    return prompts[-1]


def make_agent() -> tuple[Agent[None, str], list[list[ModelMessage]]]:
    calls: list[list[ModelMessage]] = []
    counter = iter(range(1000))

    in_turn = [0]

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append(list(messages))
        if any(isinstance(p, UserPromptPart) for p in messages[-1].parts):
            in_turn[0] = 0
        # Three tool calls after each prompt, then an answer.
        if in_turn[0] < 3:
            in_turn[0] += 1
            i = next(counter)
            return ModelResponse(
                parts=[ToolCallPart("read_file", {"path": f"src/mod_{i}.py"}, tool_call_id=f"call_{i}")]
            )
        return ModelResponse(parts=[TextPart("Done.")])

    agent: Agent[None, str] = Agent(
        FunctionModel(respond),
        system_prompt="You are a careful reviewer.",
        capabilities=[ProcessHistory(history_processor(ac.Budget(BUDGET, recent_tools=1, recent_messages=2)))],
    )

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        return f"# {path}\n{BIG_RESULT}"

    return agent, calls


@pytest.mark.parametrize("asynchronous", [False, True], ids=["run_sync", "run"])
def test_history_processor_fits_every_request_and_compacts_the_history(asynchronous: bool) -> None:
    agent, calls = make_agent()
    history: list[ModelMessage] = []
    for request in REQUESTS:
        if asynchronous:
            result = asyncio.run(agent.run(request, message_history=history))
        else:
            result = agent.run_sync(request, message_history=history)
        history = result.all_messages()
    if not asynchronous:
        close_run_sync_loop()
    assert len(calls) == 8
    for call in calls:
        check_call(as_dicts(call), latest_prompt(call))
    assert latest_prompt(calls[-1]) == REQUESTS[1]
    # The stored history is the processor's: old returns cleared, still valid.
    stored = as_dicts(history)
    assert ac.Conversation(stored).validate() == []
    assert any(str(d.get("content")).startswith("[cleared: result of read_file") for d in stored)
    assert any(REQUESTS[1] == d.get("content") for d in stored)


def test_fit_messages_keeps_the_runs_objects_where_unchanged() -> None:
    messages: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("Read two files.")]),
        ModelResponse(
            parts=[
                ToolCallPart("read_file", {"path": "a.py"}, tool_call_id="a"),
                ToolCallPart("read_file", {"path": "b.py"}, tool_call_id="b"),
            ],
            model_name="m1",
        ),
        ModelRequest(parts=[ToolReturnPart("read_file", BIG_RESULT, "a"), ToolReturnPart("read_file", "short", "b")]),
        ModelResponse(parts=[TextPart("Both read.")]),
        ModelRequest(parts=[UserPromptPart("Summarize them.")]),
    ]
    same = fit_messages(messages, ac.Budget(100_000))
    assert all(a is b for a, b in zip(same, messages, strict=True))
    fitted = fit_messages(messages, ac.Budget(BUDGET // 2, recent_messages=0, recent_tools=0))
    assert fitted[0] is messages[0] and fitted[1] is messages[1] and fitted[3:] == messages[3:]
    changed = fitted[2]
    assert isinstance(changed, ModelRequest) and changed is not messages[2]
    a, b = changed.parts
    assert isinstance(a, ToolReturnPart) and str(a.content).startswith("[cleared: result of read_file")
    assert b is messages[2].parts[1]
    assert a.tool_call_id == "a" and a.timestamp == messages[2].parts[0].timestamp
