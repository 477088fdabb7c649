"""Paths the stores are given: a NUL character or a value that is not a path is a typed error
naming the argument (``os`` raised a bare ValueError or TypeError)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.budgets import ResultStore
from agentcontext.memory import MemoryStore
from agentcontext.sessions import SnapshotStore


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda p: ac.SessionLog(p), "path"),
        (lambda p: SnapshotStore(p), "directory"),
        (lambda p: ResultStore(p), "directory"),
        (lambda p: MemoryStore(p), "project_root"),
        (lambda p: MemoryStore(directory=p), "directory"),
    ],
)
def test_a_path_with_a_nul_character_is_an_option_error(
    tmp_path: Path, make: Callable[[Any], object], name: str
) -> None:
    with pytest.raises(ac.OptionError, match=f"^{name} is not a valid file name: it holds a NUL character"):
        make(str(tmp_path / "a\0b"))


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda v: ResultStore(v), "directory"),
        (lambda v: MemoryStore(v), "project_root"),
        (lambda v: MemoryStore(directory=v), "directory"),
        (lambda v: MemoryStore(".", root=v), "root"),
    ],
)
def test_a_path_of_another_type_is_an_argument_type_error(make: Callable[[Any], object], name: str) -> None:
    with pytest.raises(ac.ArgumentTypeError, match=f"^{name} must be a str or os.PathLike, got int"):
        make(5)
