"""Issue 30: the LangChain and LangGraph adapters fit each call from what the last one kept (its
messages' fingerprints and the core's trimmer); whatever happens to the history in between — a
message changed in place, the list replaced, the thread rewound or branched, two threads taking
turns — a call gives exactly what a fresh adapter gives for the same input."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("langchain_core", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

import agentcontext as ac
from agentcontext.integrations import langchain as lc

BUDGET = 3_000


def result(i: int, lines: int = 40) -> str:
    return "\n".join(f"{k:4d}  def handler_{i}_{k}(request): return load(request, {k})" for k in range(lines))


def turn(i: int, tag: str = "") -> list[BaseMessage]:
    call = {"id": f"c{tag}{i}", "name": "read_file", "args": {"path": f"m{tag}{i}.py"}}
    return [
        HumanMessage(f"Review module {tag}{i}.", id=f"h{tag}{i}"),
        AIMessage(f"Reading {tag}{i}.", tool_calls=[call], id=f"a{tag}{i}"),
        ToolMessage(result(i), tool_call_id=f"c{tag}{i}", id=f"t{tag}{i}"),
        AIMessage(f"Module {tag}{i} is fine.", id=f"d{tag}{i}"),
    ]


def history(turns: int, tag: str = "") -> list[BaseMessage]:
    return [SystemMessage("You review code.", id="s"), *(m for i in range(turns) for m in turn(i, tag))]


def shown(messages: list[BaseMessage]) -> list[Any]:
    """What the model receives, with each message's class and id."""
    return [(type(m).__name__, m.id, lc.to_openai(m)) for m in messages]


def check(fitted: list[BaseMessage], messages: list[BaseMessage]) -> None:
    """``fitted`` is what a fresh adapter fits ``messages`` into, within the budget, pairs valid."""
    assert shown(fitted) == shown(lc.fit_messages(list(messages), BUDGET, cache=lc.converted()))
    assert shown(fitted) == shown(lc.fit_messages(list(messages), BUDGET))
    dicts = [lc.to_openai(m) for m in fitted]
    assert ac.validate(dicts, format="openai") == []
    assert ac.Conversation(dicts, format="openai").tokens <= BUDGET


Mutation = Callable[[list[BaseMessage]], None]


# Each changes what the fit decides (a stale conversion would give another output).
def set_request(h: list[BaseMessage]) -> None:
    h[-4].content = "Review module 5 and say whether it leaks. " + result(5, 30)


def set_result(h: list[BaseMessage]) -> None:
    h[-2].content = result(5, 120)


def add_call_in_place(h: list[BaseMessage]) -> None:
    ai = h[-1]
    assert isinstance(ai, AIMessage)
    ai.tool_calls.append({"id": "extra", "name": "read_file", "args": {"path": result(70, 100)}})
    h.append(ToolMessage("done", tool_call_id="extra", id="extra-result"))


def blocks_in_place(h: list[BaseMessage]) -> None:
    h[-2].content.append({"type": "text", "text": result(71, 120)})  # type: ignore[union-attr]


def set_call_id(h: list[BaseMessage]) -> None:
    h[-2].tool_call_id = "nobody"  # an orphan result now: the general path's answer


def change_class(h: list[BaseMessage]) -> None:
    h[-3].__class__ = HumanMessage  # its call's result is an orphan now


@pytest.mark.parametrize(
    "mutate", [set_request, set_result, add_call_in_place, blocks_in_place, set_call_id, change_class]
)
def test_a_message_changed_in_place_gives_what_a_fresh_adapter_gives(mutate: Mutation) -> None:
    cache = lc.converted()
    h = history(6)
    if mutate is blocks_in_place:
        h[-2].content = [{"type": "text", "text": "part one"}]
    for n in range(2, 7):
        check(lc.fit_messages(h[: 1 + 4 * n], BUDGET, cache=cache), h[: 1 + 4 * n])
    try:
        mutate(h)
    except Exception:  # noqa: BLE001 - a mutation LangChain refuses: nothing to check
        pytest.skip("langchain refuses this change")
    h += turn(7)
    try:
        expected = lc.fit_messages(list(h), BUDGET)
    except ac.AgentContextError as exc:
        with pytest.raises(type(exc)):
            lc.fit_messages(h, BUDGET, cache=cache)
        return
    fitted = lc.fit_messages(h, BUDGET, cache=cache)
    assert shown(fitted) == shown(expected)
    # And the next call, after the history grew again.
    h += turn(8)
    assert shown(lc.fit_messages(h, BUDGET, cache=cache)) == shown(lc.fit_messages(list(h), BUDGET))


def test_a_replaced_list_gives_what_a_fresh_adapter_gives() -> None:
    cache = lc.converted()
    h = history(8)
    check(lc.fit_messages(h, BUDGET, cache=cache), h)
    # Equal messages, other objects (a checkpoint read back); then other contents at the same ids.
    again = copy.deepcopy(h)
    check(lc.fit_messages(again, BUDGET, cache=cache), again)
    other = history(8, tag="x")
    check(lc.fit_messages(other, BUDGET, cache=cache), other)
    check(lc.fit_messages(h, BUDGET, cache=cache), h)


def test_a_rewound_or_branched_thread_gives_what_a_fresh_adapter_gives() -> None:
    cache = lc.converted()
    h = history(10)
    for n in range(1, 11):
        check(lc.fit_messages(h[: 1 + 4 * n], BUDGET, cache=cache), h[: 1 + 4 * n])
    rewound = h[:13]
    check(lc.fit_messages(rewound, BUDGET, cache=cache), rewound)
    branch = [*h[:21], *(m for i in range(5, 9) for m in turn(i, tag="b"))]
    check(lc.fit_messages(branch, BUDGET, cache=cache), branch)
    # A message removed from the middle, then the original thread again.
    holed = [*h[:10], *h[11:]]
    for messages in (holed, h):
        try:
            expected = shown(lc.fit_messages(list(messages), BUDGET))
        except ac.AgentContextError:
            continue
        assert shown(lc.fit_messages(messages, BUDGET, cache=cache)) == expected


def test_two_threads_taking_turns_give_what_fresh_adapters_give() -> None:
    cache = lc.converted()
    a, b = history(12, tag="a"), history(12, tag="b")
    for n in range(1, 13):
        for h in (a, b):
            check(lc.fit_messages(h[: 1 + 4 * n], BUDGET, cache=cache), h[: 1 + 4 * n])


def test_the_same_message_twice_and_a_cut_request_give_what_a_fresh_adapter_gives() -> None:
    cache = lc.converted()
    h = history(6)
    twice = [*h, h[-1]]
    assert shown(lc.fit_messages(twice, BUDGET, cache=cache)) == shown(lc.fit_messages(list(twice), BUDGET))
    big = [*h, HumanMessage("Please review this. " + result(99, 200), id="big")]
    for _ in range(2):
        assert shown(lc.fit_messages(big, BUDGET, cache=cache)) == shown(lc.fit_messages(list(big), BUDGET))
    oversized = [*h, *turn(7)[:2], ToolMessage(result(7, 400), tool_call_id="c7", id="huge")]
    for _ in range(2):
        fitted = lc.fit_messages(oversized, BUDGET, cache=cache)
        assert shown(fitted) == shown(lc.fit_messages(list(oversized), BUDGET))


def test_the_middleware_and_the_hook_give_what_fresh_ones_give() -> None:
    from langchain.agents.middleware import ModelRequest

    from agentcontext.integrations.langgraph import fit_hook

    middleware, hook = lc.AgentContextMiddleware(BUDGET), fit_hook(BUDGET)

    def request(messages: list[BaseMessage]) -> ModelRequest:
        return ModelRequest(
            model=None,  # type: ignore[arg-type]
            messages=messages,
            system_message=None,
            tool_choice=None,
            tools=[],
            response_format=None,
            state={"messages": messages},  # type: ignore[typeddict-item]
            runtime=None,  # type: ignore[arg-type]
        )

    a, b = history(10, tag="a")[1:], history(10, tag="b")[1:]
    for n in range(1, 11):
        for h in (a, b):
            messages = h[: 4 * n]
            if n == 6:
                messages[2].content = "changed"
            fresh = lc.AgentContextMiddleware(BUDGET).fit_request(request(list(messages))).messages
            assert shown(middleware.fit_request(request(messages)).messages) == shown(fresh)
            fresh = fit_hook(BUDGET).invoke({"messages": list(messages)})["llm_input_messages"]
            assert shown(hook.invoke({"messages": messages})["llm_input_messages"]) == shown(fresh)


def test_a_cleared_result_is_the_same_object_on_every_call() -> None:
    cache = lc.converted()
    h = history(10)
    first = {m.id: m for m in lc.fit_messages(h[:37], BUDGET, cache=cache) if isinstance(m, ToolMessage)}
    cleared = [i for i, m in first.items() if m.content != next(x for x in h if x.id == i).content]
    assert cleared
    later = {m.id: m for m in lc.fit_messages(h, BUDGET, cache=cache)}
    assert all(later[i] is first[i] for i in cleared if i in later)


def test_the_carried_count_is_a_conversations_count() -> None:
    from agentcontext._core import Conversation, _chat_tokens

    calls = [{"id": "a", "type": "function", "function": {"name": "read", "arguments": '{"p": "é"}'}}]
    extra: list[dict[str, Any]] = [
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "a", "content": ""},
        {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "a", "content": "ünïcode 🎉 " * 30},
        {"role": "user", "content": "", "compaction": True},
        {"role": "developer", "content": "be brief"},
        {"role": "system", "content": "sys"},
    ]
    for encoding in ("o200k_base", "cl100k_base", "approximate"):
        dicts = [lc.to_openai(m) for m in history(6)] + extra
        for k in range(len(dicts)):
            expected = Conversation(dicts[k : k + 1], format="openai", encoding=encoding).tokens
            assert _chat_tokens(dicts[k : k + 1], encoding=encoding) == expected, dicts[k]
        assert _chat_tokens(dicts, encoding=encoding) == Conversation(dicts, format="openai", encoding=encoding).tokens
    assert _chat_tokens([{"role": "user", "content": [{"type": "text", "text": "x"}]}]) is None


def test_the_prints_describe_exactly_the_list_last_kept() -> None:
    # Two threads finishing calls out of order must not leave prints of one list under another's.
    a, b, c, d, x = (HumanMessage(t) for t in "abcdx")
    prints = lc.converted().prints
    assert prints is not None
    prints.keep([a, b, c], [], 0)
    prints.keep([x, b, c, d], [], 3)  # told the first 3 are kept already: only b, c are
    assert prints.same([x, b, c, d, a])
    assert not prints.same([a, b, c, d])
    c.content = "changed"
    assert not prints.same([x, b, c, d])
