"""The offline handoff (``OfflineSummarizer`` over the core's extraction): what it keeps of older
history, measured against facts written into the test sessions, never against its own notes."""

from __future__ import annotations

import json
from typing import Any

import agentcontext as ac
from agentcontext.summarize import SUMMARY_MARKER, OfflineSummarizer, SummaryRequest


def bash(cid: str, command: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": command})}}
        ],
    }


def offline(conv: ac.Conversation, cap: int, stop: int | None = None) -> str:
    stop = len(conv) if stop is None else stop
    previous = next(reversed(conv.summaries(0, stop)), None)
    return OfflineSummarizer().summarize(SummaryRequest(conv, 0, stop, previous, cap))


EARLIER = {
    "claude-code": "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\nPrimary request: migrate billing/ledger.ex to Ecto 3 (ticket BILL-204).",
    "pi": "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
    "## Goal\nShip the pi_exporter.rs streaming writer behind the --stream flag.\n</summary>",
    "codex": "Another language model started to solve this problem and produced a summary of its thinking process. "
    "Here it is:\nThe flaky test tests/test_sync.py::test_retry_backoff needs a fixed clock.",
    "agentcontext": f"{SUMMARY_MARKER}: 40 earlier messages (9,000 tokens) are summarized below; the originals "
    "are not stored.]\n\n## Latest request (verbatim)\nRename config/app_settings.toml keys to snake case.\n\n"
    "## Files modified\n- config/app_settings.toml",
}
FACTS = {
    "claude-code": ["billing/ledger.ex", "BILL-204"],
    "pi": ["pi_exporter.rs", "--stream"],
    "codex": ["tests/test_sync.py::test_retry_backoff"],
    "agentcontext": ["Rename config/app_settings.toml keys to snake case.", "config/app_settings.toml"],
}


def session_with_earlier_summaries() -> ac.Conversation:
    """One summary of each kind in the history (as a resumed session of each harness carries
    it), with work between them."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for k, text in enumerate(EARLIER.values()):
        messages.append({"role": "user", "content": text})
        messages.append({"role": "user", "content": f"Now do step {k}: update module_{k}.py."})
        for j in range(3):
            cid = f"c{k}_{j}"
            messages.append(bash(cid, f"pytest tests/test_m{k}.py -q"))
            messages.append({"role": "tool", "tool_call_id": cid, "content": "ok\n" * 200 + f"{j + 1} passed"})
        messages.append({"role": "assistant", "content": f"Step {k} done."})
    return ac.Conversation(messages)


def test_earlier_summaries_of_every_harness_are_carried_forward() -> None:
    conv = session_with_earlier_summaries()
    summary = offline(conv, 2_000)
    for harness, facts in FACTS.items():
        for fact in facts:
            assert fact in summary, f"{harness}: {fact!r} lost"
    # Ours is merged section by section, not nested; the others are quoted once each.
    assert SUMMARY_MARKER not in summary
    assert summary.count("This session is being continued") == 1
    # The latest request is the latest the user typed, not one of the summaries.
    assert summary.split("\n")[1] == "Now do step 3: update module_3.py."
