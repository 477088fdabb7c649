"""Server-side context management, built from a :class:`~agentcontext.CompactionPolicy`.

Anthropic can clear old tool results and thinking, and compact the conversation itself, on its
servers (``context_management`` edits, beta); OpenAI Responses can compact automatically
(``context_management`` with ``compaction``) or on request (``responses.compact``). These
functions translate the same policy the local ladder uses into those request fields, so one
configuration drives both. What the servers return (Anthropic ``compaction`` blocks, OpenAI
``compaction`` items) is opaque to the library: it stays in history byte for byte, is never
cleared, cut or summarized away by :func:`pin_compactions`, and goes back to the server as is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from agentcontext._core import Conversation
from agentcontext.compaction import CompactionPolicy
from agentcontext.errors import OptionError
from agentcontext.types import JsonDict

__all__ = [
    "CLEAR_THINKING",
    "CLEAR_TOOL_USES",
    "COMPACT",
    "COMPACT_BETA",
    "CONTEXT_MANAGEMENT_BETA",
    "anthropic_context_management",
    "compaction_indices",
    "openai_context_management",
    "pin_compactions",
]

#: Anthropic edit types and the betas that enable them.
CLEAR_TOOL_USES = "clear_tool_uses_20250919"
CLEAR_THINKING = "clear_thinking_20251015"
COMPACT = "compact_20260112"
CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
COMPACT_BETA = "compact-2026-01-12"


def anthropic_context_management(
    policy: CompactionPolicy | None = None,
    *,
    clear_tool_uses: bool = True,
    clear_thinking: bool | int | Literal["all"] = False,
    compact: bool = False,
    pause_after_compaction: bool = False,
    instructions: str | None = None,
) -> tuple[JsonDict, list[str]]:
    """``(context_management, betas)`` for an Anthropic request, from ``policy`` (default: the
    openharness preset):

    - ``clear_tool_uses_20250919``: trigger at the policy's trigger (input tokens), keep the last
      ``recent_tools`` tool uses, ``clear_at_least``, ``exclude_tools`` and
      ``clear_tool_inputs`` from the policy;
    - ``clear_thinking_20251015`` when ``clear_thinking`` is set: keep thinking of that many recent
      assistant turns (True: 1; ``"all"``: keep all). The API requires it first in the list;
    - ``compact_20260112`` when ``compact``: trigger at the policy's trigger,
      ``pause_after_compaction`` and summary ``instructions``; adds the ``compact-2026-01-12`` beta.

    Pass both to :class:`~agentcontext.providers.AnthropicProvider` (``context_management=``,
    ``betas=``).
    """
    p = policy or CompactionPolicy()
    if not (clear_tool_uses or clear_thinking is not False or compact):
        raise OptionError("no context management edit selected")
    edits: list[JsonDict] = []
    betas = [CONTEXT_MANAGEMENT_BETA]
    if clear_thinking is not False:
        if clear_thinking == "all":
            keep: Any = "all"
        else:
            turns = 1 if clear_thinking is True else int(clear_thinking)
            if turns < 1:
                raise OptionError(f"clear_thinking must keep at least 1 turn, got {turns}")
            keep = {"type": "thinking_turns", "value": turns}
        edits.append({"type": CLEAR_THINKING, "keep": keep})
    if clear_tool_uses:
        edit: JsonDict = {
            "type": CLEAR_TOOL_USES,
            "trigger": {"type": "input_tokens", "value": p.trigger_tokens},
            "keep": {"type": "tool_uses", "value": p.recent_tools},
        }
        if p.clear_at_least > 0:
            edit["clear_at_least"] = {"type": "input_tokens", "value": p.clear_at_least}
        if p.exclude_tools:
            edit["exclude_tools"] = list(p.exclude_tools)
        if p.clear_tool_inputs:
            edit["clear_tool_inputs"] = True
        edits.append(edit)
    if compact:
        edit = {"type": COMPACT, "trigger": {"type": "input_tokens", "value": p.trigger_tokens}}
        if pause_after_compaction:
            edit["pause_after_compaction"] = True
        if instructions:
            edit["instructions"] = instructions
        edits.append(edit)
        betas.append(COMPACT_BETA)
    return {"edits": edits}, betas


def openai_context_management(policy: CompactionPolicy | None = None) -> list[JsonDict]:
    """The Responses ``context_management`` field: automatic compaction at the policy's trigger."""
    p = policy or CompactionPolicy()
    return [{"type": "compaction", "compact_threshold": p.trigger_tokens}]


def _is_compaction(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "compaction"


def compaction_indices(conversation: Conversation) -> list[int]:
    """Positions of the messages that hold a server compaction (an Anthropic ``compaction``
    block, or an OpenAI ``compaction`` item)."""
    out = []
    for i in range(len(conversation)):
        message = conversation[i]
        if _is_compaction(message):
            out.append(i)
            continue
        content = message.get("content")
        if isinstance(content, Sequence) and not isinstance(content, str) and any(map(_is_compaction, content)):
            out.append(i)
    return out


def pin_compactions(conversation: Conversation) -> list[int]:
    """Pin every message that holds a server compaction, so local compaction never clears,
    summarizes or drops it; returns their positions."""
    found = compaction_indices(conversation)
    for i in found:
        conversation.pin(i)
    return found
