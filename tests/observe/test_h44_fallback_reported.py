"""An LLMSummarizer whose model call fails (HTTP 500, 429, a malformed body) over the real SDKs
against the loopback server, its own fallback writing the summary: the SummarizerCall event names
why in ``fallback``, the summarize stage carries the same note as a compactor-level fallback, and
the progress line says the fallback wrote it. Before, all three read as the model's summary
(``failure=None``, ``model`` set, the stage's ``summarizer`` LLMSummarizer with no note, "summary
written")."""

from __future__ import annotations

import io
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.compaction import Compactor
from agentcontext.compaction.llm import LLMSummarizer
from agentcontext.observe import SummarizerCall
from agentcontext.observe.progress import CompactProgress
from tests import support
from tests.llm_server import HTTPError, LLMServer, Reply

pytest.importorskip("anthropic", reason="the anthropic SDK is a test extra: pip install -e '.[test]'")
pytest.importorskip("openai", reason="the openai SDK is a test extra: pip install -e '.[test]'")

FAILURES = [
    (HTTPError(500, {"error": {"message": "upstream broke", "type": "server_error"}}), "InternalServerError"),
    (HTTPError(429, {"error": {"message": "slow down", "type": "rate_limit_error"}}), "RateLimitError"),
    (HTTPError(200, {"choices": "garbage"}), "ProviderResponseError"),
]


def _compact(server: LLMServer) -> tuple[list[Any], Any]:
    conv = ac.Conversation(support.synthetic_session(80, seed=3), format="openai")
    events: list[Any] = []
    summarizer = LLMSummarizer(support.provider("openai", server))
    result = Compactor("openharness", summarizer=summarizer, on_event=events.append).compact(
        conv, budget=conv.tokens // 3
    )
    return events, result


@pytest.mark.parametrize(("reply", "error"), FAILURES)
def test_the_summarizers_own_fallback_is_reported(reply: HTTPError, error: str) -> None:
    with LLMServer() as server:
        server.enqueue(reply)
        events, result = _compact(server)
    calls = [e for e in events if isinstance(e, SummarizerCall)]
    assert len(calls) == 1 and calls[0].failure is None and calls[0].calls == 0
    assert calls[0].fallback is not None and calls[0].fallback.startswith(error)
    stage = next(s for s in result.stages if s.stage == "summarize")
    assert stage.detail["note"] == f"{calls[0].fallback}; used the fallback"
    assert stage.detail["check"]["fallback"] is True
    line = io.StringIO()
    progress = CompactProgress(line)
    for event in events:
        progress(event)
    assert "summary written by the fallback (" in line.getvalue()


def test_the_models_own_summary_names_no_fallback() -> None:
    """A model that answers: its summary, no fallback named (whatever the ladder then decides)."""
    with LLMServer() as server:
        server.default = lambda request: Reply("<summary>" + "what happened so far. " * 40 + "</summary>")
        conv = ac.Conversation(support.synthetic_session(80, seed=3), format="openai")
        events: list[Any] = []
        summarizer = LLMSummarizer(support.provider("openai", server), retry_missing=False)
        Compactor("openharness", summarizer=summarizer, on_event=events.append).compact(conv, budget=conv.tokens // 3)
    calls = [e for e in events if isinstance(e, SummarizerCall)]
    assert calls[0].summarizer == "LLMSummarizer" and calls[0].calls == 1 and calls[0].fallback is None
