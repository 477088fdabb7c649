"""The session log under concurrency (real processes, kill -9 included) and its typed errors."""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.sessions.log import SessionLog
from tests import support

JOIN = 240  # seconds: bounds every join, so a regression fails instead of hanging
SPAWN = multiprocessing.get_context("spawn")


def _text(tag: str, i: int | str, size: int) -> str:
    return f"{tag} {i} " + "x" * size


def _writer(path: str, tag: str, n: int, size: int, acks: str, reopen: bool) -> None:
    """Append ``n`` records; after each append returns, note it in ``acks`` (the acknowledgement)."""
    ack = os.open(acks, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    log = None if reopen else SessionLog(path)
    for i in range(n):
        target = SessionLog(path) if log is None else log
        target.append(ac.Conversation([{"role": "user", "content": _text(tag, i, size)}]))
        os.write(ack, f"{tag} {i}\n".encode())


def _start(path: Path, tag: str, n: int, size: int, acks: Path, *, reopen: bool = False) -> Any:
    proc = SPAWN.Process(target=_writer, args=(str(path), tag, n, size, str(acks), reopen))
    proc.start()
    return proc


def _join(proc: Any) -> None:
    proc.join(timeout=JOIN)
    if proc.is_alive():
        proc.kill()
        proc.join(timeout=30)
        pytest.fail(f"a writer process did not finish within {JOIN} s")


def _acknowledged(acks: Path) -> list[str]:
    if not acks.exists():
        return []
    return [line for line in acks.read_text().split("\n")[:-1]]


def _check_log(path: Path, size: int, acknowledged: Sequence[str] = ()) -> list[str]:
    """Every acknowledged record is in the file, every line of the file is a whole record, message
    indices are 0..N-1 in order, every content is whole; returns the ``tag i`` of each message."""
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    records, broken = [], 0
    for line in lines[:-1]:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            broken += 1
    messages = [r for r in records if r["type"] == "message"]
    names = [" ".join(r["data"][0]["content"].split(" ", 2)[:2]) for r in messages]
    missing = set(acknowledged) - set(names)
    assert not missing, f"acknowledged records lost: {sorted(missing)}"
    assert broken == 0, f"{broken} lines are not JSON records"
    assert lines[-1] == b"", "the file ends in a torn record"
    assert [r["type"] for r in records].count("session") == 1 and records[0]["type"] == "session"
    indices = [r["index"] for r in messages]
    assert indices == list(range(len(messages))), f"{len(indices) - len(set(indices))} repeated indices"
    assert len(set(names)) == len(names), "a record is in the log twice"
    for r, name in zip(messages, names, strict=True):
        tag, i = name.split(" ")
        assert r["data"][0]["content"] == _text(tag, i, size)
    reloaded = SessionLog(path)
    assert reloaded.torn is None and reloaded.skipped_lines == []
    assert [m[0]["content"] for m in reloaded.messages] == [r["data"][0]["content"] for r in messages]
    return names


def test_four_writers_keep_every_record_once_with_gapless_indices(tmp_path: Path) -> None:
    path, size, n = tmp_path / "s.jsonl", 100_000, 15
    # Two writers keep one SessionLog each; two open a fresh one for every append.
    procs = [_start(path, f"w{k}", n, size, tmp_path / f"acks{k}", reopen=k >= 2) for k in range(4)]
    for proc in procs:
        _join(proc)
        assert proc.exitcode == 0
    expected = [f"w{k} {i}" for k in range(4) for i in range(n)]
    names = _check_log(path, size, expected)
    assert sorted(names) == sorted(expected)
    assert len(set(names)) == len(names) == 4 * n
    for k in range(4):
        # Each writer's own records are in its order.
        assert [x for x in names if x.startswith(f"w{k} ")] == [f"w{k} {i}" for i in range(n)]


def test_an_open_and_append_during_another_processs_append_loses_nothing(tmp_path: Path) -> None:
    # The reproduction from issue 12: A appends large records; B opens SessionLog(path) meanwhile
    # and appends. B used to take A's in-flight record for a torn one and cut it off.
    path, size = tmp_path / "s.jsonl", 1_000_000
    SessionLog(path)
    a = _start(path, "A", 20, size, tmp_path / "acksA")
    b = _start(path, "B", 20, size, tmp_path / "acksB", reopen=True)
    _join(a)
    _join(b)
    assert a.exitcode == 0 and b.exitcode == 0
    acknowledged = _acknowledged(tmp_path / "acksA") + _acknowledged(tmp_path / "acksB")
    assert len(acknowledged) == 40
    assert sorted(_check_log(path, size, acknowledged)) == sorted(acknowledged)


def _waiting_for_lock(inode: int) -> bool:
    """Whether some process waits for a flock on the file with this inode (Linux /proc/locks)."""
    return any(" -> FLOCK " in line and f":{inode} " in line for line in Path("/proc/locks").read_text().splitlines())


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux /proc/locks to see a waiting writer")
def test_an_append_in_progress_is_never_cut_by_a_process_that_opens_the_log(tmp_path: Path) -> None:
    # Deterministic form of the reproduction: this test is writer A, holding the log's lock (as
    # every append does) with half of its record written; process B opens the log and appends.
    import fcntl  # POSIX only, like the test

    path = tmp_path / "s.jsonl"
    SessionLog(path).append(ac.Conversation([{"role": "user", "content": "one"}]))
    line = (json.dumps({"type": "message", "index": 1, "data": [{"role": "user", "content": "two"}]}) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, line[:30])
        b = _start(path, "B", 1, 10, tmp_path / "acksB", reopen=True)
        deadline = time.monotonic() + JOIN
        # B either waits for the lock (as it must) or finishes without it (and cuts our record).
        while b.is_alive() and not _waiting_for_lock(os.fstat(fd).st_ino):
            assert time.monotonic() < deadline, "B neither waited for the lock nor finished"
            time.sleep(0.01)
        os.write(fd, line[30:])
        os.fsync(fd)
    finally:
        os.close(fd)  # releases the lock
    _join(b)
    assert b.exitcode == 0
    contents = [m[0]["content"] for m in SessionLog(path).messages]
    assert contents == ["one", "two", _text("B", 0, 10)]
    indices = [json.loads(x)["index"] for x in path.read_bytes().split(b"\n")[1:-1]]
    assert indices == [0, 1, 2]


def _kill_mid_write(pid: int, tag: str, path: Path, until: float) -> bool:
    """SIGKILL ``pid`` as soon as the log ends in part of a record of ``tag`` (its append is being
    written: Linux cuts a write short at a fatal signal), or at ``until``. Returns whether the kill
    was sent while such a record was half written."""
    fd = os.open(path, os.O_RDONLY)
    marker = f'"content":"{tag} '.encode()
    try:
        complete = 0
        while time.monotonic() < until:
            size = os.fstat(fd).st_size
            if not size or os.pread(fd, 1, size - 1) == b"\n":
                complete = size
            elif marker in os.pread(fd, 200, complete):
                os.kill(pid, signal.SIGKILL)
                return True
    finally:
        os.close(fd)
    os.kill(pid, signal.SIGKILL)
    return False


def test_writers_killed_mid_append_lose_no_acknowledged_record(tmp_path: Path) -> None:
    path, size = tmp_path / "s.jsonl", 2_000_000
    SessionLog(path)
    steady = _start(path, "steady", 12, size, tmp_path / "acks-steady")
    victims = []
    for k in range(5):
        acks = tmp_path / f"acks-victim{k}"
        victim = _start(path, f"victim{k}", 1_000, size, acks)
        deadline = time.monotonic() + JOIN
        while not _acknowledged(acks):
            if not victim.is_alive() or time.monotonic() > deadline:
                victim.kill()
                pytest.fail(f"victim {k} acknowledged nothing (exit code {victim.exitcode})")
            time.sleep(0.005)
        _kill_mid_write(victim.pid, f"victim{k}", path, time.monotonic() + 10)
        victim.join(timeout=JOIN)
        assert victim.exitcode == -signal.SIGKILL
        victims.append(acks)
    _join(steady)
    assert steady.exitcode == 0
    # The last victim may have died mid-append after the steady writer finished: the log is
    # readable, the torn bytes are not a record, and the next append removes exactly them.
    log = SessionLog(path)
    log.append(ac.Conversation([{"role": "user", "content": _text("final", 0, size)}]))
    acknowledged = _acknowledged(tmp_path / "acks-steady") + [x for a in victims for x in _acknowledged(a)]
    names = _check_log(path, size, acknowledged)
    assert [x for x in names if x.startswith("steady ")] == [f"steady {i}" for i in range(12)]


def test_a_reader_never_sees_an_append_in_progress(tmp_path: Path) -> None:
    path, size = tmp_path / "s.jsonl", 2_000_000
    SessionLog(path)
    writer = _start(path, "w", 15, size, tmp_path / "acks")
    seen = []
    deadline = time.monotonic() + JOIN
    while writer.is_alive() and time.monotonic() < deadline:
        view = SessionLog(path)
        assert view.torn is None and view.skipped_lines == []
        assert [m[0]["content"] for m in view.messages] == [_text("w", i, size) for i in range(len(view.messages))]
        seen.append(len(view.messages))
    _join(writer)
    assert seen == sorted(seen)
    assert len(SessionLog(path).messages) == 15


def test_threads_sharing_a_log_or_opening_their_own_keep_indices_gapless(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shared = SessionLog(path)

    def work(k: int) -> None:
        own = SessionLog(path)
        for i in range(25):
            target = shared if i % 2 else own
            target.append(ac.Conversation([{"role": "user", "content": _text(f"t{k}", i, 10)}]))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=JOIN)
        assert not t.is_alive()
    names = _check_log(path, 10)
    assert sorted(names) == sorted(f"t{k} {i}" for k in range(4) for i in range(25))


def test_a_writer_reads_what_others_appended_before_it_writes(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    one, two = SessionLog(path), SessionLog(path)
    one.append(ac.Conversation([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]))
    two.append(ac.Conversation([{"role": "user", "content": "c"}]))
    assert [m[0]["content"] for m in two.messages] == ["a", "b", "c"]
    assert len(one.messages) == 2
    assert one.refresh() == 1
    assert [m[0]["content"] for m in one.messages] == ["a", "b", "c"]
    assert one.refresh() == 0
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["index"] for r in records if r["type"] == "message"] == [0, 1, 2]


def test_a_compaction_keeps_messages_another_writer_appended_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    conv = ac.Conversation([{"role": "user", "content": f"m{i} " + "word " * 200} for i in range(20)])
    mine, other = SessionLog(path), SessionLog(path)
    mine.append(conv)
    result = ac.Compactor().compact(mine.working_set(), budget=conv.tokens // 3)
    other.refresh()
    other.append(ac.Conversation([{"role": "user", "content": "late"}]))
    mine.record_compaction(result)
    assert mine.compactions[-1]["upto"] == 20
    reread = SessionLog(path)
    late = [[{"role": "user", "content": "late"}]]
    assert support.each_message(reread.working_set()) == support.each_message(result.conversation) + late


def test_a_record_that_is_not_text_is_an_option_error_and_writes_nothing(tmp_path: Path) -> None:
    import dataclasses

    path = tmp_path / "s.jsonl"
    conv = ac.Conversation([{"role": "user", "content": f"m{i} " + "word " * 200} for i in range(20)])
    log = SessionLog(path)
    log.append(conv)
    result = ac.Compactor().compact(log.working_set(), budget=conv.tokens // 3)
    before = path.read_bytes()
    bad = dataclasses.replace(result, summary="lost \ud800")
    with pytest.raises(
        ac.OptionError, match=r"a compaction record is not valid Unicode text \(a lone surrogate\); nothing"
    ):
        log.record_compaction(bad)
    assert path.read_bytes() == before and log.compactions == []
    log.record_compaction(result)
    assert support.each_message(SessionLog(path).working_set()) == support.each_message(result.conversation)


def test_repair_removes_only_the_torn_bytes(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    SessionLog(path).append(ac.Conversation([{"role": "user", "content": "one"}]))
    whole = path.read_bytes()
    with path.open("ab") as f:
        f.write(b'{"type":"message","index":1,"data":[{"role":"us')
    reader = SessionLog(path)
    assert reader.torn == 3 and len(reader.messages) == 1
    assert path.read_bytes().endswith(b'"role":"us')  # opening never modifies the file
    reader.append(ac.Conversation([{"role": "user", "content": "two"}]))
    after = path.read_bytes()
    assert after.startswith(whole) and after.count(b"\n") == 3
    assert [m[0]["content"] for m in SessionLog(path).messages] == ["one", "two"]


def test_a_whole_last_record_without_its_line_break_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    SessionLog(path)
    with path.open("ab") as f:
        f.write(b'{"type":"message","index":0,"data":[{"role":"user","content":"kept"}]}')
    log = SessionLog(path)
    assert log.torn == 2 and log.messages == []
    log.append(ac.Conversation([{"role": "user", "content": "next"}]))
    assert [m[0]["content"] for m in log.messages] == ["kept", "next"]
    assert [m[0]["content"] for m in SessionLog(path).messages] == ["kept", "next"]


def test_a_log_holding_only_a_torn_header_gets_its_header_back(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"session","vers')
    log = SessionLog(path, format="anthropic")
    assert log.torn == 1 and path.read_bytes() == b'{"type":"session","vers'
    log.append(ac.Conversation([{"role": "user", "content": "hi"}], format="anthropic"))
    records = [json.loads(x) for x in path.read_text().splitlines()]
    assert [r["type"] for r in records] == ["session", "message"] and records[0]["format"] == "anthropic"
    assert SessionLog(path).format == "anthropic"


def test_a_log_with_repeated_indices_from_older_versions_loads_and_continues_by_position(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    rows = [(0, "a"), (1, "b"), (0, "c"), (1, "d")]
    path.write_text(
        HEADER
        + "".join(f'{{"type":"message","index":{i},"data":[{{"role":"user","content":"{c}"}}]}}\n' for i, c in rows)
    )
    log = SessionLog(path)
    assert [m[0]["content"] for m in log.messages] == ["a", "b", "c", "d"]
    log.append(ac.Conversation([{"role": "user", "content": "e"}]))
    assert json.loads(path.read_text().splitlines()[-1])["index"] == 4


def test_a_log_replaced_under_a_live_object_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    log = SessionLog(path)
    log.append(ac.Conversation([{"role": "user", "content": "one"}]))
    path.write_text('{"type":"session","version":1,"format":"openai"}\n')
    with pytest.raises(ac.TranscriptError, match="replaced or truncated"):
        log.append(ac.Conversation([{"role": "user", "content": "two"}]))
    assert len(SessionLog(path).messages) == 0


# ---------------------------------------------------------------------------------------------
# Typed errors.

HEADER = '{"type":"session","version":1,"format":"openai"}\n'
MESSAGE = '{"type":"message","index":0,"data":[{"role":"user","content":"hi"}]}\n'


@pytest.mark.parametrize(
    ("body", "line", "words"),
    [
        ('{"type":"message","index":0}\n', 2, '"data"'),
        ('{"type":"message","index":0,"data":"hi"}\n', 2, '"data"'),
        (MESSAGE + '{"type":"compaction","seq":1,"upto":1,"working_set":[{"ref":5}]}\n', 3, "message 5"),
        (MESSAGE + '{"type":"compaction","seq":1,"upto":1,"working_set":[{"ref":-1}]}\n', 3, "message -1"),
        (MESSAGE + '{"type":"compaction","seq":1,"upto":1,"working_set":[{"ref":"0"}]}\n', 3, "message '0'"),
        (MESSAGE + '{"type":"compaction","seq":1,"upto":1,"working_set":[{}]}\n', 3, 'neither a "ref"'),
        (MESSAGE + '{"type":"compaction","seq":1,"upto":9,"working_set":[]}\n', 3, '"upto"'),
        (MESSAGE + '{"type":"compaction","seq":1,"upto":1}\n', 3, '"working_set"'),
        ('{"type":"session","version":1,"format":"klingon"}\n', 2, "klingon"),
        ("[1, 2]\n", 2, "not a log record"),
    ],
)
def test_an_invalid_record_is_a_transcript_error_naming_file_and_line(
    tmp_path: Path, body: str, line: int, words: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(HEADER + body)
    with pytest.raises(ac.TranscriptError) as info:
        SessionLog(path).working_set()
    assert info.value.path == str(path) and info.value.line == line
    assert str(info.value).startswith(f"{path}: line {line}: ") and words in str(info.value)


def test_a_directory_is_a_typed_read_error(tmp_path: Path) -> None:
    with pytest.raises(ac.TranscriptReadError) as info:
        SessionLog(tmp_path)
    assert isinstance(info.value, OSError) and info.value.errno == errno.EISDIR
    assert info.value.path == str(tmp_path) and "is a directory" in str(info.value)


def test_a_fifo_or_device_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    script = (
        f"import sys; sys.path.insert(0, {str(support.ROOT / 'python')!r})\n"
        "import agentcontext as ac\n"
        "from agentcontext.sessions.log import SessionLog\n"
        "for p in sys.argv[1:]:\n"
        "    try:\n"
        "        SessionLog(p)\n"
        "    except ac.TranscriptReadError as e:\n"
        "        print(e)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(fifo), "/dev/null"], check=False, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        f"{fifo}: is a FIFO, not a session log file",
        "/dev/null: is a device, not a session log file",
    ]


def test_bad_arguments_are_option_errors(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with pytest.raises(ac.OptionError, match=r"path must be a str or os\.PathLike; got NoneType"):
        SessionLog(None)  # type: ignore[arg-type]
    (tmp_path / "file").write_text("")
    with pytest.raises(ac.TranscriptReadError) as info:
        SessionLog(tmp_path / "file" / "sub" / "s.jsonl")
    assert info.value.errno == errno.ENOTDIR and str(tmp_path / "file" / "sub" / "s.jsonl") in str(info.value)
    with pytest.raises(ac.OptionError, match="format must be one of"):
        SessionLog(path, format="klingon")  # type: ignore[arg-type]
    assert not path.exists()
    log = SessionLog(path)
    conv = ac.Conversation([{"role": "user", "content": "one"}])
    for start in (-1, 2, 1.5, True):
        with pytest.raises(ac.OptionError, match=f"start must be .* got {start!r}"):
            log.append(conv, start)  # type: ignore[arg-type]
    with pytest.raises(ac.OptionError, match="conversation must be"):
        log.append([{"role": "user", "content": "one"}])  # type: ignore[arg-type]
    log.append(conv)
    for k in (-1, 1, "0"):
        with pytest.raises(ac.OptionError, match="upto_compaction"):
            log.working_set(upto_compaction=k)  # type: ignore[arg-type]
    result = ac.Compactor().compact(log.working_set(), budget=1_000)
    with pytest.raises(ac.OptionError, match=r"origins\[0\] must be None or a message index from 0 to 0; got 7"):
        log.record_compaction(result, origins=[7])
    assert [json.loads(x)["type"] for x in path.read_text().splitlines()] == ["session", "message"]


@pytest.mark.parametrize(
    ("content", "first_line"),
    [
        (b'{"role":"user","content":"hi"}\n{"role":"assistant","content":"hello"}\n', 'a JSON object with no "type"'),
        (b'{"role":"user","content":"hi"}', 'a JSON object with no "type"'),  # one line, no line break
        (b"my precious notes", "not JSON"),  # no line break: was taken for a torn header and deleted
        (b"notes\nmore notes\n", "not JSON"),
        (b"[1, 2]\n", "a JSON list, not an object"),
        (b'{"type":"message","index":0,"data":[]}\n', "a JSON object with type 'message'"),
    ],
)
def test_a_file_that_is_not_a_session_log_is_refused_and_left_as_it_was(
    tmp_path: Path, content: bytes, first_line: str
) -> None:
    # SessionLog took a chat transcript for an empty log (its lines counted as records of another
    # kind) and the next append wrote log records into it; a one-line file without a line break
    # was taken for a torn header and truncated to nothing by the first append.
    path = tmp_path / "transcript.jsonl"
    path.write_bytes(content)
    with pytest.raises(ac.TranscriptError, match=f"line 1: not a session log: its first line is {first_line}") as info:
        log = SessionLog(path)
        log.append(ac.Conversation([{"role": "user", "content": "new"}]))
    assert info.value.line == 1 and "importers.load" in str(info.value)
    assert path.read_bytes() == content


def test_a_torn_header_is_still_repaired(tmp_path: Path) -> None:
    path = tmp_path / "s.log"
    path.write_bytes(b'{"type":"sess')
    log = SessionLog(path)
    log.append(ac.Conversation([{"role": "user", "content": "new"}]))
    assert path.read_text().splitlines()[0] == '{"type":"session","version":1,"format":"openai"}'
    assert len(SessionLog(path).originals()) == 1
