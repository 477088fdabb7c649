"""The task ledger over a live session (issue 27, item 2): a rule the user stated once is in every
later working set, however many times the session compacts — through the real OpenAI SDK
client against the loopback server, with the offline summarizer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentcontext.compaction import Compactor
from agentcontext.compaction.ledger import LEDGER_MARKER, Ledger
from agentcontext.sessions.loop import Session
from tests import support
from tests.llm_server import LLMServer, Recorded, Reply

pytest.importorskip("openai", reason="the openai SDK is a test extra: pip install -e '.[test]'")

RULE = "Never deploy on Fridays."


def _long_reply(request: Recorded) -> Reply:
    return Reply("Done. " + "Details of the work follow. " * 330)


def _ledger(messages: list[dict[str, Any]]) -> Ledger | None:
    found = [
        m["content"] for m in messages if isinstance(m.get("content"), str) and m["content"].startswith(LEDGER_MARKER)
    ]
    assert len(found) <= 1, "one ledger at most"
    return Ledger.parse(found[0]) if found else None


def test_a_rule_stated_once_is_in_every_later_working_set(server: LLMServer) -> None:
    server.default = _long_reply
    provider = support.provider("openai", server, context_window=24_000)
    session = Session(provider, compactor=Compactor("openharness"), result_policy=False, max_output_tokens=1_000)
    session.run(f"Step 0: set up the release. {RULE}")
    steps = 1
    while len(session.compactions) < 6 and steps < 60:
        session.run(f"Step {steps}: do the next part")
        steps += 1
    assert len(session.compactions) >= 6, "the session compacted repeatedly"
    for result in session.compactions:
        ledger = _ledger(result.conversation.to_jsonl())
        assert ledger is not None and RULE in ledger.constraints
    # Every request the model got after the first compaction carried the rule in its ledger.
    first = next(k for k, r in enumerate(server.requests) if LEDGER_MARKER in json.dumps(r.body))
    later = server.requests[first:]
    assert len(later) >= 6
    for request in later:
        ledger = _ledger(request.body["messages"])
        assert ledger is not None and RULE in ledger.constraints
        assert ledger.request is not None and ledger.request.startswith("Step ")
