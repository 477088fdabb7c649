"""The memory section of the system prompt: the rules for keeping memory, then the index."""

from __future__ import annotations

from agentcontext.memory.store import MemoryStore

__all__ = ["MEMORY_RULES", "memory_section"]

#: What is worth keeping across sessions and what is not (the first part of the section).
MEMORY_RULES = """\
You have a persistent memory for this project: records that outlive this session. The index below \
lists them (one line each); read a record's body with memory_show before relying on it.

Keep (memory_write, with a type):
- user: who the user is, their role and how they like to work;
- feedback: a correction or confirmation the user gave, with its reason;
- project: goals, decisions and context that cannot be derived from the code or git;
- reference: where external information lives (dashboards, tickets, documents).
Do not keep: anything derivable from the code, git history or stable docs; temporary task state \
and progress of the current task; secrets.
Current evidence beats a record: when what you observe contradicts a record, trust what you \
observe and update or delete the record. When the user asks you to forget something, delete it \
(memory_delete)."""


def memory_section(
    store: MemoryStore, *, max_lines: int = 200, max_bytes: int = 25_000, title: str = "# Memory"
) -> str:
    """The memory section: ``title``, :data:`MEMORY_RULES` and the store's index (capped at
    ``max_lines`` / ``max_bytes``; a last line says how many records are not listed). Stable for
    an unchanged store, so it can sit in a cached prompt prefix."""
    index = store.render_index(max_lines=max_lines, max_bytes=max_bytes)
    listing = index if index else "(no records yet)\n"
    return f"{title}\n\n{MEMORY_RULES}\n\n## Memory index\n\n{listing}"
