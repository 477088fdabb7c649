"""The compiler's sources and flags are checked when given: WorkingSet(memory=5) and
MemoryTools(5) failed with an AttributeError at the first compile or call, Compiler(reminders=5)
with a bare TypeError, and compile(record="no") / refresh(git="no") took a string as True."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentcontext as ac
from agentcontext.compiler import Compiler
from agentcontext.compiler.sections import WorkingSet
from agentcontext.errors import ArgumentTypeError
from agentcontext.memory.store import MemoryStore
from agentcontext.memory.tools import AnthropicMemoryTool, MemoryTools

CONV = ac.Conversation([{"role": "user", "content": "hi"}])


@pytest.mark.parametrize("memory", [5, "memory-dir", object()])
def test_working_set_memory_must_be_a_store(memory: object) -> None:
    with pytest.raises(ArgumentTypeError, match="WorkingSet memory must be a MemoryStore"):
        WorkingSet(memory=memory)


@pytest.mark.parametrize("cls", [MemoryTools, AnthropicMemoryTool])
def test_memory_tools_take_a_store(cls: type) -> None:
    with pytest.raises(ArgumentTypeError, match="takes a MemoryStore"):
        cls(5)


def test_compiler_reminders_of_the_wrong_type() -> None:
    with pytest.raises(ArgumentTypeError, match="reminders must be"):
        Compiler(reminders=5)  # type: ignore[arg-type]


def test_compile_record_and_refresh_git_are_flags() -> None:
    compiler = Compiler()
    with pytest.raises(ArgumentTypeError, match="record must be True or False"):
        compiler.compile(CONV, record="no")  # type: ignore[arg-type]
    assert compiler.requests == []  # nothing was compiled or recorded
    with pytest.raises(ArgumentTypeError, match="git must be True or False"):
        compiler.refresh(git="no")  # type: ignore[arg-type]


def test_good_sources_compile(tmp_path: Path) -> None:
    store = MemoryStore(directory=tmp_path / "m")
    store.write("a", description="a rule", type="user")
    compiled = Compiler(WorkingSet(memory=store), reminders=[]).compile(CONV, record=False)
    assert "a rule" in compiled.system
