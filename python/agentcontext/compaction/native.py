"""Provider-native compaction as the ladder's first rung, with a readable twin.

:class:`NativeCompaction` asks the provider to compact the conversation its own way (Anthropic's
``compact_20260112`` edit, OpenAI's ``responses.compact``) and keeps what it returns (an opaque
compaction block or item) as the API requires: that is the working set sent on. Beside it, the
result keeps the library's own compaction of the same history (summary, ledger, raw recent part;
:attr:`~agentcontext.compaction.CompactionResult.readable`), so a session can move to another
provider, or be read by a person, without the opaque part.

When the provider has no native compaction (an OpenAI Chat Completions provider, a conversation
under Anthropic's 50,000-token minimum) or the call fails, the local ladder runs instead. A circuit
breaker stops trying after ``max_failures`` consecutive failures in auto mode (3, Claude Code's
rule); a success closes it again (a manual compaction still tries while it is open).

The rung knows no provider by name: a provider is anything with the two methods of
:class:`NativeCompactor` (:class:`agentcontext.providers.Provider` has them).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from agentcontext import _checks
from agentcontext._core import Conversation
from agentcontext.compaction.results import CompactionResult, StageEvent
from agentcontext.errors import AgentContextError, ArgumentTypeError, failure_text, mask_credentials

if TYPE_CHECKING:
    from agentcontext.compaction.ladder import LadderRun

__all__ = ["MAX_FAILURES", "NativeCompaction", "NativeCompactor"]

#: Consecutive failures after which auto mode stops asking the provider (Claude Code's rule).
MAX_FAILURES = 3


class NativeCompactor(Protocol):
    """What the native rung needs of a provider."""

    @property
    def name(self) -> str: ...

    def native_unavailable(self, conversation: Conversation) -> str | None:
        """Why this provider cannot compact ``conversation`` its own way now (None: it can)."""

    def compact_natively(self, conversation: Conversation, *, system: str | None = None) -> Conversation:
        """The provider's compaction of ``conversation`` after its system messages, as the API
        requires it to be sent on (opaque blocks or items byte for byte)."""


class NativeCompaction:
    """The native rung: ``provider`` (None: the :class:`~agentcontext.Session`'s own, bound when
    the session is made) compacts first; ``max_failures`` consecutive failures open the circuit
    breaker; ``readable`` keeps the library's own compaction beside the provider's (False: none is
    made, and a session cannot leave the provider)."""

    def __init__(
        self, provider: NativeCompactor | None = None, *, max_failures: int = MAX_FAILURES, readable: bool = True
    ) -> None:
        if provider is not None and not callable(getattr(provider, "compact_natively", None)):
            raise ArgumentTypeError(
                f"provider must have compact_natively and native_unavailable, got {type(provider).__name__}"
            )
        if not isinstance(readable, bool):
            raise ArgumentTypeError(f"readable must be True or False, got {type(readable).__name__}")
        self.provider = provider
        self.max_failures = _checks.count("max_failures", max_failures, minimum=1)
        self.readable = readable
        #: Consecutive failed attempts (reset by a success).
        self.failures = 0
        #: Every provider call this rung made (a test, or a report, reads it).
        self.attempts = 0
        self._lock = threading.Lock()

    def bound(self, provider: NativeCompactor) -> NativeCompaction:
        """This rung for ``provider`` when it has none yet (a new rung with the same options), else itself."""
        if self.provider is not None:
            return self
        return NativeCompaction(provider, max_failures=self.max_failures, readable=self.readable)

    @property
    def open(self) -> bool:
        """Whether the circuit breaker is open: auto mode does not ask the provider."""
        return self.failures >= self.max_failures

    def run(
        self, run: LadderRun, ladder: Callable[[LadderRun], CompactionResult], fresh: Callable[[bool], LadderRun]
    ) -> CompactionResult:
        """The compaction of ``run``: the provider's, with the local ``ladder`` over a ``fresh``
        manual run (``fresh(True)``: always a summary, and the ledger) as its readable twin; or, when it cannot or fails, ``ladder(run)`` after an event that
        says why."""
        skipped = run.skip()
        if skipped is not None:
            return skipped
        before = run.work.tokens
        why = self._why_not(run)
        if why is not None:
            run.event("native", before, before, skipped=why)
            return ladder(run)
        assert self.provider is not None
        with self._lock:
            self.attempts += 1
        try:
            opaque = self.provider.compact_natively(run.original, system=run.system)
        except Exception as exc:  # noqa: BLE001 - any failure of the provider falls back to the ladder
            return self._failed(run, ladder, failure_text(exc))
        conv = _after_preamble(run.original, opaque)
        if conv.tokens > run.limit:
            return self._failed(
                run, ladder, f"the provider's compaction left {conv.tokens:,} tokens, over {run.limit:,}"
            )
        with self._lock:
            self.failures = 0
        return self._result(run, conv, ladder, fresh)

    def _why_not(self, run: LadderRun) -> str | None:
        provider = self.provider
        if provider is None:
            return "no provider to compact natively"
        if self.open and not run.manual:
            return f"circuit open: {self.failures} consecutive failures of {provider.name}'s compaction"
        return provider.native_unavailable(run.original)

    def _failed(self, run: LadderRun, ladder: Callable[[LadderRun], CompactionResult], why: str) -> CompactionResult:
        with self._lock:
            self.failures += 1
            failures = self.failures
        run.event("native", run.work.tokens, run.work.tokens, failed=why, consecutive_failures=failures)
        return ladder(run)

    def _result(
        self,
        run: LadderRun,
        conv: Conversation,
        ladder: Callable[[LadderRun], CompactionResult],
        fresh: Callable[[bool], LadderRun],
    ) -> CompactionResult:
        """The provider's working set, with the local ladder's beside it: a summary (and the
        ledger) of all but the policy's ``manual_recent_messages``, as a user's /compact makes it,
        since the provider's compaction replaced all of the history too."""
        assert self.provider is not None
        detail: dict[str, Any] = {"provider": self.provider.name, "opaque": _opaque_parts(conv)}
        readable: CompactionResult | None = None
        if self.readable:
            try:
                readable = ladder(fresh(True))
            except AgentContextError as exc:  # a manual twin with nothing to summarize
                detail["readable_failed"] = mask_credentials(str(exc))
        if readable is not None:
            detail["readable_tokens"] = readable.tokens_after
        pre = run.preamble
        provenance: list[int | None] = [*range(pre), *([None] * (len(conv) - pre))]
        events = [*run.events, StageEvent("native", run.before, conv.tokens, detail)]
        return CompactionResult(
            conv, run.original, events, run.before, conv.tokens, run.limit, conv.tokens <= run.limit, provenance,
            summary=readable.summary if readable is not None else None, first_kept=len(run.original),
            target=run.target, readable=readable,
        )  # fmt: skip


def _after_preamble(original: Conversation, opaque: Conversation) -> Conversation:
    """The system messages of ``original`` followed by ``opaque``, in ``original``'s format."""
    head = original.slice(0, original.preamble)
    if opaque.format == head.format and opaque.encoding == head.encoding:
        return Conversation.concat([head, opaque])
    return original.replace(original.preamble, None, opaque.to_jsonl())


def _opaque_parts(conv: Conversation) -> int:
    """How many compaction blocks or items ``conv`` holds; each message that holds one is pinned,
    so that a later local compaction never clears, summarizes or drops it."""
    count = 0
    for i in range(len(conv)):
        message = conv[i]
        content = message.get("content")
        parts = [message] if message.get("type") == "compaction" else content if isinstance(content, list) else []
        found = sum(1 for part in parts if isinstance(part, dict) and part.get("type") == "compaction")
        if found:
            conv.pin(i)
            count += found
    return count
