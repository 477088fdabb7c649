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

from agentcontext.compiler.compile import Compiler, compile_request
from agentcontext.compiler.environment import environment_section, git_state
from agentcontext.compiler.goal import CommandExited, EvidenceJudge, FileContains, Goal, Judge, LLMJudge, Verdict
from agentcontext.compiler.instructions import DEFAULT_INSTRUCTION_NAMES, ProjectInstructions, project_instructions
from agentcontext.compiler.modes import MODES, TOOL_HIDINGS, hidden_reason
from agentcontext.compiler.registry import EXECUTION_DOMAINS, Registry, ToolSpec
from agentcontext.compiler.reminders import Reminder, Reminders
from agentcontext.compiler.sections import BASE_INSTRUCTIONS, SECTION_ORDER, CompiledRequest, Section, WorkingSet
from agentcontext.compiler.skills import LOAD_SKILL, Skill, Skills, discover_skills, parse_front_matter

__all__ = [
    "BASE_INSTRUCTIONS",
    "DEFAULT_INSTRUCTION_NAMES",
    "EXECUTION_DOMAINS",
    "LOAD_SKILL",
    "MODES",
    "SECTION_ORDER",
    "TOOL_HIDINGS",
    "CommandExited",
    "CompiledRequest",
    "Compiler",
    "EvidenceJudge",
    "FileContains",
    "Goal",
    "Judge",
    "LLMJudge",
    "ProjectInstructions",
    "Registry",
    "Reminder",
    "Reminders",
    "Section",
    "Skill",
    "Skills",
    "ToolSpec",
    "Verdict",
    "WorkingSet",
    "compile_request",
    "discover_skills",
    "environment_section",
    "git_state",
    "hidden_reason",
    "parse_front_matter",
    "project_instructions",
]
