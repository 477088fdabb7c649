"""A page asked for past a sparse file's hole (h47-attack): the lines before the offset were
skipped to the end of the file, a hole of 64 GiB read as one line of NUL bytes (about ten
minutes here; a terabyte, hours), while the model waited on a read tool. The file's first 8 KiB
are text, so it was not refused as binary before the skip."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

#: Run in a child process, so that a read that does not end fails the test instead of hanging it.
READ = """
import sys
from agentcontext.budgets.reads import FileReader
from agentcontext.errors import FileReadError
try:
    FileReader().read(sys.argv[1], offset=int(sys.argv[2]), lines=10)
except FileReadError as exc:
    print(exc.kind)
"""


@pytest.mark.parametrize("offset", [5_000, 1_000_000])
def test_a_page_past_a_sparse_hole_is_refused_as_binary_at_once(tmp_path: Path, offset: int) -> None:
    path = tmp_path / "sparse.log"
    with path.open("wb") as f:
        f.write(b"a line of text\n" * 4_000)  # (60 KB: the sniff for binary sees no hole)
        try:
            f.truncate(64 << 30)
        except OSError:
            pytest.skip("this file system holds no 64 GiB sparse file")
    done = subprocess.run(
        [sys.executable, "-c", READ, str(path), str(offset)], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "binary"
