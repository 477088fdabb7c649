"""The artifact trail where the room is smallest (issue 27: 10% ≥ 0.95, 25% ≥ 0.99): the files
touched named before the middle of a latest request cut anyway; SWE-agent's ``open <path>`` read
and its ``create`` opened for the ``edit`` after it; a glob under a rooted directory named as
written."""

from __future__ import annotations

import json
from typing import Any

from agentcontext import Conversation, count_tokens
from agentcontext.compaction.summarize import OfflineSummarizer, SummaryRequest
from agentcontext.probes import OPENING, extract, fold

#: A mini-swe-agent-like task prompt, far over a small summary's cap: it is cut to head + tail.
TASK = "Please solve this issue: the TimeDelta field rounds down. " + "Context of the issue. " * 200 + "End of task."


def call(cid: str, name: str, command: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps({"command": command})}}


def turn(cid: str, name: str, command: str, result: str) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": None, "tool_calls": [call(cid, name, command)]},
        {"role": "tool", "tool_call_id": cid, "content": result},
    ]


def swe_session() -> Conversation:
    """A SWE-agent-style session: its own commands as command lines (``open``, ``create``, a
    path-less ``edit`` of the file open), then a listing with a glob."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are an autonomous programmer."},
        {"role": "user", "content": TASK},
    ]
    messages += turn("1", "open", "open src/marshmallow/fields.py 1474", "[File: src/marshmallow/fields.py]")
    messages += turn("2", "create", "create reproduce.py", "[File: reproduce.py (1 lines total)]")
    messages += turn("3", "edit", "edit 1:1\nprint(1)\nend_of_edit", "File updated.")
    messages += turn("4", "bash", "ls -lh ~/.claude/projects/repo/97ab04f7*.jsonl", "-rw-r--r-- 1 u 4.0K x.jsonl")
    messages += [{"role": "assistant", "content": "Done."}]
    return Conversation(messages, format="openai")


def test_swe_agent_open_reads_and_the_edit_after_create_edits_the_created_file() -> None:
    conv = swe_session()
    trail = {a["path"]: a["ops"] for a in conv.handoff(conv.preamble, len(conv))["artifacts"]}
    assert trail == {"src/marshmallow/fields.py": ["read"], "reproduce.py": ["created", "edited"]}


def test_a_glob_under_a_rooted_directory_is_a_path_named() -> None:
    conv = swe_session()
    paths = conv.handoff(conv.preamble, len(conv))["paths"]
    assert "~/.claude/projects/repo/97ab04f7*.jsonl" in paths
    # What the measurement asks for, the path before the wildcard, is in what the summary names.
    probe = next(p for p in extract(conv) if p.kind == "artifact" and "97ab04f7" in p.text)
    summary = OfflineSummarizer().summarize(SummaryRequest(conv, conv.preamble, len(conv), None, 2_000, original=conv))
    assert probe.text in fold(summary)


def test_a_small_summary_names_the_files_before_the_middle_of_a_request_cut_anyway() -> None:
    conv = swe_session()
    for cap in (70, 100, 140):
        summary = OfflineSummarizer().summarize(
            SummaryRequest(conv, conv.preamble, len(conv), None, cap, original=conv)
        )
        assert count_tokens(summary) <= cap
        text = fold(summary)
        # The request is cut (head, marker, tail) and still says how it opens and ends.
        assert "omitted" in text and fold(TASK)[:OPENING] in text and "End of task." in text, (cap, summary)
        # The file the agent made, named (before, a cap under 128 was all the request's).
        assert "reproduce.py" in text, (cap, summary)
