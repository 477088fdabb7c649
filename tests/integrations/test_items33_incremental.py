"""Issue 30: the Agents SDK adapter fits each call from what the last one kept (its turns, their
fingerprints and the core's trimmer); whatever happens to the items in between — an item changed
in place, the list replaced, rewound or branched, two threads taking turns, an item with no Chat
form — a call gives exactly what a fresh fitter gives for the same input."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
)

from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

import agentcontext as ac
from agentcontext.integrations.openai_agents import _Fitter

BUDGET = ac.Budget(3_000)


def result(i: int, lines: int = 40) -> str:
    return "\n".join(f"{k:4d}  def handler_{i}_{k}(request): return load(request, {k})" for k in range(lines))


def turn(i: int, tag: str = "", models: bool = False) -> list[Any]:
    call: Any = {"type": "function_call", "call_id": f"c{tag}{i}", "name": "read", "arguments": f'{{"p": "{i}"}}'}
    said: Any = {
        "id": f"m{tag}{i}",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": f"Module {tag}{i} is fine.", "annotations": []}],
    }
    if models:
        call = ResponseFunctionToolCall(**call)
        text = ResponseOutputText(type="output_text", text=said["content"][0]["text"], annotations=[])
        said = ResponseOutputMessage(**{**said, "content": [text]})
    return [
        {"role": "user", "content": f"Review module {tag}{i}."},
        call,
        {"type": "function_call_output", "call_id": f"c{tag}{i}", "output": result(i)},
        said,
    ]


def history(turns: int, tag: str = "", models: bool = False) -> list[Any]:
    return [x for i in range(turns) for x in turn(i, tag, models)]


def fresh(items: list[Any]) -> list[Any]:
    return _Fitter().fit(copy.deepcopy(items), BUDGET, None, ())


def shown(items: list[Any]) -> list[Any]:
    return [x if isinstance(x, dict) else x.model_dump(mode="json", exclude_none=True) for x in items]


def check(fitter: _Fitter, items: list[Any]) -> None:
    assert shown(fitter.fit(items, BUDGET, None, ())) == shown(fresh(items))


def set_output(h: list[Any]) -> None:
    h[-2]["output"] = result(5, 120)


def set_arguments(h: list[Any]) -> None:
    if isinstance(h[-3], dict):
        h[-3]["arguments"] = '{"p": "' + "x" * 4000 + '"}'
    else:
        h[-3].arguments = '{"p": "' + "x" * 4000 + '"}'


def set_request(h: list[Any]) -> None:
    h[-4]["content"] = "Review module 5 and say whether it leaks. " + result(5, 30)


def set_early_output(h: list[Any]) -> None:
    h[2]["output"] = "short now"


def to_reasoning(h: list[Any]) -> None:
    h[-1] = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thinking"}]}


@pytest.mark.parametrize("models", [False, True])
@pytest.mark.parametrize("mutate", [set_output, set_arguments, set_request, set_early_output, to_reasoning])
def test_an_item_changed_in_place_gives_what_a_fresh_fitter_gives(
    mutate: Callable[[list[Any]], None], models: bool
) -> None:
    fitter = _Fitter()
    h = history(6, models=models)
    for n in range(2, 7):
        check(fitter, h[: 4 * n])
    mutate(h)
    h += turn(7, models=models)
    check(fitter, h)
    h += turn(8, models=models)
    check(fitter, h)


def test_a_replaced_rewound_or_branched_list_gives_what_a_fresh_fitter_gives() -> None:
    fitter = _Fitter()
    h = history(10)
    for n in range(1, 11):
        check(fitter, h[: 4 * n])
    for items in (copy.deepcopy(h), history(10, tag="x"), h[:13], [*h[:21], *history(4, tag="b")], h):
        check(fitter, items)


def test_two_threads_taking_turns_give_what_fresh_fitters_give() -> None:
    fitter = _Fitter()
    a, b = history(10, tag="a"), history(10, tag="b")
    for n in range(1, 11):
        for h in (a, b):
            check(fitter, h[: 4 * n])


def test_a_built_in_tool_call_or_reasoning_takes_the_general_path_and_gives_what_a_fresh_fitter_gives() -> None:
    fitter = _Fitter()
    h = history(8)
    for n in range(2, 9):
        check(fitter, h[: 4 * n])
    search = {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "q"},
    }
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thinking"}]}
    for extra in (search, reasoning):
        with_extra = [*h, extra, *turn(9)]
        check(fitter, with_extra)
        check(fitter, [*with_extra, *turn(10)])
        check(fitter, [*h, *turn(9)])
