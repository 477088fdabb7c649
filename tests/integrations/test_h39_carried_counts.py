"""The compacting middleware carries each thread's working set with its tokens, so that the next
call counts only its new messages: after every call (compacting or not), the tokens carried are
those of the messages carried, counted whole, and the list a call sent is not the one kept."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")

from langchain.agents.middleware.types import ModelRequest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import agentcontext as ac
from agentcontext.integrations.langchain import STATE_KEY, AgentContextMiddleware, _convert

OUTPUT = "line of output\n" * 200


@pytest.mark.parametrize("encoding", ["o200k_base", "approximate"])
def test_the_tokens_carried_are_those_of_the_messages_carried(encoding: str) -> None:
    mw = AgentContextMiddleware(ac.Budget(6000, encoding=encoding, recent_tools=1), compaction=True)  # type: ignore[arg-type]
    model = GenericFakeChatModel(messages=iter([]))
    system = SystemMessage("You are helpful.", id="sys")
    stored: Any = None
    msgs: list[Any] = [HumanMessage("Please review the handlers.", id="h0")]
    for n in range(1, 30):
        # The agent's state grows by one call and its result per call (the same objects).
        i = n - 1
        call = {"id": f"c{i}", "name": "read_file", "args": {"path": f"f{i}.py"}}
        msgs = [*msgs, AIMessage(f"Reading {i}.", id=f"a{i}", tool_calls=[call])]
        msgs = [*msgs, ToolMessage(f"# f{i}\n" + OUTPUT, tool_call_id=f"c{i}", id=f"t{i}")]
        state: dict[str, Any] = {"messages": msgs, STATE_KEY: stored}
        req = ModelRequest(model=model, messages=msgs, system_message=system, tools=[], state=state)  # type: ignore[arg-type]
        fitted, update = mw.compile_request(req)
        if update is not None:
            stored = update
        count, last, base, since, tokens, _ = mw._carry._held["h0"]
        assert (count, last) == (len(msgs), msgs[-1].id)
        carried = [*base, *msgs[since:]]
        assert carried == fitted.messages and carried is not fitted.messages
        assert tokens == mw._carry.tokens(carried, _convert), n
    assert mw.compactions >= 3
