"""``SessionLog(path, encoding=...)`` checks the encoding as it checks the format: an unknown one
was taken, the log created and appended to, and only reading its conversations back
(``originals()``, ``working_set()``, a resume) raised, long after the mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentcontext as ac
from agentcontext.errors import ArgumentTypeError, OptionError


@pytest.mark.parametrize("encoding", ["x", "O200K_BASE", ""])
def test_an_unknown_encoding_is_refused_before_the_file_is_made(tmp_path: Path, encoding: str) -> None:
    with pytest.raises(OptionError, match="encoding must be one of o200k_base, cl100k_base, heuristic, approximate"):
        ac.SessionLog(tmp_path / "log.jsonl", encoding=encoding)  # type: ignore[arg-type]
    assert not (tmp_path / "log.jsonl").exists()


def test_an_encoding_that_is_not_a_string_is_a_type_error(tmp_path: Path) -> None:
    with pytest.raises(ArgumentTypeError, match="encoding must be a str"):
        ac.SessionLog(tmp_path / "log.jsonl", encoding=5)  # type: ignore[arg-type]


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base", "heuristic", "approximate"])
def test_every_encoding_reads_back(tmp_path: Path, encoding: str) -> None:
    log = ac.SessionLog(tmp_path / "log.jsonl", encoding=encoding)  # type: ignore[arg-type]
    log.append(ac.Conversation([{"role": "user", "content": "hi"}], encoding=encoding))  # type: ignore[arg-type]
    assert log.originals().encoding == encoding
