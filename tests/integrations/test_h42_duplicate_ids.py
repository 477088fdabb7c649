"""Ids the compacting middleware reads in the state (a state that does not go through
``add_messages`` may hold two messages of one id): the kept summary's ``through`` found again only
where the summary left it (not at a later message given the same id), the carried messages read
back as the state holds them only by an id the state holds once (and as the same kind of
message), so the latest ask stays and no tool call is sent apart from its result."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from .test_h42_carry_edits import OUTPUT, compacted


def paired(sent: list[BaseMessage]) -> bool:
    """Every tool call sent with its result right after its call, and no result without its call."""
    calls: set[str] = set()
    for m in sent:
        if isinstance(m, AIMessage):
            calls |= {c["id"] for c in m.tool_calls}
        if isinstance(m, ToolMessage) and m.tool_call_id not in calls:
            return False
    results = {m.tool_call_id for m in sent if isinstance(m, ToolMessage)}
    return all(c["id"] in results for m in sent if isinstance(m, AIMessage) for c in m.tool_calls)


@pytest.mark.parametrize("fresh", [False, True], ids=["carried", "fresh middleware"])
@pytest.mark.parametrize("lines", [1, 200], ids=["short", "long"])
def test_a_later_message_with_the_summarys_through_id_does_not_move_where_it_ends(fresh: bool, lines: int) -> None:
    agent = compacted()
    through = agent.stored["through"]
    if fresh:
        agent.mw = type(agent.mw)(agent.mw.budget, compaction=True)
    call = {"id": "c50", "name": "read_file", "args": {"path": "f50.py"}}
    agent.messages = [
        *agent.messages,
        HumanMessage("Now check the tests.", id="h1"),
        AIMessage("Reading 50.", id=through, tool_calls=[call]),
        ToolMessage("# f50\n" + "line of output\n" * lines, tool_call_id="c50", id="t50"),
    ]
    sent = agent.call()
    assert any(m.content == "Now check the tests." for m in sent)
    assert paired(sent)


def test_a_carried_result_whose_id_a_later_message_takes_stays_with_its_call() -> None:
    agent = compacted()
    result = next(m for m in agent.carried() if isinstance(m, ToolMessage))
    call = {"id": "c50", "name": "read_file", "args": {"path": "f50.py"}}
    # A later call whose id is that result's, and a large result: the call runs the ladder.
    agent.messages = [
        *agent.messages,
        AIMessage("Reading 50.", id=result.id, tool_calls=[call]),
        ToolMessage("# f50\n" + OUTPUT, tool_call_id="c50", id="t50"),
    ]
    compactions = agent.mw.compactions
    sent = agent.call()
    assert agent.mw.compactions == compactions + 1
    assert paired(sent)
    assert sum(m.id == result.id for m in sent) <= 2
