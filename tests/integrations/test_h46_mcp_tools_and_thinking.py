"""What the model receives beside the messages, counted (h46): the tools of an Agents SDK agent's
MCP servers (``Agent(mcp_servers=...)``) in ``input_filter``, and the ``thinking_blocks`` LiteLLM
keeps on assistant messages in ``fit_messages``. Before, neither was counted: an agent with one
MCP server of 12 tools received over 7,000 tokens under a 4,000 budget, and a LiteLLM history
with thinking on every turn was sent at about twice its budget."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import agentcontext as ac
from tests.integration_support import Message, tool_schema_tokens

BUDGET = 4_000
TASK = "Review the handlers and report what to change."


def _tool(k: int) -> dict[str, Any]:
    properties = {f"argument_{j}_of_tool_{k}": {"type": "string", "description": f"Argument {j}."} for j in range(6)}
    return {
        "name": f"mcp_tool_{k}",
        "description": f"Tool {k} of the MCP server: looks a thing up in the index and says what it found.",
        "inputSchema": {"type": "object", "properties": properties},
    }


# -- Agents SDK: MCP servers' tools --------------------------------------------------------------


def _agents() -> Any:
    pytest.importorskip(
        "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
    )
    import agents

    agents.set_tracing_disabled(True)
    return agents


def _server(listed: bool, tool_filter: Any = None) -> Any:
    """An MCP server of 12 tools (no process, no network): it keeps the list it last gave when
    ``listed`` (as the SDK's servers do: ``cached_tools``), else none (the base class's None)."""
    from agents.mcp import MCPServer
    from mcp.types import Tool

    tools = [Tool(**_tool(k)) for k in range(12)]

    class Server(MCPServer):
        def __init__(self) -> None:
            super().__init__()
            self.tool_filter = tool_filter
            self.fetched: list[Any] | None = None

        @property
        def name(self) -> str:
            return "index"

        async def connect(self) -> None:
            return None

        async def cleanup(self) -> None:
            return None

        async def list_tools(self, run_context: Any = None, agent: Any = None) -> list[Any]:
            self.fetched = tools
            return tools

        async def call_tool(self, tool_name: str, arguments: Any, meta: Any = None) -> Any:
            raise AssertionError("not called")

        async def list_prompts(self) -> Any:
            raise AssertionError("not called")

        async def get_prompt(self, name: str, arguments: Any = None) -> Any:
            raise AssertionError("not called")

        if listed:

            @property
            def cached_tools(self) -> list[Any] | None:
                return self.fetched

    return Server()


def _history() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    for k in range(12):
        items += [
            {"type": "function_call", "call_id": f"c{k}", "name": "mcp_tool_1", "arguments": '{"q": "x"}'},
            {"type": "function_call_output", "call_id": f"c{k}", "output": f"result {k} " + "found it " * 120},
        ]
    return items


def test_an_agents_mcp_tools_are_counted_in_the_input_filter() -> None:
    agents = _agents()
    from agents.models.interface import Model

    sent: list[int] = []

    class Recording(Model):
        async def get_response(self, system_instructions: Any, input: Any, model_settings: Any, tools: Any, *a: Any, **k: Any) -> Any:  # fmt: skip
            items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
            conv = ac.Conversation([{"role": "system", "content": system_instructions}, *items], format="responses")
            sent.append(
                conv.tokens + sum(tool_schema_tokens(t.name, t.description, t.params_json_schema) for t in tools)
            )
            from agents.items import ModelResponse
            from agents.usage import Usage
            from openai.types.responses import ResponseOutputMessage, ResponseOutputText

            text = ResponseOutputText(type="output_text", text="done", annotations=[])
            message = ResponseOutputMessage(
                id="m", type="message", role="assistant", status="completed", content=[text]
            )
            return ModelResponse(output=[message], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("get_response only")

    from agentcontext.integrations.openai_agents import input_filter

    server = _server(listed=True)
    agent = agents.Agent(name="a", instructions="Be exact.", model=Recording(), mcp_servers=[server])
    config = agents.RunConfig(call_model_input_filter=input_filter(BUDGET))
    asyncio.run(agents.Runner.run(agent, _history(), run_config=config))
    mcp = sum(tool_schema_tokens(name=t["name"], description=t["description"], parameters=t["inputSchema"]) for t in map(_tool, range(12)))  # fmt: skip
    assert mcp > 1_500 and len(sent) == 1
    assert sent[0] <= BUDGET, sent


def _filtered(agent: Any, items: list[dict[str, Any]]) -> list[Any]:
    from agents.run_config import CallModelData, ModelInputData

    from agentcontext.integrations.openai_agents import input_filter

    data = CallModelData(model_data=ModelInputData(input=items, instructions="Be exact."), agent=agent, context=None)
    return list(asyncio.run(input_filter(BUDGET)(data)).input)


def test_only_the_tools_a_server_listed_and_its_static_filter_lets_through_are_counted() -> None:
    agents = _agents()
    items = _history()
    alone = _filtered(agents.Agent(name="a", instructions="Be exact."), items)
    # A server that keeps no list (or was never listed) counts nothing: documented, not fetched here.
    unlisted = _server(listed=False)
    asyncio.run(unlisted.list_tools())
    assert _filtered(agents.Agent(name="a", mcp_servers=[unlisted]), items) == alone
    listed = _server(listed=True)
    assert _filtered(agents.Agent(name="a", mcp_servers=[listed]), items) == alone  # not listed yet
    asyncio.run(listed.list_tools())
    counted = _filtered(agents.Agent(name="a", mcp_servers=[listed]), items)
    assert len(counted) < len(alone)
    # A static filter that lets one tool through: about that tool's tokens counted.
    one = _server(listed=True, tool_filter={"allowed_tool_names": ["mcp_tool_0"]})
    asyncio.run(one.list_tools())
    assert len(counted) < len(_filtered(agents.Agent(name="a", mcp_servers=[one]), items)) <= len(alone)


def test_servers_that_answer_badly_count_nothing_and_do_not_fail_the_fit() -> None:
    agents = _agents()
    items = _history()
    alone = _filtered(agents.Agent(name="a", instructions="Be exact."), items)

    class Broken:
        @property
        def cached_tools(self) -> Any:
            raise RuntimeError("no")

    class Odd:
        cached_tools = ("not a list",)

    agent = agents.Agent(name="a")
    agent.mcp_servers = [Broken(), Odd()]  # type: ignore[list-item]
    assert _filtered(agent, items) == alone


# -- LiteLLM: thinking blocks ---------------------------------------------------------------------

THOUGHT = "Let me think about which handler fails first and why the session is not loaded. " * 40


class Thinking(Message):
    """LiteLLM's reply message with its ``thinking_blocks`` (Anthropic's thinking)."""

    thinking_blocks: list[dict[str, Any]] | None = None


def _litellm_history(as_objects: bool) -> list[Any]:

    messages: list[Any] = [{"role": "system", "content": "Be exact."}, {"role": "user", "content": TASK}]
    for k in range(10):
        thinking = [{"type": "thinking", "thinking": f"Turn {k}. {THOUGHT}", "signature": "sig"}]
        call = {"id": f"c{k}", "type": "function", "function": {"name": "read", "arguments": '{"path": "x"}'}}
        if as_objects:
            message: Any = Thinking(content=None, tool_calls=[call], thinking_blocks=thinking)
        else:
            message = {"role": "assistant", "content": None, "tool_calls": [call], "thinking_blocks": thinking}
        messages += [message, {"role": "tool", "tool_call_id": f"c{k}", "content": f"result {k} " + "ok " * 150}]
    return messages


def _sent(messages: list[Any]) -> int:
    """The tokens a model that reads thinking blocks receives: the messages and their thinking."""
    from agentcontext.integrations.litellm import to_dict

    dicts = [to_dict(m) for m in messages]
    thinking = sum(ac.count_tokens(b["thinking"]) for d in dicts for b in d.get("thinking_blocks") or [])
    return ac.Conversation(dicts, format="openai").tokens + thinking


@pytest.mark.parametrize("as_objects", [False, True])
def test_litellm_thinking_blocks_are_counted(as_objects: bool) -> None:
    from agentcontext.integrations.litellm import afit_messages, fit_messages

    messages = _litellm_history(as_objects)
    assert _sent(messages) > 2 * BUDGET
    fitted = fit_messages(messages, BUDGET)
    assert _sent(fitted) <= BUDGET, _sent(fitted)
    assert any(m.get("thinking_blocks") if isinstance(m, dict) else getattr(m, "thinking_blocks", None) for m in fitted)
    assert asyncio.run(afit_messages(messages, BUDGET)) == fitted


def test_litellm_thinking_blocks_of_odd_shapes_are_read_or_passed_over() -> None:
    from agentcontext.integrations.litellm import fit_messages

    messages = _litellm_history(False)
    messages[2]["thinking_blocks"] = "not a list"
    messages[4]["thinking_blocks"] = [None, 3, {"type": "redacted_thinking", "data": "QUJD" * 500}, {"thinking": 7}]
    fitted = fit_messages(messages, BUDGET)
    assert ac.Conversation(fitted, format="openai").tokens <= BUDGET
    # Without any thinking, one fit as before: the same output as the plain fit.
    plain = [{k: v for k, v in m.items() if k != "thinking_blocks"} for m in _litellm_history(False)]
    assert fit_messages(plain, BUDGET) == ac.trim_messages(plain, BUDGET, format="openai")
    assert json.dumps(fit_messages(plain, BUDGET))  # plain dicts back
