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


def test_an_edit_through_the_memory_tool_keeps_crlf_line_ends(tmp_path: Path) -> None:
    from agentcontext.memory.tools import AnthropicMemoryTool

    (tmp_path / "a.md").write_bytes(
        b"---\r\nname: a\r\ndescription: first line\r\ntype: user\r\nupdated: 2026-01-01T00:00:00Z\r\n---\r\n"
        b"first line\r\nmore\r\n"
    )
    tool = AnthropicMemoryTool(MemoryStore(directory=tmp_path))
    out = tool.execute({"command": "str_replace", "path": "/memories/a.md", "old_str": "first", "new_str": "1st"})
    assert out == "The memory file has been edited."
    data = (tmp_path / "a.md").read_bytes()
    front = data.split(b"---\r\n")[1]
    assert front.count(b"\r\n") == front.count(b"\n") == 4
    assert b"description: 1st line\r\n" in front and b"updated: 2026-01-01" not in front
