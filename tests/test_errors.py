"""Bad input raises a typed exception that names the message (or file line); nothing panics and
nothing is silently dropped."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext import errors


@pytest.mark.parametrize(
    ("fmt", "messages", "index", "fragment"),
    [
        ("openai", [{"role": "user", "content": "ok"}, {"role": "wizard", "content": "x"}], 1, "unknown role"),
        ("openai", [{"content": "x"}], 0, "missing `role`"),
        ("openai", [{"role": 3, "content": "x"}], 0, "`role` must be a string"),
        ("openai", [{"role": "user", "content": 42}], 0, "`content` must be"),
        ("openai", [{"role": "tool", "content": "x"}], 0, "without `tool_call_id`"),
        ("openai", [{"role": "tool", "tool_call_id": 7, "content": "x"}], 0, "`tool_call_id` must be a string"),
        (
            "openai",
            [{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}],
            0,
            "missing `id`",
        ),
        (
            "openai",
            [{"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": {"x": 1}}}]}],
            0,
            "`arguments` must be a string",
        ),
        ("openai", [{"role": "assistant", "tool_calls": "nope"}], 0, "`tool_calls` must be a list"),
        ("openai", ["not a dict"], 0, "must be an object"),
        ("openai", [{"role": "user", "content": [{"text": "no type"}]}], 0, "needs a string `type`"),
        (
            "anthropic",
            [{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}],
            0,
            "missing `tool_use_id`",
        ),
        (
            "anthropic",
            [{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": "x"}]}],
            0,
            "`input` must be an object",
        ),
        ("anthropic", [{"role": "tool", "content": "x"}], 0, "unknown role"),
        ("anthropic", [{"role": "user", "content": [{"type": "text"}]}], 0, "missing `text`"),
        ("responses", [{"type": "function_call", "name": "f", "arguments": "{}"}], 0, "missing `call_id`"),
        ("responses", [{"role": "user"}], 0, "needs `content`"),
        ("responses", [{"type": "function_call_output", "call_id": 5, "output": "x"}], 0, "`call_id` must be a string"),
        (
            "jsonl",
            [{"role": "assistant", "content": "", "tool_calls": [{"id": "a", "name": "f"}]}],
            0,
            "missing `arguments`",
        ),
    ],
)
def test_malformed_messages_name_the_index(fmt: str, messages: list[Any], index: int, fragment: str) -> None:
    with pytest.raises(errors.InvalidMessageError) as info:
        ac.Conversation(messages, format=fmt)
    err = info.value
    assert err.index == index
    assert isinstance(err, ValueError)
    assert isinstance(err, errors.AgentContextError)
    assert f"message {index}" in str(err)
    assert fragment in str(err)


def test_append_reports_the_index_within_the_batch_and_keeps_the_conversation() -> None:
    conv = ac.Conversation([{"role": "user", "content": "a"}])
    with pytest.raises(errors.InvalidMessageError) as info:
        conv.extend([{"role": "assistant", "content": "fine"}, {"role": "user", "content": None, "oops": {1, 2}}])
    assert info.value.index == 1
    assert "set is not JSON data" in str(info.value)
    assert len(conv) == 1, "a failed batch appends nothing"


def test_lone_surrogates_are_rejected() -> None:
    with pytest.raises(errors.InvalidMessageError) as info:
        ac.Conversation([{"role": "user", "content": "ok"}, {"role": "user", "content": "bad \ud800 text"}])
    assert info.value.index == 1
    assert "surrogate" in str(info.value)


def test_deeply_nested_content_is_rejected_not_a_crash() -> None:
    deep: Any = "x"
    for _ in range(10_000):
        deep = [deep]
    with pytest.raises(errors.InvalidMessageError) as info:
        ac.Conversation([{"role": "user", "content": "a"}, {"role": "user", "content": deep}])
    assert info.value.index == 1
    assert "nested deeper" in str(info.value)


def test_wrong_container_types() -> None:
    with pytest.raises(TypeError):
        ac.Conversation("not a list")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ac.Conversation({"role": "user", "content": "x"})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ac.count_tokens_batch(["a", 3])  # type: ignore[list-item]


def test_unknown_option_names() -> None:
    with pytest.raises(errors.OptionError, match='unknown encoding "p50k"'):
        ac.count_tokens("x", encoding="p50k")
    with pytest.raises(errors.OptionError, match="unknown format"):
        ac.Conversation([], format="xml")
    assert issubclass(errors.OptionError, ValueError)


def test_index_out_of_range() -> None:
    conv = ac.Conversation([{"role": "user", "content": "a"}])
    assert conv[-1] == {"role": "user", "content": "a"}
    with pytest.raises(errors.MessageIndexError):
        conv[1]
    with pytest.raises(IndexError):
        conv[-2]


def test_large_integers_and_nan_are_rejected() -> None:
    with pytest.raises(errors.InvalidMessageError, match="64-bit"):
        ac.Conversation([{"role": "user", "content": "a", "meta": 2**70}])
    with pytest.raises(errors.InvalidMessageError, match="not a JSON number"):
        ac.Conversation([{"role": "user", "content": "a", "meta": float("nan")}])


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [
        ('{"role": "user", "content": "a"}\n{"role": "user", "content": \n', 2, "not valid JSON"),
        ('{"role": "user", "content": "a"}\n\n[1, 2]\n', 3, "one JSON object per line"),
        ('{"role": "user", "content": "a"}\n{"role": "alien", "content": "b"}\n', 2, "unknown role"),
        ("", 1, "empty"),
        ("hello", 1, "not a transcript"),
    ],
)
def test_bad_files_name_the_line(tmp_path: Path, content: str, line: int, fragment: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(errors.TranscriptError) as info:
        ac.Conversation.from_file(path)
    assert info.value.line == line
    assert info.value.path == str(path)
    assert str(path) in str(info.value)
    assert f"line {line}" in str(info.value)
    assert fragment in str(info.value)


def test_bad_json_array_names_the_message(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps([{"role": "user", "content": "a"}, {"role": "tool", "content": "x"}]), encoding="utf-8")
    with pytest.raises(errors.TranscriptError) as info:
        ac.Conversation.from_file(path, format="openai")
    assert info.value.index == 1
    assert info.value.line is None
    assert "message 1" in str(info.value)


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(errors.TranscriptReadError) as info:
        ac.Conversation.from_file(tmp_path / "missing.jsonl")
    assert isinstance(info.value, OSError)
    assert info.value.path.endswith("missing.jsonl")
    with pytest.raises(errors.TranscriptReadError):
        ac.Conversation.from_file(tmp_path)


@pytest.mark.parametrize(
    "exc",
    [
        errors.InvalidMessageError("message 3: bad", 3),
        errors.ConversionError("message 1: no", 1, "anthropic"),
        errors.TranscriptError("f: line 2: bad", "f", 2, None),
        errors.TranscriptReadError(2, "f: missing", "f"),
        errors.OptionError("unknown"),
    ],
)
def test_exceptions_pickle(exc: Exception) -> None:
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc)
    assert str(back) == str(exc)
    assert back.__dict__ == exc.__dict__


def test_errors_module_is_where_the_core_raises_from() -> None:
    with pytest.raises(errors.InvalidMessageError) as info:
        ac.Conversation([{"role": "nobody"}])
    assert type(info.value).__module__ == "agentcontext.errors"
