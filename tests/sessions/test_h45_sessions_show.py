"""`agentcontext sessions show` reads only the snapshots it shows (the current one, and the
--history N newest earlier ones): it read and parsed every history file (each up to max_bytes) to
print the current one. An earlier snapshot that cannot be read is listed as unreadable, with why,
where it was left out without a word."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentcontext import Conversation
from agentcontext.cli import main
from agentcontext.sessions.snapshots import Snapshot, SnapshotStore

CHAT = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def _store(tmp_path: Path, saves: int = 5) -> SnapshotStore:
    store = SnapshotStore(tmp_path / "s")
    for turn in range(saves):
        store.save(Snapshot(Conversation(CHAT, format="openai"), turn=turn, reason="reply"))
    return store


def test_show_reads_only_the_current_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(tmp_path)
    assert len(list((store.directory / "history").iterdir())) == 4
    reads: list[Path] = []
    original = SnapshotStore._read

    def counted(self: SnapshotStore, path: Path) -> Any:
        reads.append(path)
        return original(self, path)

    monkeypatch.setattr(SnapshotStore, "_read", counted)
    assert main(["sessions", "show", str(store.directory)]) == 0
    assert reads == [store.current_path]
    reads.clear()
    assert main(["sessions", "show", str(store.directory), "--history", "2"]) == 0
    assert len(reads) == 3


def test_an_unreadable_earlier_snapshot_is_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = _store(tmp_path)
    capsys.readouterr()
    history = sorted((store.directory / "history").iterdir())
    history[-2].write_text("{not json", encoding="utf-8")  # 2 back
    assert main(["sessions", "show", str(store.directory), "--history", "9"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out] == ["current", "1 back", "2 back", "3 back", "4 back"]
    assert out[2].startswith("2 back: unreadable: ") and "not a JSON snapshot" in out[2]
    assert main(["sessions", "show", str(store.directory), "--history", "9", "--json"]) == 0
    snapshots = json.loads(capsys.readouterr().out)["snapshots"]
    assert [s["slot"] for s in snapshots] == [0, 1, 2, 3, 4]
    assert "not a JSON snapshot" in snapshots[2]["error"] and "turn" not in snapshots[2]


def test_history_size_counts_the_history_files(tmp_path: Path) -> None:
    assert _store(tmp_path, saves=3).history_size() == 2
    assert SnapshotStore(tmp_path / "empty").history_size() == 0
