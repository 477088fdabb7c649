"""A snapshot store whose file system refuses a write: a typed error, and current as it was."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import support

# A child process that may write files of at most 1,000 bytes (SIGXFSZ ignored: a write past the
# limit fails with EFBIG, as a full disk fails with ENOSPC).
_SAVE_OVER_THE_LIMIT = textwrap.dedent(
    """
    import resource, signal, sys
    from agentcontext import Conversation
    from agentcontext.errors import SnapshotError
    from agentcontext.sessions import Snapshot, SnapshotStore

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    store = SnapshotStore(sys.argv[1])
    big = Snapshot(Conversation([{"role": "user", "content": "x" * 5000}]), turn=2, reason="manual")
    resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
    try:
        store.save(big)
    except SnapshotError as exc:
        print("SnapshotError", exc.kind, exc)
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_a_write_the_file_system_refuses_is_a_snapshot_error_and_current_stays(tmp_path: Path) -> None:
    # save() let the OSError of the write (EFBIG, ENOSPC, EROFS) reach the caller untyped.
    from agentcontext import Conversation
    from agentcontext.sessions import Snapshot, SnapshotStore

    store = SnapshotStore(tmp_path / "s")
    store.save(Snapshot(Conversation([{"role": "user", "content": "kept"}]), turn=1, reason="reply"))
    before = store.current_path.read_bytes()
    env = {**os.environ, "PYTHONPATH": str(support.ROOT / "python")}
    done = subprocess.run(
        [sys.executable, "-c", _SAVE_OVER_THE_LIMIT, str(tmp_path / "s")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("SnapshotError io ") and "cannot save the snapshot" in done.stdout
    assert "current.json is as it was" in done.stdout
    assert store.current_path.read_bytes() == before
    assert sorted(p.name for p in store.directory.iterdir()) == [".lock", "current.json", "history"]


@pytest.mark.parametrize(
    "content",
    [b'{"version":1,"created":"2026-', b'{"version":99}', b"\0" * 64],
    ids=["cut short", "another version", "zeros"],
)
def test_clear_gets_past_a_current_snapshot_that_cannot_be_read(tmp_path: Path, content: bytes) -> None:
    # clear() read the current snapshot for its format first and raised its SnapshotError: a
    # user's /clear, the way past a broken current.json, failed on it.
    from agentcontext import Conversation
    from agentcontext.sessions import Snapshot, SnapshotStore

    store = SnapshotStore(tmp_path / "s")
    store.save(Snapshot(Conversation([{"role": "user", "content": "hi"}]), turn=1, reason="reply"))
    store.current_path.write_bytes(content)
    store.clear(turn=2)
    current = store.current()
    assert current is not None and current.empty and current.reason == "clear" and current.turn == 2
    assert (store.directory / "history").joinpath("00000001.json").read_bytes() == content  # kept as it was
