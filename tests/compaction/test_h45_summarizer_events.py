"""LLMSummarizer.events in a long-running process: one dict per summarize call, kept for ever
before (a server summarizing for days held every call's event). It keeps the latest
``max_events`` (default 1,000), oldest dropped first."""

from __future__ import annotations

import pytest

import agentcontext as ac
from agentcontext.compaction.llm import LLMSummarizer
from agentcontext.errors import ArgumentTypeError, OptionError
from agentcontext.observe.summary_events import collecting
from agentcontext.providers import Reply, ScriptedChatProvider, Usage

SUMMARY = "<summary>what happened so far</summary>"


def _request() -> ac.SummaryRequest:
    conv = ac.Conversation(
        [
            {"role": "user", "content": "fix the bug"},
            {"role": "assistant", "content": "looking"},
            {"role": "user", "content": "and add a test"},
            {"role": "assistant", "content": "done"},
        ]
    )
    return ac.SummaryRequest(conv, 0, 2, None, 500)


def _summarizer(**kwargs: object) -> LLMSummarizer:
    provider = ScriptedChatProvider(lambda request: Reply(text=SUMMARY, usage=Usage(10, 2)))
    return LLMSummarizer(provider, retry_missing=False, cache_prefix=False, **kwargs)  # type: ignore[arg-type]


def test_events_keep_the_latest_calls_up_to_the_default_bound() -> None:
    summarizer = _summarizer()
    request = _request()
    assert summarizer.max_events == 1_000
    for _ in range(1_003):
        summarizer.summarize(request)
    assert summarizer.provider.calls == 1_003
    assert isinstance(summarizer.events, list) and len(summarizer.events) == 1_000
    assert all(e["outcome"] == "llm" for e in summarizer.events)


def test_max_events_keeps_the_newest_in_order_and_none_keeps_all() -> None:
    request = _request()
    bounded = _summarizer(max_events=2)
    with collecting() as collected:
        for _ in range(5):
            bounded.summarize(request)
    # The context's own collection holds every call, whatever the summarizer's list keeps.
    assert len(collected) == 5
    assert bounded.events == collected[-2:] and bounded.events[-1] is collected[-1]
    kept_none = _summarizer(max_events=0)
    kept_none.summarize(request)
    assert kept_none.events == []
    unbounded = _summarizer(max_events=None)
    for _ in range(3):
        unbounded.summarize(request)
    assert len(unbounded.events) == 3


@pytest.mark.parametrize(
    ("value", "error"),
    [(-1, OptionError), (1.5, ArgumentTypeError), ("10", ArgumentTypeError), (True, ArgumentTypeError)],
)
def test_a_bad_max_events_is_refused(value: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="max_events"):
        _summarizer(max_events=value)
