"""The memory flush turn over the loopback LLM server, with the real SDKs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentcontext import Conversation
from agentcontext.errors import OptionError
from agentcontext.memory import MemoryStore, MemoryTools
from agentcontext.memory.flush import FLUSH_INSTRUCTION, flush_memory
from tests.llm_server import LLMServer, Reply
from tests.providers.test_providers import KINDS, make

pytest.importorskip("anthropic")
pytest.importorskip("openai")


@pytest.fixture
def server() -> Any:
    with LLMServer() as s:
        yield s


def _conversation() -> Conversation:
    return Conversation(
        [
            {"role": "user", "content": "I'm on the payments team; never use emoji in commit messages."},
            {"role": "assistant", "content": "Understood."},
        ],
        format="openai",
    )


@pytest.mark.parametrize("kind", KINDS)
def test_flush_turn_persists_with_memory_tools_only(kind: str, server: LLMServer, tmp_path: Path) -> None:
    store = MemoryStore(directory=tmp_path / "mem")
    store.write("stale", description="old fact", type="project")
    tools = MemoryTools(store)
    write = {
        "name": "memory_write",
        "arguments": {
            "name": "commit-style",
            "type": "feedback",
            "description": "No emoji in commit messages",
            "body": "The user asked for it explicitly.",
        },
    }
    server.enqueue(
        Reply("", tool_calls=[write, {"name": "memory_delete", "arguments": {"name": "stale"}}], output_tokens=40),
        Reply("", tool_calls=[{"name": "bash", "arguments": {"cmd": "rm -rf /"}}], output_tokens=7),
        Reply("done", output_tokens=3),
    )
    conv = _conversation()
    before = conv.to_openai()
    report = flush_memory(make(kind, server), conv, tools, max_output_tokens=256)
    assert conv.to_openai() == before  # silent: the caller's conversation is unchanged
    assert report.calls == 3
    assert report.output_tokens == 50
    assert report.input_tokens > 0
    assert report.written == ["commit-style"] and report.deleted == ["stale"]
    assert report.tool_calls[2][2].startswith("Error: only the memory tools")
    assert report.truncated is False
    assert store.get("commit-style")["type"] == "feedback"
    assert "stale" not in store
    first = server.requests[0].body
    assert 256 in {first.get(k) for k in ("max_tokens", "max_output_tokens", "max_completion_tokens")}
    names = sorted(t.get("name") or t["function"]["name"] for t in first["tools"])
    assert names == sorted(tools.names)
    assert FLUSH_INSTRUCTION in str(first)
    assert report.to_dict()["stage"] == "memory_flush"


def test_flush_stops_after_max_steps(server: LLMServer, tmp_path: Path) -> None:
    store = MemoryStore(directory=tmp_path / "mem")
    server.enqueue(*[Reply("", tool_calls=[{"name": "memory_list", "arguments": {}}]) for _ in range(2)])
    report = flush_memory(make("openai", server), _conversation(), MemoryTools(store), max_steps=2)
    assert (report.calls, report.truncated, report.written) == (2, True, [])
    with pytest.raises(OptionError):
        flush_memory(make("openai", server), _conversation(), MemoryTools(store), max_output_tokens=0)
