"""Issue 27, the artifact trail at small budgets: a file the agent wrote as ``./x`` is named so
(which names ``x`` too), and a small summary lists the files touched before its next step."""

from __future__ import annotations

import json
from typing import Any

import agentcontext as ac
from agentcontext.compaction.summarize import OfflineSummarizer, SummaryRequest
from agentcontext.probes import extract, found_in


def _bash(cid: str, command: str) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": cid, "name": "bash", "arguments": json.dumps({"command": command})}]},
        {"role": "tool", "tool_call_id": cid, "content": "ok"},
    ]  # fmt: skip


def test_a_path_written_dot_slash_stays_so_in_the_trail() -> None:
    conv = ac.Conversation(
        [
            {"role": "user", "content": "Make the admin inlines use verbose_name."},
            *_bash("1", "cat django/contrib/admin/options.py"),
            *_bash("2", "sed -i 's/plural = None/plural = name/' ./django/contrib/admin/options.py"),
            *_bash("4", "cp ./django/contrib/admin/options.py ./django/contrib/admin/options.py.backup"),
            *_bash("3", "cat tests/admin_inlines/tests.py"),
        ],
        format="jsonl",
    )
    paths = [a["path"] for a in conv.handoff(0, len(conv))["artifacts"]]
    assert "./django/contrib/admin/options.py" in paths and "django/contrib/admin/options.py" not in paths
    assert "./django/contrib/admin/options.py.backup" in paths
    assert "tests/admin_inlines/tests.py" in paths
    # Every artifact probe of the span (the path as each call wrote it) is found in the trail.
    haystack = " ".join(paths)
    trail = [p for p in extract(conv) if p.kind == "artifact"]
    assert trail and all(found_in(p, haystack) for p in trail), [p.text for p in trail]


def test_a_small_summary_names_the_files_before_the_next_step() -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Create a todo app in /workspace/todo-app."}]
    for k, name in enumerate(("index.html", "app.js", "style.css")):
        messages += _bash(str(k), f"cat > /workspace/todo-app/{name} << 'EOF'\nx\nEOF")
    messages.append({"role": "assistant", "content": "Next I will serve the application with a simple Python HTTP "
                     "server on port 8000, then open it in the browser and check that every feature works as the user "
                     "asked."})  # fmt: skip
    conv = ac.Conversation(messages, format="jsonl")
    text = OfflineSummarizer().summarize(SummaryRequest(conv, 0, len(conv), None, 100))
    # The newest file is named; the next step takes what room is left (here: none).
    assert "/workspace/todo-app/style.css" in text, text
