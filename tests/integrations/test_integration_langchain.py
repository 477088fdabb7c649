"""LangChain v1 create_agent with AgentContextMiddleware and LangGraph pre_model_hook, end to end
with LangChain's GenericFakeChatModel: multi-turn, tool-using runs whose history exceeds the
budget. Every call the model receives fits, is valid and keeps the latest request; the messages
it receives are the agent's own objects where nothing changed; the stored history is whatever
the adapter promises."""

from __future__ import annotations

import asyncio
import itertools
import threading
from typing import Any

import pytest

pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")
pytest.importorskip("langgraph", reason="LangGraph is not installed (pip install 'agentcontext[langgraph]')")

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

import agentcontext as ac
from agentcontext.integrations.langchain import AgentContextMiddleware, fit_messages, to_openai
from agentcontext.integrations.langgraph import compact_hook, fit_hook
from tests.integration_support import BIG_RESULT, BUDGET, check_call


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"# {path}\n{BIG_RESULT}"


class RecordingModel(GenericFakeChatModel):
    """The fake model, recording the messages of every call."""

    calls: list[list[BaseMessage]] = []  # noqa: RUF012 - a pydantic field, set per instance

    def bind_tools(self, tools: Any, **kwargs: Any) -> RecordingModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.calls.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def script(turns: int, calls_per_turn: int) -> list[AIMessage]:
    n = itertools.count()
    out = []
    for t in range(turns):
        for _ in range(calls_per_turn):
            i = next(n)
            out.append(
                AIMessage(
                    content=f"Reading file {i}.",
                    tool_calls=[{"id": f"call_{i}", "name": "read_file", "args": {"path": f"src/mod_{i}.py"}}],
                    usage_metadata={"input_tokens": 10 + i, "output_tokens": 5, "total_tokens": 15 + i},
                    response_metadata={"model_name": "fake", "call": i},
                )
            )
        out.append(
            AIMessage(
                content=f"Done with turn {t}.",
                usage_metadata={"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
            )
        )
    return out


REQUESTS = ["Please review the session handlers for leaks.", "Now check the request loaders as well."]


def model(turns: int = 2, calls_per_turn: int = 3) -> RecordingModel:
    m = RecordingModel(messages=iter(script(turns, calls_per_turn)))
    m.calls = []
    return m


def check_calls(m: RecordingModel, stored: list[BaseMessage]) -> None:
    """Each call fits, is valid and holds the request it answers; messages are the agent's own."""
    by_id = {msg.id: msg for msg in stored}
    assert len(m.calls) == 8
    for k, call in enumerate(m.calls):
        request = REQUESTS[0] if k < 4 else REQUESTS[1]
        check_call([to_openai(msg) for msg in call], request)
        for msg in call:
            if msg.type == "system":
                continue
            original = by_id[msg.id]
            if msg.content == original.content:
                # Unchanged: the very object the agent holds (ids, metadata, usage kept).
                assert msg is original or msg == original
                if isinstance(msg, AIMessage):
                    assert msg.usage_metadata == original.usage_metadata
                    assert msg.response_metadata == original.response_metadata
            else:
                assert isinstance(msg, ToolMessage) and msg.content.startswith("[cleared: result of read_file")
                assert (msg.id, msg.tool_call_id) == (original.id, original.tool_call_id)
    # Later calls had more than the budget to choose from: something was cleared or dropped.
    assert sum(len(to_openai(x)["content"] or "") for x in stored) > 4 * BUDGET


def run_agent(agent: Any, asynchronous: bool) -> list[BaseMessage]:
    config = {"configurable": {"thread_id": "t1"}}
    for request in REQUESTS:
        inputs = {"messages": [HumanMessage(request)]}
        if asynchronous:
            asyncio.run(agent.ainvoke(inputs, config))
        else:
            agent.invoke(inputs, config)
    return list(agent.get_state(config).values["messages"])


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_create_agent_middleware_fits_every_call_and_leaves_the_state_whole(asynchronous: bool) -> None:
    m = model()
    agent = create_agent(
        m,
        [read_file],
        system_prompt="You are a careful reviewer.",
        middleware=[AgentContextMiddleware(ac.Budget(BUDGET, recent_tools=1, recent_messages=2))],
        checkpointer=InMemorySaver(),
    )
    stored = run_agent(agent, asynchronous)
    check_calls(m, stored)
    # View-only: the state holds every message, every tool result whole.
    assert len(stored) == 2 * (1 + 3 * 2 + 1)
    assert all(BIG_RESULT in msg.content for msg in stored if isinstance(msg, ToolMessage))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_langgraph_fit_hook_is_view_only(asynchronous: bool) -> None:
    from langgraph.prebuilt import create_react_agent

    m = model()
    agent = create_react_agent(
        m,
        [read_file],
        prompt="You are a careful reviewer.",
        pre_model_hook=fit_hook(ac.Budget(BUDGET, recent_tools=1, recent_messages=2)),
        checkpointer=InMemorySaver(),
    )
    stored = run_agent(agent, asynchronous)
    check_calls(m, stored)
    assert len(stored) == 2 * (1 + 3 * 2 + 1)
    assert all(BIG_RESULT in msg.content for msg in stored if isinstance(msg, ToolMessage))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_langgraph_compact_hook_rewrites_the_state(asynchronous: bool) -> None:
    from langgraph.prebuilt import create_react_agent

    m = model()
    agent = create_react_agent(
        m,
        [read_file],
        pre_model_hook=compact_hook(ac.Budget(BUDGET, recent_tools=1, recent_messages=2)),
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t1"}}
    for request in REQUESTS:
        inputs = {"messages": [HumanMessage(request)]}
        if asynchronous:
            asyncio.run(agent.ainvoke(inputs, config))
        else:
            agent.invoke(inputs, config)
    stored = list(agent.get_state(config).values["messages"])
    assert len(m.calls) == 8
    for k, call in enumerate(m.calls):
        check_call([to_openai(msg) for msg in call], REQUESTS[0] if k < 4 else REQUESTS[1])
    # Persistent: the state holds the compacted history (old results cleared for good), still a
    # valid one with the last request; the messages kept are the ones the run produced (same ids).
    cleared = [x for x in stored if isinstance(x, ToolMessage) and x.content.startswith("[cleared: result of")]
    assert cleared
    assert sum(isinstance(x, ToolMessage) and BIG_RESULT in x.content for x in stored) <= 2
    assert ac.Conversation([to_openai(x) for x in stored]).validate() == []
    assert any(REQUESTS[1] == x.content for x in stored)
    assert all(x.id for x in stored)


def test_fit_messages_keeps_the_callers_objects_and_names_what_it_cannot_read() -> None:
    msgs = [
        HumanMessage("hi", id="h1"),
        AIMessage("hello", id="a1", usage_metadata={"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}),
    ]
    out = fit_messages(msgs, ac.Budget(1_000))
    assert out[0] is msgs[0] and out[1] is msgs[1]
    from langchain_core.messages import RemoveMessage

    with pytest.raises(ac.InvalidMessageError, match=r"message 1: .*RemoveMessage has no OpenAI Chat form"):
        fit_messages([msgs[0], RemoveMessage(id="x")], ac.Budget(1_000))
    # The library's own functions name the adapter for LangChain objects.
    with pytest.raises(ac.InvalidMessageError, match=r"HumanMessage is not JSON data; .*integrations.langchain"):
        ac.trim_messages(msgs, 1_000)


class ThreadSpyMessage(HumanMessage):
    """A user message that records the thread its content is read from."""

    def __getattribute__(self, name: str) -> Any:
        if name == "content":
            READ_ON.add(threading.get_ident())
        return super().__getattribute__(name)


READ_ON: set[int] = set()


@pytest.mark.parametrize("size", [10, 400])
def test_the_async_path_fits_large_lists_off_the_event_loop(size: int) -> None:
    from langchain.agents.middleware import ModelRequest, ModelResponse

    messages: list[BaseMessage] = [ThreadSpyMessage(f"request {i}", id=f"h{i}") for i in range(size)]
    middleware = AgentContextMiddleware(BUDGET)
    received: list[list[BaseMessage]] = []

    async def handler(request: ModelRequest) -> ModelResponse:
        received.append(request.messages)
        return ModelResponse(result=[AIMessage("ok")])

    async def call() -> int:
        request = ModelRequest(
            model=model(),
            messages=messages,
            system_message=None,
            tool_choice=None,
            tools=[],
            response_format=None,
            state={"messages": messages},
            runtime=None,
        )
        await middleware.awrap_model_call(request, handler)
        return threading.get_ident()

    READ_ON.clear()
    loop_thread = asyncio.run(call())
    assert received and received[0][-1] is messages[-1]
    # Small lists are fitted right on the loop; large ones in a worker thread.
    assert (loop_thread in READ_ON) == (size < 256)


class CountingSummarizer:
    """The offline summarizer, counting its runs."""

    window_bound = False

    def __init__(self) -> None:
        self.runs = 0
        self.inner = ac.OfflineSummarizer()
        self.lock = threading.Lock()

    def summarize(self, request: ac.SummaryRequest) -> str:
        with self.lock:
            self.runs += 1
        return self.inner.summarize(request)


LONG_REQUESTS = [f"Request {k}: review the handlers of module group {k} for leaks." for k in range(4)]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_compaction_keeps_its_summary_in_the_agent_state(asynchronous: bool) -> None:
    from agentcontext.compaction.summarize import SUMMARY_MARKER

    m = model(turns=4)
    summarizer = CountingSummarizer()
    # Without clearing, only summaries (and cut results) bring 4 turns of 3 big reads under the budget.
    middleware = AgentContextMiddleware(
        ac.Budget(BUDGET, clear=False, recent_tools=1, recent_messages=2), summarizer=summarizer
    )
    agent = create_agent(
        m,
        [read_file],
        system_prompt="You are a careful reviewer.",
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t1"}}
    for request in LONG_REQUESTS:
        inputs = {"messages": [HumanMessage(request)]}
        if asynchronous:
            asyncio.run(agent.ainvoke(inputs, config))
        else:
            agent.invoke(inputs, config)
    values = agent.get_state(config).values
    stored: list[BaseMessage] = list(values["messages"])
    by_id = {msg.id: msg for msg in stored}
    # The messages stay whole in the state; the summary is kept beside them.
    assert len(stored) == 4 * (1 + 3 * 2 + 1)
    assert all(BIG_RESULT in msg.content for msg in stored if isinstance(msg, ToolMessage))
    kept = values["agentcontext_summary"]
    assert kept["through"] in by_id and kept["messages"] == stored.index(by_id[kept["through"]]) + 1
    assert SUMMARY_MARKER not in kept["summary"]
    assert len(m.calls) == 16
    summaries_sent: list[str] = []
    for k, call in enumerate(m.calls):
        check_call([to_openai(msg) for msg in call], LONG_REQUESTS[k // 4])
        for msg in call[1:]:
            if msg.id not in by_id:
                # The one new message: the summary, right after the system message, never nested.
                assert msg is call[1] and msg.content.startswith(SUMMARY_MARKER)
                assert msg.content.count(SUMMARY_MARKER) == 1
                summaries_sent.append(msg.content)
                continue
            original = by_id[msg.id]
            if msg.content == original.content:
                assert msg is original or msg == original
            else:
                assert isinstance(msg, ToolMessage) and msg.tool_call_id == original.tool_call_id
                assert len(msg.content) < len(original.content)
        if call[1].id in by_id:
            # Without a summary the call holds the history from its first message.
            assert call[1].id == stored[0].id
    # Summaries were sent, made a bounded number of times (not once per call), each run counted.
    assert summaries_sent and 1 <= summarizer.runs == middleware.summaries <= len(LONG_REQUESTS)
    # Each summary made was sent, and later calls reused it (the summary from the state).
    assert len(set(summaries_sent)) == summarizer.runs < len(summaries_sent)
    assert middleware.compactions >= middleware.summaries


def test_compaction_without_a_summary_leaves_the_state_field_unset() -> None:
    m = model()
    middleware = AgentContextMiddleware(ac.Budget(BUDGET, recent_tools=1, recent_messages=2), compaction=True)
    agent = create_agent(m, [read_file], middleware=[middleware], checkpointer=InMemorySaver())
    stored = run_agent(agent, asynchronous=False)
    assert len(m.calls) == 8
    for k, call in enumerate(m.calls):
        check_call([to_openai(msg) for msg in call], REQUESTS[0] if k < 4 else REQUESTS[1])
    # Cutting and clearing old results was enough: the ladder ran, no summary was written or kept.
    assert middleware.compactions > 0 and middleware.summaries == 0
    assert agent.get_state({"configurable": {"thread_id": "t1"}}).values.get("agentcontext_summary") is None
    assert all(BIG_RESULT in msg.content for msg in stored if isinstance(msg, ToolMessage))


def test_compaction_arguments_are_checked() -> None:
    with pytest.raises(ac.OptionError, match="compact_to"):
        AgentContextMiddleware(BUDGET, compaction=True, compact_to=1.5)
    with pytest.raises(ac.OptionError, match="compact_to"):
        AgentContextMiddleware(BUDGET, compaction=True, compact_to=0)
    with pytest.raises(ac.ArgumentTypeError, match="compaction must be"):
        AgentContextMiddleware(BUDGET, compaction="yes")  # type: ignore[arg-type]
    with pytest.raises(ac.ArgumentTypeError, match="summarizer must"):
        AgentContextMiddleware(BUDGET, summarizer=object())  # type: ignore[arg-type]
    with pytest.raises(ac.OptionError, match="give the summarizer to the Compactor"):
        AgentContextMiddleware(BUDGET, compaction=ac.Compactor(), summarizer=CountingSummarizer())
    with pytest.raises(ac.OptionError, match="counts with cl100k_base"):
        AgentContextMiddleware(BUDGET, compaction=ac.Compactor(ac.CompactionPolicy(encoding="cl100k_base")))


def test_one_compacting_middleware_serves_two_threads_at_once() -> None:
    # One middleware instance, two agents run at once in two threads: each thread's summary stays
    # in its own agent state, and the counters add up.
    summarizer = CountingSummarizer()
    middleware = AgentContextMiddleware(
        ac.Budget(BUDGET, clear=False, recent_tools=1, recent_messages=2), summarizer=summarizer
    )
    results: dict[int, tuple[RecordingModel, dict[str, Any]]] = {}
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            m = model(turns=4)
            agent = create_agent(m, [read_file], middleware=[middleware], checkpointer=InMemorySaver())
            config = {"configurable": {"thread_id": f"t{k}"}}
            for request in LONG_REQUESTS:
                agent.invoke({"messages": [HumanMessage(f"[{k}] {request}")]}, config)
            results[k] = (m, dict(agent.get_state(config).values))
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k, (m, values) in results.items():
        ids = {msg.id for msg in values["messages"]}
        assert values["agentcontext_summary"]["through"] in ids
        assert f"[{k}] {LONG_REQUESTS[-1]}" in values["agentcontext_summary"]["summary"] or any(
            f"[{k}] {LONG_REQUESTS[-1]}" == msg.content for msg in values["messages"]
        )
        for j, call in enumerate(m.calls):
            check_call([to_openai(msg) for msg in call], f"[{k}] {LONG_REQUESTS[j // 4]}")
            assert not any(f"[{1 - k}]" in str(msg.content) for msg in call)
    assert summarizer.runs == middleware.summaries >= 2
