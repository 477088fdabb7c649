"""`compact -o OUT`: a write that fails leaves OUT as it was, and a FIFO is never waited for."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import support

EXAMPLE = support.ROOT / "examples" / "session.jsonl"

# Runs the CLI in a process that may write files of at most 2,000 bytes (SIGXFSZ ignored: a write
# past the limit fails with EFBIG, as a full disk fails with ENOSPC). Pipes are not limited.
_LIMITED = textwrap.dedent(
    """
    import resource, signal, sys
    from agentcontext.cli import main

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))
    sys.exit(main(sys.argv[1:]))
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_a_write_that_fails_leaves_the_output_as_it_was(tmp_path: Path) -> None:
    # -o was opened with "w" (truncated at once) and written in place: a write that failed midway
    # left the first 2,000 bytes of the new output, and the old content was gone, the input too
    # when OUT was the input.
    source = tmp_path / "in.jsonl"
    source.write_bytes(EXAMPLE.read_bytes())
    before = source.read_bytes()
    assert len(before) > 2000
    done = subprocess.run(
        [sys.executable, "-c", _LIMITED, "compact", str(source), "--budget", "100%", "-o", str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr
    assert f"cannot write -o {source}:" in done.stderr and "it is as it was" in done.stderr
    assert source.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]  # no temporary file left


def test_the_output_may_be_the_input_and_keeps_its_mode(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(EXAMPLE.read_bytes())
    source.chmod(0o640)
    done = subprocess.run(
        [sys.executable, "-m", "agentcontext", "compact", str(source), "--budget", "50%", "-o", str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(source.stat().st_mode) == 0o640
    assert 0 < len(source.read_bytes()) < len(EXAMPLE.read_bytes())


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_a_fifo_nobody_reads_is_refused_not_waited_for(tmp_path: Path) -> None:
    # open(OUT, "w") of a FIFO waits for a reader: the command hung for ever.
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "agentcontext", "compact", str(EXAMPLE), "--budget", "100%", "-o", str(fifo)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("compact -o FIFO waited for a reader")
    assert done.returncode == 2
    assert done.stderr == f"agentcontext: error: cannot write -o {fifo}: a FIFO that no process is reading\n"
