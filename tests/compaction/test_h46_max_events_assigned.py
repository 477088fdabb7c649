"""``LLMSummarizer.max_events`` set after construction was taken unchecked: -1 kept every event but
the last (``del events[:1]``), "10" or 1.5 raised a bare TypeError out of the next summarize call.
It is checked when set, with the errors the constructor raises."""

from __future__ import annotations

import pytest

from agentcontext.errors import ArgumentTypeError, OptionError
from tests.compaction.test_h45_summarizer_events import _request, _summarizer


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (-1, OptionError),
        (-(10**30), OptionError),
        (10**30, OptionError),
        (1.5, ArgumentTypeError),
        (float("nan"), ArgumentTypeError),
        ("10", ArgumentTypeError),
        (b"1", ArgumentTypeError),
        (True, ArgumentTypeError),
        ([3], ArgumentTypeError),
    ],
)
def test_a_bad_max_events_is_refused_when_assigned(value: object, error: type[Exception]) -> None:
    summarizer = _summarizer(max_events=3)
    with pytest.raises(error, match="max_events"):
        summarizer.max_events = value  # type: ignore[assignment]
    assert summarizer.max_events == 3  # unchanged
    summarizer.summarize(_request())
    assert len(summarizer.events) == 1


class _Index:
    """An integer of another type (as numpy's are): taken as the int it stands for."""

    def __index__(self) -> int:
        return 2


def test_a_good_max_events_assigned_bounds_the_next_calls() -> None:
    request = _request()
    summarizer = _summarizer()
    summarizer.max_events = _Index()  # type: ignore[assignment]
    assert summarizer.max_events == 2 and type(summarizer.max_events) is int
    for _ in range(4):
        summarizer.summarize(request)
    assert len(summarizer.events) == 2
    summarizer.max_events = None
    for _ in range(3):
        summarizer.summarize(request)
    assert len(summarizer.events) == 5
    summarizer.max_events = 0
    summarizer.summarize(request)
    assert summarizer.events == []
