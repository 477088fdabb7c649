"""Issue 30: an adapter's fit over a history that only grew converts and rebuilds only what is new
(counted, not timed), and its output is the one a fit from scratch gives."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_core", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from agentcontext.integrations import langchain as lc

BUDGET = 3_000


def result(i: int) -> str:
    return "\n".join(f"{k:4d}  def handler_{i}_{k}(request): return load(request, {k})" for k in range(40))


def turn(i: int) -> list[BaseMessage]:
    call = {"id": f"c{i}", "name": "read_file", "args": {"path": f"m{i}.py"}}
    return [
        HumanMessage(f"Review module {i}."),
        AIMessage(f"Reading {i}.", tool_calls=[call]),
        ToolMessage(result(i), tool_call_id=f"c{i}"),
        AIMessage(f"Module {i} is fine."),
    ]


def sent(messages: list[BaseMessage]) -> list[Any]:
    return [lc.to_openai(m) for m in messages]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    counts = {"converted": 0, "rebuilt": 0}
    to_openai, rebuild = lc.to_openai, lc._rebuild

    def counting_to_openai(message: BaseMessage, index: int = 0) -> dict[str, Any]:
        counts["converted"] += 1
        return to_openai(message, index)

    def counting_rebuild(message: BaseMessage, parts: Any) -> BaseMessage:
        counts["rebuilt"] += 1
        return rebuild(message, parts)

    monkeypatch.setattr(lc, "to_openai", counting_to_openai)
    monkeypatch.setattr(lc, "_rebuild", counting_rebuild)
    return counts


def test_a_grown_history_converts_and_rebuilds_only_its_new_messages(counted: dict[str, int]) -> None:
    cache = lc.converted()
    history: list[BaseMessage] = [SystemMessage("You review code.")]
    for i in range(12):
        new = turn(i)
        history += new
        before = dict(counted)
        fitted = lc.fit_messages(list(history), BUDGET, cache=cache)
        converted = counted["converted"] - before["converted"]
        rebuilt = counted["rebuilt"] - before["rebuilt"]
        # Each call converts its new messages only, and rebuilds at most the results newly cleared.
        assert converted == len(new) + (i == 0)  # (the system message on the first call)
        assert rebuilt <= 1
        assert cache.resumed == i
        # What the model receives is what a fit from scratch gives.
        assert sent(fitted) == sent(lc.fit_messages(list(history), BUDGET))
    assert sum(m.content.startswith("[") for m in fitted if isinstance(m, ToolMessage)) >= 3


def test_a_message_changed_in_place_is_converted_again(counted: dict[str, int]) -> None:
    cache = lc.converted()
    history: list[BaseMessage] = [SystemMessage("You review code."), *turn(0), *turn(1)]
    lc.fit_messages(history, BUDGET, cache=cache)
    history[1].content = "Review module 0 and say whether it leaks."
    history += turn(2)
    before = counted["converted"]
    fitted = lc.fit_messages(history, BUDGET, cache=cache)
    assert counted["converted"] - before == 1 + 4
    assert cache.resumed == 0
    assert sent(fitted) == sent(lc.fit_messages(history, BUDGET))
    assert fitted[1].content == "Review module 0 and say whether it leaks."


def test_a_shorter_or_different_history_starts_again(counted: dict[str, int]) -> None:
    cache = lc.converted()
    a: list[BaseMessage] = [SystemMessage("You review code."), *turn(0), *turn(1)]
    b: list[BaseMessage] = [a[0], *turn(5)]
    twice: list[BaseMessage] = [*a, a[1], *turn(7)]  # an object twice in the list
    for history in (a, b, a[:3], a, twice, twice, a):
        assert sent(lc.fit_messages(history, BUDGET, cache=cache)) == sent(lc.fit_messages(history, BUDGET))
    assert cache.resumed == 3  # a after a[:3], twice after a, twice after twice
