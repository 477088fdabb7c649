"""The handoff the ladder keeps in the core (``HandoffScan._facts``, issue #30 item 4): its dict is
the handoff's, and the offline summary written from it — its tests and decisions written by the
core's fit, never as Python strings — is the summary written from the dict."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import agentcontext as ac
from agentcontext._core import _SUMMARY_SECTIONS, HandoffScan, _fit_summary, _HandoffFacts
from agentcontext.compaction.summarize import OfflineSummarizer, SummaryRequest
from agentcontext.compaction.summary_text import _merge
from tests.support import synthetic_session

TESTS = _SUMMARY_SECTIONS.index("Tests (last status)")
DECISIONS = _SUMMARY_SECTIONS.index("Decisions")
CONV = ac.Conversation(synthetic_session(240, seed=5), format="openai")
SCAN = HandoffScan(CONV, 1)
STOPS = (0, 1, 40, 130, len(CONV))
FACTS = {stop: SCAN._facts(stop) for stop in STOPS}


def _lines(h: ac.Handoff) -> dict[int, list[str]]:
    """The summarizer's lines of the two sections the core writes from a handoff."""
    return {
        TESTS: [f"- {name}: {status}" for name, status in reversed(h["tests"])],
        DECISIONS: [f"- {d}" for d in reversed(h["decisions"])],
    }


def test_the_facts_give_the_handoff_and_without_texts_only_its_long_lists_empty() -> None:
    for stop, facts in FACTS.items():
        assert isinstance(facts, _HandoffFacts)
        full = CONV.handoff(1, stop)
        assert facts.handoff() == full == SCAN.handoff(stop)
        light = facts.handoff(texts=False)
        assert light.keys() == full.keys()
        assert light["tests"] == [] and light["decisions"] == []
        assert {k: v for k, v in light.items() if k not in ("tests", "decisions")} == {
            k: v for k, v in full.items() if k not in ("tests", "decisions")
        }
    full = CONV.handoff(1, len(CONV))
    assert full["tests"] and full["decisions"], "the session has both: the comparisons below say something"


_LINE = st.sampled_from(["- a", "- b", "- test_x: passed", "- I'll fix it", "- é", ""]) | st.text(max_size=12)


@settings(max_examples=150, deadline=None)
@given(
    stop=st.sampled_from(STOPS),
    cap=st.integers(64, 3_000),  # the ladder asks for 64 at least
    old_tests=st.lists(_LINE, max_size=6),
    old_decisions=st.lists(_LINE, max_size=6),
    other=st.lists(_LINE, max_size=4),
    steal=st.integers(0, 3),
)
def test_the_fit_with_the_facts_is_the_fit_with_their_lines(
    stop: int, cap: int, old_tests: list[str], old_decisions: list[str], other: list[str], steal: int
) -> None:
    facts = FACTS[stop]
    new = _lines(facts.handoff())
    # Lines of a previous summary, some of them the handoff's own (merged once, at their first place).
    old = {TESTS: [*new[TESTS][:steal], *old_tests], DECISIONS: [*old_decisions, *new[DECISIONS][-steal:]]}
    given_lines: list[list[str]] = [
        other if i not in (0, TESTS, DECISIONS) else [] for i in range(len(_SUMMARY_SECTIONS))
    ]
    plain = [list(lines) for lines in given_lines]
    lazy = [list(lines) for lines in given_lines]
    for i in (TESTS, DECISIONS):
        plain[i] = _merge(new[i], _merge([], old[i]))
        lazy[i] = _merge([], old[i])
    kw = {"encoding": "o200k_base", "request_room": 0, "recall_id": None, "held": None, "constraints": []}
    assert _fit_summary("fix it", lazy, cap, **kw, facts=facts) == _fit_summary("fix it", plain, cap, **kw)
    # Duplicates left in the lines given are merged away too (the summarizer's merge).
    doubled = [list(lines) for lines in lazy]
    doubled[TESTS] = [*old[TESTS], *old[TESTS]]
    assert _fit_summary("fix it", doubled, cap, **kw, facts=facts) == _fit_summary("fix it", plain, cap, **kw)


def test_the_offline_summary_from_the_facts_is_the_summary_from_the_handoff() -> None:
    summarizer = OfflineSummarizer()
    for stop in (40, 130, len(CONV)):
        for cap in (200, 1_500, 20_000):
            plain = SummaryRequest(CONV, 1, stop, None, cap, original=CONV)
            lazy = SummaryRequest(CONV, 1, stop, None, cap, original=CONV, context={"handoff": (1, stop, FACTS[stop])})
            assert summarizer.summarize(lazy) == summarizer.summarize(plain)
            # With a previous summary whose tests and decisions the new ones merge with.
            previous = summarizer.summarize(SummaryRequest(CONV, 1, 40, None, 20_000, original=CONV))
            plain = SummaryRequest(CONV, 1, stop, previous, cap, original=CONV)
            lazy = SummaryRequest(
                CONV, 1, stop, previous, cap, original=CONV, context={"handoff": (1, stop, FACTS[stop])}
            )
            assert summarizer.summarize(lazy) == summarizer.summarize(plain)


def test_facts_of_another_span_are_not_used() -> None:
    summarizer = OfflineSummarizer()
    plain = SummaryRequest(CONV, 1, 130, None, 1_500, original=CONV)
    other = SummaryRequest(CONV, 1, 130, None, 1_500, original=CONV, context={"handoff": (1, 40, FACTS[40])})
    assert summarizer.summarize(other) == summarizer.summarize(plain)


def test_the_python_reference_fit_reads_the_facts_the_same() -> None:
    from agentcontext.compaction import summarize
    from tests.compaction import reference_fit

    for stop in (130, len(CONV)):
        for cap in (300, 3_000):
            request = SummaryRequest(
                CONV, 1, stop, None, cap, original=CONV, context={"handoff": (1, stop, FACTS[stop])}
            )
            new = OfflineSummarizer().summarize(request)
            core_fit = summarize._fit
            try:
                summarize._fit = reference_fit._fit  # type: ignore[assignment]
                old = OfflineSummarizer().summarize(request)
            finally:
                summarize._fit = core_fit
            assert new == old
