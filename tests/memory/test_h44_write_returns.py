"""What `MemoryStore.write`, `write_text` and `rename` return is the record they wrote, read under
the lock: another process may delete or replace it the moment the lock is released."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcontext.memory import MemoryStore
from agentcontext.memory.store import render_record


def _other_process_acts_when_the_lock_is_released(store: MemoryStore, act: Callable[[], Any]) -> None:
    real = store.locked

    @contextlib.contextmanager
    def locked() -> Iterator[None]:
        with real():
            yield
        act()  # the next holder of the lock (another process's delete or write)

    store.locked = locked  # type: ignore[method-assign]


@pytest.mark.parametrize("how", ["write", "write_text", "rename"])
def test_a_write_returns_its_record_when_another_process_deletes_it_right_after(tmp_path: Path, how: str) -> None:
    # The record was read back after the lock was released: a delete in between made a write that
    # had succeeded raise MemoryRecordError("no memory record ..."), and a write in between made it
    # return the other writer's record as its own.
    store = MemoryStore(directory=tmp_path / "m")
    other = MemoryStore(directory=tmp_path / "m")
    store.write("old", description="to rename", type="user", body="body")
    name = "old-renamed" if how == "rename" else "notes"
    _other_process_acts_when_the_lock_is_released(store, lambda: other.delete(name))
    if how == "write":
        record = store.write(name, description="mine", type="project", body="written")
    elif how == "write_text":
        record = store.write_text(name, render_record(name, "mine", "project", "written"))
    else:
        record = store.rename("old", name)
    assert record["name"] == name
    assert record["body"].strip() == ("body" if how == "rename" else "written")
    assert name not in other  # the other process's delete came after


def test_a_write_returns_its_own_record_not_the_next_writers(tmp_path: Path) -> None:
    store = MemoryStore(directory=tmp_path / "m")
    other = MemoryStore(directory=tmp_path / "m")
    _other_process_acts_when_the_lock_is_released(
        store, lambda: other.write("notes", description="theirs", type="user", body="theirs")
    )
    record = store.write("notes", description="mine", type="project", body="mine")
    assert (record["description"], record["body"].strip()) == ("mine", "mine")
