"""LangChain's ``create_agent(response_format=...)`` sends the structured output's schema with
every model call: a tool of its own (``ToolStrategy``) or the provider's response format
(``ProviderStrategy``). The middleware counted only ``request.tools``, so an 80-field schema
(about 2,400 tokens) went to the model on top of a full budget."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")

from langchain.agents import create_agent
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import create_model

import agentcontext as ac
from agentcontext.integrations.langchain import AgentContextMiddleware, to_openai

FIELDS = [f"field_number_{k}_with_a_long_descriptive_name" for k in range(80)]
Report = create_model("Report", **{name: (str, ...) for name in FIELDS})  # type: ignore[call-overload]
BUDGET = 6_000


class Recording(GenericFakeChatModel):
    """Records, for every call, the tokens of its messages, bound tools and response format."""

    sent: list[int] = []  # noqa: RUF012 - a pydantic field, set per instance
    beside: int = 0

    def bind_tools(self, tools: Any, **kwargs: Any) -> Recording:
        self.beside = sum(ac.count_tokens(json.dumps(convert_to_openai_tool(t))) for t in tools)
        if "response_format" in kwargs:
            self.beside += ac.count_tokens(json.dumps(kwargs["response_format"]))
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.sent.append(ac.Conversation([to_openai(m) for m in messages]).tokens + self.beside)
        return super()._generate(messages, *args, **kwargs)


@tool
def read(path: str) -> str:
    """Read a file."""
    return "\n".join(f"{k:4d}  def handler_{k}(request): return session.load(request.key)" for k in range(120))


@pytest.mark.parametrize("strategy", [ToolStrategy, ProviderStrategy])
def test_the_structured_output_schema_is_counted_in(strategy: Any) -> None:
    report = dict.fromkeys(FIELDS, "v")
    script = [AIMessage("", tool_calls=[{"id": f"c{i}", "name": "read", "args": {"path": f"m{i}"}}]) for i in range(4)]
    if strategy is ToolStrategy:
        script.append(AIMessage("", tool_calls=[{"id": "out", "name": "Report", "args": report}]))
    else:
        script.append(AIMessage(json.dumps(report)))
    model = Recording(messages=iter(script))
    model.sent = []
    agent = create_agent(model, [read], middleware=[AgentContextMiddleware(BUDGET)], response_format=strategy(Report))
    result = agent.invoke({"messages": [HumanMessage("Review the handlers.")]})
    assert result["structured_response"].field_number_0_with_a_long_descriptive_name == "v"
    assert len(model.sent) == 5 and model.beside > 2_000
    assert max(model.sent) <= BUDGET, model.sent
