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
    return "\n".join(
        f"{k:5d}  def handler_{i}_{k}(request): return session.load(request.key, {k})" for k in range(lines)
    )


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


def schema_tokens(tools: list[Any]) -> int:
    """The tool schemas the model receives, counted with the project's counter."""
    return sum(ac.count_tokens(json.dumps(convert_to_openai_tool(t), ensure_ascii=False)) for t in tools)


def check_run(m: FakeAgentModel, asks: list[str]) -> None:
    """Every call: its messages and tool schemas within the budget, the system prompt first,
    every tool call with its result, the latest ask present."""
    assert len(m.calls) == 2 * len(asks)
    schemas = schema_tokens(m.tools)
    assert schemas > 0
    for k, call in enumerate(m.calls):
        conv = ac.Conversation([to_openai(x) for x in call])
        assert conv.tokens + schemas <= BUDGET, (k, conv.tokens + schemas)
        assert isinstance(call[0], SystemMessage) and call[0].content == SYSTEM
        assert conv.validate() == []
        assert any(asks[k // 2] == x.content for x in call if isinstance(x, HumanMessage))


def run(agent: Any, turns: int) -> list[str]:
    messages: list[BaseMessage] = []
    asks = []
    for t in range(turns):
        asks.append(f"Ask {t}: review module {t} and report leaks.")
        messages = agent.invoke({"messages": [*messages, HumanMessage(asks[-1])]})["messages"]
    return asks


@pytest.mark.parametrize(("compaction", "turns"), [(False, TURNS), (True, 12)], ids=["fit", "compaction"])
def test_create_agent_30_turns_every_call_within_budget(compaction: bool, turns: int) -> None:
    m = fake_model(turns)
    middleware = AgentContextMiddleware(BUDGET, compaction=compaction)
    agent = create_agent(m, [read_file, dump_log], system_prompt=SYSTEM, middleware=[middleware])
    check_run(m, run(agent, turns))
    # The history grew far past the budget (results of about 1,300 tokens): the fitting had to work.
    assert len(m.calls[-1]) < 4 * turns
    if compaction:
        # The working set is carried: the ladder ran on some calls, not on every one.
        assert 0 < middleware.compactions < len(m.calls) // 2


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize(("prompt_form", "turns"), [("str", TURNS), ("system_message", 8), ("callable", 8)])
def test_langgraph_30_turns_counts_the_prompt_and_tools(prompt_form: str, turns: int) -> None:
    from langgraph.prebuilt import create_react_agent

    from agentcontext.integrations.langgraph import fit_hook

    prompt: Any = {
        "str": SYSTEM,
        "system_message": SystemMessage(SYSTEM),
        "callable": lambda state: [SystemMessage(SYSTEM), *state["messages"]],
    }[prompt_form]
    m = fake_model(turns)
    tools = [read_file, dump_log]
    hook = fit_hook(BUDGET, prompt=prompt, tools=tools)
    agent = create_react_agent(m, tools, prompt=prompt, pre_model_hook=hook)
    check_run(m, run(agent, turns))


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


def test_misuse_is_a_typed_error_naming_the_fix() -> None:
    from agentcontext.integrations.langchain import fit_messages
    from agentcontext.integrations.langgraph import fit_hook

    with pytest.raises(
        ac.InvalidMessageError, match=r"message 0: builtins.dict is not a LangChain message.*trim_messages"
    ):
        fit_messages([{"role": "user", "content": "hi"}], ac.Budget(1_000))  # type: ignore[list-item]
    with pytest.raises(ac.OptionError, match="unknown encoding"):
        ac.Budget(1_000, encoding="bogus")  # type: ignore[arg-type]
    with pytest.raises(ac.OptionError, match="unknown encoding"):
        AgentContextMiddleware(ac.Budget(1_000, encoding="p50k"))  # type: ignore[arg-type]
    # The factory given uncalled: LangGraph calls it with the state, and is told to call it.
    with pytest.raises(ac.ArgumentTypeError, match=r"call it, pre_model_hook=fit_hook\(budget\)"):
        fit_hook({"messages": [HumanMessage("hi")]})  # type: ignore[arg-type]
    with pytest.raises(ac.ArgumentTypeError, match="prompt must be"):
        fit_hook(1_000, prompt=42)


def test_an_anthropic_tool_use_block_is_counted_once() -> None:
    call = {"id": "toolu_1", "name": "read_file", "args": {"path": "src/a_very_long_module_name.py"}}
    block = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": call["args"]}
    both = AIMessage([{"type": "text", "text": "Reading."}, block], tool_calls=[call])
    calls_only = AIMessage([{"type": "text", "text": "Reading."}], tool_calls=[call])
    assert ac.Conversation([to_openai(both)]).tokens == ac.Conversation([to_openai(calls_only)]).tokens
    # A rebuilt message (its text cut) keeps its tool_use block.
    from agentcontext.integrations.langchain import _rebuild

    rebuilt = _rebuild(both, [(0, {"content": "Read."})])
    assert rebuilt.content[-1] == block and rebuilt.tool_calls == both.tool_calls


def test_a_message_is_converted_once_across_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    import agentcontext.integrations.langchain as lc

    seen: list[int] = []
    real = lc.to_openai

    def counting(message: BaseMessage, index: int = 0) -> dict[str, Any]:
        seen.append(id(message))
        return real(message, index)

    monkeypatch.setattr(lc, "to_openai", counting)
    middleware = AgentContextMiddleware(BUDGET)
    m = fake_model(8)
    agent = create_agent(m, [read_file], system_prompt=SYSTEM, middleware=[middleware])
    run(agent, 8)
    # 16 calls over a growing history: each message (and the system message) converted once.
    assert len(m.calls) == 16 and len(seen) == len(set(seen))
    # A message whose content is set anew is converted again.
    msgs = [HumanMessage("first ask"), AIMessage("an answer")]
    cache = lc.converted()
    lc.fit_messages(msgs, BUDGET, cache=cache)
    before = len(seen)
    msgs[1].content = "a longer answer, changed in place"
    out = lc.fit_messages(msgs, BUDGET, cache=cache)
    assert len(seen) == before + 1 and out[1] is msgs[1]
