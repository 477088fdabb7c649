"""The offline summary's fit moved into the core (``_core._fit_summary``, issue #30): it writes
what the Python fit wrote (:mod:`tests.compaction.reference_fit`), to the byte."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentcontext as ac
from agentcontext.compaction.summarize import (
    _CONSTRAINT,
    _CONSTRAINT_WORD,
    USER_LINE_CHARS,
    OfflineSummarizer,
    SummaryRequest,
    _constraints,
    _fit,
    shrink_summary,
)
from agentcontext.compaction.summary_text import _SECTIONS, CARRIED, USERS
from tests import support
from tests.compaction import reference_fit

# Words that exercise the fit's rules: paths named twice, stops and breaks around facts, Python's
# whitespace (the separators \x1c-\x1f are whitespace to Python, not to Rust's char), constraint
# words, wide characters.
_WORDS = [
    "src/app.py", "tests/test_app.py", "app.py", "ok", "ok.", "ok:", "never", "don't", "use x not y", "stop",
    "é", "日本", "(a)", "[b]", "`c`", '"d"', "e,f", "g;h", "a.b.", "?", "!", "-", "- ", "...", "x" * 50,
    " ", "  ", "\n", "\t", "\x1c", "\x1f", "\u00a0", "\u2028", "\r\n", "\x0b", "KeyError", "pytest -x",
]  # fmt: skip


def _text(max_words: int) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(_WORDS), max_size=max_words).map("".join)


def _line(max_words: int) -> st.SearchStrategy[str]:
    return st.one_of(_text(max_words).map(lambda t: f"- {t}"), _text(max_words))


_sections = st.fixed_dictionaries(
    {},
    optional={name: st.lists(_line(60 if name in (USERS, CARRIED) else 12), max_size=14) for name in _SECTIONS[1:]},
)


def _both(latest: str | None, sections: dict[str, list[str]], cap: int, **kw: Any) -> tuple[Any, Any]:
    def run(f: Any) -> Any:
        try:
            return f(latest, dict(sections), cap, "o200k_base", **kw)
        except Exception as exc:  # noqa: BLE001 - the same failure on both sides
            return type(exc)

    return run(_fit), run(reference_fit._fit)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    latest=st.one_of(st.none(), _text(200)),
    sections=_sections,
    cap=st.integers(-3, 700),
    request_room=st.integers(0, 400),
    recall_id=st.one_of(st.none(), st.just("r-1")),
    held=st.one_of(st.none(), _text(20)),
    latest_cut=st.booleans(),
)
def test_the_core_fit_writes_what_the_python_fit_wrote(
    latest: str | None,
    sections: dict[str, list[str]],
    cap: int,
    request_room: int,
    recall_id: str | None,
    held: str | None,
    latest_cut: bool,
) -> None:
    new, old = _both(
        latest, sections, cap, request_room=request_room, recall_id=recall_id, held=held, latest_cut=latest_cut
    )
    assert new == old


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(st.text(max_size=40), max_size=8), cap=st.integers(0, 300), held=st.text(max_size=30))
def test_the_core_fit_agrees_on_any_text(lines: list[str], cap: int, held: str) -> None:
    sections = {name: [f"- {t}" for t in lines] for name in _SECTIONS[1:]}
    lone = "".join(lines)
    if any("\ud800" <= c <= "\udfff" for c in lone + held):
        return  # not valid Unicode: refused at the boundary, not a fit
    new, old = _both(lone or None, sections, cap, held=held)
    assert new == old


def test_the_counts_receive_the_summary_returned() -> None:
    counts: dict[str, int] = {}
    text = _fit("Fix it.", {USERS: ["- hello"], "Files read": ["- a.py"]}, 200, "o200k_base", counts=counts)
    assert counts == {text: ac.count_tokens(text)}


@pytest.mark.parametrize("path", support.normalized_files()[::9], ids=lambda p: f"{p.parent.name}/{p.stem[:30]}")
def test_offline_summaries_of_the_shared_corpus_are_the_python_fits(path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    conv = ac.Conversation.from_file(path)
    if len(conv) < 4:
        pytest.skip("too short to summarize")
    stop = len(conv) - 2
    for cap in (64, 400, 3_000):
        request = SummaryRequest(conv, 0, stop, None, cap, original=conv, request_room=cap // 2)
        new = OfflineSummarizer().summarize(request)
        with monkeypatch.context() as m:
            m.setattr("agentcontext.compaction.summarize._fit", reference_fit._fit)
            old = OfflineSummarizer().summarize(request)
            old_shrunk = shrink_summary(old, cap // 2)
        assert new == old
        assert shrink_summary(new, cap // 2) == old_shrunk


def _constraint_plain(line: str) -> bool:
    low = line.lower()
    return len(low) <= USER_LINE_CHARS and bool(_CONSTRAINT_WORD.search(low)) and bool(_CONSTRAINT.search(low))


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(
        st.one_of(
            _text(30),
            st.lists(
                st.sampled_from(["never", "stop", "no longer", "use x not y", "İ", "ẞ", " ", "a", "\n"]), max_size=400
            ).map("".join),
        ),
        max_size=12,
    )
)
def test_the_constraints_found_together_are_those_found_line_by_line(lines: list[str]) -> None:
    assert _constraints(lines) == [_constraint_plain(line) for line in lines]


@settings(max_examples=300, deadline=None)
@given(ask=_text(300), summary=_text(300), cut=st.integers(0, 400))
def test_the_request_check_reads_the_opening_as_the_folded_whole(ask: str, summary: str, cut: int) -> None:
    from agentcontext.compaction.writing import _holds_request

    opening = " ".join(ask.split())[:40]
    # The opening in the summary as written, or cut in the middle, or absent.
    for text in (summary, summary + ask, summary + ask[:cut]):
        assert _holds_request(text, ask) == (opening in " ".join(text.split()))


@settings(max_examples=300, deadline=None)
@given(ask=_text(400))
def test_a_probe_opening_is_the_folded_requests_opening(ask: str) -> None:
    from agentcontext.probes import OPENING, _add_ask, fold

    added: list[str] = []
    _add_ask(lambda kind, text, i: added.append(text), ask, 0, frozenset({"user_message"}))
    assert added == [fold(ask)[:OPENING]]


def test_the_sections_are_the_summarys_headings_in_order() -> None:
    """The section list has one home (the core's fit writes them); its names and order are the
    summary's format, read back by ``previous_summary_of`` and by older logs."""
    assert _SECTIONS == (
        "Latest request (verbatim)",
        "User requests and constraints (latest first)",
        "Current state",
        "Earlier summaries (carried forward)",
        "Files modified",
        "Files read",
        "Paths named",
        "Commands and their last outcome",
        "Errors",
        "Tests (last status)",
        "Identifiers",
        "Decisions",
        "Open work",
        "Next step",
        "Also in the replaced history (checked)",
    )
    assert (USERS, CARRIED) == (_SECTIONS[1], _SECTIONS[3])


def test_the_fits_shares_have_one_home() -> None:
    """The shares and sizes the core's fit uses are the ones Python's names (and the ladder's
    room for the latest request) read: one list, in the core; the values are documented."""
    from agentcontext import _core
    from agentcontext.compaction import summaries, summarize

    assert _core._SUMMARY_SHARES == {
        "LATEST_SHARE": 1 / 3,
        "USERS_SHARE": 0.35,
        "CARRIED_SHARE": 0.2,
        "FILES_SHARE": 0.15,
    }
    assert _core._SUMMARY_SIZES == {
        "LATEST_MIN_TOKENS": 128,
        "FILES_MIN_TOKENS": 24,
        "USER_LINE_CHARS": 1_200,
        "USER_LINE_MIN_CHARS": 90,
        "USER_OPENING_CHARS": 80,
        "REQUEST_SLACK": 16,
    }
    for name, value in {**_core._SUMMARY_SHARES, **_core._SUMMARY_SIZES}.items():
        attr = "_REQUEST_SLACK" if name == "REQUEST_SLACK" else name
        assert getattr(summarize, attr) == value, name
    assert summaries.LATEST_SHARE is summarize.LATEST_SHARE
