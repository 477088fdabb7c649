"""The compacting middleware keeps what it sent for its next call; a handler (another middleware
further in) that changes the request's message list in place must not change what it kept: the
next calls then sent a corrupted history (the injected message kept, the request lost)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")

from langchain.agents.middleware.types import ModelRequest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

import agentcontext as ac
from agentcontext.integrations.langchain import AgentContextMiddleware, to_openai

OUTPUT = "line of output\n" * 200


def history(n: int) -> list[BaseMessage]:
    msgs: list[BaseMessage] = [HumanMessage("Please review the handlers.", id="h0")]
    for i in range(n):
        call = {"id": f"c{i}", "name": "read_file", "args": {"path": f"f{i}.py"}}
        msgs.append(AIMessage(f"Reading {i}.", id=f"a{i}", tool_calls=[call]))
        msgs.append(ToolMessage(f"# f{i}\n" + OUTPUT, tool_call_id=f"c{i}", id=f"t{i}"))
    return msgs


def sent(mw: AgentContextMiddleware, msgs: list[BaseMessage], mutate: Any = None) -> list[Any]:
    seen: list[Any] = []

    def handler(req: ModelRequest) -> AIMessage:
        seen.extend(to_openai(m) for m in req.messages)
        if mutate is not None:
            mutate(req.messages)
        return AIMessage("ok")

    model = GenericFakeChatModel(messages=iter([]))
    system = SystemMessage("You are helpful.", id="sys")
    req = ModelRequest(model=model, messages=msgs, system_message=system, tools=[], state={"messages": msgs})
    mw.wrap_model_call(req, handler)
    return seen


@pytest.mark.parametrize("mutate", ["append", "clear", "pop", "reverse"])
def test_a_handler_changing_the_sent_list_changes_nothing_kept(mutate: str) -> None:
    def change(messages: list[BaseMessage]) -> None:
        if mutate == "append":
            messages.append(HumanMessage("INJECTED " * 500, id="inj"))
        elif mutate == "clear":
            messages.clear()
        elif mutate == "pop" and messages:
            messages.pop()
        elif mutate == "reverse":
            messages.reverse()

    budget = ac.Budget(6000, recent_tools=1, recent_messages=2)
    changed = AgentContextMiddleware(budget, compaction=True)
    untouched = AgentContextMiddleware(budget, compaction=True)
    for n in range(1, 12):
        msgs = history(n)
        assert sent(changed, msgs, change) == sent(untouched, list(msgs)), n
    assert changed.compactions == untouched.compactions
