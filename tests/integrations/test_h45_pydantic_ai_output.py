"""Pydantic AI: a ``NativeOutput`` sends the output's JSON schema as the response format and a
``PromptedOutput`` adds it to the instructions, apart from the tools the history processor
counted; an 80-field schema (about 2,400 tokens) went to the model on top of a full budget."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="Pydantic AI is not installed (pip install 'agentcontext[pydantic-ai]')")

from pydantic import create_model
from pydantic_ai import Agent, NativeOutput, PromptedOutput
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
from agentcontext.integrations.pydantic_ai import history_processor

FIELDS = [f"field_number_{k}_with_a_long_descriptive_name" for k in range(80)]
Report = create_model("Report", **{name: (str, ...) for name in FIELDS})  # type: ignore[call-overload]
BUDGET = 5_000


def received(messages: list[ModelMessage], info: AgentInfo) -> int:
    """The tokens the model receives: messages, instructions, tools and the output schema."""
    dicts: list[dict[str, Any]] = []
    if info.instructions:
        dicts.append({"role": "system", "content": info.instructions})
    for m in messages:
        for part in m.parts:
            if isinstance(part, ToolCallPart):
                call = {
                    "id": part.tool_call_id,
                    "type": "function",
                    "function": {"name": part.tool_name, "arguments": "{}"},
                }
                dicts.append({"role": "assistant", "content": None, "tool_calls": [call]})
            elif isinstance(part, TextPart):
                dicts.append({"role": "assistant", "content": part.content})
            elif isinstance(part, ToolReturnPart):
                dicts.append({"role": "tool", "tool_call_id": part.tool_call_id, "content": part.model_response_str()})
            elif isinstance(part, UserPromptPart):
                dicts.append({"role": "user", "content": part.content})
    tools = sum(
        ac.count_tokens(
            json.dumps(
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description or "",
                        "parameters": t.parameters_json_schema,
                    },
                }
            )
        )
        for t in [*info.function_tools, *info.output_tools]
    )
    native = (
        info.model_request_parameters.output_object if info.model_request_parameters.output_mode == "native" else None
    )
    schema = ac.count_tokens(json.dumps(native.json_schema)) if native is not None else 0
    return ac.Conversation(dicts).tokens + tools + schema


@pytest.mark.parametrize("wrap", [NativeOutput, PromptedOutput])
def test_the_output_schema_is_counted_in(wrap: Any) -> None:
    sent: list[int] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent.append(received(messages, info))
        if len(sent) < 4:
            return ModelResponse(parts=[ToolCallPart("read", {"path": f"m{len(sent)}"}, tool_call_id=f"c{len(sent)}")])
        return ModelResponse(parts=[TextPart(json.dumps(dict.fromkeys(FIELDS, "v")))])

    agent = Agent(
        FunctionModel(model), output_type=wrap(Report), capabilities=[ProcessHistory(history_processor(BUDGET))]
    )

    @agent.tool_plain
    def read(path: str) -> str:
        """Read a file."""
        return "\n".join(f"{k:4d}  def handler_{k}(request): return session.load(request.key)" for k in range(100))

    # (asyncio.run, not run_sync: run_sync leaves its event loop open, and its socket warns later.)
    result = asyncio.run(agent.run("Review the handlers."))
    assert result.output.field_number_0_with_a_long_descriptive_name == "v"
    assert len(sent) == 4 and max(sent) <= BUDGET, sent
    assert isinstance(result.all_messages()[0], ModelRequest)
