"""Issue 30 for LangChain's create_agent middleware and LangGraph's pre_model_hook: 30-turn agents
with their own fake model, tools returning large outputs and a long system prompt. Every call the
model receives (its messages, its system prompt and its tool schemas, counted with the project's
counter) fits the budget, keeps every tool call with its result and holds the latest ask; a newest
result larger than the budget is cut, not fatal."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")
pytest.importorskip("langgraph", reason="LangGraph is not installed (pip install 'agentcontext[langgraph]')")

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

import agentcontext as ac
from agentcontext.integrations.langchain import AgentContextMiddleware, to_openai

BUDGET = 4_000
SYSTEM = "You are a meticulous reviewer. " + " ".join(f"Rule {i}: check every handler for leaks." for i in range(60))
TURNS = 30


def output(i: int, lines: int = 60) -> str:
    return "\n".join(f"{k:5d}  def handler_{i}_{k}(request): return session.load(request.key, {k})" for k in range(lines))


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return output(int(path.rsplit("_", 1)[-1]))


@tool
def dump_log(name: str) -> str:
    """Dump a whole log."""
    return output(999, lines=1_200)  # about 30,000 tokens: far over the budget by itself


class FakeAgentModel(GenericFakeChatModel):
    """A fake model recording, for every call, what it receives: its messages and its tools."""

    calls: list[list[BaseMessage]] = []  # noqa: RUF012 - a pydantic field, set per instance
    tools: list[Any] = []  # noqa: RUF012

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeAgentModel:
        self.tools = list(tools)
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.calls.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def fake_model(turns: int, big_at: int | None = None) -> FakeAgentModel:
    script: list[AIMessage] = []
    for t in range(turns):
        name, args = ("dump_log", {"name": "all"}) if t == big_at else ("read_file", {"path": f"src/mod_{t}"})
        script.append(AIMessage(f"Looking at {t}.", tool_calls=[{"id": f"call_{t}", "name": name, "args": args}]))
        script.append(AIMessage(f"Turn {t} reviewed."))
    m = FakeAgentModel(messages=iter(script))
    m.calls, m.tools = [], []
    return m


def sent_tokens(call: list[BaseMessage], tools: list[Any]) -> int:
    """What one call holds, counted with the project's counter: messages and tool schemas."""
    conv = ac.Conversation([to_openai(m) for m in call])
    schemas = sum(ac.count_tokens(json.dumps(convert_to_openai_tool(t), ensure_ascii=False)) for t in tools)
    return conv.tokens + schemas


def check_run(m: FakeAgentModel, asks: list[str]) -> None:
    assert len(m.calls) == 2 * len(asks)
    for k, call in enumerate(m.calls):
        assert sent_tokens(call, m.tools) <= BUDGET, (k, sent_tokens(call, m.tools))
        assert isinstance(call[0], SystemMessage) and call[0].content == SYSTEM
        assert ac.Conversation([to_openai(x) for x in call]).validate() == []
        assert any(asks[k // 2] == x.content for x in call if isinstance(x, HumanMessage))


def run(agent: Any, turns: int) -> list[str]:
    messages: list[BaseMessage] = []
    asks = []
    for t in range(turns):
        asks.append(f"Ask {t}: review module {t} and report leaks.")
        messages = agent.invoke({"messages": [*messages, HumanMessage(asks[-1])]})["messages"]
    return asks


@pytest.mark.parametrize("compaction", [False, True], ids=["fit", "compaction"])
def test_create_agent_30_turns_every_call_within_budget(compaction: bool) -> None:
    m = fake_model(TURNS)
    middleware = AgentContextMiddleware(BUDGET, compaction=compaction)
    agent = create_agent(m, [read_file, dump_log], system_prompt=SYSTEM, middleware=[middleware])
    check_run(m, run(agent, TURNS))
    # The history grew far past the budget: the fitting had to work.
    assert sent_tokens(m.calls[-1], []) < sum(len(str(x.content)) for x in m.calls[-1]) or compaction
    if compaction:
        # The working set is carried: the ladder ran on some calls, not on every one.
        assert 0 < middleware.compactions < len(m.calls) // 2


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("prompt_form", ["str", "system_message", "callable"])
def test_langgraph_30_turns_counts_the_prompt_and_tools(prompt_form: str) -> None:
    from langgraph.prebuilt import create_react_agent

    from agentcontext.integrations.langgraph import fit_hook

    prompt: Any = {
        "str": SYSTEM,
        "system_message": SystemMessage(SYSTEM),
        "callable": lambda state: [SystemMessage(SYSTEM), *state["messages"]],
    }[prompt_form]
    m = fake_model(TURNS)
    tools = [read_file, dump_log]
    hook = fit_hook(BUDGET, prompt=prompt, tools=tools)
    agent = create_react_agent(m, tools, prompt=prompt, pre_model_hook=hook)
    check_run(m, run(agent, TURNS))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_an_oversized_newest_result_is_cut_not_fatal() -> None:
    from langgraph.prebuilt import create_react_agent

    from agentcontext.integrations.langgraph import compact_hook, fit_hook

    for hook, recall in [(fit_hook, 'recall(id="call_2")'), (compact_hook, "not stored")]:
        m = fake_model(4, big_at=2)
        tools = [read_file, dump_log]
        agent = create_react_agent(m, tools, prompt=SYSTEM, pre_model_hook=hook(BUDGET, prompt=SYSTEM, tools=tools))
        check_run(m, run(agent, 4))
        # The call right after the huge result holds it cut: head, marker, tail.
        cut = next(x for x in m.calls[5] if isinstance(x, ToolMessage) and x.tool_call_id == "call_2")
        assert cut.content.startswith(output(999, 1)) and cut.content.endswith(output(999, 1_200).rsplit("\n", 1)[1])
        assert recall in cut.content
    m = fake_model(4, big_at=2)
    agent = create_agent(m, tools, system_prompt=SYSTEM, middleware=[AgentContextMiddleware(BUDGET)])
    check_run(m, run(agent, 4))
