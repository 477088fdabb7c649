"""A huge file planted under a stored result's name was read whole (into memory, for ``get``)
before its hash check failed. The store records each result's size beside it: a file of another
size is refused before it is read, and no more than the recorded size (+1 byte) is ever read; a
result stored without the record (an earlier version's) has its hash checked before any of its
text is kept. Records are read as the results are: no symlink is followed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentcontext.budgets.store import ResultStore
from agentcontext.errors import RecallError

TEXT = "".join(f"line {i}: the build passed\n" for i in range(200))
HUGE = 64 << 20  # a sparse file: no disk used


def _plant_huge(path: Path) -> None:
    path.unlink()
    with open(path, "wb") as f:
        f.truncate(HUGE)


class _Counting:
    """Counts the bytes read from the store's files (every read goes through ``os.fdopen``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import agentcontext.budgets.store as module

        self.read = 0
        real = os.fdopen

        def fdopen(fd: int, *args: object, **kwargs: object) -> object:
            f = real(fd, *args, **kwargs)  # type: ignore[call-overload]
            outer = self
            inner_read = f.read

            def read(n: int = -1) -> bytes:
                data = inner_read(n)
                outer.read += len(data)
                return data

            f.read = read
            return f

        monkeypatch.setattr(module.os, "fdopen", fdopen)


@pytest.mark.parametrize("how", ["get", "recall", "pieces"])
def test_a_huge_planted_result_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    store = ResultStore(tmp_path / "store")
    rid = store.put(TEXT)
    _plant_huge(store.path_for(rid))
    counting = _Counting(monkeypatch)
    with pytest.raises(RecallError, match="does not match its recall id") as info:
        if how == "get":
            store.get(rid)
        elif how == "recall":
            store.recall(rid)
        else:
            "".join(store.pieces(rid))
    assert info.value.recall_id == rid
    assert counting.read < 1 << 10, counting.read  # was the whole 64 MB


def test_a_file_that_grows_after_its_size_is_checked_is_read_no_further(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "store")
    rid = store.put(TEXT)
    found = store._result(rid)
    assert found is not None
    f, size = found
    assert size == len(TEXT.encode())
    with open(store.path_for(rid), "ab") as grow:
        grow.write(b"x" * (4 << 20))
    with pytest.raises(RecallError, match="does not match"):
        "".join(store._decode(f, store.path_for(rid), rid, chunk=1024, limit=size, verify=True))


def test_a_store_without_size_records_still_reads_and_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ResultStore(tmp_path / "store")
    rid = store.put(TEXT, alias="call_1")
    record = tmp_path / "store" / f"{rid}.len"
    record.unlink()  # as an earlier version left it
    assert store.get(rid) == TEXT
    assert store.recall(store.alias("call_1") or "", lines=1000).startswith("line 0")
    _plant_huge(store.path_for(rid))
    counting = _Counting(monkeypatch)
    with pytest.raises(RecallError, match="does not match"):
        store.get(rid)
    assert counting.read <= HUGE  # hashed once, never kept: no second pass
    monkeypatch.undo()
    assert store.put(TEXT) == rid and store.get(rid) == TEXT  # put again: repaired, record written
    assert record.read_text() == str(len(TEXT.encode()))


@pytest.mark.parametrize("bad", ["symlink", "directory", "text", "negative", "huge"])
def test_a_size_record_that_is_not_one_is_refused(tmp_path: Path, bad: str) -> None:
    store = ResultStore(tmp_path / "store")
    rid = store.put(TEXT)
    record = tmp_path / "store" / f"{rid}.len"
    record.unlink()
    outside = tmp_path / "outside"
    outside.write_text(str(len(TEXT.encode())))
    if bad == "symlink":
        record.symlink_to(outside)
    elif bad == "directory":
        record.mkdir()
    else:
        record.write_text({"text": "twelve", "negative": "-5", "huge": "9" * 4096}[bad])
    with pytest.raises(RecallError):
        store.get(rid)
    if bad != "directory":
        assert store.put(TEXT) == rid and store.get(rid) == TEXT  # put again replaces the record
        assert outside.read_text() == str(len(TEXT.encode()))  # a link is replaced, its target untouched


def test_a_huge_alias_record_is_not_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ResultStore(tmp_path / "store")
    rid = store.put(TEXT, alias="call_1")
    ref = store._alias_path("call_1")
    _plant_huge(ref)
    counting = _Counting(monkeypatch)
    assert store.alias("call_1") is None
    assert counting.read < 1 << 13
    monkeypatch.undo()
    assert store.put(TEXT, alias="call_1") == rid and store.alias("call_1") == rid
