"""The compacting middleware carries each thread's working set from one call to the next (the
messages a compaction left, then the history's new ones). A message of that working set which the
state has since replaced by id (LangGraph's ``add_messages`` replaces a message given again with
the same id, at its place: how a history is edited) or removed is not sent as it was: the carry is
dropped and the call reads the state's messages, as a first call would."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")

from langchain.agents.middleware.types import ModelRequest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

import agentcontext as ac
from agentcontext.integrations.langchain import STATE_KEY, AgentContextMiddleware, _convert

OUTPUT = "line of output\n" * 200


class Agent:
    """A thread of calls through one compacting middleware, the state kept as an agent keeps it."""

    def __init__(self, encoding: str = "approximate") -> None:
        self.mw = AgentContextMiddleware(ac.Budget(6000, encoding=encoding, recent_tools=1), compaction=True)  # type: ignore[arg-type]
        self.model = GenericFakeChatModel(messages=iter([]))
        self.system = SystemMessage("You are helpful.", id="sys")
        self.stored: Any = None
        self.messages: list[BaseMessage] = [HumanMessage("Please review the handlers.", id="h0")]

    def request(self) -> ModelRequest:
        state = {"messages": self.messages, STATE_KEY: self.stored}
        return ModelRequest(
            model=self.model,
            messages=self.messages,
            system_message=self.system,
            tools=[],
            state=state,  # type: ignore[arg-type]
        )

    def call(self) -> list[BaseMessage]:
        fitted, update = self.mw.compile_request(self.request())
        if update is not None:
            self.stored = update
        return list(fitted.messages)

    def step(self, i: int) -> list[BaseMessage]:
        call = {"id": f"c{i}", "name": "read_file", "args": {"path": f"f{i}.py"}}
        self.messages = [
            *self.messages,
            AIMessage(f"Reading {i}.", id=f"a{i}", tool_calls=[call]),
            ToolMessage(f"# f{i}\n" + OUTPUT, tool_call_id=f"c{i}", id=f"t{i}"),
        ]
        return self.call()

    def carried(self) -> tuple[BaseMessage, ...]:
        return self.mw._carry._held["h0"][2]  # type: ignore[no-any-return]

    def replace(self, new: BaseMessage) -> None:
        """The state's message of ``new.id`` replaced by ``new`` at its place (``add_messages``)."""
        self.messages = [new if m.id == new.id else m for m in self.messages]


def compacted(encoding: str = "approximate") -> Agent:
    agent = Agent(encoding)
    for i in range(11):
        agent.step(i)
    assert agent.mw.summaries >= 1
    return agent


@pytest.mark.parametrize("encoding", ["approximate", "o200k_base"])
def test_a_carried_message_replaced_by_id_is_sent_as_the_state_holds_it(encoding: str) -> None:
    agent = compacted(encoding)
    # The newest carried request: the call compacts again (the carry is dropped) and keeps it.
    old = [m for m in agent.carried() if isinstance(m, AIMessage) and m.id][-1]
    agent.replace(AIMessage("EDITED " + str(old.content), id=old.id, tool_calls=old.tool_calls))
    agent.messages = [*agent.messages, HumanMessage("Go on.", id="h1")]
    sent = {m.id: m for m in agent.call()}
    assert sent[old.id].content == "EDITED " + str(old.content)
    # The tokens carried after this call are those of what it sent (counted whole).
    count, last, base, since, tokens, _ = agent.mw._carry._held["h0"]
    assert (count, last) == (len(agent.messages), "h1")
    assert tokens == agent.mw._carry.tokens([*base, *agent.messages[since:]], _convert)


def test_a_carried_result_replaced_by_id_is_not_sent_as_it_was() -> None:
    agent = compacted()
    old = [m for m in agent.carried() if isinstance(m, ToolMessage)][-1]
    agent.replace(ToolMessage("the file is gone", tool_call_id=old.tool_call_id, id=old.id))
    agent.messages = [*agent.messages, HumanMessage("Go on.", id="h1")]
    sent = [m for m in agent.call() if m.id == old.id]
    assert [m.content for m in sent] == ["the file is gone"]


def test_a_carried_message_removed_from_the_state_is_not_sent() -> None:
    agent = compacted()
    gone = next(m for m in agent.carried() if isinstance(m, AIMessage) and m.id)
    # Removed with its results (RemoveMessage), and as many new messages after: the history is as
    # long as the carry's and ends with a message of the same id as before.
    last = agent.messages[-1]
    pair = [m for m in agent.messages if m.id == gone.id or (isinstance(m, ToolMessage) and m.id == f"t{gone.id[1:]}")]
    agent.messages = [m for m in agent.messages if m not in pair and m is not last]
    agent.messages = [*agent.messages, HumanMessage("Go on.", id="h1"), AIMessage("Noted.", id="n1"), last]
    sent = agent.call()
    assert gone.id not in {m.id for m in sent}


def test_an_unchanged_history_still_resumes_from_the_carry() -> None:
    agent = compacted()
    agent.messages = [*agent.messages, HumanMessage("Go on.", id="h1")]
    view = agent.mw._view(agent.request())
    assert view.body is not None and view.carried is not None
    # A message after the carried part is held from the call that read it on (that call's resume
    # told the carried part unchanged in the same pass): replaced by id, it is read anew, as the
    # history is, and the replacement sent; the call after that resumes from the carry again.
    agent.messages = [*agent.messages[:-1], HumanMessage("Go on, please.", id="h1")]
    view = agent.mw._view(agent.request())
    assert view.body is None
    assert agent.call()[-1].content == "Go on, please."
    agent.messages = [*agent.messages, AIMessage("On it.", id="a1"), HumanMessage("And then?", id="h2")]
    view = agent.mw._view(agent.request())
    assert view.body is not None
    assert view.body[-1].content == "And then?"
