"""The LangGraph hooks fit the messages again while what the agent's callable prompt makes of
them is over the budget. A prompt that is over the budget by itself never fits: the hook raises
:class:`~agentcontext.errors.BudgetError` naming it, not sends the last fit over the budget."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph", reason="LangGraph is not installed (pip install 'agentcontext[langgraph]')")

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableLambda

import agentcontext as ac
from agentcontext.errors import BudgetError
from agentcontext.integrations.langchain import to_openai
from agentcontext.integrations.langgraph import compact_hook, fit_hook


def history() -> list[BaseMessage]:
    out: list[BaseMessage] = [HumanMessage("start", id="h0")]
    for i in range(30):
        call = {"id": f"c{i}", "name": "f", "args": {}}
        out += [
            AIMessage("", id=f"a{i}", tool_calls=[call]),
            ToolMessage(f"result {i} " * 30, tool_call_id=f"c{i}", id=f"t{i}"),
        ]
    return [*out, HumanMessage("what now? " * 5, id="h1")]


def big_rules(state: Any) -> list[BaseMessage]:
    return [SystemMessage("rule " * 500), *state["messages"]]


@pytest.mark.parametrize("hook", [fit_hook, compact_hook])
@pytest.mark.parametrize("form", ["callable", "runnable"])
def test_a_prompt_over_the_budget_by_itself_is_a_budget_error(hook: Any, form: str) -> None:
    prompt = big_rules if form == "callable" else RunnableLambda(big_rules)
    with pytest.raises(BudgetError, match="cannot hold what the prompt makes of the fitted messages") as caught:
        hook(400, prompt=prompt).invoke({"messages": history()})
    assert caught.value.needed > 400


@pytest.mark.parametrize("hook", [fit_hook, compact_hook])
def test_a_prompt_that_fits_beside_the_messages_is_counted_in(hook: Any) -> None:
    out = hook(1000, prompt=big_rules).invoke({"messages": history()})
    fitted = out["llm_input_messages"] if "llm_input_messages" in out else out["messages"][1:]
    sent = big_rules({"messages": fitted})
    assert ac.Conversation([to_openai(m) for m in sent]).tokens <= 1000
