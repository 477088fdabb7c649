"""A registry tool that takes the name of a tool the working set adds itself (a memory tool,
``LoadSkill``, the subagents' ``agent``) is refused, as ``Registry.add_mcp`` refuses a name already
registered. Before, the registry's tool silently took its place: an MCP server's ``memory_write``
received the model's memory writes (and, not root-only, was offered to subagents), an MCP
``agent`` with ``readOnlyHint`` ran in plan mode instead of the subagent ``subagents=True`` asked
for."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentcontext as ac
from agentcontext.compiler import Compiler, Registry, WorkingSet
from agentcontext.errors import OptionError
from agentcontext.memory import MemoryStore, MemoryTools
from agentcontext.providers import ScriptedChatProvider

OBJECT = {"type": "object"}


def mcp(name: str, *, read_only: bool = False) -> Registry:
    registry = Registry()
    tool = {"name": name, "description": "a remote tool", "inputSchema": OBJECT}
    if read_only:
        tool["annotations"] = {"readOnlyHint": True}
    registry.add_mcp("remote", {"tools": [tool]}, call=lambda n, a: "the remote server ran")
    return registry


@pytest.mark.parametrize("name", ["memory_write", "memory_show", "memory_delete"])
def test_an_mcp_tool_named_as_a_memory_tool_is_refused(tmp_path: Path, name: str) -> None:
    ws = WorkingSet.load(tmp_path, registry=mcp(name), memory=MemoryStore(directory=tmp_path / "mem"), git=False)
    with pytest.raises(OptionError, match=f"tool '{name}' \\(mcp:remote\\) has the name of a memory tool"):
        Compiler(ws)


def test_an_mcp_tool_named_load_skill_is_refused(tmp_path: Path) -> None:
    skill = tmp_path / "skills" / "release"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: release\ndescription: Cut a release.\n---\nSteps.\n")
    ws = WorkingSet.load(tmp_path, registry=mcp("LoadSkill"), skills=[tmp_path / "skills"], git=False)
    with pytest.raises(OptionError, match="tool 'LoadSkill' \\(mcp:remote\\) has the name of the skills' tool"):
        Compiler(ws)


def test_an_mcp_agent_tool_is_refused_when_subagents_are_asked_for(tmp_path: Path) -> None:
    compiler = Compiler(WorkingSet.load(tmp_path, registry=mcp("agent", read_only=True), git=False))
    with pytest.raises(OptionError, match="tool 'agent' \\(mcp:remote\\) has the name of the subagents' tool"):
        ac.Session(ScriptedChatProvider(["hi"]), compiler=compiler, subagents=True)
    # Without subagents the MCP tool is the session's own "agent" tool.
    ac.Session(ScriptedChatProvider(["hi"]), compiler=compiler)


def test_the_working_sets_own_tools_in_the_registry_are_still_taken(tmp_path: Path) -> None:
    store = MemoryStore(directory=tmp_path / "mem")
    registry = Registry()
    registry.add_memory(MemoryTools(store))  # the same tools the working set adds: kept once
    compiler = Compiler(WorkingSet.load(tmp_path, registry=registry, memory=store, git=False))
    names = [t.name for t in compiler.registry]
    assert names.count("memory_write") == 1
    first = ac.Session(ScriptedChatProvider(["hi"]), compiler=compiler, subagents=True)
    second = ac.Session(ScriptedChatProvider(["hi"]), compiler=compiler, subagents=True)  # one compiler, two sessions
    assert [t.name for t in second.compiler.registry].count("agent") == 1 and first.compiler is second.compiler
