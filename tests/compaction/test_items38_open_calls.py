"""``trim_messages``' whole-list fast path (issue 30) over an agent's list as it stands between
the model's tool calls and their results: the last assistant message's calls unanswered, or some
of its parallel calls answered. The fast path takes such a list (the caller's own dicts back)
and gives what the general path gives, cleared, selected and refused alike."""

from __future__ import annotations

import json
from typing import Any

import pytest

import agentcontext as ac
from tests import support

Messages = list[dict[str, Any]]


def open_calls(messages: Messages) -> set[str]:
    """The call ids of ``messages`` that no result answers."""
    ids: set[str] = set()
    for m in messages:
        ids.update(c["id"] for c in m.get("tool_calls") or [])
        if m["role"] == "tool":
            ids.discard(m["tool_call_id"])
    return ids


def both(messages: Messages, budget: int, **kwargs: Any) -> tuple[Any, Any]:
    """The fast path's and the general path's output (or the ``needed`` of their refusals)."""
    try:
        fast: Any = ac.trim_messages(messages, budget, **kwargs)
    except ac.BudgetError as e:
        fast = ("refused", e.needed)
    try:
        general: Any = ac.trim_messages(tuple(messages), budget, **kwargs)  # type: ignore[call-overload]
    except ac.BudgetError as e:
        general = ("refused", e.needed)
    return fast, general


def loop_prefixes(session: Messages, step: int = 1) -> list[Messages]:
    """The lists an agent's loop fits: every prefix of the session from its first request on."""
    return [session[:n] for n in range(3, len(session) + 1, step)]


@pytest.mark.parametrize("encoding", ["approximate", "o200k_base"])
@pytest.mark.parametrize(
    "options",
    [{}, {"clear_tool_inputs": True}, {"clear": False}, {"recent_tools": 0, "recent_messages": 2}],
    ids=["default", "inputs", "no-clear", "little-protection"],
)
def test_a_loop_with_open_calls_gives_what_the_general_path_gives(encoding: str, options: dict[str, Any]) -> None:
    session = support.synthetic_session(160, seed=11)
    before = json.dumps(session)
    total = ac.Conversation(session, encoding=encoding).tokens  # type: ignore[arg-type]
    open_lists = parallel_open = 0
    for messages in loop_prefixes(session):
        open_ids = open_calls(messages)
        for share in (0.15, 0.4, 2.0):
            fast, general = both(messages, int(total * share), encoding=encoding, **options)
            assert fast == general, (len(messages), share)
            if open_ids and isinstance(fast, list):
                open_lists += 1
                # The fast path took it: the messages it left alone are the caller's own dicts,
                # the unanswered calls among them.
                mine = {id(m) for m in messages}
                assert id(fast[-1]) in mine or messages[-1]["role"] == "tool"
                assert any(id(m) in mine for m in fast)
                assert open_calls(fast) == open_ids
                if messages[-1]["role"] == "tool":
                    parallel_open += 1
    assert open_lists > 50 and parallel_open > 0
    assert json.dumps(session) == before, "the input is never mutated"


def test_an_unanswered_call_that_is_not_the_last_leaves_the_fast_path() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    messages: Messages = [
        {"role": "user", "content": "Read it."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "user", "content": "Never mind, say hi."},
        {"role": "assistant", "content": "Hi."},
    ]
    fast, general = both(messages, 10_000)
    assert fast == general
    # The general path's own dicts: the fast path takes only the last message's open calls. The
    # general path repairs the list (the call gets the result an interrupted call gets).
    assert not any(m is f for m in messages for f in fast)
    assert [m.get("content") for m in fast] == [
        "Read it.",
        None,
        "[no result: the tool call was interrupted before it returned]",
        "Never mind, say hi.",
        "Hi.",
    ]


@pytest.mark.parametrize("encoding", ["approximate", "o200k_base"])
@pytest.mark.parametrize("parallel", [False, True])
def test_an_oversized_result_beside_open_calls_is_kept_or_refused_alike(encoding: str, parallel: bool) -> None:
    def call(cid: str) -> dict[str, Any]:
        return {"id": cid, "type": "function", "function": {"name": "read", "arguments": json.dumps({"p": cid})}}

    log = {"role": "tool", "tool_call_id": "big", "content": "line of the log\n" * 4_000}
    loop: Messages = [
        {"role": "system", "content": "You read logs."},
        {"role": "user", "content": "Read the logs."},
    ]
    if parallel:
        # The oversized result in the newest round, beside a call still unanswered.
        loop += [{"role": "assistant", "content": None, "tool_calls": [call("big"), call("next")]}, log]
    else:
        loop += [
            {"role": "assistant", "content": None, "tool_calls": [call("big")]},
            log,
            {"role": "assistant", "content": "More.", "tool_calls": [call("next")]},
        ]
    for budget in (300, 2_000, 40_000):
        fast, general = both(loop, budget, encoding=encoding)
        assert fast == general, budget
        if isinstance(fast, list):
            assert fast[-1] is loop[-1]
    assert isinstance(both(loop, 2_000, encoding=encoding)[0], tuple) == parallel
