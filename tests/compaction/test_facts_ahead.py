"""A span's whole handoff made ahead on the core's threads (``HandoffScan._facts_ahead``, issue #30
item 4: the ladder has it made while Python checks the span's facts): whatever else is asked of
the scan meanwhile, ``_facts`` gives what it gives when nothing was made ahead, and the offline
summary's fit writes the same text from it."""

from __future__ import annotations

import functools
import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Callable

import pytest

import agentcontext as ac
from agentcontext._core import _SUMMARY_SECTIONS, HandoffScan, _fit_summary
from tests.support import synthetic_session

CONV = ac.Conversation(synthetic_session(300, seed=11), format="openai")
STOPS = (1, 2, 90, 200, len(CONV) - 3, len(CONV))
KW = {"encoding": "o200k_base", "request_room": 0, "recall_id": None, "held": None, "constraints": []}
SECTIONS = [[] for _ in _SUMMARY_SECTIONS]


def _expected(stop: int) -> tuple[ac.Handoff, tuple[str, int | None]]:
    """The handoff of ``1:stop`` and the offline fit's text from it, nothing made ahead."""
    facts = HandoffScan(CONV, 1)._facts(stop)
    return facts.handoff(), _fit_summary("fix it", SECTIONS, 900, **KW, facts=facts)


EXPECTED = {stop: _expected(stop) for stop in STOPS}


def _made(scan: HandoffScan, stop: int) -> tuple[ac.Handoff, tuple[str, int | None]]:
    facts = scan._facts(stop)
    return facts.handoff(), _fit_summary("fix it", SECTIONS, 900, **KW, facts=facts)


def test_the_session_has_what_the_comparisons_need() -> None:
    full, _ = EXPECTED[len(CONV)]
    assert full["tests"] and full["decisions"] and full["last_assistant"]


@pytest.mark.parametrize("stop", STOPS)
def test_made_ahead_after_the_ledger_of_the_span_is_what_is_made_when_asked(stop: int) -> None:
    scan = HandoffScan(CONV, 1)
    scan.ledger_handoff(len(CONV))
    scan.ledger_handoff(stop)  # the span merged last: made ahead
    scan._facts_ahead(stop)
    assert _made(scan, stop) == EXPECTED[stop]
    # Asked again: made anew, the same.
    assert _made(scan, stop) == EXPECTED[stop]


def test_a_span_the_scan_does_not_know_is_made_when_asked() -> None:
    for stop in STOPS:
        scan = HandoffScan(CONV, 1)
        scan._facts_ahead(stop)  # nothing merged yet: nothing made ahead
        assert _made(scan, stop) == EXPECTED[stop]
    scan = HandoffScan(CONV, 1)
    scan.ledger_handoff(90)
    scan._facts_ahead(200)  # another span than the one merged last
    assert _made(scan, 200) == EXPECTED[200]


def test_another_stop_asked_or_merged_meanwhile_gets_its_own_handoff() -> None:
    scan = HandoffScan(CONV, 1)
    scan.ledger_handoff(200)
    scan._facts_ahead(200)
    scan.ledger_handoff(90)  # the scan's last span changes (before or after the job ran)
    assert _made(scan, 90) == EXPECTED[90]
    assert _made(scan, 200) == EXPECTED[200]
    scan.ledger_handoff(len(CONV))
    scan._facts_ahead(len(CONV))
    assert _made(scan, 2) == EXPECTED[2]
    assert _made(scan, len(CONV)) == EXPECTED[len(CONV)]


def test_stops_past_the_end_or_before_the_start_read_as_the_other_methods_read_them() -> None:
    scan = HandoffScan(CONV, 1)
    scan.ledger_handoff(len(CONV))
    scan._facts_ahead(10**9)  # clamped to the length, as _facts clamps it
    assert _made(scan, len(CONV)) == EXPECTED[len(CONV)]
    scan._facts_ahead(0)
    scan._facts_ahead(1)  # empty spans: nothing to make
    assert scan._facts(1).handoff() == CONV.handoff(1, 1)
    scan._facts_ahead(None)
    assert _made(scan, len(CONV)) == EXPECTED[len(CONV)]


def test_many_threads_on_one_scan_each_get_the_handoff_of_their_stop() -> None:
    scan = HandoffScan(CONV, 1)
    wrong: list[int] = []

    def work(k: int) -> None:
        for n in range(12):
            stop = STOPS[(k + n) % len(STOPS)]
            scan.ledger_handoff(stop)
            scan._facts_ahead(stop)
            if _made(scan, stop) != EXPECTED[stop]:
                wrong.append(stop)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


def _child(q: mp.Queue) -> None:  # type: ignore[type-arg]
    q.put(_made(FORKED, len(CONV))[0])


FORKED = HandoffScan(CONV, 1)


@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="needs fork (POSIX)")
def test_a_child_forked_after_a_handoff_was_asked_ahead_makes_its_own() -> None:
    FORKED.ledger_handoff(len(CONV))
    FORKED._facts_ahead(len(CONV))
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q,))
    p.start()
    got = q.get(timeout=60)
    p.join(60)
    assert p.exitcode == 0
    assert got == EXPECTED[len(CONV)][0]
    assert _made(FORKED, len(CONV)) == EXPECTED[len(CONV)]


def _in_child(work: Callable[[], bool], seconds: int = 20) -> int | None:
    """The exit status of a forked child running ``work`` (0: True), None when it was still
    running after ``seconds`` (killed then)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        signal.alarm(seconds + 5)
        try:
            os._exit(0 if work() else 3)
        except BaseException:  # noqa: BLE001 - reported as a status
            os._exit(4)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork (POSIX)")
def test_a_child_forked_while_a_handoff_is_made_ahead_reads_the_scan() -> None:
    """A fork while the pool's job held the scan (the job takes a few milliseconds here: forks
    at a few delays after it was started): the child, which has not that thread, waited for the
    scan for ever in ``handoff``, ``ledger_handoff``, ``_facts_ahead`` and a second ``_facts``."""
    conv = ac.Conversation(synthetic_session(20000, seed=3), format="openai")
    n = len(conv)
    expected = conv.handoff(1, n)
    uses: list[Callable[[HandoffScan], ac.Handoff]] = [
        lambda s: s.handoff(n),
        lambda s: (s._facts(n), s._facts(n).handoff())[1],
        lambda s: (s.ledger_handoff(n), s._facts_ahead(n), s._facts(n).handoff())[2],
    ]
    statuses = []
    for delay in (0.0, 0.001, 0.002):
        for use in uses:
            scan = HandoffScan(conv, 1)
            scan.ledger_handoff(n)
            scan._facts_ahead(n)
            time.sleep(delay)
            statuses.append(_in_child(functools.partial(lambda u, s: u(s) == expected, use, scan)))
            assert scan._facts(n).handoff() == expected
    assert statuses == [0] * len(statuses)
