"""Every adapter's fit, given a history that is already not pair-valid (a ToolMessage removed with
``RemoveMessage``, a call whose result never came before the user spoke again, a result whose
call was removed), sends the model a list every provider accepts: the call gets the result
``repair`` gives an interrupted call, the result with no call becomes a user message saying so.
The check is this file's own (``pair_problems``), not the library's validator; the caller's
history is never changed."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

import agentcontext as ac
from tests.integration_support import Function, Message, ToolCall

#: What ``repair`` gives a call that has no result (``src/compact/repair.rs``, ``INTERRUPTED``).
INTERRUPTED = "[no result: the tool call was interrupted before it returned]"


def pair_problems(messages: list[dict[str, Any]]) -> list[str]:
    """OpenAI Chat's rule, checked independently: an assistant message's ``tool_calls`` are each
    answered by the tool messages right after it, and every tool message answers a call of the
    assistant message before its run."""
    problems = []
    waiting: set[str] = set()
    for i, m in enumerate(messages):
        if m["role"] == "tool":
            if m["tool_call_id"] not in waiting:
                problems.append(f"{i}: result {m['tool_call_id']} answers no call before it")
            waiting.discard(m["tool_call_id"])
            continue
        if waiting:
            problems.append(f"{i}: calls {sorted(waiting)} have no result before it")
        waiting = {c["id"] for c in m.get("tool_calls") or []}
    if waiting:
        problems.append(f"end: calls {sorted(waiting)} have no result")
    return problems


def chat_call(i: str) -> dict[str, Any]:
    return {"id": i, "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}


def broken_chat() -> list[dict[str, Any]]:
    """A Chat history with a call whose result is missing (c1) and a result whose call is (c2)."""
    return [
        {"role": "system", "content": "You are a reviewer."},
        {"role": "user", "content": "Review the handlers."},
        {"role": "assistant", "content": None, "tool_calls": [chat_call("c1")]},
        {"role": "user", "content": "Skip that file."},
        {"role": "tool", "tool_call_id": "c2", "content": "late output"},
        {"role": "assistant", "content": "Skipped."},
        {"role": "user", "content": "Now the loaders."},
    ]


# LangChain / LangGraph: real agents, the history broken with RemoveMessage.


def langchain_agent(kind: str, compaction: bool = False) -> Any:
    pytest.importorskip("langchain")
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from agentcontext.integrations.langchain import AgentContextMiddleware
    from agentcontext.integrations.langgraph import fit_hook

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return f"# {path}\n" + "line\n" * 40

    class Recording(GenericFakeChatModel):
        calls: list[list[Any]] = []  # noqa: RUF012 - a pydantic field, set per instance

        def bind_tools(self, tools: Any, **kwargs: Any) -> Recording:
            return self

        def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            self.calls.append(list(messages))
            return super()._generate(messages, *args, **kwargs)

    n = itertools.count()
    replies = []
    for _ in range(3):
        k = next(n)
        replies.append(
            AIMessage("", tool_calls=[{"id": f"call_{k}", "name": "read_file", "args": {"path": f"{k}.py"}}])
        )
        replies.append(AIMessage(f"Done {k}."))
    model = Recording(messages=iter(replies))
    model.calls = []
    budget = ac.Budget(100_000)
    if kind == "middleware":
        agent = create_agent(
            model,
            [read_file],
            system_prompt="You are a reviewer.",
            middleware=[AgentContextMiddleware(budget, compaction=compaction)],
            checkpointer=InMemorySaver(),
        )
    else:
        from langgraph.prebuilt import create_react_agent

        with pytest.warns(DeprecationWarning):
            agent = create_react_agent(
                model,
                [read_file],
                prompt="You are a reviewer.",
                pre_model_hook=fit_hook(budget),
                checkpointer=InMemorySaver(),
            )
    return agent, model


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("removed", ["result", "call"])
@pytest.mark.parametrize("kind", ["middleware", "middleware_compaction", "fit_hook"])
def test_langchain_agents_send_pair_valid_lists_after_a_remove(kind: str, removed: str) -> None:
    from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage

    from agentcontext.integrations.langchain import to_openai

    agent, model = langchain_agent("fit_hook" if kind == "fit_hook" else "middleware", kind.endswith("compaction"))
    config = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage("Review the handlers.")]}, config)
    stored = agent.get_state(config).values["messages"]
    target = next(
        m
        for m in stored
        if (isinstance(m, ToolMessage) if removed == "result" else isinstance(m, AIMessage) and m.tool_calls)
    )
    agent.update_state(config, {"messages": [RemoveMessage(id=target.id)]})
    history = copy.deepcopy(agent.get_state(config).values["messages"])
    assert pair_problems([to_openai(m) for m in history])
    first = len(model.calls)
    agent.invoke({"messages": [HumanMessage("Now the loaders.")]}, config)
    calls = [[to_openai(m) for m in call] for call in model.calls[first:]]
    assert len(calls) == 2
    for sent in calls:
        assert pair_problems(sent) == [], pair_problems(sent)
    sent = calls[0]
    assert sent[-1]["content"] == "Now the loaders."
    if removed == "result":
        assert next(m["content"] for m in sent if m["role"] == "tool") == INTERRUPTED
    else:
        assert any(m["role"] == "user" and "call_0, which is not in the conversation" in m["content"] for m in sent)
    # The state is the agent's: what it held before is still there as it was.
    after = agent.get_state(config).values["messages"]
    assert [m.content for m in after[: len(history)]] == [m.content for m in history]


def test_langchain_fit_messages_repairs_without_changing_the_objects() -> None:
    pytest.importorskip("langchain")
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    from agentcontext.integrations.langchain import fit_messages, to_openai

    history = [
        SystemMessage("You are a reviewer."),
        HumanMessage("Review the handlers."),
        AIMessage("", tool_calls=[{"id": "c1", "name": "read_file", "args": {"path": "a.py"}}]),
        HumanMessage("Skip that file."),
        ToolMessage("late output", tool_call_id="c2"),
        AIMessage("Skipped."),
        HumanMessage("Now the loaders."),
    ]
    before = copy.deepcopy(history)
    out = fit_messages(history, ac.Budget(100_000))
    assert pair_problems([to_openai(m) for m in out]) == []
    assert history == before
    assert [type(m).__name__ for m in out] == [
        "SystemMessage", "HumanMessage", "AIMessage", "ToolMessage", "HumanMessage", "HumanMessage", "AIMessage",
        "HumanMessage",
    ]  # fmt: skip
    assert out[2] is history[2] and out[3].content == INTERRUPTED and out[3].tool_call_id == "c1"
    assert "late output" in out[5].content


@pytest.mark.parametrize("mixed", [False, True])
def test_litellm_fit_messages_sends_pair_valid_lists(mixed: bool) -> None:
    from agentcontext.integrations import litellm

    messages: list[Any] = broken_chat()
    if mixed:
        messages[2] = Message(
            content=None, tool_calls=[ToolCall(id="c1", function=Function(name="read_file", arguments="{}"))]
        )
        messages[5] = Message(content="Skipped.")
    before = copy.deepcopy(messages)
    out = litellm.fit_messages(messages, ac.Budget(100_000))
    dicts = [m if isinstance(m, dict) else m.model_dump(exclude_none=True) for m in out]
    assert pair_problems(dicts) == [], pair_problems(dicts)
    assert [m["content"] for m in dicts if m["role"] == "tool"] == [INTERRUPTED]
    assert messages == before


def test_pydantic_ai_fit_messages_sends_pair_valid_lists() -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    from agentcontext.integrations.pydantic_ai import _dicts, fit_messages

    history = [
        ModelRequest(parts=[SystemPromptPart("You are a reviewer."), UserPromptPart("Review the handlers.")]),
        ModelResponse(parts=[ToolCallPart("read_file", {"path": "a.py"}, tool_call_id="c1")]),
        ModelRequest(parts=[UserPromptPart("Skip that file.")]),
        ModelRequest(parts=[ToolReturnPart("read_file", "late output", tool_call_id="c2")]),
        ModelResponse(parts=[TextPart("Skipped.")]),
        ModelRequest(parts=[UserPromptPart("Now the loaders.")]),
    ]
    before = copy.deepcopy(history)
    out = fit_messages(history, ac.Budget(100_000))
    dicts = [d for i, m in enumerate(out) for d in _dicts(m, i)]
    assert pair_problems(dicts) == [], pair_problems(dicts)
    returns = [p for m in out for p in m.parts if isinstance(p, ToolReturnPart)]
    assert [(p.tool_name, p.tool_call_id, p.content) for p in returns] == [("read_file", "c1", INTERRUPTED)]
    assert history == before


@pytest.mark.parametrize("reasoning", [False, True])
def test_openai_agents_fit_items_sends_pair_valid_items(reasoning: bool) -> None:
    pytest.importorskip("agents")
    from agentcontext.integrations.openai_agents import fit_items

    items: list[dict[str, Any]] = [
        {"role": "user", "content": "Review the handlers."},
        {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{}"},
        {"role": "user", "content": "Skip that file."},
        {"type": "function_call_output", "call_id": "c2", "output": "late output"},
        {"role": "assistant", "content": "Skipped."},
        {"role": "user", "content": "Now the loaders."},
    ]
    if reasoning:  # (fitted as Responses items, not on the Chat path)
        items.insert(1, {"type": "reasoning", "id": "rs_1", "summary": []})
    before = copy.deepcopy(items)
    out = fit_items(items, ac.Budget(100_000))
    dicts = [x if isinstance(x, dict) else x.model_dump(exclude_none=True) for x in out]
    chat = ac.Conversation(dicts, format="responses").to_format("openai")
    assert pair_problems(chat) == [], pair_problems(chat)
    outputs = [d for d in dicts if d.get("type") == "function_call_output"]
    assert [(d["call_id"], d["output"]) for d in outputs] == [("c1", INTERRUPTED)]
    assert items == before
