"""MemoryStore.rename changes the record's name and nothing else: in a file with CRLF line ends
the name line lost its \\r (a file of mixed line ends)."""

from __future__ import annotations

from pathlib import Path

from agentcontext.memory.store import MemoryStore


def test_rename_keeps_crlf_line_ends(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_bytes(b"---\r\nname: a\r\ndescription: d\r\ntype: user\r\n---\r\nbody\r\nname: x\r\n")
    store = MemoryStore(directory=tmp_path)
    store.rename("a", "b")
    assert (
        tmp_path / "b.md"
    ).read_bytes() == b"---\r\nname: b\r\ndescription: d\r\ntype: user\r\n---\r\nbody\r\nname: x\r\n"
    assert not (tmp_path / "a.md").exists()


def test_rename_with_lf_line_ends(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_bytes(b'---\ndescription: "name: trick"\nname: a\ntype: user\n---\nbody\n')
    store = MemoryStore(directory=tmp_path)
    assert store.rename("a", "c")["name"] == "c"
    assert (tmp_path / "c.md").read_bytes() == b'---\ndescription: "name: trick"\nname: c\ntype: user\n---\nbody\n'
