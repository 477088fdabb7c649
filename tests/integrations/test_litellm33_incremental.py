"""Issue 30: LiteLLM's ``fit_messages`` takes the last call's work for the messages it ended with
(by identity, its message objects read as then); whatever happens to the list in between — a
message changed in place, the list replaced, rewound or branched, two threads taking turns — a
call gives exactly what a call on fresh copies gives."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from agentcontext.integrations import litellm
from agentcontext.integrations.litellm import fit_messages
from tests.integration_support import Function, Message, ToolCall

BUDGET = 3_000


def result(i: int, lines: int = 40) -> str:
    return "\n".join(f"{k:4d}  def handler_{i}_{k}(request): return load(request, {k})" for k in range(lines))


def turn(i: int, tag: str = "") -> list[Any]:
    call = ToolCall(id=f"c{tag}{i}", function=Function(name="read", arguments=f'{{"p": "{i}"}}'))
    return [
        {"role": "user", "content": f"Review module {tag}{i}."},
        Message(content=f"Reading {tag}{i}.", tool_calls=[call]),
        {"role": "tool", "tool_call_id": f"c{tag}{i}", "content": result(i)},
        Message(content=f"Module {tag}{i} is fine."),
    ]


def history(turns: int, tag: str = "") -> list[Any]:
    return [{"role": "system", "content": "You review code."}, *(m for i in range(turns) for m in turn(i, tag))]


def shown(messages: list[Any]) -> list[Any]:
    return [m if isinstance(m, dict) else m.model_dump(mode="json", exclude_none=True) for m in messages]


def check(messages: list[Any]) -> int:
    """The call resumes from the last one's work where it can; fresh copies' call does not."""
    kept = litellm._KEPT.last
    expected = shown(fit_messages(copy.deepcopy(messages), BUDGET))
    litellm._KEPT.last = kept
    resumed = litellm._KEPT.resumed
    assert shown(fit_messages(messages, BUDGET)) == expected
    return litellm._KEPT.resumed - resumed


def set_result(h: list[Any]) -> None:
    h[-2]["content"] = result(5, 120)


def set_reply(h: list[Any]) -> None:
    h[-1].content = "Module 5 leaks. " + result(5, 60)


def set_arguments(h: list[Any]) -> None:
    call = ToolCall(id="c5", function=Function(name="read", arguments='{"p": "' + "x" * 4000 + '"}'))
    h[-3].tool_calls = [call]


def set_call_id(h: list[Any]) -> None:
    h[-2]["tool_call_id"] = "nobody"


def set_early_result(h: list[Any]) -> None:
    h[3]["content"] = "short now"


@pytest.mark.parametrize("mutate", [set_result, set_reply, set_arguments, set_call_id, set_early_result])
def test_a_message_changed_in_place_gives_what_fresh_copies_give(mutate: Callable[[list[Any]], None]) -> None:
    h = history(6)
    for n in range(2, 7):
        check(h[: 1 + 4 * n])
    mutate(h)
    h += turn(7)
    check(h)
    h += turn(8)
    check(h)


def test_a_replaced_rewound_or_branched_list_gives_what_fresh_copies_give() -> None:
    h = history(10)
    for n in range(1, 11):
        check(h[: 1 + 4 * n])
    for messages in (copy.deepcopy(h), history(10, tag="x"), h[:13], [*h[:21], *history(4, tag="b")[1:]], h):
        check(messages)


def test_a_growing_list_is_resumed() -> None:
    h = history(8)
    assert sum(check(h[: 1 + 4 * n]) for n in range(1, 9)) == 7


def test_two_threads_taking_turns_give_what_fresh_copies_give() -> None:
    a, b = history(10, tag="a"), history(10, tag="b")
    for n in range(1, 11):
        for h in (a, b):
            check(h[: 1 + 4 * n])


def test_the_same_object_twice_gives_what_fresh_copies_give() -> None:
    h = history(6)
    check(h)
    check([*h, h[-1]])
    check([*h, h[-1], *turn(7)])
