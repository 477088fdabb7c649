"""The memory section of the system prompt: the rules for keeping memory, then the index."""

from __future__ import annotations

from collections.abc import Collection

from agentcontext.errors import ArgumentTypeError
from agentcontext.memory.store import MemoryStore
from agentcontext.memory.tools import MemoryTools

__all__ = ["MEMORY_RULES", "memory_rules", "memory_section"]

_KEEP = """\
Keep (memory_write, with a type):
- user: who the user is, their role and how they like to work;
- feedback: a correction or confirmation the user gave, with its reason;
- project: goals, decisions and context that cannot be derived from the code or git;
- reference: where external information lives (dashboards, tickets, documents).
Do not keep: anything derivable from the code, git history or stable docs; temporary task state \
and progress of the current task; secrets.
"""


def memory_rules(tools: Collection[str] | None = None, *, refused_in_plan: Collection[str] = ()) -> str:
    """The rules for keeping memory, naming only the memory ``tools`` offered (None: all five).
    Without ``memory_write`` and ``memory_delete`` (a subagent, plan mode) memory is read-only:
    the rules say so and ask for what is worth keeping in the answer instead. ``refused_in_plan``
    (offered tools that plan mode refuses, when the catalog stays the same in every mode) are
    named as refused in plan mode."""
    for name, value in (("tools", tools), ("refused_in_plan", refused_in_plan)):
        if value is not None and (isinstance(value, str) or not all(isinstance(t, str) for t in value)):
            raise ArgumentTypeError(f"{name} must be a collection of memory tool names, got {value!r:.80}")
    offered = set(MemoryTools.names if tools is None else tools)
    write, delete = "memory_write" in offered, "memory_delete" in offered
    text = "You have a persistent memory for this project: records that outlive this session. The index below "
    text += "lists them (one line each)"
    text += "; read a record's body with memory_show before relying on it.\n\n" if "memory_show" in offered else ".\n\n"
    if write:
        text += _KEEP
    changes = " or ".join(verb for verb, ok in (("update", write), ("delete", delete)) if ok)
    text += "Current evidence beats a record: when what you observe contradicts a record, trust what you observe"
    text += f" and {changes} the record." if changes else "."
    if delete:
        text += " When the user asks you to forget something, delete it (memory_delete)."
    if not write and not delete:
        text += " Memory cannot be changed here: say in your answer what is worth keeping or is out of date."
    refused = [n for n in MemoryTools.names if n in offered and n in set(refused_in_plan)]
    if refused:
        text += f" In plan mode {' and '.join(refused)} are refused: say in your plan what memory should change."
    return text


#: What is worth keeping across sessions and what is not (the first part of the section), with
#: every memory tool offered.
MEMORY_RULES = memory_rules()


def memory_section(
    store: MemoryStore,
    *,
    max_lines: int = 200,
    max_bytes: int = 25_000,
    title: str = "# Memory",
    tools: Collection[str] | None = None,
    refused_in_plan: Collection[str] = (),
) -> str:
    """The memory section: ``title``, the rules (:func:`memory_rules` of ``tools``, the memory
    tools offered, and ``refused_in_plan``; None: :data:`MEMORY_RULES`) and the store's index (capped at ``max_lines`` /
    ``max_bytes``; a last line says how many records are not listed). Stable for an unchanged
    store and tools, so it can sit in a cached prompt prefix."""
    index = store.render_index(max_lines=max_lines, max_bytes=max_bytes)
    listing = index if index else "(no records yet)\n"
    return f"{title}\n\n{memory_rules(tools, refused_in_plan=refused_in_plan)}\n\n## Memory index\n\n{listing}"
