"""Project memory: records that outlive a session, the index of them that goes into the system
prompt, the tools a model uses to keep them, and search over what left the context window.

- :mod:`agentcontext.memory.store`: :class:`MemoryStore`, one markdown file per record.
- :mod:`agentcontext.memory.tools`: :class:`MemoryTools` and :class:`AnthropicMemoryTool`.
- :mod:`agentcontext.memory.section`: :func:`memory_section`, rules plus index.
- :mod:`agentcontext.memory.conversation`: ``conversation_search`` over a session log.
- :mod:`agentcontext.memory.anchors`: :class:`WorkspaceAnchors`, notes/plan files re-attached
  after every compaction.
- :mod:`agentcontext.memory.flush`: :func:`flush_memory`, the silent turn before compaction.

The index and the searches run in the Rust core.
"""

from __future__ import annotations

from agentcontext.memory.anchors import WorkspaceAnchors
from agentcontext.memory.conversation import ConversationSearch, conversation_search
from agentcontext.memory.flush import FlushReport, flush_memory
from agentcontext.memory.section import MEMORY_RULES, memory_section
from agentcontext.memory.store import MEMORY_TYPES, MemoryStore, default_memory_root, is_slug, slugify
from agentcontext.memory.tools import AnthropicMemoryTool, MemoryTools

__all__ = [
    "MEMORY_RULES",
    "MEMORY_TYPES",
    "AnthropicMemoryTool",
    "ConversationSearch",
    "FlushReport",
    "MemoryStore",
    "MemoryTools",
    "WorkspaceAnchors",
    "conversation_search",
    "default_memory_root",
    "flush_memory",
    "is_slug",
    "memory_section",
    "slugify",
]
