"""Issue 25 §3 and §8: every read bounded, every reader honest about what it read.

- ``conversation_search`` / ``agentcontext search`` stream the log under a size cap;
- a file that is not a session log is searched as ``inspect`` reads it (or refused naming it);
- the raw prefilter folds case as the match does;
- ``SessionLog`` reads as a stream under a size cap, and names the path of a file it cannot read;
- a JSON integer over Python's digit limit is a typed error naming the file and line.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentcontext import SessionLog, importers
from agentcontext.budgets.recall import Recall
from agentcontext.errors import (
    AgentContextError,
    FileReadError,
    SnapshotError,
    TranscriptError,
    TranscriptReadError,
    UnknownFormatError,
)
from agentcontext.memory.conversation import conversation_search
from agentcontext.sessions.snapshots import SnapshotStore
from tests import support

ROOT = support.ROOT
CORPUS = Path(os.environ.get("AGENTCONTEXT_SHARED", "/work/shared")) / "data" / "transcripts" / "raw"
PI = CORPUS / "pi-mono/packages/coding-agent/test/fixtures/large-session.jsonl"
HEADER = '{"type":"session","version":1,"format":"openai"}\n'


def run_measured(*args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run ``python -c ...`` or the CLI in a child; its output and peak RSS in MB (the child's own
    ``VmHWM``, printed on stderr's last line). Not ``getrusage``'s ``ru_maxrss``: Linux carries the
    peak of the memory the child had before its exec over, which is the forked test process's RSS."""
    code = (
        "import sys, runpy\n"
        "sys.argv = ['agentcontext', *sys.argv[1:]]\n"
        "try:\n"
        "    runpy.run_module('agentcontext', run_name='__main__')\n"
        "finally:\n"
        "    hwm = next(l for l in open('/proc/self/status') if l.startswith('VmHWM:'))\n"
        "    sys.stderr.write(f'\\nRSS {int(hwm.split()[1]) // 1024}\\n')\n"
    )
    proc = python("-c", code, *args)
    rss = int(proc.stderr.strip().rsplit("RSS ", 1)[1])
    proc.stderr = proc.stderr.rsplit("\nRSS ", 1)[0].strip()
    return proc, rss


def python(*args: str) -> subprocess.CompletedProcess[str]:
    """Run this worktree's package in a child Python."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    return subprocess.run([sys.executable, *args], check=False, capture_output=True, text=True, env=env, timeout=300)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return python("-m", "agentcontext", *args)


def sparse(path: Path, size: int, head: str = HEADER) -> Path:
    path.write_text(head)
    os.truncate(path, size)  # sparse: no disk used
    return path


def write_log(path: Path, messages: list[dict[str, object]]) -> Path:
    lines = [HEADER.strip()]
    lines += [
        json.dumps({"type": "message", "index": i, "data": [m]}, ensure_ascii=False, separators=(",", ":"))
        for i, m in enumerate(messages)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# -- 1. the search is streamed under a size cap ------------------------------------------------


def test_search_of_a_64_gb_sparse_log_is_refused_in_one_line_without_reading_it(tmp_path: Path) -> None:
    # It reserved the file's size up front: `memory allocation of 68719476736 bytes failed` (SIGABRT).
    log = sparse(tmp_path / "huge.jsonl", 64 << 30)
    proc, rss = run_measured("search", str(log), "anything")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 0
    assert "over the 1.0 GB (1073741824 bytes) limit for a session log" in proc.stderr
    assert "--max-bytes" in proc.stderr
    assert rss < 200, rss
    with pytest.raises(FileReadError) as caught:
        conversation_search(log, "anything")
    assert caught.value.kind == "too_large" and caught.value.path == str(log)


def test_search_streams_a_log_allowed_past_the_cap_in_bounded_memory(tmp_path: Path) -> None:
    # 2 GB of zeros after the header (one line that is never a record): it took 2 GB and more.
    log = sparse(tmp_path / "sparse.jsonl", 2 << 30)
    with log.open("a") as f:
        f.write('\n{"type":"message","index":0,"data":[{"role":"user","content":"the needle"}]}\n')
    proc, rss = run_measured("search", str(log), "needle", "--max-bytes", "3G", "--json")
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert (found["messages"], found["matched"]) == (1, 1)
    assert found["hits"][0]["line"] == 3
    assert rss < 300, rss


# -- 2. what the file is -----------------------------------------------------------------------


@pytest.mark.skipif(not PI.exists(), reason="corpus not available")
def test_search_reads_a_raw_pi_session_as_inspect_does() -> None:
    # It "searched 914 messages" (pi's records have "message", not "data") and found nothing.
    proc = cli("search", str(PI), "error", "--json")
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    conv = importers.load(PI)
    assert found["messages"] == len(conv)
    assert found["matched"] > 50
    assert all(h["line"] is None for h in found["hits"])
    hit = found["hits"][0]
    assert "error" in " ".join(hit["snippets"]).lower()
    assert conv[hit["message"]]["role"] == hit["role"]


def test_search_reads_a_traj_and_a_chat_transcript(tmp_path: Path) -> None:
    traj = next(CORPUS.glob("swe-agent/**/*.traj"), None)
    if traj is not None:
        found = conversation_search(traj, "def")
        assert found["messages"] == len(importers.load(traj)) and found["matched"] > 0
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "x"}, {"role": "assistant", "content": "an Error here"}]))
    found = conversation_search(chat, "error")
    assert (found["messages"], found["matched"], found["hits"][0]["message"]) == (2, 1, 1)


def test_search_of_a_text_file_is_refused_naming_what_it_is(tmp_path: Path) -> None:
    # It exited 0 with "No message matches (searched 0 messages)".
    text = tmp_path / "notes.txt"
    text.write_text("an error\nanother error\n")
    proc = cli("search", str(text), "error")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "is not a session log: its first line is not a JSON object" in proc.stderr
    assert "nor is it a transcript in a format agentcontext reads" in proc.stderr
    with pytest.raises(UnknownFormatError):
        conversation_search(text, "error")


# -- 3. one case folding -----------------------------------------------------------------------


@pytest.mark.parametrize(("word", "text"), [("kelvin", "273 \u212aelvin"), ("class", "cla\u017f\u017f")])
def test_the_prefilter_folds_case_as_the_match_does(tmp_path: Path, word: str, text: str) -> None:
    # KELVIN SIGN and LONG S fold to k and s; the ASCII-only prefilter skipped the line unparsed.
    log = write_log(tmp_path / "log.jsonl", [{"role": "user", "content": text}])
    found = conversation_search(log, word)
    assert found["matched"] == 1
    assert found["hits"][0]["snippets"] == [text]


# -- 4. SessionLog -----------------------------------------------------------------------------


def test_session_log_on_a_2_gb_sparse_file_is_refused_or_streamed_in_bounded_memory(tmp_path: Path) -> None:
    # 4.2 GB RSS for a 2 GB file.
    log = sparse(tmp_path / "sparse.jsonl", 2 << 30)
    with pytest.raises(TranscriptReadError) as caught:
        SessionLog(log)
    assert "over the 1.0 GB" in str(caught.value) and "max_bytes" in str(caught.value)
    assert caught.value.path == str(log)
    code = (
        "import resource, sys\n"
        "from agentcontext import SessionLog\n"
        f"log = SessionLog({str(log)!r}, max_bytes=3 << 30)\n"
        "print(len(log.messages), log.torn, int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM:')).split()[1]) // 1024)\n"
    )
    out = python("-c", code)
    assert out.returncode == 0, out.stderr
    messages, torn, rss = out.stdout.split()
    assert (messages, torn) == ("0", "2")
    assert int(rss) < 200, rss
    assert log.stat().st_size == 2 << 30  # read, never modified


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="no /proc")
@pytest.mark.parametrize("path", ["/proc/self/mem", "/proc/self/status"])
def test_session_log_on_a_proc_file_is_a_typed_error_naming_it(path: str) -> None:
    # /proc/self/mem reports size 0: it was taken for a new log, written to, and raised a raw OSError.
    with pytest.raises(TranscriptReadError) as caught:
        SessionLog(path)
    assert caught.value.path == path
    assert path in str(caught.value)


# -- 5. integers over Python's digit limit -----------------------------------------------------

BIG = "7" * 5000


def test_a_huge_integer_is_a_typed_error_naming_file_and_line(tmp_path: Path) -> None:
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text('{"role":"user","content":"hi"}\n{"role":"user","content":"x","n":BIG}\n'.replace("BIG", BIG))
    with pytest.raises(TranscriptError) as caught:
        importers.load(jsonl)
    assert caught.value.line == 2 and caught.value.path == str(jsonl)
    assert "an integer of 5,000 digits" in str(caught.value)

    log = tmp_path / "log.jsonl"
    log.write_text(
        HEADER + '{"type":"message","index":0,"data":[{"role":"user","content":"x","n":BIG}]}\n'.replace("BIG", BIG)
    )
    for read in (lambda: SessionLog(log), lambda: Recall(log=SessionLog(log))):
        with pytest.raises(TranscriptError) as caught:
            read()
        assert caught.value.line == 2 and caught.value.path == str(log)
    assert log.read_text().endswith("]}\n")  # nothing written

    store = SnapshotStore(tmp_path / "snaps")
    store.current_path.write_text('{"version": BIG}'.replace("BIG", BIG))
    with pytest.raises(SnapshotError) as snap:
        store.load()
    assert snap.value.kind == "invalid" and "an integer of 5,000 digits" in str(snap.value)

    for command in (["inspect", str(jsonl)], ["compact", str(jsonl), "--budget", "100"], ["inspect", str(log)]):
        proc = cli(*command)
        assert proc.returncode == 2, (command, proc.stderr)
        assert proc.stderr.count("\n") == 1 and "line 2: an integer of 5,000 digits" in proc.stderr, proc.stderr


def test_search_with_a_lone_surrogate_is_one_line(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl", [{"role": "user", "content": "x"}])
    proc = cli("search", str(log), "\udcff")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "query is not valid Unicode" in proc.stderr
    with pytest.raises(AgentContextError):
        conversation_search(log, "\ud800")


def test_recall_pages_a_1_gib_stored_result_in_bounded_memory(tmp_path: Path) -> None:
    # Every page read the whole result (a 1 GiB result: MemoryError under a memory limit).
    from agentcontext.budgets.store import ResultStore

    store = ResultStore(tmp_path / "store")
    made = tmp_path / "store" / "made.tmp"
    made.write_text("head\nsecond line\nthird")
    os.truncate(made, 1 << 30)  # the rest: NUL characters, sparse
    # Stored under its own hash (a read checks it), hashed a chunk at a time.
    digest = hashlib.sha256()
    with made.open("rb") as f:
        while chunk := f.read(1 << 24):
            digest.update(chunk)
    rid = "r-" + digest.hexdigest()[:20]
    made.rename(store.path_for(rid))
    code = (
        "import resource, sys\n"
        "from agentcontext.budgets.recall import Recall\n"
        "from agentcontext.budgets.store import ResultStore\n"
        f"r = Recall(ResultStore({str(tmp_path / 'store')!r}))\n"
        f"p = r.page({rid!r}, 2, 1)\n"
        "assert (p.text, p.start_line, p.total_lines, p.total_chars) == ('second line\\n', 2, 3, 1 << 30), p\n"
        f"q = r.page({rid!r}, char_offset=(1 << 30) - 10, max_chars=100)\n"
        "assert q.text == '\\0' * 10 and q.hint is None, q\n"
        "print(int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM:')).split()[1]) // 1024)\n"
    )
    out = python("-c", code)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) < 200, out.stdout
