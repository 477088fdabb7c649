"""`--session` is an index only when it is ASCII digits: `str.isdigit()` is also true of "²",
which int() refuses (a traceback and exit status 1 from `inspect`, `compact` and `search`), and
of "٣", which int() reads as 3 (a session named so could not be picked)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcontext import _checks
from agentcontext.cli import main

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "session.jsonl")


@pytest.mark.parametrize(
    "command", [["inspect", EXAMPLE], ["compact", EXAMPLE, "--budget", "8000"], ["search", EXAMPLE, "foo"]]
)
@pytest.mark.parametrize("session", ["²", "٣", "1²"])
def test_a_non_ascii_digit_session_is_a_name(
    command: list[str], session: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*command, "--session", session]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"no session {session!r}" in err


def test_session_choice() -> None:
    assert _checks.session_choice("0") == 0
    assert _checks.session_choice("12") == 12
    assert _checks.session_choice("²") == "²"
    assert _checks.session_choice("٣") == "٣"
    assert _checks.session_choice("main") == "main"
    assert _checks.session_choice(None) is None


def test_max_bytes_takes_ascii_digits_only() -> None:
    with pytest.raises(Exception, match="expected a size"):
        _checks._byte_size("٣M")
    assert _checks._byte_size("3M") == 3 << 20
