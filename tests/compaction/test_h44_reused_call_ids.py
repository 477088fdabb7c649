"""Calls that reuse an id (some OpenAI-compatible servers send ``call_0`` on every turn): every
recall id a placeholder or marker names gives back exactly the text it replaced, or none is named."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agentcontext import Compactor, Conversation, Recall, ResultStore, trim_messages
from agentcontext.errors import RecallError

NAMED = re.compile(r"recall id ([^\]\s]+)\]|recall\(id=\"([^\"]+)\"")


def _files(tmp_path: Path, n: int) -> list[Path]:
    out = []
    for k in range(n):
        p = tmp_path / "src" / f"f{k}.py"
        p.parent.mkdir(exist_ok=True)
        p.write_text("".join(f"def f{k}_{j}(x):\n    return x * {j} + {k}  # file {k}\n" for j in range(120)))
        out.append(p)
    return out


def _conversation(paths: list[Path], ids: list[str]) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "read the sources and fix the bug"}]
    for p, call_id in zip(paths, ids, strict=True):
        args = json.dumps({"path": str(p.relative_to(p.parent.parent))})
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": args}}]})  # fmt: skip
        msgs.append({"role": "tool", "tool_call_id": call_id, "content": p.read_text()})
    msgs.append({"role": "assistant", "content": "found it"})
    msgs.append({"role": "user", "content": "now fix it"})
    return msgs


def _named(messages: list[dict[str, Any]], originals: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(recall id, the text it replaced) of every tool result whose content names one."""
    out = []
    for m, o in zip(messages, originals, strict=True):
        if m.get("role") == "tool" and m["content"] != o["content"]:
            found = NAMED.search(m["content"])
            if found:
                out.append((found.group(1) or found.group(2), o["content"]))
    return out


def test_compactor_placeholders_of_a_reused_id_recall_their_own_result(tmp_path: Path) -> None:
    paths = _files(tmp_path, 8)
    msgs = _conversation(paths, ["call_0"] * 8)
    conv = Conversation(msgs)
    store = ResultStore(tmp_path / "store")
    out = Compactor(store=store).compact(conv, budget=int(0.8 * conv.tokens)).conversation
    got, want = out.to_jsonl(), conv.to_jsonl()
    named = _named(got, want)
    assert named, [m.get("content", "")[:80] for m in got]
    assert len({n for n, _ in named}) == len(named)
    for recall_id, text in named:
        assert Recall(store).original(recall_id) == text, recall_id
        assert Recall(store).recall(recall_id, lines=10_000, max_chars=10**6) == text
        assert Recall(originals=msgs).original(recall_id) == text
    assert named[0][0] == "call_0"  # the first call keeps its id


def test_trim_messages_fast_path_names_each_occurrence(tmp_path: Path) -> None:
    msgs = _conversation(_files(tmp_path, 8), ["call_0"] * 8)
    total = Conversation(msgs).tokens
    out = trim_messages(msgs, int(total * 0.6), recent_messages=2, recent_tools=1)
    assert len(out) == len(msgs)
    named = _named(list(out), msgs)
    assert len(named) >= 2
    for recall_id, text in named:
        assert Recall(originals=msgs).original(recall_id) == text, recall_id
    assert [n for n, _ in named] == ["call_0", *(f"call_0#{k}" for k in range(2, len(named) + 1))]


def test_clear_tool_results_and_cut_markers_name_each_occurrence(tmp_path: Path) -> None:
    msgs = _conversation(_files(tmp_path, 4), ["call_0"] * 4)
    conv = Conversation(msgs)
    cleared, _ = conv.clear_tool_results(recent_messages=0, recent_tools=0)
    named = _named(cleared.to_jsonl(), conv.to_jsonl())
    assert [n for n, _ in named] == ["call_0", "call_0#2", "call_0#3", "call_0#4"]
    for recall_id, text in named:
        assert Recall(originals=msgs).original(recall_id) == text
    cut, _ = conv.truncate_tool_results(500)
    named = _named(cut.to_jsonl(), conv.to_jsonl())
    assert [n for n, _ in named] == ["call_0", "call_0#2", "call_0#3", "call_0#4"]
    for recall_id, text in named:
        assert Recall(originals=msgs).original(recall_id) == text


def test_cleared_arguments_of_a_reused_id(tmp_path: Path) -> None:
    msgs = _conversation(_files(tmp_path, 3), ["call_0"] * 3)
    for k, m in enumerate(m for m in msgs if m.get("tool_calls")):
        m["tool_calls"][0]["function"]["arguments"] = json.dumps({"path": f"f{k}.py", "content": f"x{k} " * 400})
    conv = Conversation(msgs)
    cleared, _ = conv.clear_tool_results(recent_messages=0, recent_tools=0, clear_tool_inputs=True)
    texts = [c["arguments"] for m in cleared.to_jsonl() for c in m.get("tool_calls") or ()]
    names = [re.search(r"recall id ([^\]\s]+)\]", t).group(1) for t in texts]  # type: ignore[union-attr]
    assert names == ["call_0#arguments", "call_0#2#arguments", "call_0#3#arguments"]
    originals = [c["arguments"] for m in conv.to_jsonl() for c in m.get("tool_calls") or ()]
    for name, args in zip(names, originals, strict=True):
        assert Recall(originals=msgs).original(name) == args


def test_a_name_two_calls_would_have_is_given_to_neither(tmp_path: Path) -> None:
    msgs = _conversation(_files(tmp_path, 3), ["a", "a", "a#2"])
    conv = Conversation(msgs)
    cleared, _ = conv.clear_tool_results(recent_messages=0, recent_tools=0)
    results = [m["content"] for m in cleared.to_jsonl() if m.get("role") == "tool"]
    assert results[0].endswith("; recall id a]")
    assert results[1].endswith(" tokens; not stored]") and results[2].endswith(" tokens; not stored]")
    with pytest.raises(RecallError, match="more than one call"):
        Recall(originals=msgs).original("a#2")


def test_a_growing_conversation_keeps_the_names_it_gave(tmp_path: Path) -> None:
    """Ids unique at first (``call_0``..``call_5``), reused when the conversation grows: the
    placeholders sent before keep naming their own results, in the store shared by both runs."""
    paths = _files(tmp_path, 12)
    store = ResultStore(tmp_path / "store")
    ids = [f"call_{k}" for k in range(6)]
    first = _conversation(paths[:6], ids)
    conv = Conversation(first)
    out = Compactor(store=store).compact(conv, budget=int(0.9 * conv.tokens)).conversation
    before = _named(out.to_jsonl(), conv.to_jsonl())
    assert [n for n, _ in before][:1] == ["call_0"]
    grown = first + _conversation(paths[6:], ids)[1:]
    conv2 = Conversation(grown)
    out2 = Compactor(store=store).compact(conv2, budget=int(0.5 * conv2.tokens)).conversation
    after = _named(out2.to_jsonl(), conv2.to_jsonl())
    assert "call_0#2" in dict(after)
    assert len({n for n, _ in after}) == len(after)
    for recall_id, text in [*before, *after]:
        assert Recall(store).original(recall_id) == text, recall_id
        assert Recall(originals=grown).original(recall_id) == text, recall_id


def _front_dropped(tmp_path: Path) -> tuple[list[dict[str, Any]], str, ResultStore]:
    """A working set whose front (calls 1-3 of ``call_0``) was summarized away by an earlier
    compaction: its first ``call_0`` result is that compaction's placeholder for the 4th call,
    ``call_0#4``, whose original the store holds; eight more calls of ``call_0`` follow."""
    paths = _files(tmp_path, 12)
    msgs = _conversation(paths[3:], ["call_0"] * 9)
    fourth = paths[3].read_text()
    store = ResultStore(tmp_path / "store")
    store.put(fourth, alias="call_0#4")
    msgs[2] = {**msgs[2], "content": "[cleared: result of read_file(path=src/f3.py), 2,643 tokens; recall id call_0#4]"}
    msgs.insert(1, {"role": "user", "content": "[summary of the earlier conversation]"})
    msgs.insert(2, {"role": "assistant", "content": "ok"})
    return msgs, fourth, store


def test_a_name_a_visible_placeholder_shows_is_given_to_no_other_call(tmp_path: Path) -> None:
    msgs, fourth, store = _front_dropped(tmp_path)
    conv = Conversation(msgs)
    out = Compactor(store=store).compact(conv, budget=int(0.9 * conv.tokens)).conversation
    got = out.to_jsonl()
    assert len(got) == len(msgs)
    named = _named(got, conv.to_jsonl())
    assert named and "call_0#4" not in dict(named)
    assert got[4]["content"].endswith("; recall id call_0#4]")
    assert Recall(store).original("call_0#4") == fourth
    for recall_id, text in named:
        assert Recall(store).original(recall_id) == text, recall_id
    # Cleared, the 4th call_0 of this list (the 7th of the session) is given no name.
    cleared, _ = conv.clear_tool_results(recent_messages=0, recent_tools=0)
    shown = [NAMED.search(m["content"]) for m in cleared.to_jsonl() if m.get("role") == "tool"]
    assert [n.group(1) if n else None for n in shown] == [
        "call_0#4", "call_0#2", "call_0#3", None, *(f"call_0#{k}" for k in range(5, 10))
    ]  # fmt: skip


def test_trim_messages_gives_no_call_a_name_a_placeholder_shows(tmp_path: Path) -> None:
    msgs, _, _ = _front_dropped(tmp_path)
    out = trim_messages(msgs, int(Conversation(msgs).tokens * 0.6), recent_messages=2, recent_tools=1)
    assert len(out) == len(msgs)
    names = [NAMED.search(m["content"]) for m in out if m.get("role") == "tool"]
    shown = [n.group(1) for n in names if n]
    assert shown.count("call_0#4") == 1, shown
    assert len(set(shown)) == len(shown)
