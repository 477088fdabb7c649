"""Seeing a run: every compaction (with its stages), summarizer call, memory flush, model call and
tool call is an OpenTelemetry span when the ``otel`` extra is installed (``pip install
'agentcontext[otel]'``, then set a tracer provider), and an event to the ``on_event=`` callback
of :class:`~agentcontext.Session`, :class:`~agentcontext.Compactor` and every adapter either way
(an adapter's fit: a compaction of kind ``fit``; a subagent's events reach its parent's callback,
naming it in ``agent``). Without the extra nothing of OpenTelemetry is imported, and with it but no
tracer provider set no span is started.

The spans:

- ``agentcontext.compaction``: ``agentcontext.compaction.*`` (kind, policy, tokens before and
  after, target, fits, stage names and tokens per stage, messages kept / changed / summarized /
  dropped, results cut and cleared, recall ids) and ``agentcontext.cache.*`` (the prompt cache's
  kept and rewritten tokens, the rewrite's cost at the policy's prices); one span event
  ``agentcontext.stage`` per stage, with its details;
- ``agentcontext.summarize`` and ``agentcontext.flush``, children of the compaction, with
  ``gen_ai.*`` attributes when a model was called;
- ``chat <model>`` (each model call of the loop), ``execute_tool <name>`` (each tool call) and
  ``invoke_agent agentcontext`` (each outer turn, their parent).

A callback that raises is logged (logger ``agentcontext.observe``) and the run goes on.
"""

from __future__ import annotations

from agentcontext.observe.emit import EventCallback, otel_available
from agentcontext.observe.events import (
    CacheImpact,
    CompactionFinished,
    CompactionKind,
    CompactionStarted,
    Event,
    FlushDone,
    ModelCall,
    SummarizerCall,
    ToolCallDone,
)

__all__ = [
    "CacheImpact",
    "CompactionFinished",
    "CompactionKind",
    "CompactionStarted",
    "Event",
    "EventCallback",
    "FlushDone",
    "ModelCall",
    "SummarizerCall",
    "ToolCallDone",
    "otel_available",
]
