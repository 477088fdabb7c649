"""Reads bounded by their limits: only regular files are read (a FIFO, a device or a socket is
refused before a byte is read, so nothing blocks and nothing reads without end), a page reads in
the size of the page whatever the file's size, and a transcript over its size cap is refused.

Anything that could hang or read without bound on a regression runs in a child process with a
timeout (a hang fails the test instead of the run) and an address-space limit (reading a huge
file whole fails the child instead of the machine). Memory is measured in the child as the growth
of its peak RSS (VmHWM), a bound, not a timing.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import agentcontext as ac
from agentcontext import errors, importers
from agentcontext.measure.evaluation import discover

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="FIFOs, /dev/zero and VmHWM are Linux's")

PYTHON = sys.executable
#: A child that hangs is a failure, not a stuck run. Generous: the machine is shared and slow.
HANG_GUARD = 120
#: Address space a child may map: far above what a page needs, far below a 5 GB file read whole.
CHILD_ADDRESS_SPACE = 3 << 30
#: Peak RSS a page of a huge file may add.
PAGE_RSS_BOUND = 50 << 20


def run_child(code: str) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter (address space capped); it sets ``out``, printed as JSON."""
    prelude = textwrap.dedent(
        f"""
        import json, resource
        resource.setrlimit(resource.RLIMIT_AS, ({CHILD_ADDRESS_SPACE}, {CHILD_ADDRESS_SPACE}))
        import agentcontext as ac
        from agentcontext import errors, importers

        def peak():
            with open("/proc/self/status") as f:
                return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))

        def refusal(call, *args, **kwargs):
            try:
                call(*args, **kwargs)
            except errors.AgentContextError as exc:
                return [type(exc).__name__, getattr(exc, "kind", None), str(exc)]
            return None

        out = {{}}
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run(
        [PYTHON, "-c", prelude + textwrap.dedent(code) + "\nprint(json.dumps(out))"],
        check=False,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        env=env,
    )
    assert proc.returncode == 0, f"child failed ({proc.returncode}): {proc.stderr[-2000:]}"
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)
    return path


@pytest.fixture
def unix_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "sock.jsonl"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    yield path
    server.close()


# ---------------------------------------------------------------------------------------------
# Only regular files.


def test_read_page_refuses_a_fifo_at_once(fifo: Path) -> None:
    out = run_child(
        f"""
        out["page"] = refusal(ac.read_page, {str(fifo)!r})
        out["paged"] = refusal(ac.read_page, {str(fifo)!r}, 1, 10)
        out["reader"] = ac.budgets.FileReader().answer({str(fifo)!r})
        """
    )
    for key in ("page", "paged"):
        assert out[key] == [
            "FileReadError",
            "not_regular",
            f"{fifo} is a FIFO (named pipe), not a regular file; only regular files are read.",
        ]
    assert "is a FIFO" in str(out["reader"])


def test_read_page_refuses_devices_and_sockets(unix_socket: Path) -> None:
    out = run_child(
        f"""
        out["zero"] = refusal(ac.read_page, "/dev/zero", 1, 10)
        out["null"] = refusal(ac.read_page, "/dev/null")
        out["socket"] = refusal(ac.read_page, {str(unix_socket)!r})
        """
    )
    assert out["zero"] == [
        "FileReadError",
        "not_regular",
        "/dev/zero is a character device, not a regular file; only regular files are read.",
    ]
    assert out["null"] is not None and "a character device" in str(out["null"])
    assert out["socket"] is not None and out["socket"][1] == "not_regular" and "is a socket" in str(out["socket"])


def test_a_symlink_to_a_regular_file_is_read(tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("one\ntwo\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    page = ac.read_page(link, line_numbers=False)
    assert (page.text, page.total_lines) == ("one\ntwo\n", 2)
    to_fifo = tmp_path / "to_fifo"
    os.mkfifo(tmp_path / "fifo")
    to_fifo.symlink_to(tmp_path / "fifo")
    assert run_child(f"out['r'] = refusal(ac.read_page, {str(to_fifo)!r})")["r"] == [
        "FileReadError",
        "not_regular",
        f"{to_fifo} is a FIFO (named pipe), not a regular file; only regular files are read.",
    ]


def test_transcript_loading_refuses_special_files(fifo: Path, unix_socket: Path) -> None:
    out = run_child(
        f"""
        for name, path in [("fifo", {str(fifo)!r}), ("zero", "/dev/zero"), ("socket", {str(unix_socket)!r})]:
            out[name] = [
                refusal(ac.Conversation.from_file, path),
                refusal(importers.load, path),
                refusal(lambda p: importers.load(p, cache=True), path),
                refusal(importers.detect, path),
                refusal(importers.import_file, path),
            ]
        """
    )
    for name, path, what in [
        ("fifo", fifo, "a FIFO (named pipe)"),
        ("zero", "/dev/zero", "a character device"),
        ("socket", unix_socket, "a socket"),
    ]:
        for answer in out[name]:  # type: ignore[union-attr]
            assert answer == [
                "TranscriptReadError",
                None,
                f"{path}: is {what}, not a regular file; only regular files are read as transcripts",
            ], (name, answer)


def test_evaluation_skips_special_files_in_folders_and_refuses_them_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "a.jsonl").write_text(json.dumps({"role": "user", "content": "hi"}) + "\n")
    os.mkfifo(folder / "b.jsonl")
    out = run_child(
        f"""
        from agentcontext.measure.evaluation import discover
        out["folder"] = [name for _, _, name in discover([{str(folder)!r}])]
        out["named"] = refusal(discover, [{str(folder / "b.jsonl")!r}])
        """
    )
    assert out["folder"] == ["a"]
    assert out["named"] is not None and "is a FIFO" in str(out["named"])
    assert [name for _, _, name in discover([folder])] == ["a"]


@pytest.mark.parametrize("command", [["inspect"], ["inspect", "--json"], ["compact", "--budget", "100"]])
def test_cli_refuses_a_fifo_and_dev_zero_with_one_line(fifo: Path, command: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for path, what in [(fifo, "a FIFO (named pipe)"), ("/dev/zero", "a character device")]:
        proc = subprocess.run(
            [PYTHON, "-m", "agentcontext", command[0], str(path), *command[1:]],
            check=False,
            capture_output=True,
            text=True,
            timeout=HANG_GUARD,
            env=env,
        )
        assert proc.returncode == 2, proc.stderr
        assert proc.stdout == ""
        assert proc.stderr == (
            f"agentcontext: error: {path}: is {what}, not a regular file; only regular files are read as transcripts\n"
        )


# ---------------------------------------------------------------------------------------------
# A page reads in the size of the page.


def sparse_file(path: Path, size: int, lines: int = 2000) -> Path:
    """``lines`` text lines, then zeros (a hole) up to ``size`` bytes."""
    with path.open("wb") as f:
        f.write("".join(f"log line {i} {'.' * 20}\n" for i in range(1, lines + 1)).encode())
        f.truncate(size)
    return path


def test_a_page_of_a_5_gb_sparse_file_reads_the_page_only(tmp_path: Path) -> None:
    huge = sparse_file(tmp_path / "huge.log", 5 << 30)
    out = run_child(
        f"""
        before = peak()
        page = ac.read_page({str(huge)!r}, 1, 10)
        out["grew"] = peak() - before
        out["page"] = [page.start_line, page.end_line, page.total_lines, page.more, page.file_bytes, page.text]
        """
    )
    start, end, total, more, size, text = out["page"]  # type: ignore[misc]
    assert (start, end, total, more, size) == (1, 10, None, True, 5 << 30)
    assert str(text).startswith("     1\tlog line 1 ")
    assert str(text).endswith(
        "[Showing lines 1-10 of at least 2001 (5.0 GB in all; the file was not read to its end to count its "
        "lines). Use offset=11 to continue.]"
    )
    assert int(out["grew"]) < PAGE_RSS_BOUND  # type: ignore[call-overload]


def test_paging_10_lines_of_a_1_gb_file_stays_under_50_mb_of_rss(tmp_path: Path) -> None:
    big = sparse_file(tmp_path / "big.log", 1 << 30)
    out = run_child(
        f"""
        before = peak()
        first = ac.read_page({str(big)!r}, 1, 10)
        deep = ac.read_page({str(big)!r}, 1990, 10, line_numbers=False)
        out["grew"] = peak() - before
        out["first"] = [first.end_line, first.total_lines, first.more]
        out["deep"] = deep.text.splitlines()[:2]
        """
    )
    assert out["first"] == [10, None, True]
    assert out["deep"] == [f"log line 1990 {'.' * 20}", f"log line 1991 {'.' * 20}"]
    assert int(out["grew"]) < PAGE_RSS_BOUND  # type: ignore[call-overload]


def test_one_endless_line_is_bounded_and_the_cut_is_said(tmp_path: Path) -> None:
    wide = tmp_path / "one_line.json"
    with wide.open("wb") as f:
        for _ in range(100):
            f.write(b"x" * (1 << 20))
        f.write(b"\nsecond line\n")
    out = run_child(
        f"""
        before = peak()
        page = ac.read_page({str(wide)!r}, 1, 10, line_numbers=False)
        out["grew"] = peak() - before
        out["page"] = [page.end_line, page.total_lines, page.more, page.long_lines_cut, page.text]
        """
    )
    end, total, more, cut, text = out["page"]  # type: ignore[misc]
    assert (end, total, more, cut) == (1, None, True, 1)
    over = 8 << 20  # the scan budget: the rest of the line past the kept 2,000 chars (8,000 bytes read for them)
    assert text == (
        "x" * 2000 + f" [... line cut: over {6000 + over} more chars; the rest of the line was not read]\n"
        "\n[Showing lines 1-1 of at least 1 (100.0 MB in all; the file was not read to its end to count its lines). "
        "Use offset=2 to continue.]"
    )
    assert int(out["grew"]) < PAGE_RSS_BOUND  # type: ignore[call-overload]
    second = ac.read_page(wide, 2, 1, line_numbers=False)
    assert (second.text, second.total_lines) == ("second line\n", 2)


def test_file_reader_dedup_of_a_file_too_long_to_count(tmp_path: Path) -> None:
    path = tmp_path / "long.log"
    path.write_text("".join(f"{i} {'-' * 60}\n" for i in range(300_000)))  # 19 MB: over the 8 MiB scan
    reader = ac.budgets.FileReader()
    first = reader.read(path, 1, 2)
    assert first.endswith("the file was not read to its end to count its lines). Use offset=3 to continue.]")
    assert reader.read(path, 1, 2) == (
        f"[{path} is unchanged since read #1 (lines 1-2); that content is still above in this conversation, "
        "so it is not repeated.]"
    )


def test_a_line_is_cut_at_max_bytes_whatever_line_max_chars_says(tmp_path: Path) -> None:
    path = tmp_path / "wide.txt"
    path.write_text("z" * 10_000 + "\n")
    page = ac.read_page(path, max_bytes=1000, line_max_chars=1_000_000, line_numbers=False)
    assert page.text == "z" * 1000 + " [... line cut: 9000 more chars]\n"


def test_totals_stay_exact_where_the_rest_of_the_file_was_counted(tmp_path: Path) -> None:
    path = tmp_path / "mid.log"
    path.write_text("".join(f"{i}\n" for i in range(1, 300_001)))
    page = ac.read_page(path, 5, 3, line_numbers=False)
    assert (page.text, page.total_lines, page.file_bytes) == (
        "5\n6\n7\n\n[Showing lines 5-7 of 300000. Use offset=8 to continue.]",
        300_000,
        path.stat().st_size,
    )
    assert repr(page) == "Page(lines 5-7 of 300000, more=True)"


def test_negative_offset_and_lines_are_option_errors(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("a\nb\n")
    for call in (ac.read_page, ac.page_text):
        arg = path if call is ac.read_page else "a\nb\n"
        with pytest.raises(errors.OptionError, match="offset must be a non-negative integer, got -1"):
            call(arg, -1)  # type: ignore[operator]
        with pytest.raises(errors.OptionError, match="lines must be a non-negative integer, got -5"):
            call(arg, 1, -5)  # type: ignore[operator]
    assert ac.read_page(path, 0, line_numbers=False).text == "a\nb\n", "offset 0 reads from the first line"


# ---------------------------------------------------------------------------------------------
# Transcripts have a size cap.


def test_a_transcript_over_the_size_cap_is_refused_with_how_to_raise_it(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "x" * 3000}) + "\n")
    size = path.stat().st_size
    expected = (
        f"{path}: is 3 KB ({size} bytes), over the 2 KB (2048 bytes) limit for a transcript; pass a larger "
        "max_bytes (Conversation.from_file, agentcontext.load) or --max-bytes (CLI) to read it"
    )
    for call in (ac.Conversation.from_file, importers.load, importers.detect, importers.import_file):
        with pytest.raises(errors.TranscriptReadError) as info:
            call(path, max_bytes=2048)  # type: ignore[operator]
        assert str(info.value) == expected and info.value.path == str(path)
    assert len(ac.Conversation.from_file(path, max_bytes=size)) == 1
    assert len(importers.load(path, max_bytes=size)) == 1
    # The cache of the one loading path keeps the cap: a file read under a larger cap is refused
    # under a smaller one.
    assert len(importers.load(path, max_bytes=size, cache=True)) == 1
    with pytest.raises(errors.TranscriptReadError) as info:
        importers.load(path, max_bytes=2048, cache=True)
    assert str(info.value) == expected
    assert importers.MAX_TRANSCRIPT_BYTES == 1 << 30
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    refused = subprocess.run(
        [PYTHON, "-m", "agentcontext", "inspect", str(path), "--max-bytes", "2K"],
        check=False,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        env=env,
    )
    assert (refused.returncode, refused.stderr) == (2, f"agentcontext: error: {expected}\n")
    allowed = subprocess.run(
        [PYTHON, "-m", "agentcontext", "inspect", str(path), "--max-bytes", "1M", "--json"],
        check=False,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        env=env,
    )
    assert allowed.returncode == 0 and json.loads(allowed.stdout)["messages"] == 1


@pytest.mark.parametrize("max_bytes", [-1, 0, "x", True, 2**70])
def test_a_bad_max_bytes_is_refused_alike_by_every_transcript_reader(tmp_path: Path, max_bytes: object) -> None:
    """The importers refused a bad cap with a bare TypeError ("x") or a size message about a
    limit of -1 bytes; now every reader raises what Conversation.from_file raises."""
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "hi"}) + "\n")
    with pytest.raises(errors.AgentContextError) as expected:
        ac.Conversation.from_file(path, max_bytes=max_bytes)  # type: ignore[arg-type]
    for call in (importers.load, importers.detect, importers.import_file):
        with pytest.raises(errors.AgentContextError) as info:
            call(path, max_bytes=max_bytes)  # type: ignore[operator]
        assert (type(info.value), str(info.value)) == (type(expected.value), str(expected.value)), call
    with pytest.raises(type(expected.value)):
        importers.load(path, max_bytes=max_bytes, cache=True)  # type: ignore[arg-type]
