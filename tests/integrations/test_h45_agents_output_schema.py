"""OpenAI Agents SDK: an agent's structured output type is sent to the model as a JSON schema
beside the tools (``text.format``); ``input_filter`` did not count it, so an agent with an
80-field output type (a 3,625-token schema) received 8,124 tokens under a 4,500 budget. It is
counted now, as a tool definition is."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
)

from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from pydantic import create_model

import agentcontext as ac
from agentcontext.integrations.openai_agents import input_filter
from tests.integration_support import tool_schema_tokens

set_tracing_disabled(True)

FIELDS = [f"field_number_{k}_with_a_long_descriptive_name" for k in range(80)]
Report = create_model("Report", **{name: (str, ...) for name in FIELDS})  # type: ignore[call-overload]
BUDGET = 4_500


class Recording(Model):
    """A tool call, then the report; records the tokens of everything each call receives."""

    def __init__(self) -> None:
        self.sent: list[int] = []
        self.turn = itertools.count()

    async def get_response(
        self,
        system_instructions: Any,
        input: Any,
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        *a: Any,
        **k: Any,
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        conv = ac.Conversation([{"role": "system", "content": system_instructions}, *items], format="responses")
        schema = ac.count_tokens(json.dumps(output_schema.json_schema())) if output_schema else 0
        tools_sent = sum(tool_schema_tokens(t.name, t.description, t.params_json_schema) for t in tools)
        self.sent.append(conv.tokens + schema + tools_sent)
        if next(self.turn) == 0:
            call = ResponseFunctionToolCall(
                type="function_call", call_id="c0", name="read", arguments='{"path": "x"}', id="fc0"
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        text = ResponseOutputText(type="output_text", text=json.dumps(dict.fromkeys(FIELDS, "v")), annotations=[])
        message = ResponseOutputMessage(id="m1", type="message", role="assistant", status="completed", content=[text])
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("get_response only")


@function_tool
def read(path: str) -> str:
    """Read a file."""
    return "\n".join(f"line {i} " + "z" * 40 for i in range(300))


def test_the_output_schema_is_counted_in() -> None:
    model = Recording()
    agent = Agent(name="a", instructions="Be exact. " * 50, model=model, tools=[read], output_type=Report)
    config = RunConfig(call_model_input_filter=input_filter(BUDGET))
    result = asyncio.run(Runner.run(agent, "review please", run_config=config))
    assert len(model.sent) == 2 and result.final_output is not None
    assert max(model.sent) <= BUDGET, model.sent
