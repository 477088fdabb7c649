"""The working-set compiler: the system prompt by sections, a capability registry with modes,
skills on demand, a goal with a judge, reminders — and the tokens of every source, per request.

- :mod:`~agentcontext.compiler.compile`: :class:`WorkingSet` (the sources), :func:`compile_request`
  (stateless), :class:`Compiler` (what :class:`~agentcontext.Session` calls before every model
  call).
- :mod:`~agentcontext.compiler.registry`: :class:`ToolSpec` and :class:`Registry` (built-in, MCP
  ``tools/list``, memory tools, ``LoadSkill``).
- :mod:`~agentcontext.compiler.modes`: ``default`` and ``plan``, tools hidden by ``filter`` or ``deny`` (``hiding=``).
- :mod:`~agentcontext.compiler.skills`: :func:`discover_skills`, ``LoadSkill``.
- :mod:`~agentcontext.compiler.instructions`: AGENTS.md / CLAUDE.md discovery.
- :mod:`~agentcontext.compiler.environment`: the environment section.
- :mod:`~agentcontext.compiler.goal`: :class:`Goal`, :class:`EvidenceJudge`, :class:`LLMJudge`.
- :mod:`~agentcontext.compiler.reminders`: :class:`Reminder` rules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: The public names, by the submodule that defines them, imported on first access: importing one
#: submodule (``agentcontext.compiler.prefix``, which the metrics use) loads only what it imports,
#: not the git helpers and ``subprocess`` of the rest.
_PUBLIC: dict[str, tuple[str, ...]] = {
    "agentcontext.compiler.compile": ("Compiler", "compile_request"),
    "agentcontext.compiler.environment": ("environment_section", "git_state"),
    "agentcontext.compiler.goal": (
        "CommandExited", "EvidenceJudge", "FileContains", "Goal", "Judge", "LLMJudge", "Verdict"
    ),
    "agentcontext.compiler.instructions": ("DEFAULT_INSTRUCTION_NAMES", "ProjectInstructions", "project_instructions"),
    "agentcontext.compiler.modes": ("MODES", "TOOL_HIDINGS", "hidden_reason"),
    "agentcontext.compiler.registry": ("EXECUTION_DOMAINS", "Registry", "ToolSpec"),
    "agentcontext.compiler.reminders": ("Reminder", "Reminders"),
    "agentcontext.compiler.sections": (
        "BASE_INSTRUCTIONS", "SECTION_ORDER", "CompiledRequest", "Section", "WorkingSet"
    ),
    "agentcontext.compiler.skills": ("LOAD_SKILL", "Skill", "Skills", "discover_skills", "parse_front_matter"),
}  # fmt: skip

#: Public name -> the submodule defining it.
_EXPORTS: dict[str, str] = {name: module for module, names in _PUBLIC.items() for name in names}

__all__ = sorted(_EXPORTS)  # noqa: PLE0605  (derived from the one list above)

if TYPE_CHECKING:
    from agentcontext.compiler.compile import Compiler as Compiler
    from agentcontext.compiler.compile import compile_request as compile_request
    from agentcontext.compiler.environment import environment_section as environment_section
    from agentcontext.compiler.environment import git_state as git_state
    from agentcontext.compiler.goal import CommandExited as CommandExited
    from agentcontext.compiler.goal import EvidenceJudge as EvidenceJudge
    from agentcontext.compiler.goal import FileContains as FileContains
    from agentcontext.compiler.goal import Goal as Goal
    from agentcontext.compiler.goal import Judge as Judge
    from agentcontext.compiler.goal import LLMJudge as LLMJudge
    from agentcontext.compiler.goal import Verdict as Verdict
    from agentcontext.compiler.instructions import DEFAULT_INSTRUCTION_NAMES as DEFAULT_INSTRUCTION_NAMES
    from agentcontext.compiler.instructions import ProjectInstructions as ProjectInstructions
    from agentcontext.compiler.instructions import project_instructions as project_instructions
    from agentcontext.compiler.modes import MODES as MODES
    from agentcontext.compiler.modes import TOOL_HIDINGS as TOOL_HIDINGS
    from agentcontext.compiler.modes import hidden_reason as hidden_reason
    from agentcontext.compiler.registry import EXECUTION_DOMAINS as EXECUTION_DOMAINS
    from agentcontext.compiler.registry import Registry as Registry
    from agentcontext.compiler.registry import ToolSpec as ToolSpec
    from agentcontext.compiler.reminders import Reminder as Reminder
    from agentcontext.compiler.reminders import Reminders as Reminders
    from agentcontext.compiler.sections import BASE_INSTRUCTIONS as BASE_INSTRUCTIONS
    from agentcontext.compiler.sections import SECTION_ORDER as SECTION_ORDER
    from agentcontext.compiler.sections import CompiledRequest as CompiledRequest
    from agentcontext.compiler.sections import Section as Section
    from agentcontext.compiler.sections import WorkingSet as WorkingSet
    from agentcontext.compiler.skills import LOAD_SKILL as LOAD_SKILL
    from agentcontext.compiler.skills import Skill as Skill
    from agentcontext.compiler.skills import Skills as Skills
    from agentcontext.compiler.skills import discover_skills as discover_skills
    from agentcontext.compiler.skills import parse_front_matter as parse_front_matter


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'agentcontext.compiler' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
