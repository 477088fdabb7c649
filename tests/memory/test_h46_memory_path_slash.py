"""Anthropic's memory tool: ``/memories/a.md/`` names a directory, not the record ``a.md`` (the
trailing slash was stripped from every path, so a file path with one read and wrote ``a.md``);
the directory itself may still be named with a trailing slash."""

from __future__ import annotations

from pathlib import Path

from agentcontext.memory import MemoryStore
from agentcontext.memory.tools import AnthropicMemoryTool


def test_a_file_path_with_a_trailing_slash_is_not_the_file(tmp_path: Path) -> None:
    tool = AnthropicMemoryTool(MemoryStore(tmp_path / "mem"))
    assert not tool.execute({"command": "create", "path": "/memories/a.md", "file_text": "hello"}).startswith("Error")
    for command in [
        {"command": "view", "path": "/memories/a.md/"},
        {"command": "create", "path": "/memories/b.md/", "file_text": "x"},
        {"command": "delete", "path": "/memories/a.md//"},
    ]:
        assert tool.execute(command).startswith("Error: "), command
    assert "hello" in tool.execute({"command": "view", "path": "/memories/a.md"})


def test_the_directory_with_a_trailing_slash(tmp_path: Path) -> None:
    tool = AnthropicMemoryTool(MemoryStore(tmp_path / "mem"))
    tool.execute({"command": "create", "path": "/memories/a.md", "file_text": "hello"})
    for path in ["/memories", "/memories/", "/memories//"]:
        assert "/memories/a.md" in tool.execute({"command": "view", "path": path}), path
