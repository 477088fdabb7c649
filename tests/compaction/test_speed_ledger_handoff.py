"""``HandoffScan.ledger_handoff``: the handoff the task ledger's room is sized from, merged with
only the fields the ledger reads (issue 27's ladder time), and the ledger it gives."""

from __future__ import annotations

import agentcontext as ac
from agentcontext._core import HandoffScan
from agentcontext.compaction.ledger import ledger_message
from tests.support import synthetic_session

#: What :func:`~agentcontext.compaction.ledger.ledger_message` reads of a handoff, and the counts.
LEDGER_FIELDS = (
    "user_requests",
    "constraints",
    "previous_ledger",
    "files_read",
    "files_modified",
    "commands",
    "errors",
    "artifacts",
    "plan",
    "messages",
    "tool_calls",
)


def test_a_ledger_handoff_has_the_ledger_fields_of_the_full_one_and_the_others_empty() -> None:
    conv = ac.Conversation(synthetic_session(160), format="openai")
    scan = HandoffScan(conv, 1)
    for stop in (120, 60, len(conv), 1, 0):
        light = scan.ledger_handoff(stop)
        full = conv.handoff(1, stop)
        assert light.keys() == full.keys()
        for key, value in full.items():
            if key in LEDGER_FIELDS:
                assert light[key] == value, key
            else:
                assert not light[key], key
        # The same scan still gives the full handoff of a span it merged for a ledger only.
        assert scan.handoff(stop) == full
    assert conv.handoff(1, 120)["tests"], "the session names tests: the empty field above says something"


def test_the_ledger_of_a_ledger_handoff_is_the_ledger_of_the_full_one() -> None:
    conv = ac.Conversation(synthetic_session(200, seed=3), format="openai")
    for stop in (50, 150):
        light = HandoffScan(conv, 1).ledger_handoff(stop)
        made = ledger_message(conv, 1, stop, cap=2_000, encoding="o200k_base", handoff=light)
        assert made is not None
        assert made == ledger_message(conv, 1, stop, cap=2_000, encoding="o200k_base")
