"""A bad argument is one line on stderr and exit status 2, as the docs say of bad input (session 46:
argparse printed its usage block, up to 8 lines, before the error)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests import support


@pytest.mark.parametrize(
    "command",
    [
        ["compact", "examples/session.jsonl", "--budget", "8000", "--strategy", "nope"],
        ["compact", "examples/session.jsonl"],
        ["compact", "examples/session.jsonl", "--budget", "8000", "--max-bytes", "1X"],
        ["memory", "search", "."],
        ["sessions", "show"],
        ["sessions", "show", ".", "--history", "x"],
        ["bogus"],
        [],
    ],
)
def test_a_bad_argument_is_one_line_and_exit_status_2(command: list[str]) -> None:

    done = subprocess.run(
        [sys.executable, "-m", "agentcontext", *command],
        capture_output=True,
        text=True,
        cwd=support.ROOT,
        env={**os.environ, "PYTHONPATH": str(support.ROOT / "python")},
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert re.fullmatch(r"agentcontext( \w+)*: error: .+; see 'agentcontext( \w+)* --help'\n", done.stderr)


def test_eval_help_names_every_strategy_eval_accepts() -> None:
    """``eval`` accepts baseline-suffix-users (the docs' table has it) but its --help left it out."""
    from agentcontext.cli import _build_parser
    from agentcontext.compaction import PRESETS
    from agentcontext.measure.metrics import BASELINE

    sub = next(a for a in _build_parser("eval")._actions if a.dest == "command")
    strategy = next(a for a in sub.choices["eval"]._actions if a.dest == "strategy")  # type: ignore[attr-defined]
    assert strategy.help is not None
    for name in [*PRESETS, BASELINE]:
        assert name in strategy.help
