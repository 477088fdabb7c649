"""A drop never loses the summary an earlier compaction wrote (issue 27: no decay across repeated
compactions): when the last rung drops the oldest messages and the summary with them, the summary
comes back, shrunk into the room the drop leaves, and the stage events say so."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcontext import Conversation
from agentcontext.measure.repeated import repeated_compaction, summary_messages

# A Codex session in which, compacted again and again at 24,000 → 16,000 tokens, the fifth
# compaction can summarize nothing (the recent part is all that is left after the summary) and
# the last round alone takes most of the budget: the drop rung used to drop the summary.
SESSION = "codemie/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"


def test_a_drop_carries_the_earlier_summary_into_the_room_it_leaves(transcripts: Path) -> None:
    path = transcripts / "normalized" / SESSION
    if not path.is_file():
        pytest.skip(f"{SESSION} is in the full shared corpus only")
    replay = repeated_compaction(Conversation.from_file(path), trigger=24_000, target=16_000)
    assert replay.compactions >= 5
    # Once written, a summary is in every later working set (it used to fall to 0 tokens).
    first = next(i for i, t in enumerate(replay.summary_tokens) if t > 0)
    assert all(t > 0 for t in replay.summary_tokens[first:]), replay.summary_tokens
    assert replay.summaries == 1
    assert replay.kind_share("user_message") == 1.0
    assert replay.final_tokens <= 16_000


def test_the_carried_summary_is_reported_and_fits(transcripts: Path) -> None:
    path = transcripts / "normalized" / SESSION
    if not path.is_file():
        pytest.skip(f"{SESSION} is in the full shared corpus only")
    from agentcontext.compaction import Compactor

    compactor = Compactor()
    work = Conversation([], format="jsonl", encoding="o200k_base")
    carried = []
    for message in Conversation.from_file(path).to_jsonl():
        if message.get("role") == "assistant" and work.tokens > 24_000:
            result = compactor.compact(work, budget=16_000)
            assert result.fits and result.conversation.tokens <= 16_000
            stages = [s.stage for s in result.stages]
            if "carry" in stages:
                assert stages.index("carry") == stages.index("drop") + 1
                event = result.stages[stages.index("carry")]
                assert event.detail["summary_tokens"] > 0
                carried.append(event)
            work = result.conversation
        work.extend([message])
    assert carried, "the session reaches the drop with a summary to carry"
    assert len(summary_messages(work)) == 1
