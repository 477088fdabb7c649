"""Offline, deterministic measures of what a compaction strategy keeps and loses.

- :func:`probes` extracts probe facts from an original conversation: file paths, error lines and
  exception types, test names, identifiers, user instructions and the latest user ask.
- :func:`retention` looks for them in a compacted working set.
- :func:`replay` replays a transcript turn by turn with a strategy applied before every model
  call, and measures prompt-cache prefix stability (the share of each request's tokens that
  equals a prefix of the previous request) and compactions per 100 turns.
- :func:`evaluate` runs one strategy on one conversation and returns every measure as one
  :class:`Evaluation` (what ``agentcontext eval`` tabulates).
"""

from __future__ import annotations

import bisect
import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from agentcontext._core import Conversation, count_tokens
from agentcontext.calibration import message_texts
from agentcontext.compaction import CompactionPolicy, CompactionResult, Compactor, parse_budget, resolve_policy
from agentcontext.summarize import identifiers_in

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "PROBE_KINDS",
    "Evaluation",
    "Probe",
    "Replay",
    "Retention",
    "evaluate",
    "probes",
    "replay",
    "retention",
    "working_set_text",
]

ProbeKind = Literal["path", "error", "exception", "test", "identifier", "instruction", "latest_ask"]
#: Every probe kind, in report order.
PROBE_KINDS: tuple[ProbeKind, ...] = ("latest_ask", "instruction", "path", "error", "exception", "test", "identifier")

#: Instructions shorter than this many content words are not probes (``ok``, ``yes, do it``).
MIN_INSTRUCTION_WORDS = 3
#: An instruction is retained when this share of its content words appears in the working set.
INSTRUCTION_OVERLAP = 0.6

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}|[\u3400-\u9fff]")
_EXCEPTION = re.compile(r"\b[A-Z][A-Za-z0-9]*(?:Error|Exception)\b")
_TEST = re.compile(r"[\w./-]+\.py::[\w\[\]:.-]+|\btest_\w{3,}")
_STOPWORDS = frozenset(
    [
        "this",
        "that",
        "with",
        "from",
        "have",
        "what",
        "when",
        "will",
        "would",
        "should",
        "could",
        "there",
        "their",
        "them",
        "they",
        "then",
        "than",
        "your",
        "about",
        "into",
        "also",
        "just",
        "like",
        "make",
        "made",
        "sure",
        "some",
        "more",
        "most",
        "only",
        "over",
        "such",
        "very",
        "please",
        "want",
        "need",
        "does",
        "done",
        "dont",
        "don't",
        "it's",
        "let's",
        "here",
        "were",
        "been",
        "being",
        "which",
        "where",
        "while",
        "after",
        "before",
        "again",
    ]
)


@dataclass(frozen=True)
class Probe:
    """One fact from the original conversation: its ``kind``, the ``text`` to look for, and the
    index of the message it came from."""

    kind: ProbeKind
    text: str
    index: int

    def words(self) -> list[str]:
        """Content words of an instruction probe (lowercase, no stopwords)."""
        return _content_words(self.text)


def _content_words(text: str) -> list[str]:
    seen: list[str] = []
    for w in _WORD.findall(text):
        w = w.lower()
        if w not in _STOPWORDS and w not in seen:
            seen.append(w)
    return seen


def probes(conversation: Conversation, start: int = 0, stop: int | None = None) -> list[Probe]:
    """The probe facts of messages ``start:stop``: every file path read or modified, every error
    line and exception type, test names, identifiers (from user asks and errors), every user
    instruction of at least three content words, and the latest user ask. No repeats."""
    h = conversation.handoff(start, stop)
    out: list[Probe] = []
    seen: set[tuple[str, str]] = set()

    def add(kind: ProbeKind, text: str, index: int) -> None:
        text = text.strip()
        if text and (kind, text) not in seen:
            seen.add((kind, text))
            out.append(Probe(kind, text, index))

    asks = h["user_requests"]  # latest first
    asks = [(i, t) for i, t in asks if len(_content_words(t)) >= MIN_INSTRUCTION_WORDS]
    if asks:
        add("latest_ask", asks[0][1], asks[0][0])
    for i, text in asks[1:]:
        add("instruction", text, i)
    last = stop if stop is not None else len(conversation)
    where = _FirstMention(conversation, start, last)
    for path in [*h["files_read"], *h["files_modified"]]:
        add("path", path, where.index(path))
    for error in h["errors"]:
        line = error["text"].split(" (from ", 1)[0]
        add("error", line, error["index"])
        for exc in _EXCEPTION.findall(line):
            add("exception", exc, error["index"])
        for test in _TEST.findall(line):
            add("test", test, error["index"])
    for i, text in h["user_requests"]:
        for ident in identifiers_in(text):
            add("identifier", ident, i)
    for ident in h["identifiers"]:
        if "::" in ident or ident.startswith("test_"):
            add("test", ident, where.index(ident))
        else:
            add("identifier", ident, where.index(ident))
    return out


class _FirstMention:
    """The index of the first message of ``start:stop`` whose text (content, tool input or result)
    holds a given fact: where a probe comes from. One joined text and one search per fact."""

    def __init__(self, conversation: Conversation, start: int, stop: int) -> None:
        self._conversation, self._start, self._stop = conversation, start, stop
        self._text: str | None = None
        self._offsets: list[int] = []

    def index(self, fact: str) -> int:
        if self._text is None:
            parts: list[str] = []
            offset = 0
            for message in self._conversation.slice(self._start, self._stop).to_jsonl():
                self._offsets.append(offset)
                text = "\n".join(message_texts(message)) + "\x00"
                parts.append(text)
                offset += len(text)
            self._text = "".join(parts)
        at = self._text.find(fact)
        if at < 0:
            return self._stop - 1  # found by the handoff in a shape the texts do not spell out
        return self._start + bisect.bisect_right(self._offsets, at) - 1


def working_set_text(conversation: Conversation) -> str:
    """Every text of a working set (contents, tool names and inputs, tool results), one string."""
    return "\n".join(text for m in conversation.to_jsonl() for text in message_texts(m))


@dataclass(frozen=True)
class Retention:
    """Which probes a working set kept: overall share, per kind, and the lost ones."""

    total: int
    kept: int
    by_kind: dict[str, tuple[int, int]]
    lost: list[Probe]

    @property
    def share(self) -> float:
        """Kept / total (1.0 when there is nothing to keep)."""
        return self.kept / self.total if self.total else 1.0

    def kind_share(self, kind: str) -> float | None:
        kept, total = self.by_kind.get(kind, (0, 0))
        return kept / total if total else None


def _json_escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def found_in(probe: Probe, haystack: str, words: set[str] | None = None) -> bool:
    """Whether ``probe`` is in ``haystack``: exact text for paths, errors and identifiers (also
    as written inside JSON tool inputs); for instructions, at least 60% of their content words."""
    if probe.kind in ("instruction", "latest_ask"):
        wanted = probe.words()
        if not wanted:
            return True
        have = words if words is not None else set(_content_words(haystack))
        return sum(w in have for w in wanted) >= INSTRUCTION_OVERLAP * len(wanted)
    return probe.text in haystack or _json_escaped(probe.text) in haystack


def retention(facts: Iterable[Probe], working_set: Conversation | str) -> Retention:
    """Which of ``facts`` the working set still holds (see :func:`found_in`)."""
    haystack = working_set if isinstance(working_set, str) else working_set_text(working_set)
    words = set(_content_words(haystack))
    by_kind: dict[str, list[int]] = {}
    lost: list[Probe] = []
    kept = total = 0
    for p in facts:
        ok = found_in(p, haystack, words)
        counts = by_kind.setdefault(p.kind, [0, 0])
        counts[1] += 1
        total += 1
        if ok:
            counts[0] += 1
            kept += 1
        else:
            lost.append(p)
    return Retention(total, kept, {k: (v[0], v[1]) for k, v in by_kind.items()}, lost)


# ---------------------------------------------------------------------------------------------
# Replay and prompt-cache stability.


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


def _common_prefix_tokens(before: Conversation, after: Conversation) -> int:
    """Tokens of the longest run of leading messages ``after`` shares with ``before``."""
    n = 0
    for a, b in zip(before.export_each(), after.export_each(), strict=False):
        if a != b:
            break
        n += 1
    return sum(after.message_tokens()[:n])


def replay(conversation: Conversation, compactor: Compactor) -> Replay:
    """Replay ``conversation`` call by call: before each assistant turn, the request is the
    working set so far (what the strategy kept, plus every message since) and the strategy may
    compact it (``maybe_compact``). Measures each request's size and the part of it that is a
    prefix of the previous request. Costs O(new messages) per call, plus O(working set) per
    compaction."""
    originals = conversation.to_jsonl()
    starts = [i for i in range(1, len(originals)) if originals[i].get("role") == "assistant"]
    uncompacted = conversation.message_tokens()
    sizes: list[int] = []
    prefixes: list[int] = []
    compactions: list[int] = []
    uncompacted_tokens: list[int] = []
    work = Conversation([], format="jsonl", encoding=conversation.encoding)
    taken = running = prev_len = prev_tokens = 0
    for call, stop in enumerate(starts):
        work.extend(originals[taken:stop])
        running += sum(uncompacted[taken:stop])
        taken = stop
        result = compactor.maybe_compact(work)
        if result is not None and result.compacted and result.conversation is not work:
            compactions.append(call)
            # Until now the working set only grew: the previous request is its first prev_len messages.
            new = result.conversation.slice(0)
            prefixes.append(_common_prefix_tokens(work.slice(0, prev_len), new) if call else 0)
            work = new
        else:
            # Nothing before the new messages changed: the whole previous request is a prefix.
            prefixes.append(prev_tokens)
        sizes.append(work.tokens)
        uncompacted_tokens.append(running)
        prev_len, prev_tokens = len(work), work.tokens
    return Replay(sizes, prefixes, compactions, uncompacted_tokens)


# ---------------------------------------------------------------------------------------------
# One strategy on one conversation.


@dataclass(frozen=True)
class Evaluation:
    """Every measure of one strategy on one conversation under one budget."""

    transcript: str
    strategy: str
    budget: int
    messages: int
    tokens_before: int
    tokens_after: int
    fits: bool
    valid: bool
    violations: int
    retention: float
    retention_by_kind: dict[str, float | None]
    probes: int
    lost: list[str]
    summary_tokens: int
    summarized_tokens: int
    cache_stability: float
    cache_write_tokens: int
    compactions_per_100_turns: float
    turns: int
    seconds: float
    error: str | None = None
    #: Replay totals: compactions, request tokens, and the part of them that was a cached prefix.
    compactions: int = 0
    request_tokens: int = 0
    cached_tokens: int = 0
    stages: list[str] = field(default_factory=list)

    @property
    def reduction(self) -> float:
        """Share of the tokens removed: 1 - after / before."""
        return 1.0 - self.tokens_after / self.tokens_before if self.tokens_before else 0.0

    @property
    def summary_ratio(self) -> float | None:
        """Summary tokens / tokens of the history it replaced (None without a summary)."""
        return self.summary_tokens / self.summarized_tokens if self.summarized_tokens else None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["reduction"] = self.reduction
        out["summary_ratio"] = self.summary_ratio
        return out


def replay_policy(policy: CompactionPolicy, budget: int) -> CompactionPolicy:
    """``policy`` shrunk to a window whose available tokens (after reserved output and margin)
    are ``budget``, every absolute size scaled with it (reserved output, margin, recent tokens
    kept, summary cap), so a preset keeps its shape at any budget: trigger and target stay the
    same shares, and the target stays below the trigger."""
    share = 1 - (policy.reserved_output + policy.safety_margin) / policy.context_window
    window = max(1, round(budget / share)) if share > 0 else budget
    factor = policy.context_window / window
    scaled = policy.scaled(factor)
    return replace(
        scaled,
        context_window=window,
        summary_max_tokens=max(64, int(policy.summary_max_tokens / factor)),
        reattach_tokens=int(policy.reattach_tokens / factor),
    )


def evaluate(
    conversation: Conversation,
    strategy: str | CompactionPolicy,
    budget: str | int,
    *,
    name: str = "",
    with_replay: bool = True,
    environ: dict[str, str] | None = None,
) -> Evaluation:
    """Compact ``conversation`` under ``budget`` with ``strategy`` (a preset name or a policy,
    offline summarizer) and measure validity, reduction, probe retention, summary size and, by a
    replay under the same budget, prompt-cache stability and compactions per 100 turns."""
    policy = resolve_policy(strategy)
    limit = parse_budget(budget, conversation.tokens)
    started = time.perf_counter()
    env = environ if environ is not None else {}
    result: CompactionResult = Compactor(policy, environ=env).compact(conversation, budget=limit)
    facts = probes(conversation)
    kept = retention(facts, result.conversation)
    violations = result.conversation.validate()
    summarized = sum(
        int(s.detail.get("summarized_tokens", 0))
        for s in result.stages
        if s.stage == "summarize" and "failed" not in s.detail
    )
    summary_tokens = count_tokens(result.summary, encoding=policy.encoding) if result.summary else 0
    rep = replay(conversation, Compactor(replay_policy(policy, limit), environ=env)) if with_replay else None
    seconds = time.perf_counter() - started
    return Evaluation(
        transcript=name,
        strategy=policy.name,
        budget=limit,
        messages=len(conversation),
        tokens_before=result.tokens_before,
        tokens_after=result.tokens_after,
        fits=result.fits,
        valid=not violations,
        violations=len(violations),
        retention=kept.share,
        retention_by_kind={k: kept.kind_share(k) for k in PROBE_KINDS},
        probes=kept.total,
        lost=[f"{p.kind}: {p.text[:120]}" for p in kept.lost],
        summary_tokens=summary_tokens,
        summarized_tokens=summarized,
        cache_stability=rep.cache_stability if rep else 1.0,
        cache_write_tokens=rep.cache_write_tokens if rep else 0,
        compactions_per_100_turns=rep.compactions_per_100_turns if rep else 0.0,
        turns=rep.turns if rep else 0,
        seconds=seconds,
        stages=[s.stage for s in result.stages],
        compactions=len(rep.compactions) if rep else 0,
        request_tokens=sum(rep.request_tokens[1:]) if rep else 0,
        cached_tokens=sum(rep.prefix_tokens[1:]) if rep else 0,
    )


def summarize_evaluations(rows: Sequence[Evaluation]) -> list[dict[str, Any]]:
    """One row per strategy: transcripts, share valid, share fitting, mean reduction and mean
    retention (per transcript), cache stability and compactions per 100 turns pooled over every
    replayed call of every transcript (so long sessions weigh by their calls, not one vote each),
    total seconds."""
    by: dict[str, list[Evaluation]] = {}
    for r in rows:
        by.setdefault(r.strategy, []).append(r)
    out = []
    for strategy, rs in by.items():
        ok = [r for r in rs if r.error is None]
        n = len(ok) or 1
        out.append(
            {
                "strategy": strategy,
                "transcripts": len(rs),
                "errors": len(rs) - len(ok),
                "valid": sum(r.valid for r in ok) / n,
                "fits": sum(r.fits for r in ok) / n,
                "reduction": sum(r.reduction for r in ok) / n,
                "retention": sum(r.retention for r in ok) / n,
                "cache_stability": (
                    sum(r.cached_tokens for r in ok) / requested
                    if (requested := sum(r.request_tokens for r in ok))
                    else 1.0
                ),
                "compactions_per_100_turns": (
                    100 * sum(r.compactions for r in ok) / turns if (turns := sum(r.turns for r in ok)) else 0.0
                ),
                "seconds": sum(r.seconds for r in rs),
            }
        )
    return out
