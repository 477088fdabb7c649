"""Modes decide which tools the model may use, from tool metadata only (never from names).

- ``default``: every tool of the effective registry.
- ``plan``: only tools that are ``read_only`` and not ``delegated``.

Two ways of hiding tools (:data:`ToolHiding`, the compiler's ``hiding=``), chosen on purpose:

- ``filter``: the catalog sent to the model is narrowed to the visible tools. Fewer tokens, but the
  tool definitions and the tool catalog section change when the mode changes, so the provider's
  prompt cache is rebuilt from the tools onwards (the whole request) on every switch.
- ``deny``: the catalog stays the same in every mode; the mode is announced by a reminder at the
  end of the request, and a call to a hidden tool is refused at execution. The cache prefix
  survives the switch; the hidden definitions still cost their tokens.

In both, a call to a hidden tool gets a tool error result saying why, and never runs.
"""

from __future__ import annotations

from typing import Literal

from agentcontext.compiler.registry import ToolSpec
from agentcontext.errors import OptionError

__all__ = ["MODES", "TOOL_HIDINGS", "Mode", "ToolHiding", "check_hiding", "check_mode", "hidden_reason"]

Mode = Literal["default", "plan"]
#: How the tools a mode hides are hidden: left out of the catalog (``filter``) or kept in it and
#: refused when called (``deny``).
ToolHiding = Literal["filter", "deny"]
MODES: tuple[str, ...] = ("default", "plan")
TOOL_HIDINGS: tuple[str, ...] = ("filter", "deny")


def check_mode(mode: object) -> Mode:
    if mode == "default":
        return "default"
    if mode == "plan":
        return "plan"
    raise OptionError(f'mode must be "default" or "plan", got {mode!r}')


def check_hiding(hiding: object) -> ToolHiding:
    if hiding == "filter":
        return "filter"
    if hiding == "deny":
        return "deny"
    raise OptionError(f'hiding must be "filter" or "deny", got {hiding!r}')


def hidden_reason(tool: ToolSpec, mode: Mode, *, root: bool = True) -> str | None:
    """Why ``tool`` is hidden in ``mode`` (for a root agent or not), or None when it is visible."""
    if tool.root_only and not root:
        return "it is for the root agent only"
    if mode == "plan":
        if not tool.read_only:
            return "plan mode allows only read-only tools and this one can change state"
        if tool.execution_domain == "delegated":
            return "plan mode does not delegate work to other agents"
    return None
