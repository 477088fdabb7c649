"""`eval --json OUT` / `--csv OUT` write the report as `compact -o` writes its output: a FIFO that
no process reads was opened for writing after the whole evaluation and waited for a reader
forever (the report was written with ``Path.write_text``), and an error about the report's path
named ``-o``, an option eval does not have."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests import support

TRANSCRIPT = '{"role":"user","content":"fix the bug in parse()"}\n{"role":"assistant","content":"done"}\n'


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentcontext", "eval", "t.jsonl", *args, "--budget", "50%", "--prices", "none"],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(support.ROOT / "python")},
        timeout=120,  # before the fix: a TimeoutExpired, the process waiting for a reader
        check=False,
    )


@pytest.mark.parametrize("flag", ["--json", "--csv"])
def test_a_fifo_no_process_reads_is_one_line_and_exit_2(tmp_path: Path, flag: str) -> None:
    (tmp_path / "t.jsonl").write_text(TRANSCRIPT)
    os.mkfifo(tmp_path / "out")
    done = run(flag, "out", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == f"agentcontext: error: cannot write {flag} out: a FIFO that no process is reading\n"


def test_a_fifo_a_process_reads_gets_the_report(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text(TRANSCRIPT)
    os.mkfifo(tmp_path / "out")
    got: list[bytes] = []

    def read() -> None:
        with open(tmp_path / "out", "rb") as f:  # blocks until eval opens it to write
            got.append(f.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    done = run("--json", "out", cwd=tmp_path)
    reader.join(60)
    assert done.returncode == 0, done.stderr
    assert got and got[0].startswith(b'{\n  "budget": ')


@pytest.mark.parametrize("flag", ["--json", "--csv"])
def test_errors_about_the_report_path_name_its_option(tmp_path: Path, flag: str) -> None:
    (tmp_path / "t.jsonl").write_text(TRANSCRIPT)
    (tmp_path / "dir").mkdir()
    done = run(flag, "dir", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == f"agentcontext: error: cannot write {flag} dir: it is a directory\n"
    done = run(flag, "missing/r", cwd=tmp_path)
    assert done.returncode == 2
    assert (
        done.stderr == f"agentcontext: error: cannot write {flag} missing/r: no such directory {tmp_path / 'missing'}\n"
    )
