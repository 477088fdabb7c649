"""A snapshot store whose ``history`` directory was swapped for a symlink after the store was made:
saves linked the rotated snapshot into wherever it led and pruning deleted that directory's
``NNNNNNNN.json`` files (the user's, outside the store). Every use of ``history`` now opens it as a
directory without following a symlink: a save or a read is a SnapshotError (kind ``symlink``) and
nothing outside the store is written or removed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import agentcontext as ac
from agentcontext.errors import SnapshotError
from agentcontext.sessions.snapshots import Snapshot, SnapshotStore


def _swapped(tmp_path: Path) -> tuple[SnapshotStore, Path, dict[str, str]]:
    store = SnapshotStore(tmp_path / "snaps", keep=1)
    conv = ac.Conversation([{"role": "user", "content": "hello"}])
    for turn in range(3):
        store.save(Snapshot(conv, turn=turn))
    outside = tmp_path / "outside"
    outside.mkdir()
    files = {f"{n:08d}.json": f"precious {n}" for n in range(1, 6)}
    files["snap-tmp.tmp"] = "also precious"
    for name, text in files.items():
        (outside / name).write_text(text)
    shutil.rmtree(tmp_path / "snaps" / "history")
    (tmp_path / "snaps" / "history").symlink_to(outside, target_is_directory=True)
    return store, outside, files


def test_a_save_through_a_swapped_history_writes_and_deletes_nothing_outside(tmp_path: Path) -> None:
    store, outside, files = _swapped(tmp_path)
    before = (tmp_path / "snaps" / "current.json").read_bytes()
    conv = ac.Conversation([{"role": "user", "content": "next"}])
    with pytest.raises(SnapshotError, match="a symlink") as e:
        store.save(Snapshot(conv, turn=9))
    assert e.value.kind == "symlink"
    assert {p.name: p.read_text() for p in outside.iterdir()} == files
    assert (tmp_path / "snaps" / "current.json").read_bytes() == before


def test_reading_history_through_a_swapped_directory_is_refused(tmp_path: Path) -> None:
    store, _, _ = _swapped(tmp_path)
    with pytest.raises(SnapshotError, match="a symlink"):
        store.history()
    with pytest.raises(SnapshotError, match="a symlink"):
        store.load(1)
