"""Batch evaluation: many strategies over many transcripts, in parallel (processes on this
machine, or a Ray cluster), as a comparison table, JSON and CSV. ``agentcontext eval`` runs it.
"""

from __future__ import annotations

import csv
import io
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from agentcontext import _checks
from agentcontext._core import Conversation
from agentcontext.compaction import PRESETS
from agentcontext.compaction.pricing import Prices, price_tables
from agentcontext.errors import AgentContextError, MissingExtraError, OptionError
from agentcontext.measure.metrics import BASELINE, PROBE_KINDS, Evaluation, Timing, evaluate, summarize_evaluations

if TYPE_CHECKING:
    from agentcontext import importers

__all__ = ["Task", "discover", "format_table", "per_transcript_table", "run", "scan", "write_csv", "write_json"]

#: Price tables: model names, :class:`~agentcontext.compaction.pricing.Prices`, ``"a,b"`` or None for the
#: defaults (:data:`~agentcontext.compaction.pricing.EVAL_PRICES`); ``()`` or ``"none"``: no cost columns.
PriceTables = str | Sequence[Prices | str] | None

Engine = Literal["local", "ray"]

#: File name endings looked at when a folder is given.
SUFFIXES = (".jsonl", ".json", ".traj", ".md")

#: CSV columns, one row per transcript and strategy.
CSV_COLUMNS = (
    "transcript", "strategy", "budget", "messages", "tokens_before", "tokens_after", "reduction", "fits", "valid",
    "violations", "retention", "probes", "kept_probes", "latest_ask", "latest_whole", "latest_ask_tokens",
    "artifact_trail", "constraints", "fill", "over", "summary_tokens", "summary_ratio", "cache_stability", "cache_write_tokens",
    "compactions_per_100_turns", "turns", "seconds", "error", "cached_tokens",
)  # fmt: skip


@dataclass(frozen=True)
class Task:
    """One conversation (the ``index``-th of a file, named ``name``) to evaluate with one strategy."""

    path: str
    index: int
    name: str
    strategy: str
    budget: str
    #: The price tables whose cost under a model of time is measured, without and with the cache schedule.
    prices: tuple[Prices, ...] = ()
    #: Also replay with the cache schedule under each table (:attr:`Evaluation.scheduled`).
    schedule: bool = False


def discover(paths: Iterable[str | os.PathLike[str]]) -> list[tuple[str, int, str]]:
    """``(file, index in the file, name)`` for every conversation in ``paths``: files, or folders
    searched recursively for ``.jsonl``, ``.json``, ``.traj`` and ``.md`` files, in an agent session
    format (see :mod:`agentcontext.importers`) or one of the library's own formats. A file given by
    name that cannot be read raises; files found in folders that cannot be read are left out here
    (:func:`scan` returns them with the reason, and :func:`run` reports each as a failed row).
    Names are made unique across files (parent folders in front)."""
    return scan(paths)[0]


def scan(
    paths: Iterable[str | os.PathLike[str]],
) -> tuple[list[tuple[str, int, str]], list[tuple[str, AgentContextError]]]:
    """:func:`discover`, and every file found in a folder that cannot be read as a transcript,
    with the error that says why (in the order found)."""
    from agentcontext import importers

    agent_files: list[Path] = []
    out: list[tuple[str, int, str]] = []
    failed: list[tuple[str, AgentContextError]] = []
    named: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        explicit = not path.is_dir()
        files = [path] if explicit else sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(SUFFIXES))
        for f in files:
            try:
                if importers.detect(f) is not None:
                    agent_files.append(f)
                    if explicit:
                        named.add(f)
                else:
                    Conversation.from_file(f)
                    out.append((str(f), -1, f.stem))
            except AgentContextError as exc:
                if explicit:
                    importers.load(f)  # raises the error that lists every format tried
                    raise
                reason = exc
                try:
                    importers.load(f)
                except AgentContextError as why:  # the error a path given by name gets
                    reason = why
                failed.append((str(f), reason))
    counters: dict[str, int] = {}
    for item in _import_each(agent_files, named, failed):
        index = counters.get(str(item.path), 0)
        counters[str(item.path)] = index + 1
        out.append((str(item.path), index, item.name))
    names = [name for _, _, name in out]
    if len(set(names)) != len(names):
        out = [(p, i, n if names.count(n) == 1 else f"{Path(p).parent.name}--{n}") for p, i, n in out]
    return out, sorted(failed, key=lambda pe: pe[0])


def _import_each(
    files: list[Path], named: set[Path], failed: list[tuple[str, AgentContextError]]
) -> list[importers.Imported]:
    """``importers.import_files(files)``; when that fails, the files that cannot be imported go to
    ``failed`` (or raise, when given by name) and the rest are imported."""
    from agentcontext import importers

    try:
        return importers.import_files(files)
    except AgentContextError:
        pass
    ok = []
    for f in files:
        try:
            importers.import_file(f)
        except AgentContextError as exc:
            if f in named:
                raise
            failed.append((str(f), exc))
        else:
            ok.append(f)
    return importers.import_files(ok)


def evaluate_task(task: Task) -> Evaluation:
    """Run one task (in a worker process or a Ray task). Errors are reported in the row."""
    try:
        conv = _load(task.path, task.index)
        return evaluate(conv, task.strategy, task.budget, name=task.name, prices=task.prices, schedule=task.schedule)
    except AgentContextError as exc:
        return _failed(task, exc)


def _load(path: str, index: int) -> Conversation:
    """The ``index``-th conversation of a file (-1: the file is one conversation in a library
    format), by :func:`agentcontext.importers.load`, cached: every strategy reads the same file."""
    from agentcontext import importers

    return importers.load(path, session=None if index < 0 else index, cache=True)


def _failed(task: Task, exc: BaseException) -> Evaluation:
    return Evaluation(
        transcript=task.name, strategy=task.strategy, budget=0, messages=0, tokens_before=0, tokens_after=0,
        fits=False, valid=False, violations=0, retention=0.0, retention_by_kind={}, probes=0, lost=[],
        summary_tokens=0, summarized_tokens=0, cache_stability=0.0, cache_write_tokens=0,
        compactions_per_100_turns=0.0, turns=0, seconds=0.0, error=f"{type(exc).__name__}: {exc}",
    )  # fmt: skip


class Progress:
    """A one-line progress bar on a stream (redrawn in place on a terminal, else every tenth)."""

    def __init__(self, total: int, stream: TextIO | None, label: str = "eval") -> None:
        self.total, self.stream, self.label = total, stream, label
        self.done = 0
        self.started = time.perf_counter()
        self.tty = bool(stream is not None and stream.isatty())
        self._last_tenth = -1

    def step(self) -> None:
        self.done += 1
        if self.stream is None:
            return
        tenth = self.done * 10 // max(self.total, 1)
        if not self.tty and tenth == self._last_tenth and self.done != self.total:
            return
        self._last_tenth = tenth
        width = 30
        filled = width * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (width - filled)
        elapsed = time.perf_counter() - self.started
        line = f"{self.label} [{bar}] {self.done}/{self.total} {elapsed:.1f}s"
        end = "\n" if (not self.tty or self.done == self.total) else ""
        self.stream.write(("\r" if self.tty else "") + line + end)
        self.stream.flush()


def run(
    paths: Sequence[str | os.PathLike[str]],
    strategies: Sequence[str],
    budget: str | int,
    *,
    engine: Engine = "local",
    workers: int | None = None,
    progress: TextIO | None = None,
    ray_address: str | None = None,
    prices: PriceTables = (),
    schedule: bool = False,
) -> list[Evaluation]:
    """Evaluate every strategy on every conversation in ``paths`` under ``budget`` (tokens or a
    share such as ``"25%"`` of each transcript). ``engine="local"`` uses ``workers`` processes
    (default: the CPU count; 1 runs in this process); ``"ray"`` submits one Ray task per
    conversation and strategy to the cluster at ``ray_address`` (default: ``RAY_ADDRESS``, else a
    local instance). Rows come back in transcript order, then strategy order; a file found in a
    folder that cannot be read as a transcript comes last, as one failed row per strategy (its
    ``transcript`` is the path, its ``error`` the reason). ``prices``: the price tables (as for
    :func:`format_table`; ``()``: none) under which each replay is also priced with a model of time
    (the cost table's ``timed`` column); ``schedule``: and replayed once more per table with the
    cache schedule (its ``scheduled`` column)."""
    if workers is not None:
        # 0 or -1 ran every task in this process, as 1 does, without a word.
        _checks.count("workers", workers, minimum=1)
    unknown = [s for s in strategies if s not in PRESETS and s != BASELINE]
    if unknown:
        raise OptionError(f"unknown strategies {unknown} (expected some of: {', '.join([*PRESETS, BASELINE])})")
    if not strategies:
        raise OptionError("no strategy given")
    found, unreadable = scan(paths)
    if not found and not unreadable:
        raise OptionError(f"no transcripts found in {', '.join(map(str, paths))}")
    tables = tuple(price_tables(prices))
    tasks = [
        Task(path, index, name, s, str(budget), tables, schedule) for path, index, name in found for s in strategies
    ]
    bar = Progress(len(tasks), progress)
    if engine not in ("local", "ray"):
        raise OptionError(f"unknown engine {engine!r} (expected local or ray)")
    if not tasks:
        rows = []
    elif engine == "ray":
        rows = _run_ray(tasks, bar, ray_address)
    else:
        rows = _run_local(tasks, bar, workers)
    # A file found in a folder that cannot be read fails every strategy: counted, not skipped.
    return rows + [_failed(Task(path, -1, path, s, str(budget)), exc) for path, exc in unreadable for s in strategies]


def _run_local(tasks: list[Task], bar: Progress, workers: int | None) -> list[Evaluation]:
    n = workers if workers is not None else (os.cpu_count() or 1)
    if n <= 1 or len(tasks) == 1:
        out = []
        for t in tasks:
            out.append(evaluate_task(t))
            bar.step()
        return out
    results: dict[int, Evaluation] = {}
    # Spawned, not forked: the core's thread pool must not be copied mid-flight into a child.
    with ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(evaluate_task, t): i for i, t in enumerate(tasks)}
        for future in as_completed(futures):
            results[futures[future]] = future.result()
            bar.step()
    return [results[i] for i in range(len(tasks))]


def _run_ray(tasks: list[Task], bar: Progress, address: str | None) -> list[Evaluation]:
    try:
        import ray
    except ImportError as exc:
        raise MissingExtraError("--engine ray needs Ray: pip install 'agentcontext[ray]'") from exc
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=address or os.environ.get("RAY_ADDRESS"), include_dashboard=False, log_to_driver=False)
    try:
        remote = ray.remote(evaluate_task)
        refs = [remote.remote(t) for t in tasks]
        index = {ref: i for i, ref in enumerate(refs)}
        results: dict[int, Evaluation] = {}
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                results[index[ref]] = ray.get(ref)
                bar.step()
        return [results[i] for i in range(len(tasks))]
    finally:
        if started_here:
            ray.shutdown()


# ---------------------------------------------------------------------------------------------
# Output.


def _pct(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}%}"


def _whole(share: float | None, runs: int) -> str:
    """The latest-whole cell: the share, and over how many runs (those whose latest request is at
    most a quarter of the budget)."""
    return "-" if share is None else f"{share:.0%} ({runs})"


def _dollars(x: float | None) -> str:
    return "-" if x is None else f"${x:,.3f}"


def _rows(
    rows: Sequence[Evaluation], prices: PriceTables = None
) -> tuple[list[str], list[list[str]], list[str], list[list[str]], list[str], list[list[str]]]:
    """The cells of the tables: one row per strategy of the measures (with the replay's cost under
    each price table), of retention by kind, and of the cost by part, per price table."""
    tables = [t.name or "custom" for t in price_tables(prices)]
    summary = summarize_evaluations(rows, prices)
    header = ["strategy", "transcripts", "valid", "fits", "fill", "fill ≥ 80%", "reduction", "retention",
              "latest ask", "latest whole", "artifact trail", "constraints", "cache stability", "compactions/100 turns",
              *(f"cost {t}" for t in tables)]  # fmt: skip
    body = [
        [
            s["strategy"],
            f"{s['transcripts']}" + (f" ({s['errors']} failed)" if s["errors"] else ""),
            _pct(s["valid"], 0),
            _pct(s["fits"], 0),
            _pct(s["fill"], 0),
            _pct(s["filled"], 0),
            _pct(s["reduction"]),
            _pct(s["retention"]),
            _pct(s["latest_ask"], 0),
            _whole(s["latest_whole"], s["latest_whole_runs"]),
            _pct(s["artifact_trail"]),
            _pct(s["constraints"]),
            _pct(s["cache_stability"]),
            "-" if s["compactions_per_100_turns"] is None else f"{s['compactions_per_100_turns']:.2f}",
            *(_dollars(c["dollars"] if (c := s["cost"][t]) else None) for t in tables),
        ]
        for s in summary
    ]
    kinds_header = ["strategy", *(k.replace("_", " ") for k in PROBE_KINDS)]
    kinds_body = [[s["strategy"], *(_pct(s["retention_by_kind"][k]) for k in PROBE_KINDS)] for s in summary]
    # With the cache schedule measured (eval --schedule): the cost under a model of time, without and with it.
    timed = any(r.scheduled for r in rows)
    cost_header = ["strategy", "prices", "cache reads", "cache writes", "reads", "writes", "total",
                   *(["timed", "scheduled"] if timed else [])]  # fmt: skip
    cost_body = [
        [
            s["strategy"],
            t,
            f"{c['read_tokens']:,}",
            f"{c['written_tokens']:,}",
            _dollars(c["read_dollars"]),
            _dollars(c["written_dollars"]),
            _dollars(c["dollars"]),
            *(
                [
                    _dollars(x["dollars"] if (x := d.get(t)) else None)
                    for d in (s.get("timed_cost", {}), s.get("scheduled_cost", {}))
                ]
                if timed
                else []
            ),
        ]
        for s in summary
        for t in tables
        if (c := s["cost"][t]) is not None
    ]
    return header, body, kinds_header, kinds_body, cost_header, cost_body


#: The title of the cost table (the replayed requests' input tokens, priced).
COST_TITLE = (
    "replay input cost per price table (cache writes at the write price: OpenAI's is its uncached input price; "
    "timed: a call after the TTL reads nothing, tool turns 10 s, user turns 600 s apart; scheduled: the same "
    "with the cache schedule)"
)


def _text_table(header: list[str], body: list[list[str]]) -> list[str]:
    table = [header, *body]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = []
    for n, row in enumerate(table):
        lines.append(
            "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return [line.rstrip() for line in lines]


def format_table(rows: Sequence[Evaluation], prices: PriceTables = None) -> str:
    """Up to three tables. One line per strategy: transcripts, share valid, share fitting the
    budget, mean fill (output tokens / budget, over the outputs that fit a budget their original
    exceeded; an output over the budget has no fill), the share of those filled to at least 80%,
    mean token reduction, probe retention pooled over every probe of every transcript, share of
    outputs holding the latest user request, the share holding it whole (verbatim) over the
    outputs where it is at most a quarter of the budget (their number in parentheses), pooled
    retention of the artifact trail (the files the agent read, created, edited or deleted) and of
    the user's constraint sentences, pooled prompt-cache stability, compactions per 100
    turns, the replayed requests' input cost under each price table of ``prices`` (None: one
    Anthropic and one OpenAI model, :data:`~agentcontext.compaction.pricing.EVAL_PRICES`; ``()``: none) and
    total seconds; then pooled retention per probe kind; then, when a strategy was replayed and
    there are prices, that cost by part: cache reads and writes, in tokens and dollars."""
    header, body, kinds_header, kinds_body, cost_header, cost_body = _rows(rows, prices)
    seconds = {s["strategy"]: s["seconds"] for s in summarize_evaluations(rows, ())}
    header = [*header, "time"]
    body = [[*r, f"{seconds[r[0]]:.2f}s"] for r in body]
    cost = ["", COST_TITLE, *_text_table(cost_header, cost_body)] if cost_body else []
    return "\n".join(
        [*_text_table(header, body), "", "retention by probe kind", *_text_table(kinds_header, kinds_body), *cost]
    )


def markdown_table(rows: Sequence[Evaluation], prices: PriceTables = None) -> str:
    """:func:`format_table` as Markdown tables (for READMEs and reports), without the times and
    the titles."""
    header, body, kinds_header, kinds_body, cost_header, cost_body = _rows(rows, prices)

    def table(h: list[str], b: list[list[str]]) -> list[str]:
        return [
            "| " + " | ".join(h) + " |",
            "|---|" + "---:|" * (len(h) - 1),
            *("| " + " | ".join(r) + " |" for r in b),
        ]

    cost = ["", *table(cost_header, cost_body)] if cost_body else []
    return "\n".join([*table(header, body), "", *table(kinds_header, kinds_body), *cost])


def per_transcript_table(rows: Sequence[Evaluation], *, markdown: bool = False) -> str:
    """One line per transcript: its probes, then each strategy's retention, the latest ask kept
    (``ask``/``no ask``; nothing when the transcript has no request) and fill where the original
    exceeded the budget and the output fits it (``over`` and output / budget where it does not); ``< baseline`` marks a retention below :data:`~agentcontext.measure.metrics.BASELINE`'s
    on that transcript, ``failed`` a run that raised. As text, names over 48 characters are cut."""
    strategies = list(dict.fromkeys(r.strategy for r in rows))
    by: dict[str, dict[str, Evaluation]] = {}
    for r in rows:
        by.setdefault(r.transcript, {})[r.strategy] = r
    header = ["transcript", "probes", *strategies]
    body = []
    for name, runs in by.items():
        base = runs.get(BASELINE)
        cells = []
        for s in strategies:
            run = runs.get(s)
            if run is None:
                cells.append("-")
                continue
            if run.error is not None:
                cells.append("failed")
                continue
            parts = [_pct(run.retention)]
            if run.latest_ask is not None:
                parts.append("ask" if run.latest_ask else "no ask")
            if run.fill is not None:
                parts.append(f"fill {run.fill:.0%}")
            elif run.over:
                parts.append(f"over {run.tokens_after / run.budget:.0%}")
            if base is not None and s != BASELINE and base.error is None and run.retention < base.retention:
                parts.append("< baseline")
            cells.append(", ".join(parts))
        probes = max((r.probes for r in runs.values()), default=0)
        shown = name if markdown or len(name) <= 48 else name[:47] + "…"
        body.append([shown, str(probes), *cells])
    if markdown:
        return "\n".join(
            [
                "| " + " | ".join(header) + " |",
                "|---|" + "---:|" * (len(header) - 1),
                *("| " + " | ".join(r) + " |" for r in body),
            ]
        )
    return "\n".join(_text_table(header, body))


def report_start(kind: str) -> bytes:
    """How a report ``agentcontext eval`` writes starts: ``"json"`` (:func:`write_json` with the
    command's ``budget`` first) or ``"csv"`` (:func:`write_csv`'s header, up to its cost columns)."""
    if kind == "json":
        return b'{\n  "budget": '
    return ",".join(CSV_COLUMNS).encode()


def write_json(
    rows: Sequence[Evaluation], path: str | os.PathLike[str], *, prices: PriceTables = None, **meta: Any
) -> None:
    """``meta``, the summary (``strategies``, :func:`~agentcontext.measure.metrics.summarize_evaluations`)
    and every run, each with its ``cost`` under each price table of ``prices`` (as for
    :func:`format_table`). Written as ``compact -o`` writes (:func:`agentcontext._checks.write_output`):
    a file replaced whole, a FIFO only when a process reads it."""
    tables = price_tables(prices)
    data = {
        **meta,
        "prices": [t.name or "custom" for t in tables],
        "strategies": summarize_evaluations(rows, tables),
        "runs": [r.to_dict(tables) for r in rows],
    }
    _checks.write_output(os.fspath(path), json.dumps(data, indent=2, ensure_ascii=False) + "\n", "--json")


#: The CSV cost columns' prefixes and the timing each prices (:meth:`Evaluation.cost`).
_TIMINGS: tuple[tuple[str, Timing], ...] = (("cost", "warm"), ("timed_cost", "timed"), ("scheduled_cost", "scheduled"))


def write_csv(rows: Sequence[Evaluation], path: str | os.PathLike[str], *, prices: PriceTables = None) -> None:
    """One row per run: :data:`CSV_COLUMNS`, then for each price table of ``prices`` (as for
    :func:`format_table`) ``cost_<name>``: the replayed requests' input cost in dollars (empty
    without a replay), and, when the rows were measured with the cache schedule (``eval
    --schedule``), ``timed_cost_<name>`` and ``scheduled_cost_<name>``: the same under a model of
    time, without and with it."""
    tables = price_tables(prices)
    names = [t.name or "custom" for t in tables]
    buffer = io.StringIO()
    timings = _TIMINGS if any(r.scheduled for r in rows) else _TIMINGS[:1]
    columns = [*CSV_COLUMNS, *(f"{k}_{n}" for n in names for k, _ in timings)]
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for r in rows:
        row: dict[str, Any] = dict(r.to_dict())
        for n, t in zip(names, tables, strict=True):
            for key, timing in timings:
                cost = r.cost(t, timing)
                row[f"{key}_{n}"] = "" if cost is None else cost.dollars
        writer.writerow(row)
    _checks.write_output(os.fspath(path), buffer.getvalue(), "--csv")


def progress_stream(enabled: bool | None) -> TextIO | None:
    """stderr when ``enabled`` (None: when stderr is a terminal)."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    return sys.stderr if enabled else None
