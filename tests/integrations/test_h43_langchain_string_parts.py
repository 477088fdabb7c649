"""LangChain allows bare strings in a content list beside the blocks (``content: str | list[str |
dict]``): a user may send ``HumanMessage(["Look at", "this"])``, and a ``ToolMessage`` built by
hand (or by a tool that returns one) may hold ``["part one", "part two"]``. The adapters refused
such a message ("a content part must be an object, got a string"), failing the run. Each string
is now read as the text part OpenAI reads (LangChain's own ``convert_to_openai_messages`` does the
same), so such a message is fitted, and such a result cleared or, newest and over the budget, cut."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")
pytest.importorskip("langgraph", reason="LangGraph is not installed (pip install 'agentcontext[langgraph]')")

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

import agentcontext as ac
from agentcontext.integrations.langchain import AgentContextMiddleware, fit_messages, to_openai
from agentcontext.integrations.langgraph import fit_hook

BUDGET = 3_000
BIG = [f"line {k}: " + "data " * 10 for k in range(2_000)]


@tool
def dump_log(name: str) -> str:
    """Dump a whole log."""
    return "\n".join(BIG)


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return "\n".join(f"{path}: line {k} " + "code " * 20 for k in range(30))


class FakeModel(GenericFakeChatModel):
    calls: list[list[BaseMessage]] = []  # noqa: RUF012 - a pydantic field, set per instance

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.calls.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def model() -> FakeModel:
    script: list[AIMessage] = []
    for t in range(6):
        script.append(AIMessage("", tool_calls=[{"id": f"call_{t}", "name": "read_file", "args": {"path": f"m{t}"}}]))
    script.append(AIMessage("", tool_calls=[{"id": "call_big", "name": "dump_log", "args": {"name": "app"}}]))
    script.append(AIMessage("Done."))
    m = FakeModel(messages=iter(script))
    m.calls = []
    return m


def check(calls: list[list[BaseMessage]]) -> None:
    assert len(calls) == 8
    for call in calls:
        conv = ac.Conversation([to_openai(x) for x in call])
        assert conv.tokens <= BUDGET and conv.validate() == []
        assert any(isinstance(x, HumanMessage) for x in call)
    cut = [x for x in calls[-1] if isinstance(x, ToolMessage) and x.tool_call_id == "call_big"]
    assert len(cut) == 1 and isinstance(cut[0].content, str) and 'recall(id="call_big")' in cut[0].content


def test_the_middleware_fits_a_request_of_bare_strings() -> None:
    m = model()
    agent = create_agent(m, [read_file, dump_log], middleware=[AgentContextMiddleware(BUDGET)])
    out = agent.invoke({"messages": [HumanMessage(["Read the modules", "then dump the log."])]})
    check(m.calls)
    # The state keeps the tools' own results whole.
    whole = [x for x in out["messages"] if isinstance(x, ToolMessage) and x.tool_call_id == "call_big"]
    assert whole[0].content == "\n".join(BIG)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_langgraph_hook_fits_a_request_of_bare_strings() -> None:
    from langgraph.prebuilt import create_react_agent

    m = model()
    agent = create_react_agent(m, [read_file, dump_log], pre_model_hook=fit_hook(BUDGET, tools=[read_file, dump_log]))
    agent.invoke({"messages": [HumanMessage(["Read the modules", "then dump the log."])]})
    check(m.calls)


def test_a_result_of_bare_strings_is_cleared_and_cut() -> None:
    history: list[BaseMessage] = [HumanMessage("Read the modules.")]
    for t in range(6):
        history += [
            AIMessage("", tool_calls=[{"id": f"call_{t}", "name": "read_file", "args": {"path": f"m{t}"}}]),
            ToolMessage([f"m{t}: line {k} " + "code " * 20 for k in range(30)], tool_call_id=f"call_{t}"),
        ]
    history += [
        AIMessage("", tool_calls=[{"id": "call_big", "name": "dump_log", "args": {}}]),
        ToolMessage(BIG, tool_call_id="call_big"),
    ]
    out = fit_messages(history, BUDGET)
    conv = ac.Conversation([to_openai(x) for x in out])
    assert conv.tokens <= BUDGET and conv.validate() == []
    cut = out[-1]
    assert isinstance(cut, ToolMessage) and isinstance(cut.content, str) and 'recall(id="call_big")' in cut.content
    assert history[-1].content == BIG  # the caller's message as it was


def test_to_openai_reads_bare_strings_as_text_parts() -> None:
    message = HumanMessage(["Look at", {"type": "text", "text": "this"}])
    assert to_openai(message)["content"] == [{"type": "text", "text": "Look at"}, {"type": "text", "text": "this"}]
    history = [message, AIMessage(["Sure."])]
    assert fit_messages(history, 1_000) == history  # the caller's own objects where unchanged
