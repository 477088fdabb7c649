"""Conversation surgery: validate, repair, protected sets, clearing, recent suffixes, splitting and
dedup, with their invariants checked on generated tool-heavy conversations, on the real failure
shapes that brick sessions in well-known harnesses, and on the shared corpus."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentcontext as ac
from tests import support

INTERRUPTED = "[no result: the tool call was interrupted before it returned]"


def call(cid: str, name: str = "read_file", **args: Any) -> dict[str, Any]:
    return {
        "id": cid,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args or {"path": "a.py"})},
    }


def tool(cid: str, content: str = "result") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": cid, "content": content}


def kinds(items: list[dict[str, Any]]) -> list[str]:
    return sorted({v["kind"] for v in items})


# ---------------------------------------------------------------------------------------------
# Generated conversations: parallel calls, interrupted calls, user interruptions, thinking,
# reused ids, orphans, duplicates and already-compacted histories.


@st.composite
def messy_conversations(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]]]:
    """A conversation in OpenAI Chat or Anthropic format with every kind of protocol damage."""
    fmt = draw(st.sampled_from(["openai", "anthropic"]))
    ids = [f"c{i}" for i in range(draw(st.integers(1, 6)))]
    messages: list[dict[str, Any]] = []
    if fmt == "openai" and draw(st.booleans()):
        messages.append({"role": "system", "content": "rules"})
    if draw(st.booleans()):
        messages.append(
            {"role": "user", "content": "This session is being continued from a previous conversation. Summary: ..."}
        )
    for _ in range(draw(st.integers(1, 8))):
        messages.append({"role": "user", "content": draw(st.sampled_from(["do it", "next", "why?", "stop"]))})
        for _ in range(draw(st.integers(0, 3))):
            calls = draw(st.lists(st.sampled_from(ids), max_size=3))
            answered = [c for c in calls if draw(st.integers(0, 9)) > 1]
            thinking = fmt == "anthropic" and draw(st.booleans())
            late_thinking = thinking and draw(st.integers(0, 4)) == 0
            if fmt == "openai":
                messages.append(
                    {
                        "role": "assistant",
                        "content": draw(st.sampled_from([None, "", "ok"])),
                        **({"tool_calls": [call(c) for c in calls]} if calls else {}),
                    }
                )
                if draw(st.integers(0, 5)) == 0:
                    messages.append({"role": "user", "content": "wait"})  # an interruption
                for c in answered:
                    messages.append(tool(c, draw(st.sampled_from(["x", "long output " * 50, ""]))))
                if draw(st.integers(0, 8)) == 0:
                    messages.append(tool(draw(st.sampled_from([*ids, "ghost"]))))  # orphan or duplicate
            else:
                content: list[dict[str, Any]] = []
                if thinking and not late_thinking:
                    content.append({"type": "thinking", "thinking": "hmm", "signature": "sig"})
                content.append({"type": "text", "text": draw(st.sampled_from(["ok", "reading"]))})
                content += [
                    {"type": "tool_use", "id": c, "name": "read_file", "input": {"path": "a.py"}} for c in calls
                ]
                if late_thinking:
                    content.append({"type": "thinking", "thinking": "late", "signature": "sig"})
                messages.append({"role": "assistant", "content": content})
                results = [
                    {"type": "tool_result", "tool_use_id": c, "content": draw(st.sampled_from(["x", "long " * 80]))}
                    for c in answered
                ]
                if draw(st.integers(0, 6)) == 0:
                    results.insert(0, {"type": "text", "text": "(user typed while tools ran)"})
                if results:
                    messages.append({"role": "user", "content": results})
    return fmt, messages


def check_valid(conv: ac.Conversation) -> None:
    assert conv.validate() == [], conv.validate()


@settings(max_examples=300, deadline=None)
@given(messy_conversations())
def test_repair_always_yields_a_valid_conversation_and_is_idempotent(case: tuple[str, list[dict[str, Any]]]) -> None:
    fmt, messages = case
    conv = ac.Conversation(messages, format=fmt)
    fixed, changes = conv.repair()
    check_valid(fixed)
    again, none = fixed.repair()
    assert none == []
    assert again.to_format(fmt) == fixed.to_format(fmt)
    if conv.validate() == []:
        assert changes == [] and fixed.to_format(fmt) == messages
    # The whole-list API gives the same answer.
    out, list_changes = ac.repair(messages, format=fmt)
    assert list_changes == changes
    expected = fixed.to_anthropic_params() if fmt == "anthropic" else fixed.to_openai()
    assert out == expected


@settings(max_examples=300, deadline=None)
@given(messy_conversations(), st.floats(0.05, 1.0), st.integers(0, 14), st.integers(0, 4))
def test_operations_keep_the_protocol_and_leave_protected_messages_alone(
    case: tuple[str, list[dict[str, Any]]], share: float, recent_messages: int, recent_tools: int
) -> None:
    fmt, messages = case
    conv, _ = ac.Conversation(messages, format=fmt).repair()
    # Both formats write one message per message of the conversation, so indices line up.
    original = conv.to_format(fmt)
    if len(conv) > 2:
        conv.pin(len(conv) // 2)
    protected = set(conv.protected(recent_messages=recent_messages, recent_tools=recent_tools))
    assert set(conv.pinned) <= protected

    cleared, report = conv.clear_tool_results(recent_messages=recent_messages, recent_tools=recent_tools)
    check_valid(cleared)
    after = cleared.to_format(fmt)
    assert len(after) == len(original) == len(conv)
    touched = {c["index"] for c in report["cleared"]}
    for i, (a, b) in enumerate(zip(original, after, strict=True)):
        if i in protected or i not in touched:
            assert a == b, i
        else:
            assert a["role"] == b["role"] and "[cleared: result of " in json.dumps(b)
    assert report["tokens_after"] == report["tokens_before"] - report["tokens_freed"]
    assert cleared.tokens == report["tokens_after"]

    budget = int(conv.tokens * share)
    suffix = cleared.recent_suffix(budget)
    start = suffix["start"]
    kept = cleared.slice(start)
    if suffix["fits"]:
        assert kept.tokens == suffix["tokens"] <= suffix["available"]
        check_valid(kept)  # a contiguous suffix that is protocol-complete on its own
        assert kept.to_format(fmt) == after[start:]
    else:
        lo, hi = suffix["overflow"]
        assert hi == len(cleared) and cleared.slice(lo).tokens > suffix["available"]

    parts = cleared.split(3)
    if parts:
        assert parts[0][0] == suffix["preamble"] and parts[-1][1] == len(cleared)
        assert all(a[1] == b[0] for a, b in itertools.pairwise(parts))
        for lo, hi in parts:
            check_valid(cleared.slice(lo, hi))

    deduped, stubbed = conv.dedup_reads(["read_file"], recent_messages=recent_messages)
    check_valid(deduped)
    assert all(i not in set(range(len(conv) - recent_messages, len(conv))) for i in (s["index"] for s in stubbed))


# ---------------------------------------------------------------------------------------------
# Regression tests named after real failure shapes.


def test_compaction_marker_rendered_between_a_tool_use_and_its_result() -> None:
    messages = [
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": None, "tool_calls": [call("a")]},
        {"role": "user", "content": "[compacted: earlier history summarized]"},
        tool("a", "file contents"),
    ]
    assert kinds(ac.validate(messages)) == ["misplaced_result"]
    fixed, changes = ac.repair(messages)
    assert [c["kind"] for c in changes] == ["moved_result"]
    assert [m["role"] for m in fixed] == ["user", "assistant", "tool", "user"]
    assert ac.validate(fixed) == []


def test_chained_compactions_leave_an_old_summary_inside_the_kept_window() -> None:
    messages = [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "This session is being continued from a previous conversation. Summary 1."},
        {"role": "user", "content": "This session is being continued from a previous conversation. Summary 2."},
        {"role": "assistant", "content": None, "tool_calls": [call("a")]},
        tool("a", "x " * 400),
        {"role": "user", "content": "continue"},
        {"role": "assistant", "content": None, "tool_calls": [call("b")]},
        tool("b", "y " * 400),
        {"role": "assistant", "content": "done"},
    ]
    conv = ac.Conversation(messages)
    assert conv.validate() == []
    assert conv.groups() == [(1, 2), (2, 5), (5, 9)]
    for budget in range(50, conv.tokens + 1, 25):
        s = conv.recent_suffix(budget)
        if s["fits"]:
            assert s["start"] in (1, 2, 5, 6, 8, 9) and conv.slice(s["start"]).validate() == []


def test_aborted_call_followed_by_a_user_message() -> None:
    messages = [
        {"role": "user", "content": "run the tests"},
        {"role": "assistant", "content": None, "tool_calls": [call("a", "bash", command="pytest")]},
        {"role": "user", "content": "stop, do something else"},
    ]
    assert kinds(ac.validate(messages)) == ["missing_result"]
    fixed, changes = ac.repair(messages)
    assert [c["kind"] for c in changes] == ["synthesized_result"]
    assert fixed[2] == {"role": "tool", "tool_call_id": "a", "content": INTERRUPTED}
    assert fixed[3]["content"] == "stop, do something else"
    anthropic = ac.convert(messages, to="anthropic")["messages"]
    fixed_a, _ = ac.repair(anthropic, format="anthropic")
    assert fixed_a["messages"][2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "a",
        "content": INTERRUPTED,
        "is_error": True,
    }


def test_parallel_calls_with_one_result_missing() -> None:
    messages = [
        {"role": "user", "content": "read three files"},
        {"role": "assistant", "content": None, "tool_calls": [call("a"), call("b"), call("c")]},
        tool("a", "A"),
        tool("c", "C"),
    ]
    fixed, changes = ac.repair(messages)
    assert [c["kind"] for c in changes] == ["synthesized_result"]
    assert [m.get("tool_call_id") for m in fixed[2:]] == ["a", "b", "c"]
    assert fixed[3]["content"] == INTERRUPTED and fixed[4]["content"] == "C"


def test_one_call_and_result_larger_than_the_keep_budget() -> None:
    messages = [
        {"role": "user", "content": "dump the database"},
        {"role": "assistant", "content": None, "tool_calls": [call("a", "sql", query="select *")]},
        tool("a", "row\n" * 5000),
    ]
    conv = ac.Conversation(messages)
    s = conv.recent_suffix(500)
    assert s["fits"] is False and s["boundary"] == "none"
    assert s["overflow"] == (1, 3), "the indivisible round is reported, never split"
    with pytest.raises(ac.BudgetError) as info:
        ac.trim_messages(messages, 500, clear=False)
    assert info.value.needed > 500


def test_ids_reused_across_turns() -> None:
    messages = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": None, "tool_calls": [call("toolu_1")]},
        tool("toolu_1", "first"),
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": None, "tool_calls": [call("toolu_1")]},
        tool("toolu_1", "second"),
    ]
    assert kinds(ac.validate(messages)) == ["duplicate_id"]
    fixed, changes = ac.repair(messages)
    assert [c["kind"] for c in changes] == ["renamed_id"]
    assert fixed[4]["tool_calls"][0]["id"] == fixed[5]["tool_call_id"] == "toolu_1#2"
    assert fixed[5]["content"] == "second"
    assert ac.validate(fixed) == []


def test_orphan_and_second_results_become_user_messages_that_keep_their_text() -> None:
    """repair loses no content: a result with no call before it, and a second result for a call,
    become user messages that name the call (the convention the importers use too)."""
    messages = [
        {"role": "user", "content": "go"},
        {**tool("ghost", "output of a call that was trimmed away"), "extra": "kept"},
        {"role": "assistant", "content": None, "tool_calls": [call("a")]},
        tool("a", "first"),
        tool("a", "second"),
    ]
    fixed, changes = ac.repair(messages)
    assert [(c["kind"], c["index"], c["id"]) for c in changes] == [
        ("orphan_to_user", 1, "ghost"),
        ("duplicate_to_user", 4, "a"),
    ]
    assert fixed[1] == {
        "role": "user",
        "content": "[tool result for call ghost, which is not in the conversation]\noutput of a call that was trimmed away",
    }
    # In the library's own format the message's other fields (metadata) stay; a provider format's
    # fields of a result (Chat's name, a Responses item's type) would be wrong on a user message.
    assert ac.repair(messages, format="jsonl")[0][1]["extra"] == "kept"
    assert fixed[3] == tool("a", "first")
    assert fixed[4] == {"role": "user", "content": "[another tool result for call a, which already has one]\nsecond"}
    assert ac.validate(fixed) == []
    anthropic = ac.convert(messages, to="anthropic")["messages"]
    fixed_a, changes_a = ac.repair(anthropic, format="anthropic")
    assert [c["kind"] for c in changes_a] == ["orphan_to_user", "duplicate_to_user"]
    texts = json.dumps(fixed_a)
    assert "output of a call that was trimmed away" in texts and "second" in texts
    assert ac.validate(fixed_a["messages"], format="anthropic") == []
    # A Responses orphan becomes a user message item, not a function_call_output without its call.
    items = [
        {"type": "message", "role": "user", "content": "go"},
        {"type": "function_call_output", "call_id": "zz", "output": "lost?"},
    ]
    fixed_r, changes_r = ac.repair(items, format="responses")
    assert [c["kind"] for c in changes_r] == ["orphan_to_user"]
    assert fixed_r[1]["role"] == "user" and fixed_r[1].get("type", "message") == "message"
    assert fixed_r[1]["content"] == "[tool result for call zz, which is not in the conversation]\nlost?"
    assert ac.repair(fixed_r, format="responses") == (fixed_r, [])


def test_thinking_after_a_tool_call_is_moved_first() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "a", "name": "f", "input": {}},
                {"type": "thinking", "thinking": "t", "signature": "s"},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "r"}]},
    ]
    assert kinds(ac.validate(messages, format="anthropic")) == ["thinking_order"]
    fixed, changes = ac.repair(messages, format="anthropic")
    assert [c["kind"] for c in changes] == ["reordered_thinking"]
    assert [b["type"] for b in fixed["messages"][1]["content"]] == ["thinking", "tool_use"]


def test_clearing_details() -> None:
    messages = [{"role": "system", "content": "rules"}, {"role": "user", "content": "go"}]
    for i in range(10):
        messages.append(
            {
                "role": "assistant",
                "content": f"step {i}",
                "tool_calls": [call(f"c{i}", "read_file", path=f"src/m{i}.py")],
            }
        )
        messages.append(tool(f"c{i}", f"contents of m{i}\n" * 300))
    conv = ac.Conversation(messages)
    cleared, report = conv.clear_tool_results(recent_messages=4, recent_tools=3)
    ids = [c["tool_use_id"] for c in report["cleared"]]
    assert ids == [f"c{i}" for i in range(7)], "the last 3 interactions (and last 4 messages) stay"
    out = cleared.to_openai()
    assert out[3]["content"].startswith("[cleared: result of read_file(path=src/m0.py), ")
    assert out[3]["content"].endswith("tokens; recall id c0]")
    assert out[2] == messages[2], "the call and the assistant text stay intact"
    assert out[-1] == messages[-1]

    excluded, r2 = conv.clear_tool_results(recent_messages=4, exclude_tools=["read_file"])
    assert r2["cleared"] == [] and excluded.to_openai() == messages

    cautious, r3 = conv.clear_tool_results(recent_messages=4, clear_at_least=10**9)
    assert r3["skipped_below_minimum"] is True and cautious.to_openai() == messages

    small_inputs, r4 = conv.clear_tool_results(recent_messages=4, clear_tool_inputs=True)
    assert small_inputs.to_openai()[2] == messages[2], "an input is replaced only when that makes it smaller"
    assert r4["tokens_freed"] == report["tokens_freed"]
    writes = [{"role": "user", "content": "write"}]
    for i in range(6):
        writes.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call(f"w{i}", "write_file", path="x.py", content="x = 1\n" * 400)],
            }
        )
        writes.append(tool(f"w{i}", "wrote x.py"))
    big, r5 = ac.Conversation(writes).clear_tool_results(recent_messages=2, recent_tools=1, clear_tool_inputs=True)
    args = json.loads(big.to_openai()[1]["tool_calls"][0]["function"]["arguments"])
    assert list(args) == ["cleared"]
    assert args["cleared"].startswith("[cleared: arguments of write_file(path=x.py, content=x = 1")
    assert args["cleared"].endswith("tokens; recall id w0#arguments]")
    assert r5["tokens_freed"] > 1000 and big.validate() == []

    conv.pin(3)
    pinned, r6 = conv.clear_tool_results(recent_messages=4)
    assert pinned.to_openai()[3] == messages[3]
    assert "c0" not in [c["tool_use_id"] for c in r6["cleared"]]

    _again, r7 = cleared.clear_tool_results(recent_messages=4)
    assert r7["cleared"] == [], "placeholders are not cleared twice"


def test_thinking_of_old_turns_can_be_dropped() -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(6):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "deep " * 100, "signature": "s"},
                    {"type": "text", "text": f"t{i}"},
                ],
            }
        )
        messages.append({"role": "user", "content": f"more {i}"})
    conv = ac.Conversation(messages, format="anthropic")
    _kept, r = conv.clear_tool_results(recent_messages=2)
    assert r["thinking_dropped"] == []
    dropped, r = conv.clear_tool_results(recent_messages=2, keep_thinking=False)
    assert r["thinking_dropped"] == [1, 3, 5, 7, 9]
    assert dropped.to_anthropic_params()["messages"][1]["content"] == [{"type": "text", "text": "t0"}]
    assert dropped.to_anthropic_params()["messages"][11] == messages[11]


def test_dedup_of_repeated_reads() -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i, path in enumerate(["a.py", "b.py", "a.py", "a.py"]):
        messages.append({"role": "assistant", "content": None, "tool_calls": [call(f"c{i}", "read_file", path=path)]})
        messages.append(tool(f"c{i}", f"contents of {path} v{i}\n" * 50))
    messages.append({"role": "user", "content": "thanks"})
    conv = ac.Conversation(messages)
    deduped, stubbed = conv.dedup_reads(["read_file"], recent_messages=1)
    assert [s["tool_use_id"] for s in stubbed] == ["c0", "c2"]
    out = deduped.to_openai()
    assert out[2]["content"].startswith("[superseded: read_file(path=a.py) was called again later (call c3)")
    assert out[4] == messages[4] and out[8] == messages[8]
    assert deduped.validate() == []


def test_groups_rounds_and_split_on_all_formats() -> None:
    session = support.synthetic_session(300, seed=5)
    for fmt in ("openai", "anthropic", "responses", "jsonl"):
        conv = ac.Conversation(session).to_format(fmt)
        c = (
            ac.Conversation(conv[1:], format=fmt, system=conv[0]["content"])
            if fmt == "anthropic"
            else ac.Conversation(conv, format=fmt)
        )
        assert c.validate() == []
        groups = c.groups()
        assert groups[0][0] == 1 and groups[-1][1] == len(c)
        assert all(a[1] == b[0] for a, b in itertools.pairwise(groups))
        parts = c.split(4)
        assert len(parts) == 4
        shares = [c.slice(lo, hi).tokens / c.tokens for lo, hi in parts]
        assert max(shares) < 0.4, shares


def test_trim_messages_keeps_system_and_a_valid_recent_suffix() -> None:
    session = support.synthetic_session(400, seed=6)
    trimmed = ac.trim_messages(session, 8_000)
    assert trimmed[0] == session[0]
    assert ac.Conversation(trimmed).tokens <= 8_000
    assert ac.validate(trimmed) == []
    tail = trimmed[1:]
    assert session[-len(tail) :][-12:] == tail[-12:], "the recent messages are untouched"
    assert ac.trim_messages(session, 10**9) == session
    request = ac.trim_messages(
        ac.convert(session[1:], to="anthropic")["messages"], 8_000, format="anthropic", system="rules"
    )
    assert request["system"] == "rules" and ac.validate(request["messages"], format="anthropic") == []


@pytest.mark.parametrize("encoding", ["approximate", "heuristic", "o200k_base"])
def test_trim_fast_path_matches_the_general_path(encoding: str) -> None:
    session = support.synthetic_session(600, seed=8)
    total = ac.Conversation(session, encoding=encoding).tokens  # type: ignore[arg-type]
    for share in (0.05, 0.2, 0.5, 0.9, 1.1):
        for clear in (True, False):
            budget = int(total * share)
            try:
                fast = ac.trim_messages(session, budget, encoding=encoding, clear=clear)  # type: ignore[arg-type]
            except ac.BudgetError as e:
                with pytest.raises(ac.BudgetError) as again:
                    ac.trim_messages(tuple(session), budget, encoding=encoding, clear=clear)  # type: ignore[arg-type]
                assert again.value.needed == e.needed
                continue
            general = ac.trim_messages(tuple(session), budget, encoding=encoding, clear=clear)  # type: ignore[arg-type]
            assert fast == general, (share, clear)
            by_id = {id(m) for m in session}
            untouched = [m for m in fast if not str(m.get("content", "")).startswith("[cleared:")]
            assert all(id(m) in by_id for m in untouched), "untouched messages are the caller's own objects"
    assert session == support.synthetic_session(600, seed=8), "the input is never mutated"


@pytest.mark.parametrize("encoding", ["approximate", "o200k_base"])
def test_trimming_a_trimmed_list_leaves_its_placeholders(encoding: str) -> None:
    # A framework that keeps the trimmed list and trims it again: the fast path re-cleared the
    # placeholders of the first trim (losing the original sizes they name), the general path did not.
    messages: list[dict[str, Any]] = [{"role": "user", "content": "do it"}]
    for i in range(20):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "read_file", "arguments": f'{{"path": "f{i}.py"}}'},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "x = 1\n" * (300 + i * 37)})
    half = ac.Conversation(messages, encoding=encoding).tokens // 2  # type: ignore[arg-type]
    once = ac.trim_messages(messages, half, encoding=encoding)  # type: ignore[arg-type]
    placeholders = {m["tool_call_id"]: m["content"] for m in once if str(m.get("content")).startswith("[cleared:")}
    assert len(placeholders) > 10
    budget = ac.Conversation(once, encoding=encoding).tokens - 1  # type: ignore[arg-type]
    fast = ac.trim_messages(once, budget, encoding=encoding)  # type: ignore[arg-type]
    general = ac.trim_messages(tuple(once), budget, encoding=encoding)  # type: ignore[arg-type]
    assert fast == general
    for m in fast:
        if m["role"] == "tool" and m["tool_call_id"] in placeholders:
            assert m["content"] == placeholders[m["tool_call_id"]]


# ---------------------------------------------------------------------------------------------
# The shared corpus.


@pytest.mark.parametrize("path", support.normalized_files(), ids=lambda p: f"{p.parent.name}/{p.stem[:40]}")
def test_corpus_stays_valid_under_every_operation(path: Path, transcripts: Path) -> None:
    conv, _ = ac.Conversation.from_file(path).repair()
    check_valid(conv)
    for share in (0.1, 0.25, 0.5):
        budget = int(conv.tokens * share)
        cleared, _report = conv.clear_tool_results()
        check_valid(cleared)
        s = cleared.recent_suffix(budget)
        if s["fits"]:
            check_valid(cleared.slice(s["start"]))
        for lo, hi in cleared.split(4):
            check_valid(cleared.slice(lo, hi))
        check_valid(conv.dedup_reads(["read", "read_file", "Read", "view", "cat"])[0])
        try:
            trimmed = ac.trim_messages(conv.to_jsonl(), budget, format="jsonl")
        except ac.BudgetError:
            continue
        assert ac.validate(trimmed, format="jsonl") == []
