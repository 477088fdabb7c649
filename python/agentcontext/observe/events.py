"""The events a run reports to an ``on_event`` callback (:class:`~agentcontext.Session`,
:class:`~agentcontext.Compactor`, every adapter): one frozen dataclass per kind. The
same facts go to OpenTelemetry spans when the ``otel`` extra is installed
(:mod:`agentcontext.observe`). Each reports what happened and no more: a compaction's stages are
the :class:`~agentcontext.StageEvent` list of its result, counts are read from its output.

Every event has ``agent``: None for the session it was given to, and for an event of one of its
subagents (which report to the parent's callback), the id of the ``agent`` tool call that started
that subagent, ``/``-joined down the nesting (``call_1/call_7``: a subagent of a subagent). A
``fit`` (an adapter's, :class:`CompactionFinished` of kind ``fit``) counts the adapter's messages
as the dicts it fitted: kept (given back as they were), changed (a result cleared or cut) and
dropped; it reports no stages, results or cache impact (the core's fit does not say them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

if TYPE_CHECKING:
    from agentcontext.compaction.results import StageEvent

__all__ = [
    "CacheImpact",
    "CompactionFinished",
    "CompactionKind",
    "CompactionStarted",
    "Event",
    "FlushDone",
    "ModelCall",
    "SummarizerCall",
    "ToolCallDone",
]

#: How a compaction was asked for: ``auto`` (over the trigger before a model call), ``manual`` (a
#: user's /compact), ``budget`` (a working set of a given size), ``recompile`` (the recovery from a
#: request that does not fit), ``fit`` (an adapter's fit of a model call's input: old results
#: cleared, the oldest messages dropped, an oversized last round cut; no stages reported).
CompactionKind: TypeAlias = Literal["auto", "manual", "budget", "recompile", "fit"]


@dataclass(frozen=True)
class CompactionStarted:
    """The ladder starts on a conversation of ``tokens`` tokens in ``messages`` messages."""

    kind: CompactionKind
    tokens: int
    messages: int
    #: What the ladder aims under (the budget when one was given, else the policy's target).
    target: int
    #: The policy's name (the preset, e.g. ``openharness``); for a ``fit``, the adapter's
    #: (``litellm``, ``pydantic_ai``, ``langgraph``, ``langchain``, ``openai_agents``).
    policy: str
    agent: str | None = None


@dataclass(frozen=True)
class CacheImpact:
    """What a compaction does to the provider's prompt cache: the compacted conversation equals
    the original up to ``first_changed`` (its first message that differs), ``kept_tokens`` tokens
    whose cached prefix stays readable; the ``rewritten_tokens`` after it are written to the cache
    again by the next request. ``rewrite_cost`` (US dollars): what writing them costs over reading
    them, at the policy's ``prices`` (None without prices)."""

    first_changed: int
    kept_tokens: int
    rewritten_tokens: int
    rewrite_cost: float | None = None


@dataclass(frozen=True)
class CompactionFinished:
    """The ladder finished (or failed: ``error``). ``stages`` are the result's stage events, in
    order. ``messages_*`` count the original's messages by their fate in the output
    (:meth:`~agentcontext.CompactionResult.fates`); ``results_cut`` and ``results_cleared`` sum
    the stages' own counts; ``recall_ids`` are the ids this run stored originals under that the
    output names (a marker or placeholder says them)."""

    kind: CompactionKind
    tokens_before: int
    tokens_after: int
    target: int
    fits: bool
    stages: tuple[StageEvent, ...]
    messages_before: int
    messages_after: int
    messages_kept: int
    messages_changed: int
    messages_summarized: int
    messages_dropped: int
    results_cut: int
    results_cleared: int
    recall_ids: tuple[str, ...]
    cache: CacheImpact | None
    seconds: float
    policy: str
    error: str | None = None
    agent: str | None = None


@dataclass(frozen=True)
class SummarizerCall:
    """A summarizer was asked for a summary of ``request_tokens`` tokens (capped at
    ``max_tokens``): ``summary_tokens`` when one was accepted, else ``failure`` says why. With a
    model behind it (an :class:`~agentcontext.LLMSummarizer`): ``model``, and the tokens its
    calls reported (``calls`` of them; retries and staged parts included); ``fallback`` says why
    the model's summary was not used when the summarizer's own fallback wrote the accepted one."""

    summarizer: str
    request_tokens: int
    max_tokens: int
    summary_tokens: int | None
    failure: str | None
    seconds: float
    model: str | None = None
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    fallback: str | None = None
    agent: str | None = None


@dataclass(frozen=True)
class FlushDone:
    """The memory flush turn before a summary: ``shown_messages`` originals shown to ``model``;
    its calls, tokens and the memory records written or deleted (``skipped`` or ``failed`` says
    why it did not run or did not finish)."""

    model: str | None
    shown_messages: int
    calls: int
    input_tokens: int
    output_tokens: int
    written: int
    deleted: int
    seconds: float
    skipped: str | None = None
    failed: str | None = None
    agent: str | None = None


@dataclass(frozen=True)
class ModelCall:
    """One model call of the loop: the request's ``messages`` and local token count, and what the
    provider reported (None fields when the call raised: ``error``)."""

    provider: str
    model: str
    messages: int
    local_tokens: int
    max_output_tokens: int
    seconds: float
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    stop_reason: str | None = None
    tool_calls: int = 0
    error: str | None = None
    agent: str | None = None


@dataclass(frozen=True)
class ToolCallDone:
    """One tool call the loop answered: ``ran`` (it returned), ``error`` (it raised: the model got
    the error text) or ``refused`` (not run: permissions or a subagent's filter); ``result_chars``:
    the result text given back, before the session's result policy."""

    name: str
    call_id: str
    outcome: Literal["ran", "error", "refused"]
    result_chars: int
    seconds: float
    agent: str | None = None


#: Every event an ``on_event`` callback receives.
Event: TypeAlias = CompactionStarted | CompactionFinished | SummarizerCall | FlushDone | ModelCall | ToolCallDone
