"""Pydantic AI's history processor keeps each message's conversion across calls. It told a message
unchanged by its ``parts`` list alone (the same list, as long): a part replaced in that list, or a
part's field set anew in place (its ``content``: a processor before it redacting or shortening a
return, a dataclass being mutable), kept the old conversion, so the old text was counted (more
than the budget sent) and fitted. Each part and its fields now tell the message unchanged (the
last call's messages in two passes of the core)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="Pydantic AI is not installed (pip install 'agentcontext[pydantic-ai]')")

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

import agentcontext as ac
from agentcontext.integrations.pydantic_ai import _dicts, converted, fit_messages, history_processor

BIG = "word " * 5_000
BUDGET = 3_000


def _history(turns: int) -> list[ModelMessage]:
    out: list[ModelMessage] = []
    for i in range(turns):
        out += [
            ModelRequest(parts=[UserPromptPart(f"Review module {i}.")]),
            ModelResponse(parts=[ToolCallPart("read", {"p": i}, tool_call_id=f"c{i}")]),
            ModelRequest(parts=[ToolReturnPart("read", "x " * 50, tool_call_id=f"c{i}")]),
            ModelResponse(parts=[TextPart(f"Module {i} is fine.")]),
        ]
    return out


def _set_prompt(h: list[ModelMessage]) -> None:
    h[0].parts[0].content = BIG  # type: ignore[union-attr]


def _replace_prompt(h: list[ModelMessage]) -> None:
    h[0].parts[0] = UserPromptPart(BIG)


def _set_text(h: list[ModelMessage]) -> None:
    h[3].parts[0].content = BIG  # type: ignore[union-attr]


def _set_return(h: list[ModelMessage]) -> None:
    h[2].parts[0].content = BIG  # type: ignore[union-attr]


def _set_args(h: list[ModelMessage]) -> None:
    h[5].parts[0].args = {"p": BIG}  # type: ignore[union-attr]


def _tokens(messages: list[ModelMessage]) -> int:
    return ac.Conversation([d for i, m in enumerate(messages) for d in _dicts(m, i)], format="openai").tokens


EDITS = [_set_prompt, _replace_prompt, _set_text, _set_return, _set_args]


@pytest.mark.parametrize("edit", EDITS)
@pytest.mark.parametrize("calls_before", [1, 2])
def test_a_part_changed_in_place_is_fitted_as_it_is_now(
    edit: Callable[[list[ModelMessage]], None], calls_before: int
) -> None:
    cache = converted()
    history = _history(4)
    for _ in range(calls_before):
        fit_messages(history, BUDGET, cache=cache)
    edit(history)
    got = fit_messages(history, BUDGET, cache=cache)
    fresh = fit_messages(copy.deepcopy(history), BUDGET)
    # Before: the old part was counted and the edited one sent (5,000 tokens over the budget).
    assert _tokens(got) <= BUDGET
    assert [_dicts(m, 0) for m in got] == [_dicts(m, 0) for m in fresh]


def test_a_processor_before_it_that_redacts_in_place_is_followed() -> None:
    process = history_processor(BUDGET)
    history = _history(2)
    secret = "\n".join(f"line {k}: the API key is sk-SECRET-{k}" for k in range(800))
    history.append(ModelResponse(parts=[ToolCallPart("read", {"p": 9}, tool_call_id="c9")]))
    history.append(ModelRequest(parts=[ToolReturnPart("read", secret, tool_call_id="c9")]))
    first = process(None, history)  # type: ignore[arg-type]
    assert "sk-SECRET" in str(first[-1].parts[0].content)  # (the return over the budget: cut, head and tail)
    for m in history:  # a redacting processor before it: every return shortened in place
        for part in m.parts:
            if isinstance(part, ToolReturnPart):
                part.content = "[redacted]"
    got = process(None, history)  # type: ignore[arg-type]
    sent = [d for i, m in enumerate(got) for d in _dicts(m, i)]
    # Before: the return was cut again from its old text, the key sent as it was.
    assert not [d for d in sent if "sk-SECRET" in str(d.get("content"))]


def test_an_unchanged_history_still_resumes() -> None:
    cache = converted()
    history = _history(20)
    fit_messages(history, 100_000, cache=cache)
    history += _history(1)
    before = cache.resumed
    fit_messages(history, 100_000, cache=cache)
    assert cache.resumed == before + 1


def test_the_same_part_object_in_two_messages_is_read_once_per_place() -> None:
    part = ToolReturnPart("read", "x " * 50, tool_call_id="c0")
    history: list[Any] = [
        ModelRequest(parts=[UserPromptPart("Review.")]),
        ModelResponse(parts=[ToolCallPart("read", {"p": 0}, tool_call_id="c0")]),
        ModelRequest(parts=[part]),
        ModelResponse(parts=[TextPart("Fine.")]),
    ]
    cache = converted()
    fit_messages(history, BUDGET, cache=cache)
    history += [ModelRequest(parts=[part])]  # (orphan return, as given)
    fit_messages(history, BUDGET, cache=cache)
    part.content = BIG
    got = fit_messages(history, BUDGET, cache=cache)
    assert _tokens(got) <= BUDGET
