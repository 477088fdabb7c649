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


def test_every_catchable_error_lives_in_the_errors_module() -> None:
    """Issue #14: CompactionError moved to agentcontext.errors (the old import path still works)."""
    from agentcontext import compaction

    assert compaction.CompactionError is errors.CompactionError is ac.CompactionError
    assert issubclass(errors.CompactionError, errors.AgentContextError)
    public = [getattr(errors, name) for name in errors.__all__]
    assert all(isinstance(c, type) and issubclass(c, errors.AgentContextError) for c in public)
    assert {name for name in dir(ac) if name.endswith("Error")} <= set(errors.__all__)


def test_testing_helpers_raise_typed_errors_for_wrong_types() -> None:
    """The assertion helpers' wrong-type errors are ArgumentTypeError (still a TypeError)."""
    from agentcontext.measure import testing

    conv = ac.Conversation([{"role": "user", "content": "hi"}])
    for call in (
        lambda: testing.assert_valid(42),  # type: ignore[arg-type]
        lambda: testing.assert_fits(42, 10),  # type: ignore[arg-type]
        lambda: testing.assert_fits(conv),
        lambda: testing.assert_retains(conv),
        lambda: testing.assert_retains(conv, [3], original=conv),  # type: ignore[list-item]
    ):
        with pytest.raises(errors.ArgumentTypeError):
            call()


@pytest.mark.parametrize(("body", "what"), [(b"[]", "a list, not a JSON object"), (b"<html>", "not JSON")])
def test_a_provider_body_that_is_not_an_object_is_a_typed_error(body: bytes, what: str) -> None:
    """A server that answers 200 with something other than a JSON object: ProviderResponseError
    (was a bare TypeError or json.JSONDecodeError)."""
    pytest.importorskip("openai")
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        provider = ac.OpenAIChatProvider(
            "gpt-test",
            base_url=f"http://127.0.0.1:{server.server_port}/v1",
            api_key="k",
            max_retries=0,
            context_window=50_000,
        )
        with pytest.raises(errors.ProviderResponseError, match=what):
            provider.complete(ac.Conversation([{"role": "user", "content": "hi"}]))
    finally:
        server.shutdown()
        server.server_close()


def test_io_errors_read_as_text_without_the_os_error_code(tmp_path: Path) -> None:
    # Rust's io::Error text ends in " (os error 2)"; it reached every message built from one.
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(errors.TranscriptReadError) as info:
        ac.Conversation.from_file(missing)
    assert str(info.value) == f"{missing}: No such file or directory"
    assert info.value.errno == 2  # the code is still there, where code looks for it
    with pytest.raises(errors.FileReadError) as read:
        ac.read_page(missing)
    assert str(read.value) == f"Cannot read {missing}: No such file or directory."
    from agentcontext._core import search_log

    with pytest.raises(errors.FileReadError) as searched:
        search_log(missing, "x")
    assert str(searched.value) == f"cannot read the session log {missing}: No such file or directory"
    with pytest.raises(errors.FileReadError) as listed:
        ac.MemoryIndex(tmp_path / "no-memory").refresh()
    assert str(listed.value) == f"cannot list the memory directory {tmp_path / 'no-memory'}: No such file or directory"
    for message in (info.value, read.value, searched.value, listed.value):
        assert "os error" not in str(message)
