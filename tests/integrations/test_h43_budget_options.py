"""The adapters' budget options as a new user writes them wrong, and a model window overridden.

- ``Budget.for_model("gpt-4o", windows={"gpt-4o": 64_000})`` counted with the heuristic instead
  of gpt-4o's ``o200k_base``: an int window made a new entry with the default counter.
- ``windows=`` not a mapping raised a bare AttributeError; an unknown model's message told the
  user to pass ``context_window=``, which ``for_model`` does not take (a TypeError next).
- A model name as the budget (``AgentContextMiddleware("gpt-4o")``) said only that an int was
  expected; the ``Budget`` class given uncalled said ``got type``.
- ``call_model_input_filter=input_filter`` and ``ProcessHistory(history_processor)`` (factories
  given uncalled) failed in the first model call with "budget must be a non-negative integer,
  got CallModelData" and Pydantic AI's ``UserError`` about the name ``Event``; both now name the
  call to make, as LangGraph's ``pre_model_hook=fit_hook`` already did."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.budgets import ModelWindow
from agentcontext.errors import AgentContextError, ArgumentTypeError, UnknownModelError


@pytest.mark.parametrize(
    ("model", "windows", "encoding"),
    [
        ("gpt-4o", {"gpt-4o": 64_000}, "o200k_base"),
        ("openai/gpt-4o-2024-08-06", {"openai/gpt-4o": 64_000}, "o200k_base"),
        ("gpt-4-0613", {"gpt-4": 64_000}, "cl100k_base"),
        ("claude-sonnet-4-5", {"claude-sonnet-4-5": 64_000}, "heuristic"),
        ("my-local-model", {"my-local-model": 64_000}, "heuristic"),
        ("gpt-4o", {"gpt-4o": ModelWindow(64_000, encoding="cl100k_base")}, "cl100k_base"),
    ],
)
def test_a_window_override_keeps_the_models_counter(model: str, windows: dict[str, Any], encoding: str) -> None:
    budget = ac.Budget.for_model(model, windows=windows)
    assert budget.max_tokens == 48_000
    assert budget.encoding == encoding
    assert ac.budgets.encoding_for_model(model, windows=windows) == encoding


@pytest.mark.parametrize("windows", [[("gpt-4o", 1_000)], "gpt-4o", 1_000])
def test_windows_that_are_not_a_mapping_are_a_typed_error(windows: Any) -> None:
    with pytest.raises(ArgumentTypeError, match="windows must be a mapping"):
        ac.Budget.for_model("gpt-4o", windows=windows)


def test_an_unknown_model_names_the_options_for_model_takes() -> None:
    with pytest.raises(UnknownModelError) as err:
        ac.Budget.for_model("gpt-4.5-preview")
    text = str(err.value)
    assert "context_window=" not in text
    assert "windows={'gpt-4.5-preview': tokens}" in text and "Budget(tokens)" in text
    assert err.value.close_matches and err.value.model == "gpt-4.5-preview"
    # What it says works.
    assert ac.Budget.for_model("gpt-4.5-preview", windows={"gpt-4.5-preview": 128_000}).max_tokens == 96_000


def factories() -> list[Any]:
    from agentcontext.integrations import langchain, langgraph, litellm, openai_agents, pydantic_ai

    return [
        langchain.AgentContextMiddleware,
        langgraph.fit_hook,
        langgraph.compact_hook,
        openai_agents.input_filter,
        pydantic_ai.history_processor,
        lambda b: litellm.fit_messages([], b),
        lambda b: langchain.fit_messages([], b),
        lambda b: openai_agents.fit_items([], b),
        lambda b: pydantic_ai.fit_messages([], b),
    ]


@pytest.mark.parametrize("k", range(9))
def test_a_model_name_or_the_budget_class_as_the_budget_names_the_fix(k: int) -> None:
    make = factories()[k]
    with pytest.raises(ArgumentTypeError, match=r"Budget\.for_model\('gpt-4o'\)"):
        make("gpt-4o")
    with pytest.raises(ArgumentTypeError, match=r"call it, Budget\(\.\.\.\)"):
        make(ac.Budget)


def test_input_filter_given_uncalled_names_the_call() -> None:
    from agents import RunConfig, Runner, set_tracing_disabled

    from agentcontext.integrations.openai_agents import input_filter
    from tests.integrations.test_integration_openai_agents import FakeModel, agent

    set_tracing_disabled(True)
    config = RunConfig(call_model_input_filter=input_filter)  # type: ignore[arg-type]
    with pytest.raises(AgentContextError, match=r"call_model_input_filter=input_filter\(budget\)"):
        asyncio.run(Runner.run(agent(FakeModel()), "Review the handlers.", run_config=config))


def test_history_processor_given_uncalled_names_the_call() -> None:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.models.test import TestModel

    from agentcontext.integrations.pydantic_ai import history_processor

    agent = Agent(TestModel(), capabilities=[ProcessHistory(history_processor)])  # type: ignore[arg-type]
    with pytest.raises(AgentContextError, match=r"ProcessHistory\(history_processor\(budget\)\)"):
        # (asyncio.run, not run_sync: run_sync leaves its event loop open, and its warning fails a
        # later test in the same worker.)
        asyncio.run(agent.run("Review the handlers."))
    # Called, it works.
    agent = Agent(TestModel(), capabilities=[ProcessHistory(history_processor(10_000))])
    assert asyncio.run(agent.run("Review the handlers.")).output


@pytest.mark.parametrize(
    "make",
    [
        lambda: ac.Budget(2_000, reserved_output=2_000),
        lambda: ac.Budget(2_000, reserved_output=1_000, safety_margin=1_000),
        lambda: ac.Budget.for_model("gpt-4", reserved_output=8_192),  # 6,144 of gpt-4's 8,192
        lambda: ac.Budget.for_model("gpt-4o", fraction=1e-9),
    ],
)
def test_a_budget_with_no_room_for_the_input_is_refused_when_made(make: Any) -> None:
    # Every model call with it would raise BudgetError; it was accepted here.
    with pytest.raises(ac.errors.OptionError, match=r"no room for the input|is 0 tokens"):
        make()


def test_a_reserve_and_what_goes_beside_over_the_cores_range_is_over_the_budget() -> None:
    from agentcontext.errors import BudgetError
    from agentcontext.integrations.litellm import fit_messages

    top = 2**64 - 1
    tools = [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {}}}]
    messages = [{"role": "user", "content": "hi"}]
    # It said "reserved_output is too large: 18446744073709551641", a value nobody gave.
    with pytest.raises(BudgetError):
        fit_messages(messages, ac.Budget(top, reserved_output=top - 1), tools=tools)
    assert fit_messages(messages, ac.Budget(top, reserved_output=10), tools=tools) == messages
