"""The Agents SDK writes a tool's ``ToolOutputText`` (or a list of them: what MCP tools give) as a
``function_call_output`` whose ``output`` is a list of ``input_text`` parts. A newest such output
over the budget by itself was not cut: ``input_filter`` and ``fit_items`` raised BudgetError
(32,550 tokens needed for a budget of 3,000), while a string output of the same text was cut. It
is now read as its texts joined and cut head + marker + tail, the marker naming its call id; an
output holding an image part has its texts cut and keeps the image (since h45)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
)

from agents import Agent, RunConfig, Runner, ToolOutputText, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

import agentcontext as ac
from agentcontext.errors import BudgetError
from agentcontext.integrations.openai_agents import fit_items, input_filter

set_tracing_disabled(True)

BUDGET = 3_000
BIG = "\n".join(f"line {k}: " + "data " * 10 for k in range(2_000))


@function_tool
def dump_log(name: str) -> list[ToolOutputText]:
    """Dump a whole log."""
    return [ToolOutputText(text=BIG)]


class FakeModel(Model):
    """One call of dump_log, then an answer; records every input."""

    def __init__(self) -> None:
        self.calls: list[list[Any]] = []

    async def get_response(self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any) -> Any:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.calls.append(items)
        if len(self.calls) == 1:
            output: list[Any] = [
                ResponseFunctionToolCall(
                    type="function_call", call_id="call_1", name="dump_log", arguments='{"name": "app"}', id="fc_1"
                )
            ]
        else:
            text = ResponseOutputText(type="output_text", text="Done.", annotations=[])
            output = [
                ResponseOutputMessage(id="msg_1", type="message", role="assistant", status="completed", content=[text])
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("not streamed here")


def test_an_oversized_output_of_text_parts_is_cut_in_a_run() -> None:
    model = FakeModel()
    agent = Agent(name="ops", instructions="Be brief.", model=model, tools=[dump_log])
    config = RunConfig(call_model_input_filter=input_filter(BUDGET))
    result = asyncio.run(Runner.run(agent, "Dump the app log.", run_config=config))
    assert result.final_output == "Done."
    items = model.calls[-1]
    outputs = [i for i in items if i.get("type") == "function_call_output"]
    assert len(outputs) == 1 and outputs[0]["call_id"] == "call_1"
    cut = outputs[0]["output"]
    assert isinstance(cut, str) and cut.startswith("line 0: ") and 'recall(id="call_1")' in cut
    conv = ac.Conversation([{"role": "system", "content": "Be brief."}, *items], format="responses")
    assert conv.tokens <= BUDGET and conv.validate() == []
    # The run's own item is whole (the filter only changes what the model receives).
    whole = [i for i in result.to_input_list() if i.get("type") == "function_call_output"]
    assert whole[0]["output"] == [{"type": "input_text", "text": BIG}]


def history(output: Any) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Dump the app log."},
        {"type": "function_call", "call_id": "call_1", "name": "dump_log", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": output},
    ]


def test_fit_items_cuts_text_parts_and_keeps_an_image_part() -> None:
    parts = [{"type": "input_text", "text": BIG[:60_000]}, {"type": "input_text", "text": BIG[60_000:]}]
    items = history(parts)
    out = fit_items(items, BUDGET)
    assert out[:2] == items[:2] and items[2]["output"] is parts
    assert isinstance(out[2]["output"], str) and out[2]["output"].startswith("line 0: ")
    assert ac.Conversation(out, format="responses").tokens <= BUDGET
    # (Until h45 an image part made it a BudgetError: the issue asks an oversized newest output
    # to be cut.) Its texts are cut as one text, the image follows as it is, counted.
    image = {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}  # 1,534 tokens
    items = history([*parts, image])
    out = fit_items(items, BUDGET)
    text, kept = out[2]["output"]
    assert kept is image and text["type"] == "input_text" and text["text"].startswith("line 0: ")
    assert "call_1" in text["text"] and items[2]["output"][-1] is image
    assert ac.Conversation(out, format="responses").tokens <= BUDGET
    with pytest.raises(BudgetError):  # images over the budget by themselves
        fit_items(history([*parts, image, image]), BUDGET)
