"""Offline, deterministic measures of what a compaction strategy keeps and loses.

- :func:`probes` extracts probe facts from an original conversation (:mod:`agentcontext.probes`,
  independent of the summarizer): the latest user ask, every user message, paths, exception
  names, test ids and identifiers.
- :func:`retention` looks for them in a compacted working set.
- :func:`replay` replays a transcript turn by turn with a strategy applied before every model
  call, and measures prompt-cache prefix stability (the share of each request's tokens that
  equals a prefix of the previous request) and compactions per 100 turns.
- :func:`evaluate` runs one strategy on one conversation and returns every measure as one
  :class:`Evaluation` (what ``agentcontext eval`` tabulates).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, cast

from agentcontext import _checks
from agentcontext._core import Conversation, count_tokens
from agentcontext.compaction import CompactionPolicy, CompactionResult, Compactor, parse_budget, resolve_policy
from agentcontext.compaction.pricing import Cost, Prices, price_tables, resolve_prices
from agentcontext.compaction.schedule import CacheSchedule
from agentcontext.compiler.prefix import Replay, _common_prefix_tokens, _MessageExports, shared_prefix_tokens
from agentcontext.errors import ArgumentTypeError
from agentcontext.measure.timing import call_idle, timed_tokens
from agentcontext.probes import (
    KINDS,
    VIEWS,
    Probe,
    Retention,
    extract,
    found_in,
    found_whole,
    request_text,
    retention,
    working_set_text,
)
from agentcontext.types import CostDict, EvaluationDict, StrategySummary

#: How the cache's time is replayed (:meth:`Evaluation.cost`).
Timing = Literal["warm", "timed", "scheduled"]

__all__ = [
    "PROBE_KINDS",
    "VIEWS",
    "Evaluation",
    "Probe",
    "Replay",
    "Retention",
    "baseline_suffix_users",
    "evaluate",
    "found_in",
    "probes",
    "replay",
    "retention",
    "shared_prefix_tokens",
    "working_set_text",
]

#: The fill a compacted output should reach (issue 13): ``filled`` is the share of outputs at or over it.
FILLED = 0.8

#: Every probe kind, in report order (see :mod:`agentcontext.probes`).
PROBE_KINDS = KINDS


def probes(conversation: Conversation, start: int = 0, stop: int | None = None) -> list[Probe]:
    """The probe facts of messages ``start:stop`` (indices into ``conversation``), extracted from
    the raw messages by :func:`agentcontext.probes.extract`, independently of the summarizer."""
    if start == 0 and stop is None:
        return extract(conversation)
    return [replace(p, index=p.index + start) for p in extract(conversation.slice(start, stop))]


# ---------------------------------------------------------------------------------------------
# Replay and prompt-cache stability.


def replay(conversation: Conversation, compactor: Compactor, idle: Sequence[float] | None = None) -> Replay:
    """Replay ``conversation`` call by call: before each assistant turn, the request is the
    working set so far (what the strategy kept, plus every message since) and the strategy may
    compact it (``maybe_compact``, told ``idle[call]`` seconds since the previous call when
    ``idle`` is given: see :func:`agentcontext.measure.timing.call_idle`). Measures each request's
    size and the part of it that is a prefix of the previous request. Costs O(new messages) per
    call, plus O(working set) per compaction."""
    originals = conversation.to_jsonl()
    starts = [i for i in range(1, len(originals)) if originals[i].get("role") == "assistant"]
    uncompacted = conversation.message_tokens()
    sizes: list[int] = []
    prefixes: list[int] = []
    compactions: list[int] = []
    uncompacted_tokens: list[int] = []
    work = Conversation([], format="jsonl", encoding=conversation.encoding)
    exports = _MessageExports(work)
    taken = running = prev_len = prev_tokens = 0
    for call, stop in enumerate(starts):
        work.extend(originals[taken:stop])
        running += sum(uncompacted[taken:stop])
        taken = stop
        result = compactor.maybe_compact(work, idle_seconds=idle[call] if idle is not None else None)
        if result is not None and result.compacted and result.conversation is not result.original:
            compactions.append(call)
            # Until now the working set only grew: the previous request is its first prev_len messages.
            new = result.conversation.slice(0)
            new_exports = _MessageExports(new)
            prefixes.append(_common_prefix_tokens(exports, prev_len, new_exports, new) if call else 0)
            work, exports = new, new_exports
        else:
            if result is not None and result.compacted:
                exports = _MessageExports(work)  # compacted in place: its messages may have changed
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
    #: Probes kept, and ``(kept, total)`` per kind: what pooled retention is summed from.
    kept_probes: int = 0
    probe_counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: Whether the latest real user request is in the working set (None: there is none).
    latest_ask: bool | None = None
    #: Whether the latest real user request is in the working set whole (verbatim, whitespace
    #: folded), counted only where it is at most a quarter of the budget (None: there is no
    #: request, or it is larger); and its tokens (0: none).
    latest_whole: bool | None = None
    latest_ask_tokens: int = 0
    #: By price table name: ``(read, written)`` tokens of the replay when a call after the table's
    #: TTL reads nothing (:mod:`agentcontext.measure.timing`'s model of time) — without the cache
    #: schedule (``timed``: the same replay) and with it (``scheduled``: a replay whose compactor
    #: has a :class:`~agentcontext.compaction.schedule.CacheSchedule` under that table).
    timed: dict[str, tuple[int, int]] = field(default_factory=dict)
    scheduled: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def fill(self) -> float | None:
        """Output tokens / budget, when the original exceeded the budget and the output fits it
        (None otherwise): how much of the room it was given the strategy used, at most 1.0. An
        output over the budget (the system messages and what the last round can be cut to do not
        fit) has no fill: it is counted by :attr:`over` instead."""
        if not self.budget or self.tokens_before <= self.budget or self.over:
            return None
        return self.tokens_after / self.budget

    @property
    def over(self) -> bool:
        """Whether the output is larger than the budget (it cannot be sent as asked)."""
        return self.error is None and not self.fits

    @property
    def artifact_trail(self) -> float | None:
        """Share of the files the agent read, created, edited or deleted (``artifact`` probes)
        still named in the working set (None: it touched none)."""
        return self._kind_share("artifact")

    @property
    def constraints(self) -> float | None:
        """Share of the user's constraint and correction sentences (``constraint`` probes) in the
        working set (None: there are none)."""
        return self._kind_share("constraint")

    def _kind_share(self, kind: str) -> float | None:
        kept, total = self.kept_and_total(kind)
        return kept / total if total else None

    def kept_and_total(self, *kinds: str) -> tuple[int, int]:
        """Probes kept and probes in all, over ``kinds`` (pooled retention over a subset of kinds)."""
        counts = [self.probe_counts.get(k, (0, 0)) for k in kinds]
        return sum(c[0] for c in counts), sum(c[1] for c in counts)

    @property
    def reduction(self) -> float:
        """Share of the tokens removed: 1 - after / before."""
        return 1.0 - self.tokens_after / self.tokens_before if self.tokens_before else 0.0

    @property
    def summary_ratio(self) -> float | None:
        """Summary tokens / tokens of the history it replaced (None without a summary)."""
        return self.summary_tokens / self.summarized_tokens if self.summarized_tokens else None

    def cost(self, prices: Prices | str, timing: Timing = "warm") -> Cost | None:
        """What the replayed requests' input cost under ``prices`` (a :class:`~agentcontext.compaction.pricing.Prices`
        or a model name): the cached prefixes (``cached_tokens``) at the cache-read price, the
        rest (``cache_write_tokens``, the first request whole) at the cache-write price. None
        without a replay (the baseline, a failed run). ``timing``: ``"warm"`` (the cache never
        goes cold), ``"timed"`` or ``"scheduled"`` (see :attr:`timed`; None when not measured)."""
        table = resolve_prices(prices)
        if self.error is not None or not self.turns:
            return None
        if timing == "warm":
            return table.breakdown(read=self.cached_tokens, written=self.cache_write_tokens)
        tokens = (self.timed if timing == "timed" else self.scheduled).get(table.name or "custom")
        return None if tokens is None else table.breakdown(read=tokens[0], written=tokens[1])

    def to_dict(self, prices: str | Sequence[Prices | str] | None = ()) -> EvaluationDict:
        """Every field and measure; with ``prices`` (model names, :class:`~agentcontext.compaction.pricing.Prices`
        or None for :data:`~agentcontext.compaction.pricing.EVAL_PRICES`), also ``cost``: by table name, the
        :meth:`cost` under each (None without a replay)."""
        out = cast("EvaluationDict", asdict(self))
        for key in ("timed", "scheduled"):
            if not out.get(key):
                out.pop(key, None)  # type: ignore[misc]
        tables = price_tables(prices)
        if tables:
            out["cost"] = {t.name or "custom": (c.to_dict() if (c := self.cost(t)) else None) for t in tables}
        out["reduction"] = self.reduction
        out["summary_ratio"] = self.summary_ratio
        out["fill"] = self.fill
        out["over"] = self.over
        out["artifact_trail"] = self.artifact_trail
        out["constraints"] = self.constraints
        return out


def replay_policy(policy: CompactionPolicy, budget: int) -> CompactionPolicy:
    """``policy`` shrunk to a window whose available tokens (after reserved output and margin)
    are ``budget``, every absolute size scaled with it (reserved output, margin, recent tokens
    kept, summary cap), so a preset keeps its shape at any budget: trigger and target stay the
    same shares, and the target stays below the trigger. ``budget`` is tokens; a share of a
    conversation (``"25%"``) is :func:`~agentcontext.compaction.parse_budget` ``(budget, conv.tokens)``."""
    if isinstance(budget, str):
        raise ArgumentTypeError(
            f"budget of replay_policy must be tokens (an int), got {budget!r}; for a share of a conversation "
            "pass parse_budget(budget, conversation.tokens)"
        )
    budget = _checks.count("budget", budget, minimum=1)
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
    prices: Sequence[Prices | str] = (),
    schedule: bool = False,
) -> Evaluation:
    """Compact ``conversation`` under ``budget`` with ``strategy`` (a preset name or a policy,
    offline summarizer) and measure validity, reduction, probe retention, summary size and, by a
    replay under the same budget, prompt-cache stability and compactions per 100 turns; for each
    price table of ``prices``, the replay's cache reads and writes under a model of time
    (:attr:`Evaluation.timed`) and, with ``schedule``, those of one more replay whose compactor has
    a :class:`~agentcontext.compaction.schedule.CacheSchedule` under that table (:attr:`Evaluation.scheduled`)."""
    limit = parse_budget(budget, conversation.tokens)
    if strategy == BASELINE:
        return _evaluate_baseline(conversation, limit, name)
    policy = resolve_policy(strategy)
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
    timed, scheduled = _timed(conversation, replay_policy(policy, limit), env, rep, prices, schedule=schedule)
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
        kept_probes=kept.kept,
        probe_counts=kept.by_kind,
        latest_ask=_latest_ask_kept(kept),
        **_latest_whole(conversation, facts, result.conversation, limit),
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
        timed=timed,
        scheduled=scheduled,
    )


def _timed(
    conversation: Conversation,
    policy: CompactionPolicy,
    environ: dict[str, str],
    rep: Replay | None,
    prices: Sequence[Prices | str],
    *,
    schedule: bool,
) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """``(timed, scheduled)`` of :class:`Evaluation` for ``rep`` (None: none); ``scheduled`` only
    with ``schedule``."""
    if rep is None or not prices:
        return {}, {}
    idle = call_idle(conversation)
    timed: dict[str, tuple[int, int]] = {}
    scheduled: dict[str, tuple[int, int]] = {}
    for table in price_tables(prices):
        name = table.name or "custom"
        timed[name] = timed_tokens(rep.request_tokens, rep.prefix_tokens, idle, table)
        if not schedule:
            continue
        again = replay(conversation, Compactor(policy, environ=environ, schedule=CacheSchedule(table)), idle)
        scheduled[name] = timed_tokens(again.request_tokens, again.prefix_tokens, idle, table)
    return timed, scheduled


#: The strategy name of the retention baseline (see :func:`baseline_suffix_users`).
BASELINE = "baseline-suffix-users"


def baseline_suffix_users(conversation: Conversation, budget: int) -> Conversation:
    """The retention baseline a compaction strategy has to beat: every real user message
    verbatim (latest first while they fit), then the largest protocol-complete recent suffix that
    fits the room left, with no summary. System messages stay in front. Not a strategy to use:
    it drops every tool result older than the suffix."""
    from agentcontext.probes import is_user_request

    messages = conversation.to_jsonl()
    sizes = conversation.message_tokens()
    preamble = conversation.preamble
    system = sum(sizes[:preamble])
    asks = [i for i in range(preamble, len(messages)) if is_user_request(messages[i])]
    room = budget - system
    chosen: list[int] = []
    for i in reversed(asks):
        if sizes[i] <= room:
            chosen.append(i)
            room -= sizes[i]

    def suffix_start(room: int) -> int:
        suffix = conversation.recent_suffix(system + max(room, 0))  # its budget includes the system messages
        return max(suffix["start"], preamble) if suffix["fits"] else len(messages)

    start = suffix_start(room)
    # The user messages inside the suffix were counted twice: give their room back, once.
    given_back = sum(sizes[i] for i in chosen if i >= start)
    if given_back:
        start = suffix_start(room + given_back)
    older_asks = sorted(i for i in chosen if i < start)
    keep = list(range(preamble)) + older_asks + list(range(start, len(messages)))
    return Conversation([messages[i] for i in keep], format="jsonl", encoding=conversation.encoding)


def _evaluate_baseline(conversation: Conversation, limit: int, name: str) -> Evaluation:
    started = time.perf_counter()
    out = baseline_suffix_users(conversation, limit)
    facts = probes(conversation)
    kept = retention(facts, out)
    violations = out.validate()
    return Evaluation(
        transcript=name, strategy=BASELINE, budget=limit, messages=len(conversation),
        tokens_before=conversation.tokens, tokens_after=out.tokens, fits=out.tokens <= limit, valid=not violations,
        violations=len(violations), retention=kept.share, retention_by_kind={k: kept.kind_share(k) for k in KINDS},
        probes=kept.total, kept_probes=kept.kept, probe_counts=kept.by_kind, latest_ask=_latest_ask_kept(kept),
        **_latest_whole(conversation, facts, out, limit), lost=[f"{p.kind}: {p.text[:120]}" for p in kept.lost], summary_tokens=0, summarized_tokens=0,
        cache_stability=0.0, cache_write_tokens=0, compactions_per_100_turns=0.0, turns=0,
        seconds=time.perf_counter() - started,
    )  # fmt: skip


def latest_whole(
    conversation: Conversation, facts: Sequence[Probe], working_set: Conversation, budget: int
) -> tuple[bool | None, int]:
    """Whether ``working_set`` holds the latest real user request of ``conversation`` whole
    (:func:`~agentcontext.probes.found_whole`), and the request's tokens: None when there
    is no request, or when it is larger than a quarter of ``budget`` (the ladder may then cut it)."""
    latest = next((p for p in facts if p.kind == "latest_ask"), None)
    if latest is None:
        return None, 0
    text = request_text(conversation.to_jsonl()[latest.index]) or latest.text
    tokens = count_tokens(text, encoding=conversation.encoding)
    if tokens * 4 > budget:
        return None, tokens
    return found_whole(latest, working_set_text(working_set)), tokens


def _latest_whole(
    conversation: Conversation, facts: Sequence[Probe], working_set: Conversation, budget: int
) -> dict[str, Any]:
    whole, tokens = latest_whole(conversation, facts, working_set, budget)
    return {"latest_whole": whole, "latest_ask_tokens": tokens}


def _latest_ask_kept(kept: Retention) -> bool | None:
    total = kept.by_kind.get("latest_ask", (0, 0))[1]
    return None if not total else kept.by_kind["latest_ask"][0] == total


def summarize_evaluations(
    rows: Sequence[Evaluation], prices: str | Sequence[Prices | str] | None = None
) -> list[StrategySummary]:
    """One row per strategy: transcripts, share valid, share fitting, mean reduction; probe
    retention pooled over every probe of every transcript (``retention``, so a long session
    weighs by its facts, not one vote each), per kind (``retention_by_kind``, pooled too) and the
    per-transcript mean beside it (``retention_mean``); the share of outputs that hold the latest
    user request (``latest_ask``); the share of them that hold it whole, over the runs whose
    latest request is at most a quarter of the budget (``latest_whole``; their number:
    ``latest_whole_runs``); pooled retention of the artifact trail (``artifact_trail``, the
    ``artifact`` probes) and of the user's constraints (``constraints``); mean fill over the outputs that fit a budget their original
    exceeded (``fill``, None when none did), the least of them (``min_fill``) and the share of
    them filled to at least :data:`FILLED` (``filled``); the number of outputs over the budget
    (``over``: they have no fill); cache stability and compactions per 100 turns pooled over every
    replayed call of every transcript (None without a replay, as for the baseline); ``cost``: for
    each price table of ``prices`` (model names or :class:`~agentcontext.compaction.pricing.Prices`; None:
    :data:`~agentcontext.compaction.pricing.EVAL_PRICES`, one Anthropic and one OpenAI model; ``()``: none),
    by its name, what every replayed request of every transcript cost as input (cache reads,
    cache writes, their sum; :meth:`Evaluation.cost`), None without a replay; total seconds."""
    tables = price_tables(prices)
    by: dict[str, list[Evaluation]] = {}
    for r in rows:
        by.setdefault(r.strategy, []).append(r)
    out: list[StrategySummary] = []
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
                "retention": (sum(r.kept_probes for r in ok) / total if (total := sum(r.probes for r in ok)) else 1.0),
                "retention_mean": sum(r.retention for r in ok) / n,
                "retention_by_kind": (kinds := _pooled_kinds(ok)),
                "artifact_trail": kinds["artifact"],
                "constraints": kinds["constraint"],
                "latest_ask": (
                    sum(bool(r.latest_ask) for r in asked) / len(asked)
                    if (asked := [r for r in ok if r.latest_ask is not None])
                    else None
                ),
                "latest_whole": (
                    sum(bool(r.latest_whole) for r in whole) / len(whole)
                    if (whole := [r for r in ok if r.latest_whole is not None])
                    else None
                ),
                "latest_whole_runs": len(whole),
                "fill": sum(fills) / len(fills) if (fills := [r.fill for r in ok if r.fill is not None]) else None,
                "min_fill": min(fills) if fills else None,
                "filled": sum(f >= FILLED for f in fills) / len(fills) if fills else None,
                "over": sum(r.over for r in ok),
                "cache_stability": (
                    sum(r.cached_tokens for r in ok) / requested
                    if (requested := sum(r.request_tokens for r in ok))
                    else None
                ),
                "compactions_per_100_turns": (
                    100 * sum(r.compactions for r in ok) / turns if (turns := sum(r.turns for r in ok)) else None
                ),
                "cost": {t.name or "custom": _pooled_cost(ok, t) for t in tables},
                "seconds": sum(r.seconds for r in rs),
            }
        )
        _add_timed_costs(out[-1], ok, tables)
    return out


def _add_timed_costs(summary: StrategySummary, rows: Sequence[Evaluation], tables: Sequence[Prices]) -> None:
    """``timed_cost`` and ``scheduled_cost`` of a strategy's ``summary``, when its rows were
    measured with the cache schedule (else none)."""
    if any(r.scheduled for r in rows):
        summary["timed_cost"] = {t.name or "custom": _pooled_cost(rows, t, "timed") for t in tables}
        summary["scheduled_cost"] = {t.name or "custom": _pooled_cost(rows, t, "scheduled") for t in tables}


def _pooled_cost(rows: Sequence[Evaluation], prices: Prices, timing: Timing = "warm") -> CostDict | None:
    costs = [r.cost(prices, timing) for r in rows if r.turns]
    if not costs or None in costs:
        return None
    read = sum(c.read_tokens for c in costs if c is not None)
    written = sum(c.written_tokens for c in costs if c is not None)
    return prices.breakdown(read=read, written=written).to_dict()


def _pooled_kinds(rows: Sequence[Evaluation]) -> dict[str, float | None]:
    kept: dict[str, int] = {}
    total: dict[str, int] = {}
    for r in rows:
        for kind, (k, t) in r.probe_counts.items():
            kept[kind] = kept.get(kind, 0) + k
            total[kind] = total.get(kind, 0) + t
    return {kind: (kept.get(kind, 0) / total[kind] if total.get(kind) else None) for kind in KINDS}
