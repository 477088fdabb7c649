"""The offline summary's fit moved into the core (``_core._fit_summary``) answers bad or extreme
arguments as the Python fit did: the library's errors for a float cap and a lone surrogate, and a
summary (not ``OverflowError``) for a cap or request room past 63 bits."""

from __future__ import annotations

import pytest

import agentcontext as ac
from agentcontext.compaction.summarize import OfflineSummarizer, SummaryRequest, shrink_summary
from agentcontext.errors import AgentContextError, ArgumentTypeError


def _request(**kw: object) -> SummaryRequest:
    conv = ac.Conversation(
        [{"role": "user", "content": "fix the bug in src/app.py"}, {"role": "assistant", "content": "ok"}]
    )
    return SummaryRequest(source=conv, start=0, stop=2, previous_summary=None, **{"max_tokens": 500, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize("kw", [{"max_tokens": 2**63}, {"max_tokens": 2**64}, {"request_room": 2**63}])
def test_a_cap_past_63_bits_still_gives_a_summary(kw: dict[str, int]) -> None:
    assert OfflineSummarizer().summarize(_request(**kw)).startswith("## Latest request")


def test_a_float_cap_is_an_argument_type_error() -> None:
    with pytest.raises(ArgumentTypeError):
        OfflineSummarizer().summarize(_request(max_tokens=2.5))
    with pytest.raises(ArgumentTypeError):
        shrink_summary(OfflineSummarizer().summarize(_request()), 2.5)  # type: ignore[arg-type]


def test_a_lone_surrogate_in_the_ledger_is_the_librarys_error() -> None:
    with pytest.raises(AgentContextError):
        OfflineSummarizer().summarize(_request(max_tokens=5, context={"held": "a\ud800"}))


def test_a_lone_surrogate_in_the_recall_id_is_the_librarys_error() -> None:
    long = ac.Conversation([{"role": "user", "content": "word " * 3000}])
    request = SummaryRequest(
        source=long, start=0, stop=1, previous_summary=None, max_tokens=300, request_recall_id="r\ud800"
    )
    with pytest.raises(AgentContextError):
        OfflineSummarizer().summarize(request)
