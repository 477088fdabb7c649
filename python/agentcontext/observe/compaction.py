"""A compaction observed: the ``agentcontext.compaction`` span (current while the ladder runs, so
the summarizer and flush spans are its children), its stages as span events, and the
:class:`~agentcontext.observe.events.CompactionStarted` / ``CompactionFinished`` events. Every
number comes from the result (its :class:`~agentcontext.StageEvent` list, its fates, its
output): nothing is reported that the result does not show."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

from agentcontext.errors import failure_text
from agentcontext.observe.emit import EventCallback, Observer, attribute_value, fail, recording_tracer
from agentcontext.observe.events import CacheImpact, CompactionFinished, CompactionKind, CompactionStarted

if TYPE_CHECKING:
    from agentcontext._core import Conversation
    from agentcontext.compaction.results import CompactionResult, StageEvent

__all__ = [
    "CompactionWatch",
    "cache_impact",
    "fits_observed",
    "observed_fit",
    "reporting_fits",
    "stage_attributes",
    "watch_compaction",
]

T = TypeVar("T")


class _Recorder:
    """A result store that remembers what it was given: the ids and aliases of every ``put``."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.names: list[str] = []

    def put(self, text: str, *, alias: str | None = None) -> str:
        recall_id = self._store.put(text, alias=alias)
        self.names += [recall_id] if alias is None else [recall_id, alias]
        return str(recall_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def cache_impact(result: CompactionResult, prices: Any) -> CacheImpact:
    """What ``result`` does to the prompt cache (see :class:`CacheImpact`): the output equals the
    original up to its first message that is not the original's at the same position."""
    prov = result.provenance
    first = next((i for i, q in enumerate(prov) if q != i), len(prov))
    tokens = result.conversation.message_tokens()
    kept, rewritten = sum(tokens[:first]), sum(tokens[first:])
    cost = None
    if prices is not None and rewritten:
        cost = prices.cost(written=rewritten) - prices.cost(read=rewritten)
    return CacheImpact(first, kept, rewritten, cost)


def _named(result: CompactionResult, names: list[str]) -> tuple[str, ...]:
    """The ids of ``names`` that the output's new or changed messages name (each as a whole id),
    in order, once each."""
    if not names:
        return ()
    conv = result.conversation
    text = "\n".join(
        json.dumps(conv.slice(i, i + 1).to_jsonl(), ensure_ascii=False)
        for i, q in enumerate(result.provenance)
        if q is None
    )
    # A whole id, not a part of a longer one ("c1" inside "c13", "c13" inside "c13#arguments").
    wanted = sorted(dict.fromkeys(names), key=len, reverse=True)
    found = set(re.findall(rf"(?<![\w#-])({'|'.join(map(re.escape, wanted))})(?![\w#-])", text))
    return tuple(n for n in dict.fromkeys(names) if n in found)


def _stage_sum(stages: list[StageEvent], key: str) -> int:
    return sum(int(s.detail.get(key) or 0) for s in stages if isinstance(s.detail.get(key), int))


def stage_attributes(stage: StageEvent) -> dict[str, Any]:
    """The span-event attributes of one stage: its name, tokens, and each detail that is an
    attribute value (``agentcontext.stage.<key>``)."""
    out: dict[str, Any] = {
        "agentcontext.stage": stage.stage,
        "agentcontext.stage.tokens_before": stage.tokens_before,
        "agentcontext.stage.tokens_after": stage.tokens_after,
    }
    for key, value in stage.detail.items():
        v = attribute_value(value)
        if v is not None:
            out[f"agentcontext.stage.{key}"] = v
    return out


class CompactionWatch:
    """One compaction being observed (see :func:`watch_compaction`)."""

    def __init__(self, observer: Observer, kind: CompactionKind, started: float, policy: Any) -> None:
        self.observer, self.kind, self.started, self.policy = observer, kind, started, policy
        self.span: Any = None
        self.recorder: _Recorder | None = None
        self.result: CompactionResult | None = None

    def store(self, store: Any) -> Any:
        """``store`` wrapped to remember the recall ids this run stores (itself when not observed)."""
        if store is None or (self.span is None and self.observer.on_event is None):
            return store
        self.recorder = _Recorder(store)
        return self.recorder

    def done(self, result: CompactionResult) -> CompactionResult:
        """Report ``result`` (the span's attributes, its stages, the finished event) and return it."""
        self.result = result
        if self.span is None and self.observer.on_event is None:
            return result
        fates = result.fates()
        stages = list(result.stages)
        names = _named(result, self.recorder.names) if self.recorder is not None else ()
        cache = cache_impact(result, getattr(self.policy, "prices", None))
        event = CompactionFinished(
            kind=self.kind, tokens_before=result.tokens_before, tokens_after=result.tokens_after,
            target=result.target if result.target is not None else result.budget, fits=result.fits,
            stages=tuple(stages), messages_before=len(result.original), messages_after=len(result.conversation),
            messages_kept=fates.count("kept"), messages_changed=fates.count("changed"),
            messages_summarized=fates.count("summarized"), messages_dropped=fates.count("dropped"),
            results_cut=_stage_sum(stages, "results_cut"), results_cleared=_stage_sum(stages, "results_cleared"),
            recall_ids=names, cache=cache, seconds=time.perf_counter() - self.started, policy=self.policy.name,
        )  # fmt: skip
        if self.span is not None:
            self.span.set_attributes(_finished_attributes(event))
            for stage in stages:
                self.span.add_event("agentcontext.stage", stage_attributes(stage))
        self.observer.emit(event)
        return result


def _finished_attributes(e: CompactionFinished) -> dict[str, Any]:
    out: dict[str, Any] = {
        "agentcontext.compaction.tokens_after": e.tokens_after,
        "agentcontext.compaction.fits": e.fits,
        "agentcontext.compaction.stages": [s.stage for s in e.stages],
        "agentcontext.compaction.stage_tokens_before": [s.tokens_before for s in e.stages],
        "agentcontext.compaction.stage_tokens_after": [s.tokens_after for s in e.stages],
        "agentcontext.compaction.messages_before": e.messages_before,
        "agentcontext.compaction.messages_after": e.messages_after,
        "agentcontext.compaction.messages_kept": e.messages_kept,
        "agentcontext.compaction.messages_changed": e.messages_changed,
        "agentcontext.compaction.messages_summarized": e.messages_summarized,
        "agentcontext.compaction.messages_dropped": e.messages_dropped,
        "agentcontext.compaction.results_cut": e.results_cut,
        "agentcontext.compaction.results_cleared": e.results_cleared,
        "agentcontext.compaction.recall_ids": list(e.recall_ids),
    }
    if e.cache is not None:
        out["agentcontext.cache.first_changed_message"] = e.cache.first_changed
        out["agentcontext.cache.kept_tokens"] = e.cache.kept_tokens
        out["agentcontext.cache.rewritten_tokens"] = e.cache.rewritten_tokens
        if e.cache.rewrite_cost is not None:
            out["agentcontext.cache.rewrite_cost_usd"] = e.cache.rewrite_cost
    return out


@contextmanager
def watch_compaction(
    on_event: EventCallback | None, kind: CompactionKind, conv: Conversation, target: int, policy: Any
) -> Iterator[CompactionWatch]:
    """Observe the compaction the block runs over ``conv``: the started event, the span around
    the block; the block calls :meth:`CompactionWatch.done` with the result. A block that raises
    reports a finished event with the error (and no stages: the ladder gave no result)."""
    observer = Observer(on_event)
    watch = CompactionWatch(observer, kind, time.perf_counter(), policy)
    if observer.silent:
        yield watch
        return
    before, messages = conv.tokens, len(conv)
    observer.emit(CompactionStarted(kind, before, messages, target, policy.name))
    attributes = {
        "agentcontext.compaction.kind": kind,
        "agentcontext.compaction.policy": policy.name,
        "agentcontext.compaction.tokens_before": before,
        "agentcontext.compaction.target": target,
    }
    with observer.span("agentcontext.compaction", attributes) as span:
        watch.span = span
        try:
            yield watch
        except Exception as exc:
            if span is not None:
                fail(span, failure_text(exc))
            observer.emit(
                CompactionFinished(
                    kind=kind, tokens_before=before, tokens_after=before, target=target, fits=False, stages=(),
                    messages_before=messages, messages_after=messages, messages_kept=messages, messages_changed=0,
                    messages_summarized=0, messages_dropped=0, results_cut=0, results_cleared=0, recall_ids=(),
                    cache=None, seconds=time.perf_counter() - watch.started, policy=policy.name,
                    error=failure_text(exc),
                )
            )  # fmt: skip
            raise


#: The callback the adapter fitting on this thread (or task) reports its fits to, and its name
#: (set by :func:`reporting_fits` around the adapter's call into the shared fit path).
_FIT_EVENTS: ContextVar[tuple[EventCallback, str] | None] = ContextVar("agentcontext_fit_events", default=None)


def reporting_fits(on_event: EventCallback | None, adapter: str, work: Callable[[], T]) -> T:
    """``work()`` (an adapter's call into the shared fit path), each fit it makes
    (:func:`observed_fit`) reported to ``on_event`` as a compaction of kind ``fit`` whose
    ``policy`` is ``adapter``. Without ``on_event`` just ``work()`` (and a fit made inside another
    adapter's callback reports to no one)."""
    if on_event is None and _FIT_EVENTS.get() is None:
        return work()
    token = _FIT_EVENTS.set((on_event, adapter) if on_event is not None else None)
    try:
        return work()
    finally:
        _FIT_EVENTS.reset(token)


def fits_observed() -> bool:
    """Whether a fit made now is observed (:func:`observed_fit` reports it, or a span records)."""
    return _FIT_EVENTS.get() is not None or recording_tracer() is not None


def observed_fit(
    dicts: list[dict[str, Any]], fmt: str, encoding: str, target: int, fit: Callable[[], list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """``fit()`` (an adapter's fit of ``dicts`` into ``target`` tokens: clearing old results,
    dropping the oldest messages, cutting an oversized last round) as an ``agentcontext.compaction``
    span of kind ``fit``: messages and tokens before and after, the target, whether it fits. The
    core's fit reports no stages, so the span claims none. Within :func:`reporting_fits`, the same
    facts as :class:`CompactionStarted` / :class:`CompactionFinished` events. With no callback and
    no span that could record (:func:`~agentcontext.observe.emit.recording_tracer`): ``fit()``."""
    listener = _FIT_EVENTS.get()
    tracer = recording_tracer()
    if listener is None and tracer is None:
        return fit()
    observer = Observer(listener[0] if listener is not None else None)
    if listener is None:
        return _fit_span(observer, dicts, fmt, encoding, target, fit)
    return _fit_reported(observer, listener[1], dicts, fmt, encoding, target, fit)


def _fit_span(
    observer: Observer,
    dicts: list[dict[str, Any]],
    fmt: str,
    encoding: str,
    target: int,
    fit: Callable[[], list[dict[str, Any]]],
) -> list[dict[str, Any]]:
    """``fit()`` in a span, no events: its attributes computed only when it records."""
    with observer.span("agentcontext.compaction", {"agentcontext.compaction.kind": "fit"}) as span:
        out = fit()
        if span is not None:
            before = _tokens(dicts, fmt, encoding)
            after = _tokens(out, fmt, encoding) if before is not None else None
            span.set_attributes(_fit_attributes(dicts, out, target, before, after))
        return out


def _fit_reported(
    observer: Observer,
    adapter: str,
    dicts: list[dict[str, Any]],
    fmt: str,
    encoding: str,
    target: int,
    fit: Callable[[], list[dict[str, Any]]],
) -> list[dict[str, Any]]:
    """``fit()`` reported to the callback (and in a span when one records): a started event,
    then a finished one with the fit's counts (or its error)."""
    started = time.perf_counter()
    before = _tokens(dicts, fmt, encoding)
    tokens = before if before is not None else 0
    observer.emit(CompactionStarted("fit", tokens, len(dicts), target, adapter))
    with observer.span("agentcontext.compaction", {"agentcontext.compaction.kind": "fit"}) as span:
        try:
            out = fit()
        except Exception as exc:
            observer.emit(_fit_finished(adapter, dicts, dicts, target, tokens, tokens, started, exc))
            raise
        after = _tokens(out, fmt, encoding) if before is not None else None
        if span is not None:
            span.set_attributes(_fit_attributes(dicts, out, target, before, after))
        observer.emit(_fit_finished(adapter, dicts, out, target, tokens, after, started, None))
        return out


def _fit_finished(
    adapter: str,
    dicts: list[dict[str, Any]],
    out: list[dict[str, Any]],
    target: int,
    before: int,
    after: int | None,
    started: float,
    error: Exception | None,
) -> CompactionFinished:
    """The finished event of a fit: its messages (the adapter's dicts) kept (the same dict came
    back), changed (a copy: a result cleared or cut) and dropped; no stages, no cache impact."""
    ids = {id(d) for d in dicts}
    kept = sum(1 for d in out if id(d) in ids)
    tokens_after = after if after is not None else before
    return CompactionFinished(
        kind="fit", tokens_before=before, tokens_after=tokens_after, target=target,
        fits=error is None and tokens_after <= target, stages=(), messages_before=len(dicts),
        messages_after=len(out), messages_kept=kept, messages_changed=len(out) - kept, messages_summarized=0,
        messages_dropped=max(0, len(dicts) - len(out)), results_cut=0, results_cleared=0, recall_ids=(), cache=None,
        seconds=time.perf_counter() - started, policy=adapter,
        error=None if error is None else f"{type(error).__name__}: {error}",
    )  # fmt: skip


def _fit_attributes(
    dicts: list[Any], out: list[Any], target: int, before: int | None, after: int | None
) -> dict[str, Any]:
    """The attributes of a fit's span (the tokens left out when the dicts cannot be read as a
    conversation)."""
    attributes: dict[str, Any] = {
        "agentcontext.compaction.target": target,
        "agentcontext.compaction.messages_before": len(dicts),
        "agentcontext.compaction.messages_after": len(out),
    }
    if before is not None and after is not None:
        attributes["agentcontext.compaction.tokens_before"] = before
        attributes["agentcontext.compaction.tokens_after"] = after
        attributes["agentcontext.compaction.fits"] = after <= target
    return attributes


def _tokens(dicts: list[Any], fmt: str, encoding: str) -> int | None:
    """The tokens of ``dicts`` read as a conversation (None when they cannot be)."""
    from agentcontext._core import Conversation

    try:
        return Conversation(dicts, format=fmt, encoding=encoding).tokens  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - what the fit took, the report need not count
        return None
