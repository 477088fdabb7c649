"""A stored result changed on disk: ResultStore.get and the recall tool returned whatever the file
held (an edited or truncated result, as if it were the one stored). The id is the text's hash, so
a read now checks it and a changed file is a RecallError; storing the text again repairs it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentcontext.budgets.recall import Recall
from agentcontext.budgets.store import ResultStore
from agentcontext.errors import RecallError

TEXT = "".join(f"line {i}: the build passed\n" for i in range(200))


def _changes(path: Path) -> list[tuple[str, bytes]]:
    data = path.read_bytes()
    return [
        ("edited", data.replace(b"passed", b"FAILED", 1)),  # same size
        ("truncated", data[: len(data) // 2]),
        ("emptied", b""),
        ("appended", data + b"injected line\n"),
    ]


@pytest.mark.parametrize("change", ["edited", "truncated", "emptied", "appended"])
def test_a_result_changed_on_disk_is_refused_by_every_read(tmp_path: Path, change: str) -> None:
    store = ResultStore(tmp_path / "store")
    rid = store.put(TEXT, alias="call_1")
    path = store.path_for(rid)
    path.write_bytes(dict(_changes(path))[change])
    words = "does not match its recall id"
    with pytest.raises(RecallError, match=words) as info:
        store.get(rid)
    assert info.value.recall_id == rid
    with pytest.raises(RecallError, match=words):
        store.recall(rid)
    with pytest.raises(RecallError, match=words):
        "".join(store.pieces(rid))
    recall = Recall(store)
    for name in (rid, "call_1"):
        with pytest.raises(RecallError, match=words):
            recall.original(name)
        with pytest.raises(RecallError, match=words):
            recall.page(name, 1, 5)
        answer = recall({"id": name, "limit": 5})
        assert answer.startswith("Error: ") and words in answer and "FAILED" not in answer
    # Storing the text again writes the file again (it was left as it was: the name was held).
    assert store.put(TEXT) == rid and store.get(rid) == TEXT and path.read_bytes() == TEXT.encode()
    assert recall.original("call_1") == TEXT


def test_an_intact_result_of_many_chunks_reads_back(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "store")
    text = "é and ascii\n" * 300_000  # 3.9 MB: several 1 MiB chunks, characters across their edges
    rid = store.put(text)
    assert store.get(rid) == text and "".join(store.pieces(rid)) == text
    page = Recall(store).page(rid, 299_999, 5)
    assert (page.text, page.total_lines) == ("é and ascii\n" * 2, 300_000)
    mtime = os.stat(store.path_for(rid)).st_mtime_ns
    assert store.put(text) == rid and os.stat(store.path_for(rid)).st_mtime_ns == mtime  # not written again


def test_put_over_a_directory_planted_under_the_name_is_a_recall_error(tmp_path: Path) -> None:
    # The check of what the name holds made a file object of a directory: a bare
    # IsADirectoryError out of put, its descriptor left open.
    store = ResultStore(tmp_path / "store")
    rid = store.put(TEXT)
    path = store.path_for(rid)
    path.unlink()
    path.mkdir()
    with pytest.raises(RecallError, match="cannot store the result"):
        store.put(TEXT)
    assert path.is_dir() and not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    path.rmdir()
    assert store.put(TEXT) == rid and store.get(rid) == TEXT
