"""LiteLLM's ``fit_messages`` over a list of plain dicts is ``trim_messages`` over it (the memo's
bookkeeping skipped: it made that path 1.2x the core's); any other list takes the memo, its
dicts read fresh by the kept trimmer, which now keeps nothing between such calls."""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any

import pytest

import agentcontext as ac
from agentcontext import _core
from agentcontext.integrations import litellm
from agentcontext.integrations.litellm import fit_messages
from tests.integration_support import Function, Message, ToolCall


def result(i: int, lines: int = 40) -> str:
    return "\n".join(f"{k:4d}  def handler_{i}_{k}(request): return load(request, {k})" for k in range(lines))


def history(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "You review code."}]
    for i in range(turns):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": f'{{"p": "{i}"}}'}}
        out += [
            {"role": "user", "content": f"Review module {i}."},
            {"role": "assistant", "content": f"Reading {i}.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": result(i)},
            {"role": "assistant", "content": f"Module {i} is fine."},
        ]
    return out


@pytest.mark.parametrize("budget", [1_500, 3_000, 100_000])
def test_plain_dicts_are_fitted_as_trim_messages_fits_them(budget: int) -> None:
    messages = history(12)
    for n in range(5, len(messages) + 1, 4):
        got = fit_messages(messages[:n], budget)
        want = ac.trim_messages(messages[:n], budget)
        assert got == want
        # The caller's own dicts where ``trim_messages`` gives them, copies where it made copies.
        given = set(map(id, messages))
        assert [id(m) in given for m in got] == [id(o) in given for o in want]
        assert all(m is o for m, o in zip(got, want, strict=True) if id(o) in given)


def test_plain_dicts_changed_in_place_are_read_again() -> None:
    messages = history(10)
    fit_messages(messages, 2_000)
    messages[2]["tool_calls"][0]["function"]["arguments"] = '{"p": "' + "x" * 3_000 + '"}'
    messages[-2]["content"] = result(9, 200)
    assert fit_messages(messages, 6_000) == fit_messages(copy.deepcopy(messages), 6_000)


def test_dict_subclasses_and_objects_take_the_memo() -> None:
    plain = history(10)
    messages: list[Any] = [OrderedDict(m) if m["role"] == "user" else m for m in plain]
    calls = [ToolCall(id=f"c{k}", function=Function(name="read", arguments="{}")) for k in range(1)]
    messages += [
        Message(content="Reading more.", tool_calls=calls),
        {"role": "tool", "tool_call_id": "c0", "content": "ok"},
    ]
    got = fit_messages(messages, 2_000)
    # Each unchanged message is the caller's own object, whatever its class.
    assert any(type(m) is OrderedDict for m in got)
    assert any(isinstance(m, Message) for m in got)
    assert all(any(m is x for x in messages) or type(m) is dict for m in got)
    shown = [dict(m) if isinstance(m, dict) else m.model_dump(mode="json", exclude_none=True) for m in got]
    fresh = fit_messages([dict(m) if isinstance(m, dict) else m for m in copy.deepcopy(messages)], 2_000)
    assert shown == [dict(m) if isinstance(m, dict) else m.model_dump(mode="json", exclude_none=True) for m in fresh]


def test_the_kept_trimmer_reads_fresh_and_keeps_nothing() -> None:
    messages: list[Any] = history(10)
    messages[2] = Message(content=messages[2]["content"], tool_calls=[ToolCall(**messages[2]["tool_calls"][0])])
    first = fit_messages(messages, 2_000)
    trimmer = litellm._KEPT._trimmer
    assert trimmer is not None
    # A plain dict changed in place between calls: read again (nothing of the last call held).
    messages[-2]["content"] = result(9, 200)
    again = fit_messages(messages, 2_000)
    assert again != first
    fresh = fit_messages(copy.deepcopy(messages), 2_000)
    dump = lambda ms: [m if isinstance(m, dict) else m.model_dump(mode="json", exclude_none=True) for m in ms]
    assert dump(again) == dump(fresh)


def test_plain_dicts_helper() -> None:
    assert _core._plain_dicts([])
    assert _core._plain_dicts([{}, {"role": "user"}])
    assert not _core._plain_dicts([{}, OrderedDict()])
    assert not _core._plain_dicts([{}, Message(content="x")])
