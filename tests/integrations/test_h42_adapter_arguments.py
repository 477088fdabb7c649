"""Wrong arguments to the Agents SDK, Pydantic AI and LiteLLM adapters are typed errors
(``AgentContextError``), never a bare ``TypeError`` or ``AttributeError``; and the Agents SDK's
``CompactingSession`` writes nothing it could not read back (an unreadable item written to the
log made every later ``get_items`` and ``add_items`` fail)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.errors import ArgumentTypeError, InvalidMessageError

MESSAGES = [{"role": "user", "content": "Review the handlers."}, {"role": "assistant", "content": "Done."}]


def test_a_compacting_session_writes_nothing_it_cannot_read() -> None:
    pytest.importorskip("agents")
    from agents import SQLiteSession

    from agentcontext.integrations.openai_agents import CompactingSession

    inner = SQLiteSession("h42-args-1")
    session = CompactingSession(inner, 10_000)

    async def go() -> tuple[list[Any], list[Any]]:
        await session.add_items(list(MESSAGES))
        with pytest.raises(InvalidMessageError):
            await session.add_items([{"role": "user", "content": "ok"}, 5])
        with pytest.raises(ArgumentTypeError):
            await session.add_items({"role": "user", "content": "one item, not a list"})  # type: ignore[arg-type]
        with pytest.raises(ArgumentTypeError):
            await session.add_items("hello")  # type: ignore[arg-type]
        await session.add_items([{"role": "user", "content": "Next."}])
        return await inner.get_items(), await session.get_items()

    # Before: 5 (and the dict's keys, the str's letters) went into the log, and every call after
    # raised reading them back.
    log, view = asyncio.run(go())
    assert log == [*MESSAGES, {"role": "user", "content": "Next."}]
    assert view == log


@pytest.mark.parametrize("limit", ["1", 1.5, True])
def test_get_items_limit_must_be_an_int(limit: Any) -> None:
    pytest.importorskip("agents")
    from agents import SQLiteSession

    from agentcontext.integrations.openai_agents import CompactingSession

    session = CompactingSession(SQLiteSession("h42-args-2"), 10_000)
    asyncio.run(session.add_items(list(MESSAGES)))
    with pytest.raises(ArgumentTypeError):
        asyncio.run(session.get_items(limit))


def _fit_items() -> Callable[..., Any]:
    pytest.importorskip("agents")
    from agentcontext.integrations.openai_agents import fit_items

    return fit_items


def _pydantic_ai() -> Callable[..., Any]:
    pytest.importorskip("pydantic_ai")
    from agentcontext.integrations.pydantic_ai import fit_messages

    return fit_messages


def _litellm() -> Callable[..., Any]:
    from agentcontext.integrations.litellm import fit_messages

    return fit_messages


def _alitellm() -> Callable[..., Any]:
    from agentcontext.integrations.litellm import afit_messages

    return lambda messages, budget, **kw: asyncio.run(afit_messages(messages, budget, **kw))


ADAPTERS = {"fit_items": _fit_items, "pydantic_ai": _pydantic_ai, "litellm": _litellm, "alitellm": _alitellm}


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("messages", [None, 5, object()])
def test_messages_that_are_not_a_list_are_a_typed_error(adapter: str, messages: Any) -> None:
    fit = ADAPTERS[adapter]()
    with pytest.raises(ArgumentTypeError):
        fit(messages, 1_000)


def _request(text: str) -> Any:
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    return ModelRequest(parts=[UserPromptPart(text)])


@pytest.mark.parametrize("adapter", ["pydantic_ai", "litellm"])
def test_a_generator_of_messages_is_fitted_as_its_list(adapter: str) -> None:
    fit = ADAPTERS[adapter]()
    messages = [_request("Review.")] if adapter == "pydantic_ai" else list(MESSAGES)
    assert fit(iter(messages), 1_000) == fit(messages, 1_000)


@pytest.mark.parametrize("adapter", ["fit_items", "pydantic_ai"])
@pytest.mark.parametrize("tools", [5, "a tool", [5], None])
def test_tools_that_are_not_texts_are_a_typed_error(adapter: str, tools: Any) -> None:
    fit = ADAPTERS[adapter]()
    messages = [_request("Review.")] if adapter == "pydantic_ai" else list(MESSAGES)
    with pytest.raises(ArgumentTypeError):
        fit(messages, 1_000, tools=tools)


def test_fit_items_instructions_must_be_text() -> None:
    fit_items = _fit_items()
    with pytest.raises(ArgumentTypeError):
        fit_items(list(MESSAGES), 1_000, 5)


def test_pydantic_ai_cache_must_be_a_memo() -> None:
    fit = _pydantic_ai()
    with pytest.raises(ArgumentTypeError):
        fit([_request("Review.")], 1_000, cache=5)


def test_pydantic_ai_parts_set_to_none_are_an_invalid_message() -> None:
    fit = _pydantic_ai()
    message = _request("Review.")
    message.parts = None
    with pytest.raises(InvalidMessageError):
        fit([message], 1_000)
    assert issubclass(InvalidMessageError, ac.errors.AgentContextError)
