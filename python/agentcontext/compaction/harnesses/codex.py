"""Codex's compacted history.

Codex summarizes the whole history and rebuilds it as the user messages — the newest ones first,
up to about 20,000 tokens (the one that crosses the limit cut to what is left), back in their
order — followed by the summary, instead of keeping a raw recent tail of every message. Earlier
summaries are not kept as user messages (the new summary updates them); tool calls, results and
assistant text leave the working set (the originals stay in the session log).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agentcontext._core import Conversation, count_tokens, truncate
from agentcontext.compaction.harness import Harness
from agentcontext.compaction.policy import SUMMARY_HEADER_TOKENS, summary_cap
from agentcontext.compaction.results import CompactionResult, drop_marker
from agentcontext.compaction.summarize import SUMMARY_MARKER, summary_message
from agentcontext.errors import BudgetError

if TYPE_CHECKING:
    from agentcontext.compaction.ladder import LadderRun

__all__ = ["MIN_CUT_TOKENS", "Codex", "rebuild", "user_messages"]

#: A user message is cut to fit only when at least this many tokens are left for it.
MIN_CUT_TOKENS = 32


@dataclass(frozen=True)
class Codex(Harness):
    """Codex's option: a summary rebuilds history as the user messages (newest first, up to
    ``recent_user_tokens`` tokens) followed by the summary of everything (0: off, the raw recent
    part is kept instead)."""

    recent_user_tokens: int = 20_000

    def scaled(self, factor: float) -> Codex:
        return replace(self, recent_user_tokens=int(self.recent_user_tokens / factor))

    def rebuilds(self) -> bool:
        return self.recent_user_tokens > 0

    def rebuild(self, run: LadderRun) -> CompactionResult | None:
        return rebuild(run, self.recent_user_tokens)


def _user_text(conv: Conversation, i: int) -> str | None:
    """The text of user message ``i`` (its text blocks, not tool results it carries)."""
    texts = []
    for m in conv.slice(i, i + 1).to_jsonl():
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
    text = "\n".join(t for t in texts if t)
    return text or None


def user_messages(conv: Conversation) -> list[int]:
    """Positions of the user messages Codex keeps: every message that opens a turn, except
    summaries of earlier history."""
    out = []
    for lo, _ in conv.groups():
        text = _user_text(conv, lo)
        if text is not None and not text.startswith(SUMMARY_MARKER):
            out.append(lo)
    return out


def rebuild(run: LadderRun, recent_user_tokens: int) -> CompactionResult | None:
    """The summarize rung of Codex (``recent_user_tokens``): a summary of all the history
    after the system messages, then the working set rebuilt as the system messages, the user
    messages (newest first within ``recent_user_tokens`` and the room the summary leaves) and the
    summary message. None when no summary was made (auto mode; manual raises)."""
    p, o = run.policy, run.original
    stop = len(o)
    if stop <= run.preamble:
        run.nothing_to_summarize()
        return None
    cap = summary_cap(p, run.target) if run.one_shot else p.summary_max_tokens
    if run.one_shot:
        # With a budget, the summary may take the room the user messages leave (up to
        # summary_max_tokens), not only its third: Codex keeps no raw tail to fill it with.
        first = _pick(run, min(recent_user_tokens, run.limit - run.preamble_tokens - cap - SUMMARY_HEADER_TOKENS))
        users = sum(run.totals[i] if m is None else m.tokens for i, m in first)
        cap = run.summary_room(cap, run.preamble_tokens + users)
    summary = run.write_summary(stop, cap)
    if summary is None:
        return None
    summary.covers = stop
    if run.summary_tokens(summary) > run.limit - run.preamble_tokens:
        # The summary alone does not fit beside the system messages: cut it to the room, else
        # the ladder's last rung decides.
        shrunk = run.shrunk_summary(summary, run.limit - run.preamble_tokens)
        if shrunk is None:
            return run.oversized(summary)
        summary = shrunk
    # Sized with a recall id of the store's shape; the originals are stored once the kept set is known.
    sizing = None if run.store is None else "r-" + "0" * 20
    unseen = run.unseen(summary)
    tail = _summary_conv(run, summary.text, set(), sizing, unseen, sizing)
    room = min(recent_user_tokens, run.limit - run.preamble_tokens - tail.tokens)
    picked = _pick(run, room)
    while True:
        # The header names only what the summary replaces — the messages not kept (whole or cut)
        # — and its recall id gives exactly those.
        kept = {i for i, _ in picked}
        lo, hi = unseen
        unseen_id = _keep(run, kept, lo, hi) if lo < hi else None
        seen_id = _keep(run, kept | set(range(lo, hi)), run.preamble, len(o))
        tail = _summary_conv(run, summary.text, kept, seen_id, unseen, unseen_id)
        parts = [o.slice(0, run.preamble), *(o.slice(i, i + 1) if m is None else m for i, m in picked), tail]
        conv = Conversation.concat(parts)
        if conv.tokens <= run.limit or not picked:
            break
        picked.pop(0)  # counted apart, the parts came out larger together: the oldest goes
    prov: list[int | None] = [*range(run.preamble), *(i if m is None else None for i, m in picked), *[None] * len(tail)]
    origins: list[int | None] = [*range(run.preamble), *(i for i, _ in picked), *[None] * len(tail)]
    detail: dict[str, Any] = {**summary.detail, "kept_user_messages": len(picked), "kept_raw": 0}
    detail["user_messages_cut"] = sum(1 for _, m in picked if m is not None)
    run.event("summarize", run.work.tokens, conv.tokens, **detail)
    summary.recorded = True
    return run.finish(conv, prov, summary=summary, origins=origins)


def _keep(run: LadderRun, kept: set[int], lo: int, hi: int) -> str | None:
    """Store the messages ``lo:hi`` that are not in ``kept`` (JSON Lines in the conversation's
    format, one message a line) and return their recall id; None without a store."""
    store = run.store
    if store is None:
        return None
    o = run.original
    each = o.slice(lo, hi)._export_each()
    lines = [json.dumps(m, ensure_ascii=False) for k, items in enumerate(each) if lo + k not in kept for m in items]
    return store.put("\n".join(lines) + "\n")


def _summary_conv(
    run: LadderRun, text: str, kept: set[int], recall_id: str | None, unseen: tuple[int, int], unseen_id: str | None
) -> Conversation:
    """The summary message, its header naming the messages after the system messages that are
    not in ``kept`` and their tokens, but for those in the range ``unseen``; before it, when its
    summarizer never saw those (``unseen`` not empty), a drop marker counting those of them not in
    ``kept`` (their originals under ``unseen_id``)."""
    o = run.original
    totals = run.work.message_tokens()
    lo, hi = unseen
    replaced = [i for i in range(run.preamble, len(o)) if i not in kept and not lo <= i < hi]
    tokens = sum(totals[i] for i in replaced)
    messages = [summary_message(text, messages=len(replaced), tokens=tokens, recall_id=recall_id)]
    dropped = [i for i in range(lo, hi) if i not in kept]
    if dropped:
        messages.insert(0, drop_marker(len(dropped), sum(totals[i] for i in dropped), unseen_id))
    return o.replace(0, None, messages)


def _pick(run: LadderRun, room: int) -> list[tuple[int, Conversation | None]]:
    """The user messages kept, in order: newest first within ``room`` tokens, whole (None) or,
    for the one that crosses the limit, cut head + marker + tail to what is left."""
    o, p = run.original, run.policy
    picked: list[tuple[int, Conversation | None]] = []
    for i in reversed(user_messages(o)):
        if room <= 0:
            break
        whole = len(o.slice(i, i + 1).to_jsonl()) == 1
        tokens = run.totals[i]
        if whole and tokens <= room:
            picked.append((i, None))
            room -= tokens
            continue
        text = _user_text(o, i) or ""
        made = _message(text, o)
        if made.tokens <= room:
            picked.append((i, made))
            room -= made.tokens
            continue
        if room < MIN_CUT_TOKENS:
            break
        # Codex cuts the message that crosses the limit to what is left (head and tail).
        overhead = made.tokens - count_tokens(text, encoding=o.encoding)
        try:
            cut = truncate(text, max(1, room - overhead - 4), unit="tokens", strategy="head_tail",
                           encoding=p.encoding, not_stored=True)  # fmt: skip
        except BudgetError:
            break
        made = _message(cut.text, o)
        if made.tokens <= room:
            picked.append((i, made))
        break
    picked.reverse()
    return picked


def _message(text: str, like: Conversation) -> Conversation:
    return like.replace(0, None, [{"role": "user", "content": text}])
