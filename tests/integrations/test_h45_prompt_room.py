"""A LangGraph hook given a callable prompt fits the messages again with the room the prompt takes:
a first fit that left room to spare is over by less than the prompt adds, and growing the room
by that excess alone gave the same fit every round, then a BudgetError the str prompt does not
give."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph", reason="LangGraph is not installed (pip install 'agentcontext[langgraph]')")

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableLambda

import agentcontext as ac
from agentcontext.integrations.langchain import to_openai
from agentcontext.integrations.langgraph import compact_hook, fit_hook

SYSTEM = "system " * 300  # 305 tokens as a system message


def round_of(i: int) -> list[BaseMessage]:
    out = "\n".join(f"{k} data row {i} {k} lorem ipsum" for k in range(60))
    return [
        HumanMessage(f"ask {i}", id=f"h{i}"),
        AIMessage("", tool_calls=[{"id": f"c{i}", "name": "r", "args": {"i": i}}], id=f"a{i}"),
        ToolMessage(out, tool_call_id=f"c{i}", id=f"t{i}"),
        AIMessage(f"done {i}", id=f"d{i}"),
    ]


def tokens(messages: list[BaseMessage]) -> int:
    return ac.Conversation([to_openai(m) for m in messages]).tokens


@pytest.mark.parametrize(
    "prompt",
    [
        lambda state: [SystemMessage(SYSTEM), *state["messages"]],
        RunnableLambda(lambda state: [SystemMessage(SYSTEM), *state["messages"]]),
    ],
    ids=["callable", "runnable"],
)
@pytest.mark.parametrize("factory", [fit_hook, compact_hook])
def test_a_callable_prompt_is_fitted_like_its_text(prompt: object, factory: object) -> None:
    history = [m for i in range(20) for m in round_of(i)]
    key = "llm_input_messages" if factory is fit_hook else "messages"
    by_text = fit_hook(1_500, prompt=SYSTEM).invoke({"messages": history})["llm_input_messages"]
    out = factory(1_500, prompt=prompt).invoke({"messages": history})[key]  # type: ignore[operator]
    sent = [m for m in out if isinstance(m, BaseMessage) and m.type != "remove"]
    assert tokens([SystemMessage(SYSTEM), *sent]) <= 1_500
    assert [m.id for m in sent] == [m.id for m in by_text]
    assert sent[-4:] == history[-4:]
