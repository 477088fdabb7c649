"""Issue #29: the fit-only adapters take ``on_event=`` as ``Session``, ``Compactor`` and the
compacting adapters do. Each is driven with its framework's own test model (LiteLLM's
``mock_response``, Pydantic AI's ``FunctionModel``, LangGraph over LangChain's fake chat model, the
Agents SDK's ``Runner`` over a fake ``Model``): every fit reports a started and a finished event of
kind ``fit`` whose fields agree with what the model received; a callback that raises is logged and
the run goes on, giving what it gives without one; a callback that is not callable is a typed
error naming the parameter and the adapter."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.observe import CompactionFinished, CompactionStarted
from tests import support
from tests.integration_support import BIG_RESULT, LONG_SYSTEM

BUDGET = 6_000


def check_fits(events: list[Any], adapter: str, fits: int | None = None) -> list[CompactionFinished]:
    """``events``: a started then a finished event per fit, of kind ``fit`` and policy
    ``adapter``, whose counts add up and agree with each other. Returns the finished ones."""
    assert events and len(events) % 2 == 0
    started, finished = events[0::2], events[1::2]
    assert all(isinstance(e, CompactionStarted) for e in started)
    assert all(isinstance(e, CompactionFinished) for e in finished)
    if fits is not None:
        assert len(finished) == fits
    for s, f in zip(started, finished, strict=True):
        assert s.kind == f.kind == "fit" and s.policy == f.policy == adapter and f.agent is None
        assert (s.tokens, s.messages, s.target) == (f.tokens_before, f.messages_before, f.target)
        assert f.error is None and f.fits and f.tokens_after <= f.target <= BUDGET
        assert f.messages_kept + f.messages_changed == f.messages_after
        assert f.messages_kept + f.messages_changed + f.messages_dropped == f.messages_before
        assert f.stages == () and f.messages_summarized == 0 and f.cache is None and f.seconds >= 0
    # The runs below go over the budget: some fit dropped messages and made them fit.
    assert any(f.messages_dropped and f.tokens_after < f.tokens_before for f in finished)
    return finished


def raising(seen: list[Any]) -> Any:
    def callback(event: Any) -> None:
        seen.append(event)
        raise RuntimeError("the UI broke")

    return callback


def check_logged(caplog: pytest.LogCaptureFixture, seen: list[Any]) -> None:
    failures = [r for r in caplog.records if r.name == "agentcontext.observe"]
    assert seen and len(failures) == len(seen)
    assert all(r.exc_info is not None and "the run goes on" in r.getMessage() for r in failures)


# -- LiteLLM ---------------------------------------------------------------------------------------


def test_litellm_fit_reports_what_it_gives_back(caplog: pytest.LogCaptureFixture) -> None:
    from agentcontext.integrations.litellm import afit_messages, fit_messages

    messages = support.synthetic_session(80, seed=5)
    events: list[Any] = []
    fitted = fit_messages(messages, 3_000, on_event=events.append)
    (done,) = check_fits(events, "litellm", fits=1)
    assert (done.tokens_before, done.messages_before) == (ac.Conversation(messages).tokens, len(messages))
    assert (done.tokens_after, done.messages_after) == (ac.Conversation(fitted).tokens, len(fitted))
    assert done.target == 3_000 and done.messages_kept == sum(any(f is m for m in messages) for f in fitted)

    events.clear()
    assert asyncio.run(afit_messages(messages, 3_000, on_event=events.append)) == fitted
    check_fits(events, "litellm", fits=1)

    seen: list[Any] = []
    with caplog.at_level(logging.WARNING, logger="agentcontext.observe"):
        assert fit_messages(messages, 3_000, on_event=raising(seen)) == fitted
    check_logged(caplog, seen)
    with pytest.raises(ac.ArgumentTypeError, match=r"on_event of litellm\.fit_messages must be a callable"):
        fit_messages(messages, 3_000, on_event="print")  # type: ignore[arg-type]


# LiteLLM's own types trip Pydantic warnings when they are first built (LiteLLM 1.110).
@pytest.mark.filterwarnings("ignore:.*ReadOnly.*:UserWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_litellm_completion_with_mock_response_reports_each_fit() -> None:
    litellm = pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install 'agentcontext[litellm]')")
    from agentcontext.integrations.litellm import fit_messages

    events: list[Any] = []
    messages: list[Any] = [{"role": "system", "content": LONG_SYSTEM}]
    for t in range(6):
        messages.append({"role": "user", "content": f"Turn {t}: what does module {t} do?\n{BIG_RESULT}"})
        response = litellm.completion(
            model="gpt-4o", messages=fit_messages(messages, BUDGET, on_event=events.append), mock_response="Fine."
        )
        messages.append(response.choices[0].message)
    check_fits(events, "litellm", fits=6)


# -- Pydantic AI -----------------------------------------------------------------------------------


def _pydantic_run(on_event: Any) -> tuple[list[Any], list[int]]:
    pytest.importorskip("pydantic_ai", reason="Pydantic AI is not installed (pip install 'agentcontext[pydantic-ai]')")
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from agentcontext.integrations.pydantic_ai import history_processor

    calls: list[int] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append(sum(isinstance(p, ToolReturnPart) for m in messages for p in m.parts))
        if len(calls) % 3:
            return ModelResponse(
                parts=[ToolCallPart("read_file", {"path": f"m{len(calls)}.py"}, tool_call_id=f"c{len(calls)}")]
            )
        return ModelResponse(parts=[TextPart("Reviewed.")])

    agent: Agent[None, str] = Agent(
        FunctionModel(respond),
        instructions=LONG_SYSTEM,
        capabilities=[ProcessHistory(history_processor(BUDGET, on_event=on_event))],
    )

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file of the code base."""
        return f"# {path}\n{BIG_RESULT}"

    async def run() -> list[Any]:
        history: list[Any] = []
        for t in range(2):
            history = (await agent.run(f"Turn {t}: review.", message_history=history)).all_messages()
        return history

    return asyncio.run(run()), calls


def test_pydantic_ai_history_processor_reports_each_fit(caplog: pytest.LogCaptureFixture) -> None:
    events: list[Any] = []
    history, calls = _pydantic_run(events.append)
    done = check_fits(events, "pydantic_ai", fits=len(calls))
    # The instructions and the tool definition are counted beside the messages: the target is less.
    assert all(f.target < BUDGET - ac.count_tokens(LONG_SYSTEM) for f in done)

    seen: list[Any] = []
    with caplog.at_level(logging.WARNING, logger="agentcontext.observe"):
        again, _ = _pydantic_run(raising(seen))
    check_logged(caplog, seen)
    assert [type(e) for e in seen] == [type(e) for e in events]
    assert len(again) == len(history)

    from agentcontext.integrations.pydantic_ai import history_processor

    with pytest.raises(ac.ArgumentTypeError, match=r"on_event of pydantic_ai\.history_processor must be a callable"):
        history_processor(BUDGET, on_event=42)  # type: ignore[arg-type]


# -- LangGraph -------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("factory", ["fit_hook", "compact_hook"])
def test_langgraph_hooks_report_each_fit(factory: str, caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("langgraph", reason="LangGraph is not installed (pip install 'agentcontext[langgraph]')")
    from langchain_core.messages import HumanMessage
    from langgraph.prebuilt import create_react_agent

    from agentcontext.integrations import langgraph
    from tests.integrations.test_adaptlc_agents import SYSTEM, fake_model, read_file

    hook = getattr(langgraph, factory)

    def run(on_event: Any) -> tuple[int, list[Any]]:
        m = fake_model(5)
        agent = create_react_agent(
            m,
            [read_file],
            prompt=SYSTEM,
            pre_model_hook=hook(4_000, prompt=SYSTEM, tools=[read_file], on_event=on_event),
        )
        messages: list[Any] = []
        for t in range(5):
            messages = agent.invoke({"messages": [*messages, HumanMessage(f"Ask {t}: review module {t}.")]})["messages"]
        return len(m.calls), messages

    events: list[Any] = []
    calls, messages = run(events.append)
    done = check_fits(events, "langgraph", fits=calls)
    assert all(f.target < 4_000 - ac.count_tokens(SYSTEM) for f in done)

    seen: list[Any] = []
    with caplog.at_level(logging.WARNING, logger="agentcontext.observe"):
        calls_again, again = run(raising(seen))
    check_logged(caplog, seen)
    assert calls_again == calls and [m.content for m in again] == [m.content for m in messages]
    with pytest.raises(ac.ArgumentTypeError, match=rf"on_event of langgraph\.{factory} must be a callable"):
        hook(4_000, on_event="log")


# -- OpenAI Agents SDK -----------------------------------------------------------------------------


def test_openai_agents_input_filter_reports_each_fit(caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip(
        "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
    )
    from agents import RunConfig, SQLiteSession

    from agentcontext.integrations.openai_agents import fit_items, input_filter
    from tests.integrations.test_adaptother_openai_agents import FakeModel, make_agent, run

    def go(on_event: Any) -> list[int]:
        model = FakeModel(reads=3)
        config = RunConfig(call_model_input_filter=input_filter(BUDGET, on_event=on_event))
        run(
            make_agent(model, BIG_RESULT),
            [f"Turn {t}: review module {t}." for t in range(2)],
            SQLiteSession("e"),
            config,
        )
        return model.sent

    events: list[Any] = []
    sent = go(events.append)
    done = check_fits(events, "openai_agents", fits=len(sent))
    assert all(f.target < BUDGET - ac.count_tokens(LONG_SYSTEM) for f in done)

    seen: list[Any] = []
    with caplog.at_level(logging.WARNING, logger="agentcontext.observe"):
        assert go(raising(seen)) == sent
    check_logged(caplog, seen)

    items = [{"role": "user", "content": "hi"}]
    with pytest.raises(ac.ArgumentTypeError, match=r"on_event of openai_agents\.input_filter must be a callable"):
        input_filter(BUDGET, on_event=object())  # type: ignore[arg-type]
    with pytest.raises(ac.ArgumentTypeError, match=r"on_event of openai_agents\.fit_items must be a callable"):
        fit_items(items, BUDGET, on_event=1)  # type: ignore[arg-type]


# -- LangChain's middleware without compaction -----------------------------------------------------


def test_langchain_middleware_without_compaction_reports_each_fit() -> None:
    """``on_event`` reaches the fits of a middleware that does not compact (it was given to the
    compactor alone, so without one it was dropped)."""
    pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage

    from agentcontext.integrations.langchain import AgentContextMiddleware
    from tests.integrations.test_adaptlc_agents import SYSTEM, fake_model, read_file

    events: list[Any] = []
    m = fake_model(5)
    middleware = AgentContextMiddleware(4_000, on_event=events.append)
    agent = create_agent(m, [read_file], system_prompt=SYSTEM, middleware=[middleware])
    messages: list[Any] = []
    for t in range(5):
        messages = agent.invoke({"messages": [*messages, HumanMessage(f"Ask {t}: review module {t}.")]})["messages"]
    check_fits(events, "langchain", fits=len(m.calls))
    with pytest.raises(ac.ArgumentTypeError, match=r"on_event of langchain\.AgentContextMiddleware must be"):
        AgentContextMiddleware(4_000, on_event="log")  # type: ignore[arg-type]
