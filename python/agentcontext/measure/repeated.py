"""Repeated compaction: a long session replayed message by message into a working set that is
compacted whenever it passes a trigger, measured against one compaction of the whole session.

A live agent compacts many times: each compaction sees the previous one's summary, not the
originals. :func:`repeated_compaction` replays ``conversation`` in order; before each assistant
turn (when a harness would send a request) a working set over ``trigger`` tokens is compacted to
``target``: by default with :meth:`Compactor.compact` and ``budget=target`` (the output is at most
``target`` tokens, filled towards it); with ``live=True`` the way a
:class:`~agentcontext.sessions.Session` does, :meth:`Compactor.maybe_compact` under the policy
with that trigger and target (the ladder stops at the first rung under the target and never cuts
the last round). At the end a working set over ``target`` is compacted once more to
``budget=target``, so that the final set is as large as the single compaction it is compared with. The probes of the
whole session (:mod:`agentcontext.probes`, independent of the summarizer) are then
looked for in the final working set and in the single compaction of the whole session to
``target``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from agentcontext._core import Conversation, count_tokens
from agentcontext.compaction import CompactionPolicy, Compactor, resolve_policy
from agentcontext.probes import Retention, extract, retention, working_set_text

__all__ = ["SUMMARY_MARKER", "RepeatedCompaction", "repeated_compaction", "summary_messages"]

#: How a compaction summary message of the library begins (what :func:`summary_messages` counts).
SUMMARY_MARKER = "[agentcontext: earlier conversation compacted"


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b["text"]
            for b in content
            if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""


def summary_messages(conversation: Conversation) -> list[str]:
    """The texts of the messages of ``conversation`` that are compaction summaries (their text
    begins with :data:`SUMMARY_MARKER`)."""
    return [t for m in conversation.to_jsonl() if (t := _text(m)).lstrip().startswith(SUMMARY_MARKER)]


@dataclass(frozen=True)
class RepeatedCompaction:
    """One session replayed with repeated compaction, and compacted once, to the same size."""

    transcript: str
    messages: int
    tokens: int
    trigger: int
    target: int
    #: After each compaction, the tokens of the summary messages in the working set (0: none yet;
    #: a compaction that stops before summarizing leaves the earlier summary in place).
    summary_tokens: list[int]
    final_tokens: int
    live: bool
    #: Summary messages in the final working set, and how often the marker appears in its text
    #: (more than the messages: a summary quotes an earlier one).
    summaries: int
    summary_markers: int
    probes: int
    kept: int
    by_kind: dict[str, tuple[int, int]]
    single_tokens: int
    single_kept: int
    single_by_kind: dict[str, tuple[int, int]]
    seconds: float = 0.0
    lost: list[str] = field(default_factory=list)

    @property
    def compactions(self) -> int:
        return len(self.summary_tokens)

    @property
    def retention(self) -> float:
        return self.kept / self.probes if self.probes else 1.0

    @property
    def single_retention(self) -> float:
        return self.single_kept / self.probes if self.probes else 1.0

    def kind_share(self, kind: str, *, single: bool = False) -> float | None:
        kept, total = (self.single_by_kind if single else self.by_kind).get(kind, (0, 0))
        return kept / total if total else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "transcript": self.transcript, "messages": self.messages, "tokens": self.tokens,
            "trigger": self.trigger, "target": self.target, "live": self.live, "compactions": self.compactions,
            "summary_tokens": self.summary_tokens, "final_tokens": self.final_tokens, "summaries": self.summaries,
            "summary_markers": self.summary_markers, "probes": self.probes, "kept": self.kept,
            "retention": self.retention, "requests": self.kind_share("user_message"),
            "by_kind": {k: list(v) for k, v in self.by_kind.items()}, "single_tokens": self.single_tokens,
            "single_kept": self.single_kept, "single_retention": self.single_retention,
            "single_requests": self.kind_share("user_message", single=True),
            "single_by_kind": {k: list(v) for k, v in self.single_by_kind.items()},
            "seconds": self.seconds, "lost": self.lost,
        }  # fmt: skip


def repeated_compaction(
    conversation: Conversation,
    *,
    trigger: int = 48_000,
    target: int = 32_000,
    policy: CompactionPolicy | str = "openharness",
    name: str = "",
    environ: Mapping[str, str] | None = None,
    live: bool = False,
) -> RepeatedCompaction:
    """Replay ``conversation`` with repeated compaction (see the module docs) and compact it once
    to ``target``; measure both against the probes of the whole session."""
    import time

    started = time.perf_counter()
    resolved = resolve_policy(policy)
    env = dict(environ) if environ is not None else {}
    # Live: a window whose room for the conversation is the trigger, the target below it.
    window = trigger + resolved.reserved_output + resolved.safety_margin
    running = replace(resolved, context_window=window, trigger=float(trigger), target=float(target))
    compactor = Compactor(running if live else resolved, environ=env)
    work = Conversation([], format="jsonl", encoding=conversation.encoding)
    summaries: list[int] = []

    def compact(conv: Conversation, *, final: bool = False) -> Conversation:
        if live and not final:
            result = compactor.maybe_compact(conv)
            if result is None or not result.compacted:
                return conv
            out = result.conversation
        else:
            out = compactor.compact(conv, budget=target).conversation
        summaries.append(sum(count_tokens(t, encoding=resolved.encoding) for t in summary_messages(out)))
        return out

    for message in conversation.to_jsonl():
        if message.get("role") == "assistant" and work.tokens > trigger:
            work = compact(work)
        work.extend([message])
    if work.tokens > target:
        work = compact(work, final=True)
    single = Compactor(resolved, environ=env).compact(conversation, budget=target).conversation
    facts = extract(conversation)
    kept: Retention = retention(facts, work)
    once = retention(facts, single)
    text = working_set_text(work)
    return RepeatedCompaction(
        transcript=name, messages=len(conversation), tokens=conversation.tokens, trigger=trigger, target=target, live=live,
        summary_tokens=summaries, final_tokens=work.tokens, summaries=len(summary_messages(work)),
        summary_markers=text.count(SUMMARY_MARKER), probes=kept.total, kept=kept.kept, by_kind=kept.by_kind,
        single_tokens=single.tokens, single_kept=once.kept, single_by_kind=once.by_kind,
        seconds=time.perf_counter() - started, lost=[f"{p.kind}: {p.text[:120]}" for p in kept.lost],
    )  # fmt: skip
