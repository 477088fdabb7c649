"""The sections of a request: the sources they are compiled from (:class:`WorkingSet`), their
order (:data:`SECTION_ORDER`), and the compiled request with the tokens of every source
(:class:`CompiledRequest`). Compiling is :mod:`agentcontext.compiler.compile`'s."""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcontext import _checks
from agentcontext._core import Conversation
from agentcontext.compiler.environment import environment_section
from agentcontext.compiler.goal import Goal
from agentcontext.compiler.instructions import DEFAULT_INSTRUCTION_NAMES, ProjectInstructions, project_instructions
from agentcontext.compiler.modes import Mode, ToolHiding
from agentcontext.compiler.registry import Registry, ToolSpec
from agentcontext.compiler.skills import LOAD_SKILL, Skills, discover_skills
from agentcontext.errors import ArgumentTypeError, OptionError
from agentcontext.types import CompiledRequestDict, JsonDict, RequestTokens

__all__ = ["BASE_INSTRUCTIONS", "SECTION_ORDER", "CompiledRequest", "Section", "WorkingSet"]

#: Stable, project-independent behaviour: the first section.
BASE_INSTRUCTIONS = """\
You are an agent working in the user's project with the tools below.
- When a tool returns an error, read it and change the call; do not repeat the same call.
- Verify your work by running the project's own checks, and report the exact commands you ran and \
what they returned.
- Say what you did not do or could not verify."""

#: The sections in prompt order (stable first).
SECTION_ORDER: tuple[str, ...] = ("base", "tools", "skills", "environment", "instructions", "memory", "goal")


@dataclass(frozen=True)
class Section:
    """One part of the system prompt and its exact token count."""

    name: str
    text: str
    tokens: int


@dataclass
class WorkingSet:
    """The sources a request is compiled from. Every one is optional; a section appears only when
    its source exists. ``bundle`` narrows the registry (tool names or ``source:<source>``);
    ``root=False`` (a subagent) leaves out ``root_only`` tools such as the memory writes."""

    base: str | None = BASE_INSTRUCTIONS
    registry: Registry | None = None
    skills: Skills | None = None
    workspace: Path | None = None
    instructions: ProjectInstructions | None = None
    environment: str | None = None
    memory: Any = None
    goal: Goal | None = None
    bundle: Collection[str] | None = None
    root: bool = True
    #: The project instruction file names :meth:`Compiler.refresh` (and a worktree child) read.
    instruction_names: Sequence[str] = DEFAULT_INSTRUCTION_NAMES

    def __post_init__(self) -> None:
        for name, kind in (
            ("base", str),
            ("registry", Registry),
            ("skills", Skills),
            ("instructions", ProjectInstructions),
            ("environment", str),
            ("goal", Goal),
        ):
            value = getattr(self, name)
            if value is not None and not isinstance(value, kind):
                raise ArgumentTypeError(
                    f"WorkingSet {name} must be a {kind.__name__} or None, got {type(value).__name__}"
                )
        if self.memory is not None:
            from agentcontext.memory.store import MemoryStore

            if not isinstance(self.memory, MemoryStore):
                raise ArgumentTypeError(
                    f"WorkingSet memory must be a MemoryStore or None, got {type(self.memory).__name__}"
                )
        if self.workspace is not None and not isinstance(self.workspace, Path):
            raise ArgumentTypeError(f"WorkingSet workspace must be a Path or None, got {type(self.workspace).__name__}")
        b = self.bundle
        if b is not None and (
            isinstance(b, str | bytes) or not isinstance(b, Collection) or not all(isinstance(n, str) for n in b)
        ):
            raise ArgumentTypeError(f"WorkingSet bundle must be a collection of tool names or None, got {b!r:.80}")
        _checks.flag("WorkingSet root", self.root)
        names = self.instruction_names
        if isinstance(names, str | bytes) or not isinstance(names, Sequence):
            raise ArgumentTypeError(f"WorkingSet instruction_names must be a list of file names, got {names!r:.80}")
        if not all(isinstance(n, str) and n and "/" not in n for n in names):
            raise OptionError(f"WorkingSet instruction_names must be a list of file names, got {names!r:.80}")
        self.instruction_names = tuple(names)

    @classmethod
    def load(
        cls,
        workspace: str | os.PathLike[str] | None = None,
        *,
        skills: Sequence[str | os.PathLike[str]] = (),
        instruction_names: Sequence[str] = DEFAULT_INSTRUCTION_NAMES,
        git: bool = True,
        **sources: Any,
    ) -> WorkingSet:
        """Read a workspace once: its project instructions (``instruction_names``) and
        environment (git branch and status when ``git``), and the skills of the ``skills``
        directories. Other ``sources`` (``base``, ``registry``, ``memory``, ``goal``, ``bundle``,
        ``root``) are taken as given."""
        ws = cls(**sources, instruction_names=instruction_names)
        if workspace is not None:
            if not isinstance(workspace, str | os.PathLike):
                raise ArgumentTypeError(f"workspace must be a path, got {type(workspace).__name__}")
            ws.workspace = Path(workspace).resolve()
            if not ws.workspace.is_dir():
                raise OptionError(f"workspace {os.fspath(workspace)!r} is not a directory")
            ws.instructions = project_instructions(ws.workspace, names=ws.instruction_names)
            ws.environment = environment_section(ws.workspace, git=git)
        if skills:
            ws.skills = discover_skills(skills)
        return ws

    def effective(self) -> Registry:
        """The effective registry: the tools (filtered by ``bundle``), the memory tools when there
        is memory, and ``LoadSkill`` when there are skills; ``root_only`` tools only for a root.

        A registry tool of another source with the name of one of those (an MCP server's
        ``memory_write``) is an :class:`OptionError`: it would take the added tool's place."""
        out = Registry([t for t in (self.registry.bundle(self.bundle) if self.registry else [])])
        if self.memory is not None:
            from agentcontext.memory.tools import MemoryTools

            extra = Registry()
            extra.add_memory(MemoryTools(self.memory))
            for t in extra:
                _unclaimed(out, t.name, "memory", "a memory tool")
                if t.name not in out and (self.bundle is None or _in_bundle(t, self.bundle)):
                    out.add(t)
        if self.skills is not None and len(self.skills):
            _unclaimed(out, LOAD_SKILL, "skill", "the skills' tool")
            if LOAD_SKILL not in out:
                out.add(self.skills.tool())
        if not self.root:
            for t in list(out):
                if t.root_only:
                    out.remove(t.name)
        return out


def _unclaimed(registry: Registry, name: str, source: str, what: str) -> None:
    """Raise :class:`OptionError` when ``registry`` holds a tool ``name`` of another source than
    ``source`` (the one the working set adds under that name)."""
    have = registry.get(name)
    if have is not None and have.source != source:
        raise OptionError(f"tool {name!r} ({have.source}) has the name of {what}; give the tool another name")


def _in_bundle(tool: ToolSpec, bundle: Collection[str]) -> bool:
    return tool.name in bundle or f"source:{tool.source}" in bundle


@dataclass
class CompiledRequest:
    """One compiled request: what to send, and where every token comes from."""

    system: str
    sections: list[Section]
    #: Tool definitions to send (None when there is no tool).
    tools: list[JsonDict] | None
    #: The tool definitions as JSON text (what their token count is of; "" without tools).
    tools_json: str
    #: Tools the model sees, and the ones the mode hides with the reason.
    visible: list[str]
    hidden: dict[str, str]
    mode: Mode
    hiding: ToolHiding
    #: Messages to append to the history for this request only (the reminder block), in the
    #: conversation's format.
    tail: list[JsonDict]
    #: The reminder texts in :attr:`tail`.
    reminders: list[str]
    #: Tokens per source: ``sections`` (name -> tokens), ``system``, ``tools``, ``history`` (role ->
    #: tokens), ``history_total``, ``pending_results`` (of the history: tool results the model has
    #: not seen yet), ``reminders``, ``reserved_output`` and ``input_total`` (system + tools +
    #: history + reminders).
    tokens: RequestTokens
    #: Reminders of rules with ``persist=True``: to be added to the history (a Session does).
    persist: list[str] = field(default_factory=list)

    def request_conversation(self, conversation: Conversation) -> Conversation:
        """``conversation`` plus :attr:`tail` (a copy when there is a tail; else ``conversation``)."""
        if not self.tail:
            return conversation
        out = conversation.slice(0)
        out.extend(self.tail)
        return out

    def to_dict(self) -> CompiledRequestDict:
        return {
            "mode": self.mode,
            "hiding": self.hiding,
            "system": self.system,
            "sections": [{"name": s.name, "tokens": s.tokens} for s in self.sections],
            "tools": self.tools or [],
            "visible": self.visible,
            "hidden": self.hidden,
            "reminders": self.reminders,
            "tokens": self.tokens,
        }
