"""The :class:`Compactor`: runs the ladder (:class:`~agentcontext.compaction.ladder.LadderRun`)
in auto mode (:meth:`Compactor.maybe_compact`), on demand (:meth:`Compactor.compact`) and as the
recovery from a prompt-too-long error (:meth:`Compactor.recompile`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentcontext import _checks
from agentcontext._core import Conversation
from agentcontext.budgets import FileReader, ResultStore
from agentcontext.compaction.ladder import LadderRun
from agentcontext.compaction.native import NativeCompaction
from agentcontext.compaction.policy import CompactionPolicy, parse_budget, resolve_policy
from agentcontext.compaction.results import CompactionResult
from agentcontext.compaction.schedule import CacheSchedule
from agentcontext.compaction.summarize import OfflineSummarizer, Summarizer
from agentcontext.errors import ArgumentTypeError, CompactionError
from agentcontext.observe.compaction import watch_compaction
from agentcontext.observe.emit import EventCallback, check_callback
from agentcontext.observe.events import CompactionKind

if TYPE_CHECKING:
    from agentcontext.memory.anchors import WorkspaceAnchors
    from agentcontext.memory.tools import MemoryTools

__all__ = ["Compactor"]


def _conversation(conv: Any) -> Conversation:
    """``conv`` when it is a :class:`Conversation`, else an OptionError naming it."""
    if not isinstance(conv, Conversation):
        raise ArgumentTypeError(f"conv must be a Conversation, got {type(conv).__name__}")
    return conv


def _snapshot(conv: Any) -> Conversation:
    """A consistent copy of ``conv`` (one atomic slice): the ladder reads a conversation many times,
    and another thread may be extending the caller's meanwhile."""
    return _conversation(conv).slice(0)


def _system(system: Any) -> str | None:
    """``system`` (the agent's system prompt) when it is a string or None, else an error."""
    if system is not None and not isinstance(system, str):
        raise ArgumentTypeError(f"system must be a string or None, got {type(system).__name__}")
    return _checks.text("system", system) if system else None


def _tools(tools: Any) -> list[dict[str, Any]] | None:
    """``tools`` (the agent's tool definitions) as a list of dicts, or None; else an error."""
    if tools is None:
        return None
    if isinstance(tools, str | bytes | Mapping) or not all(isinstance(t, Mapping) for t in tools):
        raise ArgumentTypeError(f"tools must be a list of tool definitions or None, got {type(tools).__name__}")
    return [dict(t) for t in tools] or None


def _ladder(run: LadderRun) -> CompactionResult:
    """The local ladder's rungs over ``run``, from the cheapest to the last resort."""
    return run.skip() or run.budgets() or run.clear() or run.summarize() or run.clear_deferred() or run.last_resort()


class Compactor:
    """Runs the ladder. ``summarizer`` is used for stage (c) (default: the offline summarizer);
    ``fallback`` replaces it when it fails in auto mode (default: the offline summarizer; None for
    no fallback). ``files`` re-reads recently read files after a summary (None: no re-attach).

    ``memory``: the project's memory tools; with them, and a summarizer that has a ``provider``
    (an :class:`~agentcontext.compaction.llm.LLMSummarizer`), auto mode runs the memory flush
    (:func:`~agentcontext.memory.flush.flush_memory`: one silent turn, output bounded by
    ``flush_max_output_tokens``, memory tools only) before older history is summarized; ``flush=False``
    turns it off, and it is off by default without ``memory``. ``anchors``: workspace files (a
    plan, notes, a TODO list) re-read and re-attached after every summary, within their own token
    budget (:class:`~agentcontext.memory.anchors.WorkspaceAnchors`).

    ``on_event``: called with an event (:mod:`agentcontext.observe`) when a compaction starts and
    finishes (with its stages), for each summarizer call and memory flush; the same facts are
    OpenTelemetry spans when the ``otel`` extra is installed. A callback that raises is logged and
    the compaction goes on.

    ``native``: the provider's own compaction runs first, the local ladder's result kept beside
    it as its readable twin, the ladder alone on a provider without one or on failure
    (:class:`~agentcontext.compaction.native.NativeCompaction`; with no provider of its own, a
    :class:`~agentcontext.Session` binds its provider). ``schedule``: auto mode compacts by the
    prompt cache's state (:class:`~agentcontext.compaction.schedule.CacheSchedule`: early while it
    is cold, not while it is warm unless that pays or the next turn would not fit)."""

    def __init__(
        self,
        policy: CompactionPolicy | str = "openharness",
        *,
        summarizer: Summarizer | None = None,
        fallback: Summarizer | None = OfflineSummarizer(),  # noqa: B008 - stateless default
        files: FileReader | None = None,
        environ: Mapping[str, str] | None = None,
        store: ResultStore | None = None,
        memory: MemoryTools | None = None,
        flush: bool | None = None,
        flush_max_output_tokens: int = 1_024,
        anchors: WorkspaceAnchors | None = None,
        on_event: EventCallback | None = None,
        native: NativeCompaction | None = None,
        schedule: CacheSchedule | None = None,
    ) -> None:
        if schedule is not None and not isinstance(schedule, CacheSchedule):
            raise ArgumentTypeError(f"schedule must be a CacheSchedule or None, got {type(schedule).__name__}")
        #: When auto mode compacts by the prompt cache's state (None: the trigger alone).
        self.schedule = schedule
        if native is not None and not isinstance(native, NativeCompaction):
            raise ArgumentTypeError(f"native must be a NativeCompaction or None, got {type(native).__name__}")
        #: The provider-native rung run before the ladder (None: the ladder alone).
        self.native = native
        self.policy = resolve_policy(policy).from_env(environ)
        #: Where the originals of what a compaction cuts, clears, summarizes or drops are kept,
        #: so that every id its markers name can be recalled (:class:`agentcontext.Recall`).
        #: Without one, the markers say that the originals are not stored.
        self.store = store
        self.summarizer: Summarizer = summarizer or OfflineSummarizer()
        self.fallback = fallback
        self.files = files
        if flush is not None and not isinstance(flush, bool):
            raise ArgumentTypeError(f"flush must be True, False or None, got {type(flush).__name__}")
        self.memory = memory
        self.flush = memory is not None if flush is None else flush
        self.flush_max_output_tokens = _checks.count("flush_max_output_tokens", flush_max_output_tokens, minimum=1)
        self.anchors = anchors
        #: Called with each event of a compaction (see :mod:`agentcontext.observe`); None: none.
        self.on_event = check_callback(on_event)
        self.last: CompactionResult | None = None
        self._turns_since = 0

    # -- auto ------------------------------------------------------------------------------

    def maybe_compact(
        self,
        conv: Conversation,
        *,
        scale: float = 1.0,
        overhead: int = 0,
        idle_seconds: float | None = None,
        system: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> CompactionResult | None:
        """Compact if the conversation is over the trigger, unless an anti-loop guard says no:
        the cooldown has not passed, or the previous compaction did not shrink the context and
        nothing has grown since. Call it before every model call. ``scale``: provider tokens per
        local token (see :meth:`CompactionPolicy.scaled`). ``overhead``: local tokens every
        request carries outside the conversation — system prompt, tool definitions (see
        :meth:`CompactionPolicy.with_overhead`). A harness may replace the trigger
        (:meth:`~agentcontext.compaction.harness.Harness.over_trigger`). ``idle_seconds``: seconds
        since the previous model call (None: unknown), for the harness's cache TTL. ``system``: the
        agent's system prompt, sent with the memory flush turn (see :meth:`compact`); ``system`` and
        ``tools`` (the agent's tool definitions) also open a summary request that reuses the agent's
        cached prefix (see :class:`~agentcontext.compaction.llm.LLMSummarizer`)."""
        _conversation(conv)
        _checks.number("scale", scale, low_open=True)
        _checks.count("overhead", overhead)
        if idle_seconds is not None:
            _checks.number("idle_seconds", idle_seconds)
        _system(system)
        self._turns_since += 1
        p = self.policy.scaled(scale).with_overhead(overhead)
        harness = self.policy.harness
        scheduled = self._scheduled(conv.tokens, p, idle_seconds)
        if scheduled is False:
            return None
        if not scheduled and not harness.replaces_trigger() and conv.tokens <= p.trigger_tokens:
            return None  # one read of the total: no copy needed to say no
        snap = conv.slice(0)
        over = harness.over_trigger(snap, self.policy.scaled(scale))
        if not scheduled and (over is False or (over is None and snap.tokens <= p.trigger_tokens)):
            return None
        last = self.last
        if last is not None:
            if self._turns_since <= p.cooldown_turns and snap.tokens <= p.available:
                return None
            if last.tokens_after >= last.tokens_before and snap.tokens <= last.tokens_after:
                return None
        result = self._compact(
            conv, snap, scale=scale, overhead=overhead, idle_seconds=idle_seconds, system=system, tools=_tools(tools)
        )
        self.last = result
        self._turns_since = 0
        return result

    def _scheduled(self, tokens: int, p: CompactionPolicy, idle_seconds: float | None) -> bool | None:
        """The schedule's word on compacting now (None: no schedule, or no opinion)."""
        if self.schedule is None:
            return None
        return self.schedule.decide(
            tokens, trigger=p.trigger_tokens, target=p.target_tokens, limit=p.available, idle_seconds=idle_seconds
        ).compact

    # -- the ladder ------------------------------------------------------------------------

    def compact(
        self,
        conv: Conversation,
        *,
        manual: bool = False,
        budget: int | str | None = None,
        scale: float = 1.0,
        overhead: int = 0,
        idle_seconds: float | None = None,
        instructions: str | None = None,
        system: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> CompactionResult:
        """Run the ladder on ``conv``. Auto mode (default) stops at the first stage that brings the
        conversation under the target and keeps the cleared conversation when summarizing fails;
        ``manual`` (a user's /compact) always summarizes, keeps only the last
        ``manual_recent_messages`` raw, and raises :class:`CompactionError` on failure, leaving the
        history unchanged. Token counts are recomputed after every stage. ``overhead``: local
        tokens every request carries outside the conversation (system prompt, tool definitions);
        they come off the window, or off ``budget``, before the conversation is fitted.

        ``budget``: the size of the working set to produce (tokens or a share of ``conv``). The
        ladder then fills it: after the summary is written, the raw recent part grows backwards
        by whole groups or rounds (a call never split from its result) until the system messages,
        summary, re-attached files, pinned messages and raw recent part reach the budget;
        ``recent_messages`` is the least kept raw, not the amount; the summary is capped
        by :func:`summary_cap`. The latest real user request is always in the result — raw,
        quoted in the summary, or cut head + marker + tail when it alone is larger than the room
        for it; when the last round alone exceeds the budget its oversized messages are cut that
        way (the originals under a recall id when the compactor has a store), and the result does
        not fit only when not even the markers and a head and tail of each do. Without
        ``budget`` (a live loop, :meth:`maybe_compact`) the trigger and target keep their
        meaning: the ladder stops under the target, keeps the policy's recent messages, and
        never cuts the last round (the caller refuses to send a request that cannot fit; the
        result says why). ``idle_seconds``: seconds since the previous model call, for the
        harness's cache TTL (None: unknown, no TTL applies).

        The ladder reads one copy of ``conv`` taken when it starts (another thread may go on
        extending ``conv``): that copy is the result's ``original``; when nothing changed, the
        result's ``conversation`` is that copy too (``result.conversation is result.original``).

        ``instructions``: extra focus for the summary (as in a harness's ``/compact focus on
        ...``), passed to the summarizer as :attr:`SummaryRequest.instructions`.

        With ``memory`` and a summarizer that has a provider, every summary (in auto and manual
        mode, on every rung that writes one) is preceded by the memory flush turn, a ``flush``
        stage event: it shows the model the originals of what the summary replaces (as given,
        not as this run cut or cleared them) with ``system``, the agent's system prompt."""
        snap = _snapshot(conv)
        _checks.number("scale", scale, low_open=True)
        _checks.count("overhead", overhead)
        if idle_seconds is not None:
            _checks.number("idle_seconds", idle_seconds)
        if instructions is not None and not isinstance(instructions, str):
            raise ArgumentTypeError(f"instructions must be a string or None, got {type(instructions).__name__}")
        if instructions is not None:
            _checks.text("instructions", instructions)
        return self._compact(
            conv, snap, manual=manual, budget=budget, scale=scale, overhead=overhead, idle_seconds=idle_seconds,
            instructions=instructions, system=system, tools=_tools(tools),
        )  # fmt: skip

    def _compact(
        self,
        conv: Conversation,
        snap: Conversation,
        *,
        manual: bool = False,
        budget: int | str | None = None,
        scale: float = 1.0,
        overhead: int = 0,
        idle_seconds: float | None = None,
        instructions: str | None = None,
        system: str | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> CompactionResult:
        """The ladder over ``snap``, a consistent copy of ``conv`` taken once (another thread may be
        extending ``conv`` meanwhile): the result's ``original`` is that copy, and a result that
        changes nothing has it as its ``conversation`` too."""
        if budget is not None:
            budget = parse_budget(budget, snap.tokens)
        p = (self.policy if budget is None else self.policy.for_budget(budget)).scaled(scale).with_overhead(overhead)
        kind: CompactionKind = "manual" if manual else "budget" if budget is not None else "auto"

        def fresh(as_manual: bool = manual) -> LadderRun:
            run = LadderRun(self, snap, p, manual=as_manual, one_shot=budget is not None, idle_seconds=idle_seconds)
            run.instructions = instructions.strip() or None if instructions else None
            run.system = _system(system)
            run.tools = tools
            return run

        first = fresh()
        with watch_compaction(self.on_event, kind, snap, first.target, p) as watch:

            def watched(as_manual: bool = manual) -> LadderRun:
                run = fresh(as_manual)
                run.store = watch.store(run.store)
                return run

            first.store = watch.store(first.store)
            if self.native is not None:
                return watch.done(self.native.run(first, _ladder, watched))
            return watch.done(_ladder(first))

    def recompile(
        self,
        conv: Conversation,
        budget: int | str,
        *,
        system: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> CompactionResult:
        """The recovery from a provider's prompt-too-long error: the largest protocol-complete
        recent suffix that fits ``budget`` (less room for the summary) is kept raw and everything
        older is summarized (falling back as in auto mode; dropped only if no summary can be
        made). Never splits a round. ``system`` and ``tools``: as for :meth:`maybe_compact`.

        Raises:
            CompactionError: the last round alone does not fit, or there is nothing older to
                summarize or drop.
        """
        snap = _snapshot(conv)
        budget = parse_budget(budget, snap.tokens)
        run = LadderRun(self, snap, self.policy.for_budget(budget), manual=False, one_shot=False)
        run.system = _system(system)
        run.tools = _tools(tools)
        with watch_compaction(self.on_event, "recompile", snap, run.target, run.policy) as watch:
            run.store = watch.store(run.store)
            outcome = run.refit() or run.drop_unsummarized()
            if outcome is None:
                raise CompactionError(run.why)
            return watch.done(outcome)
