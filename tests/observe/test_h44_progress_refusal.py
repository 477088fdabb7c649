"""``compact``'s progress line after a refused summary says why, not "falling back": with no
fallback (``Compactor(fallback=None)``) the ladder drops instead, and before the line claimed a
fallback that never ran."""

from __future__ import annotations

import io
from typing import Any

import agentcontext as ac
from agentcontext.compaction import Compactor
from agentcontext.observe.progress import CompactProgress
from tests import support


class Down:
    def summarize(self, request: Any) -> str:
        raise RuntimeError("model down")


def test_a_refused_summary_without_a_fallback_claims_none() -> None:
    conv = ac.Conversation(support.synthetic_session(80, seed=3), format="openai")
    line = io.StringIO()
    result = Compactor("openharness", summarizer=Down(), fallback=None, on_event=CompactProgress(line)).compact(
        conv, budget=conv.tokens // 3
    )
    assert "summarizer" not in {k for s in result.stages for k in s.detail}  # no summary was written
    shown = line.getvalue()
    assert "summary refused: RuntimeError: model down" in shown
    assert "falling back" not in shown
