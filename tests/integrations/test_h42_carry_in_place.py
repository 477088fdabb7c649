"""The compacting middleware carries each thread's working set from one call to the next, with
its tokens: a call adds only the tokens of its new messages. Every history message the working
set holds by reference (the ones after the last compaction, the ones it kept as they were) is
checked as the fit's memo checks its objects (the same object at its place, its content and the
field read beside it unchanged): a message edited in place (``msg.content = ...``) or replaced by
id before any compaction, and a thread of another conversation whose first message has the same
id, are counted as they are, so the call stays within the budget."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from agentcontext.integrations.langchain import to_openai

from .test_h42_carry_edits import Agent, compacted


def sent_tokens(agent: Agent, sent: list[BaseMessage]) -> int:
    """The tokens of the call as the model receives it, counted from scratch."""
    from agentcontext._core import Conversation

    dicts = [to_openai(m) for m in [agent.system, *sent]]
    return Conversation(dicts, format="openai", encoding=agent.mw.budget.encoding).tokens


@pytest.mark.parametrize("encoding", ["approximate", "o200k_base"])
def test_a_carried_message_edited_in_place_is_counted_as_it_is(encoding: str) -> None:
    agent = compacted(encoding)
    own = [m for m in agent.carried() if isinstance(m, AIMessage) and any(m is s for s in agent.messages)]
    target = own[-1]
    target.content = "EDITED " + "word " * 3000
    agent.messages = [*agent.messages, HumanMessage("Go on.", id="h1")]
    sent = agent.call()
    assert sent_tokens(agent, sent) <= agent.mw.limit
    assert [str(m.content)[:6] for m in sent if m.id == target.id] in ([], ["EDITED"])


def test_a_message_after_the_last_compaction_edited_in_place_is_counted() -> None:
    agent = Agent()
    for i in range(3):
        agent.step(i)
    assert agent.mw.compactions == 0
    agent.messages[1].content = "EDITED " + "word " * 3000
    sent = agent.call()
    assert sent_tokens(agent, sent) <= agent.mw.limit
    assert agent.mw.compactions == 1


def test_a_message_replaced_by_id_before_any_compaction_is_counted() -> None:
    agent = Agent()
    for i in range(3):
        agent.step(i)
    assert agent.mw.compactions == 0
    agent.replace(HumanMessage("Please review the handlers. " + "detail " * 3000, id="h0"))
    sent = agent.call()
    assert sent_tokens(agent, sent) <= agent.mw.limit
    assert agent.mw.compactions == 1


def test_two_conversations_whose_first_message_has_the_same_id_are_each_counted() -> None:
    one, two = Agent(), Agent()
    two.mw = one.mw  # one middleware serves both
    for i in range(3):
        one.step(i)
    # Another conversation, as long, its first message of the same id (and its last too).
    two.messages = [HumanMessage("Please review the handlers. " + "detail " * 3000, id="h0"), *one.messages[1:]]
    two.messages = [m.model_copy() for m in two.messages]
    sent = two.call()
    assert sent_tokens(two, sent) <= two.mw.limit


@pytest.mark.parametrize("edit", ["by id", "in place"])
def test_create_agent_whose_middleware_edits_an_early_message_stays_within_budget(edit: str) -> None:
    """A ``before_model`` middleware editing the first answer every third call (by id, as
    ``add_messages`` replaces it, or on the object), ahead of the compacting middleware."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import before_model

    import agentcontext as ac
    from agentcontext.integrations.langchain import AgentContextMiddleware

    from .test_adaptlc_agents import BUDGET, SYSTEM, dump_log, fake_model, read_file, schema_tokens

    calls = {"n": 0}

    @before_model
    def editing(state: Any, runtime: Any) -> dict[str, Any] | None:
        calls["n"] += 1
        first = state["messages"][1] if len(state["messages"]) > 3 else None
        if calls["n"] % 3 or first is None:
            return None
        longer = str(first.content) + " more detail" * 1000
        if edit == "in place":
            first.content = longer
            return None
        return {"messages": [first.model_copy(update={"content": longer})]}

    model = fake_model(10)
    seen: list[int] = []
    generate = type(model)._generate

    def counting(self: Any, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        seen.append(ac.Conversation([to_openai(m) for m in messages]).tokens)  # as sent, not as edited later
        return generate(self, messages, *args, **kwargs)

    object.__setattr__(model, "_generate", counting.__get__(model))
    agent = create_agent(
        model,
        [read_file, dump_log],
        system_prompt=SYSTEM,
        middleware=[editing, AgentContextMiddleware(BUDGET, compaction=True)],
    )
    messages: list[BaseMessage] = []
    for t in range(10):
        messages = agent.invoke({"messages": [*messages, HumanMessage(f"Ask {t}: review module {t}.")]})["messages"]
    assert len(seen) == 20
    assert max(seen) + schema_tokens(model.tools) <= BUDGET


def test_a_system_message_whose_parts_are_changed_in_place_is_counted_again() -> None:
    agent = Agent()
    agent.system = SystemMessage(content=[{"type": "text", "text": "You are helpful."}], id="sys")
    for i in range(3):
        agent.step(i)
    parts: list[Any] = agent.system.content  # type: ignore[assignment]
    parts.append({"type": "text", "text": "Rule: be careful. " * 1000})
    agent.messages = [*agent.messages, HumanMessage("Go on.", id="h1")]
    sent = agent.call()
    assert sent_tokens(agent, sent) <= agent.mw.limit
    assert agent.mw.compactions == 1
