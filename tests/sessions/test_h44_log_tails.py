"""What a write does with a session log's last line when it has no line break: bytes an append
cut short are removed; bytes no append left are kept. And lines no parser can read are typed errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import agentcontext as ac
from agentcontext.sessions.log import SessionLog
from tests import support

HEADER = b'{"type":"session","version":1,"format":"openai"}'


def _message(index: int, text: str) -> bytes:
    record = {"type": "message", "index": index, "data": [{"role": "user", "content": text}]}
    return json.dumps(record, separators=(",", ":")).encode()


def _append(path: Path, text: str = "new") -> SessionLog:
    log = SessionLog(path)
    log.append(ac.Conversation([{"role": "user", "content": text}]))
    return log


@pytest.mark.parametrize(
    "tail",
    [
        _message(1, "one") + _message(2, "two"),  # records joined without a line break
        _message(1, "one") + b" and my note",
        b"notes an editor saved without a line break",
        b'{"role":"user"}\r{"role":"assistant"}\r',  # lines ended by a lone carriage return
    ],
)
def test_a_last_line_that_no_append_left_is_kept(tmp_path: Path, tail: bytes) -> None:
    # The repair took any bytes after the last line break for a cut append and truncated them:
    # two records written by another tool without a line break between them were deleted.
    path = tmp_path / "s.jsonl"
    before = HEADER + b"\n" + _message(0, "zero") + b"\n" + tail
    path.write_bytes(before)
    log = _append(path)
    after = path.read_bytes()
    assert after.startswith(before + b"\n")
    assert [m[0]["content"] for m in log.messages] == ["zero", "new"]
    reread = SessionLog(path)
    assert [m[0]["content"] for m in reread.messages] == ["zero", "new"] and reread.skipped_lines == [3]
    assert reread.torn is None


@pytest.mark.parametrize(
    "tail",
    [
        _message(1, "cut")[:30],
        _message(1, 'cut "quoted" \\ text')[:-3],
        _message(1, "caf\u00e9")[:-6],  # cut inside a two-byte character
        _message(1, "cut")[:40] + b"\0" * 4096,  # zeros a crash left after the written bytes
        b"\0" * 512,
        b"  \t",
    ],
)
def test_an_append_cut_short_is_still_removed(tmp_path: Path, tail: bytes) -> None:
    path = tmp_path / "s.jsonl"
    whole = HEADER + b"\n" + _message(0, "zero") + b"\n"
    path.write_bytes(whole + tail)
    _append(path)
    assert path.read_bytes() == whole + _message(1, "new") + b"\n"


def test_a_log_whose_lines_end_in_carriage_returns_is_refused_not_emptied(tmp_path: Path) -> None:
    # Its one line starts with the header, so it was taken for a torn header and the first append
    # truncated the file to nothing: both messages were lost.
    path = tmp_path / "s.jsonl"
    content = HEADER + b"\r" + _message(0, "a") + b"\r" + _message(1, "b") + b"\r"
    path.write_bytes(content)
    with pytest.raises(ac.TranscriptError, match="line 1: not a session log") as info:
        _append(path)
    assert info.value.line == 1 and path.read_bytes() == content


def test_a_line_nested_too_deep_to_parse_is_a_transcript_error(tmp_path: Path) -> None:
    # json.loads raised RecursionError, which reached the caller untyped.
    path = tmp_path / "s.jsonl"
    deep = b'{"type":"message","index":0,"data":[{"role":"user","content":' + b"[" * 100_000 + b"]" * 100_000 + b"}]}"
    content = HEADER + b"\n" + deep + b"\n"
    path.write_bytes(content)
    with pytest.raises(ac.TranscriptError, match="line 2: a JSON value nested deeper than") as info:
        SessionLog(path)
    assert info.value.line == 2 and path.read_bytes() == content
    path.write_bytes(b'{"type":"session","x":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n")
    with pytest.raises(ac.TranscriptError, match="line 1: a JSON value nested deeper than"):
        SessionLog(path)


def test_a_conversation_in_another_format_is_refused_not_logged(tmp_path: Path) -> None:
    # append() wrote an OpenAI conversation's messages as they were into an Anthropic log: its
    # "tool" message was logged, and every later load of the log failed on it (InvalidMessageError).
    path = tmp_path / "s.jsonl"
    log = SessionLog(path, format="anthropic")
    openai = ac.Conversation(
        [
            {"role": "user", "content": "run ls"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "a b"},
        ]
    )
    before = path.read_bytes()
    for write in (log.append, log.reconcile):
        with pytest.raises(
            ac.OptionError, match="conversation is in 'openai' format, the log's messages are in 'anthropic'"
        ):
            write(openai)
        assert path.read_bytes() == before
    converted = ac.Conversation(openai.to_format("anthropic"), format="anthropic")
    log.append(converted)
    assert len(SessionLog(path).working_set()) == len(converted)


@pytest.mark.parametrize("version", [b"2", b"99", b'"1"', b"true", b"null"])
def test_a_log_of_another_version_is_refused_and_left_as_it_is(tmp_path: Path, version: bytes) -> None:
    # The header's version was never read: a version-99 log was loaded as version 1 and the next
    # append wrote version-1 records into it.
    path = tmp_path / "s.jsonl"
    content = b'{"type":"session","version":' + version + b',"format":"openai"}\n' + _message(0, "a") + b"\n"
    path.write_bytes(content)
    with pytest.raises(ac.TranscriptError, match=r"line 1: a session log of version .*; this library reads") as info:
        _append(path)
    assert info.value.line == 1 and path.read_bytes() == content


def test_search_numbers_messages_after_a_kept_joined_line_as_the_log_does(tmp_path: Path) -> None:
    # The core's log search told a message by its first bytes and its closing brace: a kept line of
    # two records joined without a line break counted as one message there (one the log skips), so
    # later message numbers were one more than the log's.
    from agentcontext.memory.conversation import conversation_search

    path = tmp_path / "s.jsonl"
    path.write_bytes(HEADER + b"\n" + _message(0, "zero") + b"\n" + _message(1, "one") + _message(2, "two"))
    log = _append(path, "needle")
    assert [m[0]["content"] for m in log.messages] == ["zero", "needle"]
    assert [h["message"] for h in conversation_search(path, "needle")["hits"]] == [1]


_FORK_WHILE_A_THREAD_WRITES = """
import multiprocessing, sys, threading, time
import agentcontext as ac
from agentcontext.sessions.log import SessionLog

log = SessionLog(sys.argv[1])
inside = threading.Event()

def mid_append():  # a thread inside an append (it holds the log's mutex) when the process forks
    with log._mutex:
        inside.set()
        time.sleep(0.5)
        log.append(ac.Conversation([{"role": "user", "content": "thread"}]))

def child():
    log.append(ac.Conversation([{"role": "user", "content": "child"}]))

threading.Thread(target=mid_append).start()
inside.wait()
p = multiprocessing.get_context("fork").Process(target=child)
p.start()
p.join(20)
print("hung" if p.is_alive() else f"exit {p.exitcode}")
if p.is_alive():
    p.kill()
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_process_forked_while_a_thread_appends_can_write(tmp_path: Path) -> None:
    # The child inherited the log's mutex held by a thread it does not have: its first append
    # waited for ever (39 of 40 forks of a process whose thread appended in a loop).
    path = tmp_path / "s.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", _FORK_WHILE_A_THREAD_WRITES, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(support.ROOT / "python")},
        check=False,
    )
    assert done.stdout.strip() == "exit 0", done.stderr
    assert sorted(m[0]["content"] for m in SessionLog(path).messages) == ["child", "thread"]
