"""MemoryStore.write checks a record as the index reads it before replacing the file: a
description the index refuses (DEL, a C1 control character) used to replace a good record with a
broken one, then raise — the old body was lost and the record gone from the index."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcontext.errors import AgentContextError, OptionError
from agentcontext.memory.store import MemoryStore


@pytest.mark.parametrize("description", ["a\x7fb", "a\x9fb", "a\x80b", "tab\there", "a\u2028b"])
def test_a_refused_description_leaves_the_record_as_it_was(tmp_path: Path, description: str) -> None:
    store = MemoryStore(directory=tmp_path / "m")
    store.write("x", description="good", type="user", body="old body")
    before = (tmp_path / "m" / "x.md").read_bytes()
    with pytest.raises(OptionError, match="description"):
        store.write("x", description=description, type="user", body="new body")
    assert (tmp_path / "m" / "x.md").read_bytes() == before
    assert store.get("x")["body"] == "old body"
    assert store.problems() == []


def test_a_new_record_with_a_refused_description_is_not_created(tmp_path: Path) -> None:
    store = MemoryStore(directory=tmp_path / "m")
    with pytest.raises(AgentContextError):
        store.write("y", description="a\x7fb", type="user")
    assert not (tmp_path / "m" / "y.md").exists()
    assert store.problems() == []


def test_every_written_description_reads_back_as_given(tmp_path: Path) -> None:
    store = MemoryStore(directory=tmp_path / "m")
    for description in [
        ">",
        "|",
        "[a, b]",
        "- x",
        "#comment",
        "a #b",
        '"',
        "'",
        "x: y",
        "---",
        "caf\u00e9 \u00e0 la carte",
    ]:
        assert store.write("x", description=description, type="user", body="b")["description"] == description
