"""A process forked while one of its threads writes a snapshot store or a memory store: the
child must not keep the store's file lock."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import support

_SCRIPT = textwrap.dedent(
    """
    import multiprocessing, sys, threading, time
    from agentcontext import Conversation
    from agentcontext.memory import MemoryStore
    from agentcontext.sessions import Snapshot, SnapshotStore

    kind, directory = sys.argv[1], sys.argv[2]
    inside = threading.Event()
    if kind == "snapshots":
        store = SnapshotStore(directory)
        snap = Snapshot(Conversation([{"role": "user", "content": "hi"}]), turn=1, reason="reply")
        write = lambda: store.save(snap)
        step, name = SnapshotStore, "_rotate"
    else:
        store = MemoryStore(directory=directory)
        write = lambda: store.write("notes", description="d", type="user", body="b")
        step, name = MemoryStore, "_write_file"
    original = getattr(step, name)

    def slow(self, *args):  # the writing thread is inside the store's lock when the fork happens
        inside.set()
        time.sleep(0.5)
        return original(self, *args)

    setattr(step, name, slow)
    writer = threading.Thread(target=write)
    writer.start()
    inside.wait()
    child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(30,))
    child.start()
    writer.join()
    setattr(step, name, original)
    again = threading.Thread(target=write, daemon=True)
    again.start()
    again.join(10)
    print("blocked" if again.is_alive() else "written")
    child.kill()
    """
)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
@pytest.mark.parametrize("kind", ["snapshots", "memory"])
def test_a_child_forked_during_a_write_does_not_keep_the_stores_lock(tmp_path: Path, kind: str) -> None:
    # The child inherited the descriptor that held the store's flock: the lock stayed held until
    # the child exited, and every later save (in the parent, or any process) waited for it.
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, kind, str(tmp_path / "store")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(support.ROOT / "python")},
        check=False,
    )
    assert done.stdout.strip() == "written", done.stderr
