"""`eval --json OUT` / `--csv OUT` never replace a file that is not a report eval wrote."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import support

TRANSCRIPT = '{"role":"user","content":"fix the bug in parse()"}\n{"role":"assistant","content":"done"}\n'


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentcontext", "eval", *args, "--budget", "50%", "--prices", "none"],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(support.ROOT / "python")},
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("flag", ["--json", "--csv"])
def test_a_transcript_named_as_the_report_is_not_overwritten(tmp_path: Path, flag: str) -> None:
    # --json is a flag in compact, inspect and search; in eval it takes OUT, so
    # `eval --json a.jsonl b.jsonl` wrote the report over the transcript a.jsonl.
    (tmp_path / "a.jsonl").write_text(TRANSCRIPT)
    (tmp_path / "b.jsonl").write_text(TRANSCRIPT)
    done = run(flag, "a.jsonl", "b.jsonl", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        f"agentcontext: error: {flag} a.jsonl: the file exists and is not a report eval wrote (it starts "
        '\'{"role":"user","content":"fix the bug in parse()"}\'); it is not overwritten: remove it or '
        "name another file\n"
    )
    assert (tmp_path / "a.jsonl").read_text() == TRANSCRIPT


@pytest.mark.parametrize(("flag", "name"), [("--json", "report.json"), ("--csv", "report.csv")])
def test_a_report_eval_wrote_is_replaced_by_the_next_run(tmp_path: Path, flag: str, name: str) -> None:
    (tmp_path / "b.jsonl").write_text(TRANSCRIPT)
    assert run("b.jsonl", flag, name, cwd=tmp_path).returncode == 0
    first = (tmp_path / name).read_text()
    (tmp_path / "c.jsonl").write_text(TRANSCRIPT)
    assert run("b.jsonl", "c.jsonl", flag, name, cwd=tmp_path).returncode == 0
    second = (tmp_path / name).read_text()
    assert second != first and ("c.jsonl" in second if flag == "--json" else "\nc," in second)


@pytest.mark.parametrize(("workers", "error"), [("0", "must be a positive integer, got 0"), ("-1", "got -1")])
def test_workers_below_one_is_a_bad_argument(tmp_path: Path, workers: str, error: str) -> None:
    # --workers 0 and --workers -1 ran every task in this process, as --workers 1 does, and exit 0.
    (tmp_path / "b.jsonl").write_text(TRANSCRIPT)
    done = run("b.jsonl", "--workers", workers, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("agentcontext: error: workers ") and error in done.stderr
    assert done.stderr.count("\n") == 1
