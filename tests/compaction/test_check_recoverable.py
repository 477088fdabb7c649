"""Everything recoverable (issue 27, item 5): every probe fact of the original is either in the
working set or found by ``conversation_search`` over the session log the compaction wrote, and
the working set names how to get it back — the recall id with the ``recall`` tool, and
``conversation_search`` — wherever something was left out."""

from __future__ import annotations

import re
from pathlib import Path

from agentcontext.budgets import recall_tool
from agentcontext.compaction.check import RECALL_TOOL, SEARCH_TOOL
from agentcontext.compaction.results import drop_marker
from agentcontext.compaction.summarize import SUMMARY_MARKER, summary_message
from agentcontext.memory import ConversationSearch, conversation_search
from agentcontext.probes import extract, found_in, working_set_text
from agentcontext.sessions.log import SessionLog
from agentcontext.sessions.loop import Session
from tests import support
from tests.llm_server import LLMServer, Reply


def test_the_markers_name_the_tools_the_library_defines() -> None:
    assert recall_tool()["function"]["name"] == RECALL_TOOL
    assert ConversationSearch("x.jsonl").name == SEARCH_TOOL
    for message in (summary_message("s", messages=3, tokens=90, recall_id="r-1"), drop_marker(3, 90, "r-1")):
        header = message["content"]
        assert "recall id r-1" in header and f"the {RECALL_TOOL} tool" in header and SEARCH_TOOL in header
    # Without a store nothing is promised.
    assert RECALL_TOOL + " tool" not in summary_message("s", messages=3, tokens=90)["content"]


def _regex(text: str) -> str:
    """``text`` as a regular expression for the core's search: its characters literal, any
    whitespace run matching any whitespace run (facts are compared whitespace folded)."""
    parts = [re.sub(r"([\\.+*?()|\[\]{}^$#&\-~])", r"\\\1", word) for word in text.split()]
    return r"\s+".join(parts)


def test_every_fact_is_in_the_working_set_or_found_by_conversation_search(server: LLMServer, tmp_path: Path) -> None:
    messages = support.synthetic_session(300, seed=21)
    while messages[-1]["role"] != "tool":
        messages.pop()
    provider = support.provider("openai", server, context_window=12_000)
    log_path = tmp_path / "session.jsonl"
    session = Session(provider, conversation=messages, log=SessionLog(log_path, format="openai"))
    server.default = lambda request: Reply("Done: the handlers are fixed and the tests pass.")
    session.send("Where does the fix stand?")
    assert session.compactions, "the session compacted before its call"
    result = session.compactions[-1]
    assert SessionLog(log_path).compactions, "the compaction is in the log"
    working = session.conversation
    text = working_set_text(working)
    # The working set says how to get back what left it.
    summaries = [m["content"] for m in working.to_jsonl() if str(m.get("content")).startswith(SUMMARY_MARKER)]
    assert summaries and f"the {RECALL_TOOL} tool" in summaries[0] and SEARCH_TOOL in summaries[0]
    facts = extract(result.original.to_jsonl())
    searched = 0
    for fact in facts:
        if found_in(fact, text):
            continue
        searched += 1
        hits = conversation_search(log_path, _regex(fact.text[:200]), regex=True, limit=1)
        assert hits["hits"], f"{fact.kind} {fact.text[:80]!r} is neither in the working set nor found in the log"
    assert searched > 0, "the compaction left facts out, found by the search"
