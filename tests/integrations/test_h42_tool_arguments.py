"""A fit may change an assistant message's tool call arguments, not only its content: a budget
with ``clear_tool_inputs`` clears old calls' arguments, and the compaction ladder cuts long ones.
The LangChain adapter's copy of such a message carries the arguments as the fit left them (what
was counted is what is sent), in its ``tool_calls`` and in an Anthropic ``tool_use`` block's
input, and keeps the message's own empty content rather than None."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")

from langchain.agents.middleware.types import ModelRequest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

import agentcontext as ac
from agentcontext.integrations.langchain import AgentContextMiddleware, converted, fit_messages, to_openai
from agentcontext.observe.events import CompactionFinished

BODY = "x = 1\n" * 300


def history(blocks: bool = False) -> list[BaseMessage]:
    out: list[BaseMessage] = [HumanMessage("Write the files.", id="h0")]
    for i in range(12):
        args = {"path": f"f{i}.py", "content": BODY}
        call = {"id": f"c{i}", "name": "write_file", "args": args}
        content: Any = [{"type": "tool_use", "id": f"c{i}", "name": "write_file", "input": args}] if blocks else ""
        out += [AIMessage(content, id=f"a{i}", tool_calls=[call]), ToolMessage("ok", tool_call_id=f"c{i}", id=f"t{i}")]
    return out


def tokens(messages: list[BaseMessage]) -> int:
    return ac.Conversation([to_openai(m) for m in messages]).tokens


@pytest.mark.parametrize("cached", [False, True])
@pytest.mark.parametrize("blocks", [False, True], ids=["openai", "anthropic blocks"])
def test_cleared_arguments_are_sent_as_counted(cached: bool, blocks: bool) -> None:
    budget = ac.Budget(12_000, clear_tool_inputs=True, recent_tools=2)
    messages = history(blocks)
    sent = fit_messages(messages, budget, cache=converted() if cached else None)
    assert len(sent) == len(messages)  # nothing dropped: the old calls' arguments were cleared
    assert tokens(sent) == ac.Conversation(budget.fit_dicts([to_openai(m) for m in messages], "openai")).tokens
    assert tokens(sent) <= 12_000
    calls = [m for m in sent if isinstance(m, AIMessage)]
    assert all(m.content is not None for m in calls)
    assert "cleared" in calls[0].tool_calls[0]["args"] and calls[-1].tool_calls[0]["args"]["content"] == BODY
    if blocks:
        assert calls[0].content[-1]["input"] == calls[0].tool_calls[0]["args"]  # type: ignore[index]
    # The history is unchanged.
    assert all(m.tool_calls[0]["args"]["content"] == BODY for m in messages if isinstance(m, AIMessage))


def test_the_ladders_cut_arguments_are_sent_as_counted() -> None:
    events: list[Any] = []
    mw = AgentContextMiddleware(
        ac.Budget(5000, clear_tool_inputs=True, recent_tools=2), compaction=True, on_event=events.append
    )
    messages = history()
    model = GenericFakeChatModel(messages=iter([]))
    request = ModelRequest(model=model, messages=messages, system_message=None, tools=[], state={"messages": messages})  # type: ignore[arg-type]
    sent = list(mw.fit_request(request).messages)
    (ladder,) = [e for e in events if isinstance(e, CompactionFinished) and e.kind != "fit"]
    assert all(m.content is not None for m in sent)
    # Sent as the ladder counted it (a token or two apart: arguments are written anew as JSON).
    assert abs(tokens(sent) - ladder.tokens_after) <= 4
