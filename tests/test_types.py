"""The typed results of the API: each returned dict has exactly the keys of its TypedDict, the
whole-list functions return one shape per call (decided by the arguments, never by detection),
and every adapter takes ``budget: int | Budget`` alike."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext import integrations
from agentcontext import types as t
from agentcontext._core import search_log, search_messages
from agentcontext.integrations.litellm import afit_messages, fit_messages
from agentcontext.memory.conversation import conversation_search

ANTHROPIC = [
    {"role": "user", "content": [{"type": "text", "text": "Read the log and fix the failing test."}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "error: boom\n" * 50}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "read_file", "input": {"path": "a"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "ok"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "Fixed: ran `pytest tests/test_a.py`, all passed."}]},
]

CHAT: list[dict[str, Any]] = [{"role": "system", "content": "Be terse."}]
for _k in range(30):
    CHAT += [
        {"role": "user", "content": f"Read part {_k}."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": f"c{_k}", "type": "function", "function": {"name": "read", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": f"c{_k}", "content": f"line {_k}\n" * 200},
    ]


def keys_of(td: Any) -> set[str]:
    return set(typing.get_type_hints(td))


def assert_shape(value: Any, td: Any) -> None:
    """``value`` is a dict with exactly the keys of the TypedDict ``td`` (nested ones checked too)."""
    assert isinstance(value, dict)
    assert set(value) == keys_of(td), td.__name__
    for key, hint in typing.get_type_hints(td).items():
        if typing.get_origin(hint) is list and typing.is_typeddict(typing.get_args(hint)[0]):
            for item in value[key]:
                assert_shape(item, typing.get_args(hint)[0])


# -- one shape per call ----------------------------------------------------------------------


def test_an_anthropic_list_found_by_auto_comes_back_a_list() -> None:
    assert ac.detect_format(ANTHROPIC) == "anthropic"
    trimmed = ac.trim_messages(ANTHROPIC, 100_000)
    fixed, changes = ac.repair(ANTHROPIC)
    # The same list, in the same format, whatever "auto" found.
    assert isinstance(trimmed, list) and isinstance(fixed, list)
    assert trimmed == ac.Conversation(ANTHROPIC, format="anthropic").to_format("anthropic") == fixed
    assert changes == []


def test_the_request_fields_come_back_when_the_arguments_ask_for_anthropic() -> None:
    with_format = ac.trim_messages(ANTHROPIC, 100_000, format="anthropic")
    assert with_format == {"messages": ANTHROPIC}
    with_system = ac.trim_messages(ANTHROPIC, 100_000, system="Be terse.")
    assert with_system == {"system": "Be terse.", "messages": ANTHROPIC}
    fixed, _ = ac.repair(ANTHROPIC, system="Be terse.")
    assert fixed == with_system
    assert ac.repair(ANTHROPIC, format="anthropic")[0] == with_format


def test_a_system_message_of_an_auto_anthropic_list_stays_its_first_element() -> None:
    messages = [{"role": "system", "content": "Be terse."}, *ANTHROPIC]
    assert ac.detect_format(messages) == "anthropic"
    trimmed = ac.trim_messages(messages, 100_000)
    assert trimmed[0] == {"role": "system", "content": "Be terse."}
    assert trimmed[1:] == ANTHROPIC
    # Read back as it was written.
    assert ac.Conversation(trimmed, format="anthropic").to_format("anthropic") == trimmed


def test_other_formats_keep_their_list() -> None:
    out = ac.trim_messages(CHAT, 2_000)
    assert isinstance(out, list) and out[0] is CHAT[0] and out[-1] is CHAT[-1]
    assert isinstance(ac.convert(ANTHROPIC, to="openai"), list)
    assert set(ac.convert(CHAT, to="anthropic")) == {"system", "messages"}


# -- typed results match what comes back -----------------------------------------------------


def test_surgery_results_have_their_typed_keys() -> None:
    conv = ac.Conversation(ANTHROPIC, format="anthropic")
    handoff = conv.handoff()
    assert_shape(handoff, t.Handoff)
    assert handoff["commands"] or handoff["tests"] or handoff["user_requests"]
    _, stubs = conv.dedup_reads(["read_file"], recent_messages=0)
    assert stubs and all(assert_shape(s, t.DedupedRead) is None for s in stubs)
    assert stubs[0]["tool_use_id"] == "t1"
    _, cuts = conv.truncate_tool_results(100)
    assert cuts and all(assert_shape(c, t.TruncatedResult) is None for c in cuts)
    assert cuts[0]["chars_before"] > cuts[0]["chars_after"]


def test_search_results_have_their_typed_keys(tmp_path: Path) -> None:
    conv = ac.Conversation(ANTHROPIC, format="anthropic")
    found = search_messages(conv, "boom")
    assert_shape(found, t.SearchResult)
    assert found["hits"] and found["hits"][0]["recall_id"] == "t1"
    log_path = tmp_path / "s.log"
    ac.SessionLog(log_path, format="anthropic").append(conv)
    assert_shape(search_log(log_path, "boom"), t.SearchResult)
    assert_shape(conversation_search(log_path, "boom"), t.SearchResult)


def test_memory_results_have_their_typed_keys(tmp_path: Path) -> None:
    store = ac.MemoryStore(tmp_path / "mem")
    written = store.write("style", description="How to write", type="feedback", body="Short sentences.")
    assert_shape(written, t.MemoryRecordWithBody)
    assert written["body"] == "Short sentences." and written["type"] == "feedback"
    assert_shape(store.get("style"), t.MemoryRecordWithBody)
    listed = store.list()
    assert len(listed) == 1
    assert_shape(listed[0], t.MemoryRecord)
    hits = store.search("sentences")
    assert len(hits) == 1
    assert_shape(hits[0], t.MemoryHit)
    index = ac.MemoryIndex(store.directory)
    assert index.refresh() == {"files": 1, "read": 1, "reused": 0, "removed": 0}
    assert_shape(index.refresh(), t.RefreshStats)
    assert index.directory == store.directory and isinstance(index.directory, Path)


# -- adapters take budget: int | Budget alike ---------------------------------------------------


def test_budget_is_public_and_an_int_is_the_default_budget() -> None:
    assert ac.Budget is integrations.Budget and "Budget" in ac.__all__
    fitted = fit_messages(CHAT, 2_000)
    assert fitted == fit_messages(CHAT, ac.Budget(2_000))
    assert ac.Conversation(fitted).tokens <= 2_000 < ac.Conversation(CHAT).tokens
    # A Budget carries the options: reserving room fits into less.
    reserved = fit_messages(CHAT, ac.Budget(2_000, reserved_output=1_000))
    assert ac.Conversation(reserved).tokens <= 1_000


def test_async_adapter_takes_the_same_budget() -> None:
    import asyncio

    assert asyncio.run(afit_messages(CHAT, 2_000)) == fit_messages(CHAT, 2_000)


@pytest.mark.parametrize(
    ("budget", "error", "message"),
    [
        (0, ac.OptionError, "budget must be a positive integer, got 0"),
        (-1, ac.OptionError, "budget must be a positive integer, got -1"),
        ("100", ac.ArgumentTypeError, "budget must be a positive integer"),
        (True, ac.ArgumentTypeError, "budget must be a positive integer"),
        (1.5, ac.ArgumentTypeError, "budget must be a positive integer"),
    ],
)
def test_a_bad_budget_is_refused_by_name(budget: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        fit_messages(CHAT, budget)
