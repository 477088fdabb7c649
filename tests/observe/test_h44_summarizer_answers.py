"""A summarizer whose ``summarize`` answers with something other than text (None, a number, bytes,
a list), on the one-call path and on the staged path (parts and a merge), and through each
harness's overflow handling: the compaction goes on with the fallback, and the failure note of
the SummarizerCall event and of the summarize stage says plainly what it returned. Before, None
on the staged path was an ``AttributeError: 'NoneType' object has no attribute 'strip'`` note, and
a number, bytes or a list crashed the compaction with that AttributeError (or a TypeError)."""

from __future__ import annotations

from typing import Any

import pytest

import agentcontext as ac
from agentcontext._core import count_tokens
from agentcontext.compaction import Compactor
from agentcontext.compaction.summary_text import HANDOFF_PROMPT
from agentcontext.observe import SummarizerCall
from tests import support


class Answers:
    """A summarizer answering ``value``; ``context_window`` makes the ladder stage its request."""

    def __init__(self, value: Any, context_window: int | None = None) -> None:
        self.value = value
        if context_window is not None:
            self.context_window = context_window

        self.parts: list[int] = []

    def summarize(self, request: Any) -> Any:
        self.parts += [request.context["part"]] if "part" in request.context else []
        return self.value


def _conv() -> ac.Conversation:
    return ac.Conversation(support.synthetic_session(80, seed=3), format="openai")


@pytest.mark.parametrize(("value", "shown"), [(None, "None"), (5, "a value of type int"),
                                              (b"x", "a value of type bytes"), (["x"], "a value of type list")])  # fmt: skip
@pytest.mark.parametrize("staged", [False, True])
@pytest.mark.parametrize("preset", ["openharness", "letta", "claude-code"])
def test_a_summarizer_answering_no_text_is_a_plain_failure(value: Any, shown: str, staged: bool, preset: str) -> None:
    conv = _conv()
    events: list[Any] = []
    # A window that leaves the summarizer about 1,000 tokens (a compaction to a budget reserves
    # no output): the older history (2,538 tokens) goes in parts.
    window = count_tokens(HANDOFF_PROMPT) + 1_000 if staged else None
    summarizer = Answers(value, window)
    result = Compactor(preset, summarizer=summarizer, on_event=events.append).compact(conv, budget=conv.tokens // 3)
    # The staged path reached the summarizer with a part (letta's own overflow handling does not
    # split: it cuts the transcript and asks once).
    assert bool(summarizer.parts) == (staged and preset == "openharness")
    calls = [e for e in events if isinstance(e, SummarizerCall)]
    note = f"Answers.summarize returned {shown}, not the summary text (a str)"
    assert calls and calls[0].summarizer == "Answers"
    assert (calls[0].failure, calls[0].summary_tokens) == (note, None)
    summarize = [s for s in result.stages if s.stage == "summarize"]
    assert summarize and summarize[0].detail.get("note") == f"{note}; used the fallback"
