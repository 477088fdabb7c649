"""An error is one line on stderr, whatever the file name it quotes holds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import support

NAME = "no\nsuch\x1b[2J"  # a line break and the escape that clears a terminal


@pytest.mark.parametrize(
    "command",
    [
        ["inspect", NAME],
        ["compact", NAME, "--budget", "5"],
        ["search", NAME, "foo"],
        ["sessions", "show", NAME],
        ["sessions", "list", NAME],
        ["memory", "index", NAME],
    ],
)
def test_an_error_naming_a_file_is_one_line_without_raw_control_characters(tmp_path: Path, command: list[str]) -> None:
    # The message was printed as it was: a name with a line break made a two-line error, and an
    # escape in it reached the terminal (here: clear the screen).
    done = subprocess.run(
        [sys.executable, "-m", "agentcontext", *command],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(support.ROOT / "python")},
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("agentcontext: error: ")
    assert "\x1b" not in done.stderr and "no\\nsuch\\x1b[2J" in done.stderr
