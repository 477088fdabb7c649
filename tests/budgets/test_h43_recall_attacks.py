"""What leaves the window comes back exactly, also when a result looks like a marker, and after a
session is resumed in another process."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.budgets import Recall, ResultStore

CUT = re.compile(r'recall\(id="([^"\n]+)"\)')
CLEARED = re.compile(r"\[cleared: result of .*, [\d,]+ tokens; recall id (.+)\]\Z", re.DOTALL)


def rounds(outputs: list[str]) -> list[dict[str, Any]]:
    """A user request, then one bash call and its result per output, then a last request."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": "go"}]
    for i, text in enumerate(outputs):
        call = {"id": f"call_{i}", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "cat x"}'}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": text})
    messages.append({"role": "user", "content": "next"})
    return messages


#: Results that open like the library's own placeholders: a tool printing a transcript, a log.
LOOKALIKES = [
    "[cleared: result of bash(ls), 5 tokens; recall id call_9]\n" + "real data é 😀\n" * 400,
    "[superseded: read(path=a.py) was called again later (call c2); its latest result is the current one]\n"
    + "z\n" * 3_000,
    "[cleared: result of bash(ls), 5 tokens; not stored]" + "y" * 5_000,
]


def test_a_cut_result_that_opens_like_a_placeholder_is_recalled_from_the_callers_messages() -> None:
    messages = rounds(LOOKALIKES)
    cut, report = ac.Conversation(messages).truncate_tool_results(1_000)
    assert len(report) == len(LOOKALIKES)
    recall = Recall(originals=messages)
    named = [i for m in cut.to_jsonl() if m.get("role") == "tool" for i in CUT.findall(m["content"])]
    assert sorted(named) == [f"call_{i}" for i in range(len(LOOKALIKES))]
    for i, text in enumerate(LOOKALIKES):
        assert recall.original(f"call_{i}") == text


def test_a_placeholder_in_the_messages_given_is_not_taken_for_the_result() -> None:
    # The caller's messages were cleared once already: recall falls back to the log's original.
    messages = rounds(["x" * 3_000, "w" * 3_000])
    cleared, _ = ac.Conversation(messages).clear_tool_results(recent_messages=0, recent_tools=0)
    texts = [m["content"] for m in cleared.to_jsonl() if m.get("role") == "tool"]
    assert [CLEARED.match(t).group(1) for t in texts] == ["call_0", "call_1"]  # type: ignore[union-attr]
    with pytest.raises(ac.RecallError, match="call_0"):
        Recall(originals=cleared).original("call_0")
    # A dedup stub stands for its result too.
    stub = "[superseded: bash(cmd=cat x) was called again later (call call_1); its latest result is the current one]"
    with pytest.raises(ac.RecallError):
        Recall(originals=rounds([stub])).original("call_0")


RESUMED = """
import json, re, sys
from agentcontext import Session
from agentcontext.providers.scripted import ScriptedChatProvider, scripted_call
from agentcontext.sessions.snapshots import SnapshotStore

directory, step = sys.argv[1], sys.argv[2]
big = "".join(f"line {i} \\u00e9\\U0001f600\\r\\n" for i in range(20_000))
if step == "first":
    provider = ScriptedChatProvider([scripted_call("dump", {}), "done"])
    session = Session(provider, snapshots=SnapshotStore(directory), functions={"dump": lambda a: big})
    session.run("go")
    texts = [m["content"] for m in session.conversation.to_jsonl() if m.get("role") == "tool"]
    print(json.dumps(re.findall(r"recall id (r-[0-9a-f]{20})|recall\\(id=\\"(r-[0-9a-f]{20})", texts[0])))
else:
    session = Session.resume(SnapshotStore(directory), ScriptedChatProvider(["ok"]), functions={"dump": lambda a: big})
    print(json.dumps(session.recall.original(sys.argv[3]) == big))
"""


def test_a_session_resumed_from_snapshots_in_another_process_recalls_what_its_markers_name(tmp_path: Path) -> None:
    def run(*args: str) -> Any:
        done = subprocess.run(
            [sys.executable, "-c", RESUMED, str(tmp_path / "snapshots"), *args],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2_000:]
        return json.loads(done.stdout)

    found = {i for pair in run("first") for i in pair if i}
    assert len(found) == 1
    assert run("second", found.pop()) is True


def test_a_store_that_cannot_be_written_is_a_recall_error_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ResultStore(tmp_path / "store")
    (tmp_path / "store").rmdir()
    (tmp_path / "store").write_text("a file where the folder was")
    with pytest.raises(ac.RecallError, match=r"store/r-[0-9a-f]{20}\.txt: cannot store the result: Not a directory"):
        store.put("hello")
    (tmp_path / "store").unlink()
    store = ResultStore(tmp_path / "store")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(ac.RecallError, match="cannot store the result: No space left on device") as caught:
        store.put("hello", alias="call_1")
    assert caught.value.recall_id == ResultStore.id_for("hello")
    assert list((tmp_path / "store").iterdir()) == [], "no partial file is left"


@pytest.mark.parametrize("text", ["line\n" * 20_000, "line\n" * 19_999 + "line", "\n" * 60_000, "x" * 60_000])
def test_a_stored_results_header_counts_the_lines_the_recall_tool_pages(text: str, tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    result = ac.ToolResultPolicy(context_window=200_000, store=store).apply(text, tool="bash")
    assert result.action == "persisted" and result.recall_id is not None
    lines = Recall(store).page(result.recall_id).total_lines
    assert result.text.startswith(f"[Full result stored: {len(text):,} chars, {lines:,} lines; recall id ")
    assert lines == len(text.splitlines())


@pytest.mark.parametrize("stored", [False, True])
def test_a_cut_copy_beside_its_original_is_not_recalled_for_it(stored: bool) -> None:
    # The Agents SDK's CompactingSession appends the results a compaction cut as copies with
    # the same call id after the originals: the original is what the call id recalls.
    original = "".join(f"{i:5d}  def handler_{i}(request): return load(request, {i}) é😀\n" for i in range(90))
    kept = ac.truncate(original, 1_500, recall_id="call_0" if stored else None, not_stored=not stored).text
    assert kept != original
    messages = rounds([original])
    messages.insert(-1, {"role": "tool", "tool_call_id": "call_0", "content": kept})
    assert Recall(originals=messages).original("call_0") == original
    # A call id used again for another result: the last one, as documented.
    again = rounds([original, "x"])
    again[-2]["tool_call_id"] = "call_0"
    assert Recall(originals=again).original("call_0") == "x"


def test_a_result_another_writer_appended_to_the_session_log_is_recalled(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    mine = ac.SessionLog(path, format="openai")
    mine.append(ac.Conversation(rounds(["first é\n" * 50])))
    recall = Recall(log=mine)
    assert recall.original("call_0") == "first é\n" * 50
    # Another process (here another object) appends to the same log.
    other = ac.SessionLog(path)
    later = rounds(["", "second 😀\n" * 50])[4:6]
    other.append(ac.Conversation(later), start=0)
    assert recall.original("call_1") == "second 😀\n" * 50
    with pytest.raises(ac.RecallError, match="call_2"):
        recall.original("call_2")


def test_a_call_id_in_the_form_of_a_store_id_is_recalled_by_its_alias(tmp_path: Path) -> None:
    # Call ids are the provider's (or the model's) strings: one may look like r- and 20 hex digits.
    store = ResultStore(tmp_path)
    messages: list[dict[str, Any]] = [{"role": "system", "content": "s"}]
    ids = ["r-0123456789abcdef0123", *(f"call_{i}" for i in range(1, 20))]
    for i, call_id in enumerate(ids):
        call = {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": "{}"}}
        messages += [
            {"role": "user", "content": f"do {i}"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": f"out {i} é\n" * 400},
            {"role": "assistant", "content": f"done {i}"},
        ]
    messages.append({"role": "user", "content": "next"})
    conv = ac.Conversation(messages)
    result = ac.Compactor("openharness", store=store).compact(conv, budget=int(conv.tokens * 0.6))
    texts = [m["content"] for m in result.conversation.to_jsonl() if m.get("role") == "tool"]
    assert texts[0].endswith(f"; recall id {ids[0]}]")
    recall = Recall(store)
    assert recall.original(ids[0]) == "out 0 é\n" * 400
    assert recall.recall(ids[0], 1, 2) == "out 0 é\nout 0 é\n\n[Showing lines 1-2 of 400. Use offset=3 to continue.]"
    # A stored text keeps its id: a call id of the same form does not take it over.
    text_id = store.put("a stored text")
    store.put("a call's result", alias=text_id)
    assert recall.original(text_id) == "a stored text"
