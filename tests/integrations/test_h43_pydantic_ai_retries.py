"""Pydantic AI's tool retries stored as ``RetryPromptPart`` (the part Pydantic AI wrote before
``ToolReturnPart(outcome="retried")``; a history loaded from storage still holds them) are tool
results to the fit: it cleared or cut them, but the history processor sent each such part as it
was. Eight build retries of ~2,300 tokens, ``Budget(10_000, recent_tools=2, recent_messages=2)``:
18,486 tokens sent for 4,878 counted. A cleared or cut retry now goes out as the fit left it: a
tool return of that text (with the same call id), which the model reads as exactly that text."""

from __future__ import annotations

import asyncio
import warnings

import pytest

pytest.importorskip("pydantic_ai", reason="Pydantic AI is not installed (pip install 'agentcontext[pydantic-ai]')")

from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import agentcontext as ac
from agentcontext.integrations.pydantic_ai import fit_messages, history_processor
from tests.integration_support import pydantic_chat

LOG = "\n".join(f"error line {k}: build failed at module {k} " + "x" * 40 for k in range(120))
BUDGET = ac.Budget(10_000, recent_tools=2, recent_messages=2)


def retry(i: int, text: str) -> RetryPromptPart:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (deprecated in Pydantic AI 2: what old histories hold)
        return RetryPromptPart(text, tool_name="build", tool_call_id=f"c{i}")


def stored_history() -> list[ModelMessage]:
    out: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("Build the project.")])]
    for i in range(8):
        out += [
            ModelResponse(parts=[ToolCallPart("build", {"target": i}, tool_call_id=f"c{i}")]),
            ModelRequest(parts=[retry(i, f"[{i}] {LOG}")]),
        ]
    out.append(ModelResponse(parts=[TextPart("The build keeps failing.")]))
    return out


def received_tokens(messages: list[ModelMessage]) -> int:
    """The tokens of what the model receives, read as Pydantic AI renders each part."""
    return ac.Conversation(pydantic_chat(messages)).tokens


def test_a_run_over_a_stored_history_of_retries_sends_them_cleared() -> None:
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return ModelResponse(parts=[TextPart("I will look at module 7.")])

    agent = Agent(FunctionModel(model), capabilities=[ProcessHistory(history_processor(BUDGET))])
    history = stored_history()
    assert received_tokens(history) > 18_000
    # (asyncio.run, not run_sync: run_sync leaves its event loop open, and its warning fails a
    # later test in the same worker.)
    result = asyncio.run(agent.run("Why does it fail?", message_history=history))
    assert result.output == "I will look at module 7."
    sent = seen[-1]
    assert received_tokens(sent) <= BUDGET.limit
    ids = [p.tool_call_id for m in sent if isinstance(m, ModelRequest) for p in m.parts if p.part_kind != "user-prompt"]
    assert ids == [f"c{i}" for i in range(8)]  # every call kept with its answer, the old ones cleared
    assert isinstance(history[2], ModelRequest) and history[2].parts[0].content == f"[0] {LOG}"  # type: ignore[union-attr]


def test_a_newest_retry_over_the_budget_is_cut() -> None:
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("Build the project.")]),
        ModelResponse(parts=[ToolCallPart("build", {"target": 0}, tool_call_id="c0")]),
        ModelRequest(parts=[retry(0, "\n".join([LOG] * 8))]),
    ]
    out = fit_messages(history, 3_000)
    assert received_tokens(out) <= 3_000
    part = out[-1].parts[0]
    assert isinstance(part, ToolReturnPart) and part.tool_call_id == "c0" and part.tool_name == "build"
    text = part.model_response_str()
    assert "omitted" in text and text.endswith("Fix the errors and try again.")


@pytest.mark.parametrize("outcome", ["retried", "failed"])
def test_cleared_error_returns_are_not_wrapped_again(outcome: str) -> None:
    # Pydantic AI sends an errored return as {"error": ...}: the fit counts that text, clears or
    # cuts it, and the part went out wrapped again (up to 74 tokens over for 20 such returns).
    history: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("Build the project.")])]
    for i in range(20):
        history += [
            ModelResponse(parts=[ToolCallPart("build", {"target": i}, tool_call_id=f"c{i}")]),
            ModelRequest(
                parts=[ToolReturnPart("build", f"[{i}] {LOG[:600]}", tool_call_id=f"c{i}", outcome=outcome)]  # type: ignore[arg-type]
            ),
        ]
    for budget in range(900, 4_000, 101):
        out = fit_messages(history, ac.Budget(budget, recent_tools=1, recent_messages=2))
        assert received_tokens(out) <= budget
        assert history[2].parts[0].outcome == outcome  # type: ignore[union-attr]
