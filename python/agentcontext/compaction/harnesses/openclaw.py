"""OpenClaw's compaction behaviours, for the ``openclaw`` preset (or any policy that sets their
fields):

- **History share trigger** (``max_history_share``, OpenClaw's ``maxHistoryShare`` 0.5): auto
  compaction starts when the *history* — the conversation after its system messages — is over
  that share of the whole context window, whatever the system prompt and tool definitions take.
- **Oldest chunks first**: when the older history to summarize is itself over that share of the
  window, it is split into two chunks of equal token mass (never between a call and its result,
  so no pairing needs repair) and the oldest chunk is set apart, again until the rest is under
  it. The chunks set apart are summarized first, and that summary is the previous summary the
  rest is merged into (each request staged into parts and a merge when it is larger than a
  window-bound summarizer's window, as every preset's). Nothing is lost: all of it is summarized.
- **Soft trim, then hard clear** (``soft_trim_chars``): old tool results (outside the protected
  recent messages and tool interactions) over the limit are cut to head + marker + tail before
  any result is cleared; clearing runs only when the trim leaves the conversation over the target.
- **Cache TTL** (``cache_ttl_seconds``, 5 minutes): trimming or clearing rewrites the cached
  prompt prefix that holds the results, so neither runs while that cache is warm — less than the
  TTL since the previous model call (``idle_seconds``, an input of
  :meth:`~agentcontext.Compactor.maybe_compact`). Unknown idle time (None) applies no TTL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentcontext._core import Conversation
from agentcontext.compaction.harness import Harness
from agentcontext.compaction.summarize import SummaryRequest
from agentcontext.errors import SummaryError

if TYPE_CHECKING:
    from agentcontext.compaction.policy import CompactionPolicy
    from agentcontext.compaction.state import LadderState

__all__ = ["ChunksFirst", "OpenClaw", "cache_warm", "chunks_first", "history_over_share", "history_tokens",
           "soft_trim"]  # fmt: skip


@dataclass(frozen=True)
class OpenClaw(Harness):
    """OpenClaw's options: ``max_history_share`` (``maxHistoryShare``: auto compaction triggers
    when the history is over this share of the whole window, and older history over it is
    summarized oldest chunks first; None: ``trigger`` applies), ``soft_trim_chars`` (before
    clearing, old tool results over this many chars are cut to head + tail; None: no soft trim)
    and ``cache_ttl_seconds`` (results are not trimmed or cleared while the prompt cache holding
    them is warm; 0: no TTL)."""

    max_history_share: float | None = 0.5
    soft_trim_chars: int | None = 4_000
    cache_ttl_seconds: int = 300

    def replaces_trigger(self) -> bool:
        return self.max_history_share is not None

    def over_trigger(self, conv: Conversation, policy: CompactionPolicy) -> bool | None:
        return history_over_share(conv, policy)

    def clear_gate(self, run: LadderState) -> str | None:
        return cache_warm(run.policy, run.idle_seconds)

    def before_clear(self, run: LadderState) -> bool:
        return soft_trim(run)

    def summarizer(self, run: LadderState, request: SummaryRequest) -> ChunksFirst | None:
        return chunks_first(run, request)


def _options(policy: CompactionPolicy) -> OpenClaw:
    """The OpenClaw options of ``policy`` (none set when its harness is another)."""
    harness = policy.harness
    return harness if isinstance(harness, OpenClaw) else OpenClaw(None, None, 0)


def history_tokens(conv: Conversation) -> int:
    """Tokens of ``conv`` after its system messages."""
    return sum(conv.message_tokens()[conv.preamble :])


def history_over_share(conv: Conversation, policy: CompactionPolicy) -> bool | None:
    """Whether the history of ``conv`` is over ``max_history_share`` of ``policy``'s window
    (None when the policy has no history share: its ``trigger`` applies)."""
    share = _options(policy).max_history_share
    if share is None:
        return None
    return history_tokens(conv) > share * policy.context_window


def cache_warm(policy: CompactionPolicy, idle_seconds: float | None) -> str | None:
    """Why results may not be trimmed or cleared now — the prompt cache that holds them is still
    warm (fewer than ``cache_ttl_seconds`` since the previous call) — or None when they may (no
    TTL, idle time unknown, or the cache has expired)."""
    ttl = _options(policy).cache_ttl_seconds
    if ttl <= 0 or idle_seconds is None or idle_seconds >= ttl:
        return None
    return f"the prompt cache is warm: {idle_seconds:,.0f}s since the last call, under the {ttl:,}s TTL"


def soft_trim(run: LadderState) -> bool:
    """Cut every old tool result of the working conversation over ``soft_trim_chars`` to head +
    marker + tail (the original under its call id when the compactor has a store). Results of
    protected messages and of ``exclude_tools`` stay. Whether anything was cut."""
    p, work = run.policy, run.work
    limit = _options(p).soft_trim_chars
    if limit is None or not work.tool_results_over(limit):
        return False
    store = run.store
    # Cut from the original: a result the budgets stage already cut is not cut again by the core,
    # and the head and tail of the original say more. (Before a summary, positions are the same.)
    cut_conv, cut = run.original.truncate_tool_results(limit, strategy="head_tail", recall_ids=store is not None)
    protected = set(work.protected(recent_messages=p.recent_messages, recent_tools=p.recent_tools))
    excluded = set(p.exclude_tools)
    # A message is taken from the cut copy whole: every result in it is old (protection is by message).
    skip = {c["index"] for c in cut if c["index"] in protected or c.get("tool_name") in excluded}
    now = work.message_tokens()
    # A message the original's cut would not shrink (cleared already, say) stays as it is.
    skip |= {i for i in {c["index"] for c in cut} if cut_conv.message_tokens()[i] >= now[i]}
    entries = [c for c in cut if c["index"] not in skip]
    if not entries:
        return False
    run.keep_results(entries)
    changed = {c["index"] for c in entries}
    parts: list[Conversation] = []
    at = 0
    for i in sorted(changed):
        parts += [work.slice(at, i), cut_conv.slice(i, i + 1)]
        at = i + 1
    parts.append(work.slice(at))
    trimmed = Conversation.concat(parts)
    run.event(
        "clear", work.tokens, trimmed.tokens,
        results_soft_trimmed=len(entries), soft_trim_chars=limit, tokens_freed=work.tokens - trimmed.tokens,
    )  # fmt: skip
    run.replace_work(trimmed, changed)
    return True


def chunks_first(run: LadderState, request: SummaryRequest) -> ChunksFirst | None:
    """Under ``max_history_share``, when the older history of ``request`` is over that share of the
    window: a summarizer for it that summarizes its oldest chunks first (see :class:`ChunksFirst`).
    None without the share, or when the older history is under it."""
    share = _options(run.policy).max_history_share
    if share is None:
        return None
    budget = max(1, int(share * run.policy.context_window))
    source, stop = request.source, request.stop
    totals = source.message_tokens()
    lo = request.start
    chunks = 0
    while sum(totals[lo:stop]) > budget:
        # Two chunks of equal token mass, split where no call is separated from its result.
        parts = source.slice(lo, stop).split(2)
        if len(parts) < 2:
            break
        cut = lo + parts[1][0]
        if not lo < cut < stop:
            break
        chunks += 1
        lo = cut
    if not chunks:
        return None
    detail = {
        "chunks_summarized_first": chunks,
        "chunk_messages": lo - request.start,
        "chunk_tokens": sum(totals[request.start : lo]),
        "history_share_tokens": budget,
    }
    return ChunksFirst(run, lo, detail)


class ChunksFirst:
    """OpenClaw's summary of an older history over the history share: its oldest chunks (up to
    ``lo``) are summarized first, and that summary is the previous one the rest is merged into.
    Each of the two requests goes through the compactor's summarizer as any request does (staged
    into parts and a merge when larger than a window-bound summarizer's window, and checked); the
    ladder then checks the result against the whole older history, as any summary."""

    #: Its two requests are sized and staged inside.
    window_bound = False

    def __init__(self, run: LadderState, lo: int, detail: dict[str, Any]) -> None:
        self.run = run
        self.lo = lo
        #: For the summarize stage's event.
        self.detail = detail

    def summarize(self, request: SummaryRequest) -> str:
        run, lo = self.run, self.lo
        oldest = SummaryRequest(
            request.source, request.start, lo, request.previous_summary, request.max_tokens,
            encoding=request.encoding, original=request.original, instructions=request.instructions,
        )  # fmt: skip
        first, why = run.run_summarizer(run.compactor.summarizer, oldest)
        if first is None:
            raise SummaryError(f"the summary of the oldest chunks failed: {why}")
        rest = SummaryRequest(
            request.source, lo, request.stop, first, request.max_tokens,
            encoding=request.encoding, original=request.original, instructions=request.instructions,
        )  # fmt: skip
        text, why = run.run_summarizer(run.compactor.summarizer, rest)
        if text is None:
            raise SummaryError(f"the summary of the rest, merged into the oldest chunks' summary, failed: {why}")
        return text
