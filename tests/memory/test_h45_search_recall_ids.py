"""conversation_search over a session log whose calls reuse an id (``call_0`` every turn): a hit
on a tool result gave the raw call id as its recall id, which recalls the first call's result.
It gives the name the placeholder shows (``call_0#k``), which recalls the hit's own result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agentcontext as ac
from agentcontext import Recall, SessionLog
from agentcontext.errors import RecallError
from agentcontext.memory.conversation import conversation_search

WORDS = ["alpha", "bravo", "charlie"]


def _conversation(fmt: str) -> ac.Conversation:
    msgs: list[dict[str, object]] = [{"role": "user", "content": "go"}]
    for word in WORDS:
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]})  # fmt: skip
        msgs.append({"role": "tool", "tool_call_id": "call_0", "content": f"{word} " + "x " * 400})
    msgs.append({"role": "assistant", "content": "done"})
    conv = ac.Conversation(msgs)
    return conv if fmt == "openai" else ac.Conversation(conv.to_format(fmt), format=fmt)


def test_a_hit_on_a_reused_call_id_recalls_its_own_result(tmp_path: Path) -> None:
    for fmt in ("openai", "anthropic", "responses"):
        conv = _conversation(fmt)
        path = tmp_path / f"{fmt}.jsonl"
        SessionLog(path, format=fmt).append(conv)
        cleared, _ = conv.clear_tool_results(recent_messages=1, recent_tools=0)
        shown = [m["content"] for m in cleared.to_jsonl() if m.get("role") == "tool"]
        recall = Recall(log=SessionLog(path))
        for k, word in enumerate(WORDS):
            hits = conversation_search(path, word)["hits"]
            assert len(hits) == 1, (fmt, word)
            rid = hits[0]["recall_id"]
            assert rid == ("call_0" if k == 0 else f"call_0#{k + 1}"), (fmt, word, rid)
            assert shown[k].endswith(f"recall id {rid}]"), (fmt, shown[k])
            assert recall.original(rid).startswith(word + " "), (fmt, word)


def test_a_transcript_hit_on_a_reused_call_id_gives_its_placeholders_name(tmp_path: Path) -> None:
    conv = _conversation("openai")
    path = tmp_path / "t.json"
    path.write_text(json.dumps(conv.to_openai()))
    cleared, _ = conv.clear_tool_results(recent_messages=1, recent_tools=0)
    shown = [m["content"] for m in cleared.to_jsonl() if m.get("role") == "tool"]
    originals = Recall(originals=conv.to_openai())
    for k, word in enumerate(WORDS):
        hits = conversation_search(path, word)["hits"]
        assert len(hits) == 1 and hits[0]["line"] is None
        rid = hits[0]["recall_id"]
        assert shown[k].endswith(f"recall id {rid}]"), (rid, shown[k])
        assert originals.original(rid).startswith(word + " ")


def test_a_name_two_calls_claim_leaves_the_first_call_of_the_id_recallable(tmp_path: Path) -> None:
    # `call_0` used twice and a call whose id is `call_0#2`: both later calls claim `call_0#2`
    # (nothing recalls it), but Recall marked `call_0` itself as naming more than one call, so
    # the first call's result, which the search and its placeholder name `call_0`, was refused.
    def calls(*ids: str) -> dict[str, object]:
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "bash", "arguments": "{}"}} for i in ids]}  # fmt: skip

    conv = ac.Conversation([
        {"role": "user", "content": "go"},
        calls("call_0"),
        {"role": "tool", "tool_call_id": "call_0", "content": "alpha " + "x " * 400},
        calls("call_0", "call_0#2"),
        {"role": "tool", "tool_call_id": "call_0", "content": "bravo " + "x " * 400},
        {"role": "tool", "tool_call_id": "call_0#2", "content": "charlie " + "x " * 400},
        {"role": "assistant", "content": "done"},
    ])  # fmt: skip
    path = tmp_path / "s.jsonl"
    SessionLog(path).append(conv)
    cleared, _ = conv.clear_tool_results(recent_messages=1, recent_tools=0)
    shown = [m["content"] for m in cleared.to_jsonl() if m.get("role") == "tool"]
    assert shown[0].endswith("recall id call_0]")
    hits = {w: conversation_search(path, w)["hits"][0]["recall_id"] for w in ("alpha", "bravo", "charlie")}
    assert hits == {"alpha": "call_0", "bravo": None, "charlie": None}
    for recall in (Recall(log=SessionLog(path)), Recall(originals=conv.to_openai())):
        assert recall.original("call_0").startswith("alpha ")
        with pytest.raises(RecallError, match="more than one call"):
            recall.original("call_0#2")


def test_a_hit_on_the_second_result_of_a_message_recalls_that_result(tmp_path: Path) -> None:
    # Anthropic's user message answers every call of a turn: a hit on its second result gave
    # the first result's call id, which recalls the other result's text.
    conv = ac.Conversation([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "bash", "arguments": "{}"}} for i in ("a1", "c")]},
        {"role": "tool", "tool_call_id": "a1", "content": "alpha out"},
        {"role": "tool", "tool_call_id": "c", "content": "bravo out"},
        {"role": "assistant", "content": "done"},
    ])  # fmt: skip
    for fmt in ("openai", "anthropic", "responses"):
        path = tmp_path / f"{fmt}.jsonl"
        logged = conv if fmt == "openai" else ac.Conversation(conv.to_format(fmt), format=fmt)
        SessionLog(path, format=fmt).append(logged)
        recall = Recall(log=SessionLog(path))
        for word in ("alpha", "bravo"):
            (hit,) = conversation_search(path, word)["hits"]
            assert recall.original(hit["recall_id"]) == f"{word} out", (fmt, word, hit["recall_id"])
