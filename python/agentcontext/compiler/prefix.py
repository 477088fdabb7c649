"""Prompt-cache prefixes: the part of a request a provider's cache can read, because it equals a
prefix of the previous request (:func:`shared_prefix_tokens`), and :class:`Replay`, requests in
order with those prefixes. The compiler measures its own requests with them
(:meth:`~agentcontext.compiler.Compiler.replay`); :func:`agentcontext.measure.metrics.replay`
replays a transcript with a strategy."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentcontext._core import Conversation

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["Replay", "shared_prefix_tokens"]


@dataclass(frozen=True)
class Replay:
    """A transcript replayed call by call with a strategy applied before each call."""

    #: Tokens of each request (one per assistant turn of the transcript).
    request_tokens: list[int]
    #: Tokens of each request that equal a prefix of the previous request (a cache read).
    prefix_tokens: list[int]
    #: Call numbers (0-based) right before which a compaction happened.
    compactions: list[int]
    #: Tokens the transcript would have taken at each call with no compaction.
    uncompacted_tokens: list[int]

    @property
    def turns(self) -> int:
        return len(self.request_tokens)

    @property
    def cache_stability(self) -> float:
        """Share of all request tokens after the first that were a prefix of the previous
        request (cache reads). New messages are never a prefix, so even a strategy that only
        appends stays below 1.0; every compaction lowers it further."""
        total = sum(self.request_tokens[1:])
        return sum(self.prefix_tokens[1:]) / total if total else 1.0

    @property
    def cache_write_tokens(self) -> int:
        """Tokens written to the cache over the replay: each request's tokens past its cached
        prefix (the first request is written whole)."""
        return sum(r - p for r, p in zip(self.request_tokens, self.prefix_tokens, strict=True))

    @property
    def compactions_per_100_turns(self) -> float:
        return 100.0 * len(self.compactions) / self.turns if self.turns else 0.0

    @property
    def peak_tokens(self) -> int:
        return max(self.request_tokens, default=0)

    def plot(self, *, budget: int | None = None, path: str | os.PathLike[str] | None = None, **options: Any) -> Figure:
        """Context size over the replayed calls with the compaction points, as a matplotlib figure
        (written to ``path`` when given); see :func:`agentcontext.display.plot_context`."""
        from agentcontext.display import plot_context

        return plot_context(
            self.request_tokens, self.compactions, budget=budget, xlabel="model call", path=path, **options
        )


class _MessageExports:
    """Each message of a conversation as its format writes it (``export_each``), exported once,
    when a prefix comparison first reaches it (messages appended later too, when reached)."""

    __slots__ = ("_conversation", "_known")

    def __init__(self, conversation: Conversation) -> None:
        self._conversation = conversation
        self._known: list[list[dict[str, Any]]] = []

    def at(self, i: int) -> list[dict[str, Any]]:
        known = self._known
        if i >= len(known):
            # In runs that double, so a long shared prefix costs few calls.
            stop = min(len(self._conversation), max(i + 1, 2 * len(known), 8))
            known.extend(self._conversation.slice(len(known), stop)._export_each())
        return known[i]


def _common_prefix_tokens(before: _MessageExports, before_len: int, after: _MessageExports, conv: Conversation) -> int:
    """Tokens of the longest run of leading messages ``conv`` (exported by ``after``) shares with
    the first ``before_len`` messages exported by ``before``. Only the shared run and the first
    message that differs are exported; ``after`` is the next call's ``before``, so a message of the
    working set is exported once while it stays in it."""
    n = 0
    stop = min(before_len, len(conv))
    while n < stop and before.at(n) == after.at(n):
        n += 1
    return sum(conv.message_tokens()[:n])


def shared_prefix_tokens(before: Conversation, after: Conversation) -> int:
    """Tokens of the longest run of leading messages ``after`` shares with ``before`` (what a
    provider's prompt cache can read when ``after`` follows ``before``)."""
    return _common_prefix_tokens(_MessageExports(before), len(before), _MessageExports(after), after)
