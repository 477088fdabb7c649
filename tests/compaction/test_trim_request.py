"""``trim_messages`` never drops the user's request: the latest real user message is in the
output (verbatim, or head + marker + tail when it alone is too big) or the budget is refused
with ``BudgetError``; the output keeps the protocol in every format; and the caller's own
message objects come back as themselves (a reused call id included)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentcontext as ac
from agentcontext.errors import BudgetError

MARKER = re.compile(r"(?P<head>.*?)\n?\[\.\.\. [^\]]* omitted \.\.\.\]\n?(?P<tail>.*)", re.DOTALL)


def call(i: int, name: str = "read_file") -> dict[str, Any]:
    return {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": '{"path": "a.py"}'}}


def agent(request: str, rounds: list[int], *, earlier: int = 0, parallel: int = 1) -> list[dict[str, Any]]:
    """A system prompt, ``earlier`` finished exchanges, the request, then one tool round per
    entry of ``rounds`` (its result's size in words), ``parallel`` calls each."""
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for k in range(earlier):
        out += [{"role": "user", "content": f"earlier question {k}"}, {"role": "assistant", "content": "done"}]
    out.append({"role": "user", "content": request})
    n = 0
    for size in rounds:
        calls = [call(n + j) for j in range(parallel)]
        out.append({"role": "assistant", "content": None, "tool_calls": calls})
        for c in calls:
            out.append({"role": "tool", "tool_call_id": c["id"], "content": "word " * size})
        n += parallel
    return out


def request_kept(out: list[dict[str, Any]], request: str) -> bool:
    """The request verbatim, or its head and tail around the truncation marker."""
    for m in out:
        if m.get("role") != "user":
            continue
        text = m["content"] if isinstance(m["content"], str) else "".join(b.get("text", "") for b in m["content"])
        if text == request:
            return True
        cut = MARKER.fullmatch(text)
        if cut and request.startswith(cut["head"]) and request.endswith(cut["tail"]) and cut["head"] + cut["tail"]:
            return True
    return False


def test_the_request_survives_from_the_second_tool_call_on() -> None:
    # Each framework that passes the whole list every turn: the request, then tool rounds.
    m = agent("please fix the failing test in foo.py", [300, 300, 300])
    out = ac.trim_messages(m, 400)
    assert [x["role"] for x in out] == ["system", "user", "assistant", "tool"]
    assert out[1] is m[1]
    assert ac.validate(out) == []


def test_anthropic_output_opens_with_the_user() -> None:
    m = agent("please fix the failing test in foo.py", [300, 300, 300])
    anthropic = ac.convert(m, to="anthropic")
    out = ac.trim_messages(anthropic["messages"], 400, format="anthropic", system=anthropic["system"])
    assert out["messages"][0]["role"] == "user"
    assert request_kept(out["messages"], "please fix the failing test in foo.py")
    assert ac.validate(out["messages"], format="anthropic", system=out.get("system")) == []


def test_a_request_too_large_alone_is_cut_head_and_tail() -> None:
    request = "START " + "please read all of this carefully. " * 400 + "END"
    m = agent(request, [50, 50])
    out = ac.trim_messages(m, 500)
    assert ac.Conversation(out).tokens <= 500
    assert request_kept(out, request) and out[1]["content"] != request
    assert out[1]["content"].startswith("START") and out[1]["content"].endswith("END")
    assert m[1]["content"] == request  # the caller's message is not changed in place
    assert ac.validate(out) == []


def test_a_budget_too_small_for_the_request_and_the_last_round_is_refused() -> None:
    m = agent("fix it", [50, 400])
    with pytest.raises(BudgetError) as e:
        ac.trim_messages(m, 300)
    assert "latest user request" in str(e.value)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rounds=st.lists(st.integers(1, 400), max_size=8),
    words=st.integers(1, 600),
    earlier=st.integers(0, 3),
    parallel=st.integers(1, 3),
    share=st.floats(0.0, 1.2),
    clear=st.booleans(),
    anthropic=st.booleans(),
)
def test_the_latest_request_is_always_present_or_the_budget_refused(
    rounds: list[int], words: int, earlier: int, parallel: int, share: float, clear: bool, anthropic: bool
) -> None:
    request = "R " + "ask " * words + "Z"
    m = agent(request, rounds, earlier=earlier, parallel=parallel)
    budget = int(ac.Conversation(m).tokens * share)
    try:
        if anthropic:
            a = ac.convert(m, to="anthropic")
            got = ac.trim_messages(a["messages"], budget, format="anthropic", system=a["system"], clear=clear)
            out = got["messages"]
            assert out[0]["role"] == "user"
            assert ac.validate(out, format="anthropic", system=got.get("system")) == []
        else:
            out = ac.trim_messages(m, budget, clear=clear)
            assert ac.validate(out) == []
            assert ac.Conversation(out).tokens <= budget
    except BudgetError:
        return
    assert request_kept(out, request)


def test_the_callers_objects_come_back_with_a_reused_call_id() -> None:
    m = agent("fix it", [200, 200, 200])
    # Every call reuses one id (as some frameworks number calls per turn).
    for x in m:
        if x.get("tool_calls"):
            x["tool_calls"][0]["id"] = "call_0"
        if x["role"] == "tool":
            x["tool_call_id"] = "call_0"
    whole = ac.trim_messages(m, 10**6)
    assert all(a is b for a, b in zip(whole, m, strict=True))
    out = ac.trim_messages(m, 400, clear=False)
    assert [x["role"] for x in out] == ["system", "user", "assistant", "tool"]
    assert all(any(x is y for y in m) for x in out)
    cleared = ac.trim_messages(m, 600)
    # Messages the library did not change are the caller's objects; a cleared result is a new dict.
    for x in cleared:
        if not any(x is y for y in m):
            assert x["role"] == "tool" and x["content"] != "word " * 200
    assert {v["kind"] for v in ac.validate(cleared)} == {"duplicate_id"}


@pytest.mark.parametrize(
    "harness_text",
    [
        "<task-notification>\n<task-id>b7</task-id>\n<summary>Background command done</summary>\n</task-notification>",
        "[Request interrupted by user]",
        "<system-reminder>The todo list is empty.</system-reminder>",
    ],
)
def test_a_harness_text_after_the_request_is_not_taken_for_it(harness_text: str) -> None:
    """Claude Code puts task notifications, interruption markers and reminders in user turns: the
    request trim keeps is the one the user typed before them (was: the harness text, and the
    request was dropped). Both paths: plain Chat dicts (the fast path) and Anthropic blocks."""
    request = "please fix the failing test in foo.py"
    m = agent(request, [300, 300])
    m += [{"role": "user", "content": harness_text}, {"role": "assistant", "content": "Noted."}]
    m += agent("unused", [300])[2:]  # one more tool round after the notification
    out = ac.trim_messages(m, 500)
    assert request_kept(out, request), [x["role"] for x in out]
    assert ac.validate(out) == []
    anthropic = ac.convert(m, to="anthropic")
    got = ac.trim_messages(anthropic["messages"], 500, format="anthropic", system=anthropic["system"])
    assert request_kept(got["messages"], request)
    assert ac.validate(got["messages"], format="anthropic", system=got.get("system")) == []


def test_a_summary_of_earlier_history_stands_for_the_requests_it_replaced() -> None:
    """After a compaction the summary holds the latest request: with no request after it, trim
    keeps it like a request."""
    summary = (
        "[agentcontext: earlier conversation compacted: 9 earlier messages]\n\n## Latest request (verbatim)\nfix foo"
    )
    m = agent(summary, [300, 300, 300])
    out = ac.trim_messages(m, 400)
    assert out[1]["content"] == summary
    assert ac.validate(out) == []
