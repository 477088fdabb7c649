"""Nothing leaves the window silently (issue 25, section 7): after a compaction, every message of
the input is kept (whole, or cut or cleared in place), covered by a summary whose header counts
it, or counted by a drop marker in the output.

The check reads only the input and the output: it matches output messages to input messages by
content (in order), and parses the counts from the summary headers and drop markers of the
output's text. It uses none of the ladder's own accounting (provenance, origins, fates, events).
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.compaction import PRESETS, Compactor
from agentcontext.compaction.harnesses.claude_code import ClaudeCode
from agentcontext.compaction.harnesses.codex import Codex
from agentcontext.compaction.harnesses.letta import Letta
from tests import support


@dataclasses.dataclass(frozen=True)
class _CodexDroppingRounds(ClaudeCode, Codex):
    """Codex's rebuild with Claude Code's overflowing summary request (the hooks of both, by MRO)."""


@dataclasses.dataclass(frozen=True)
class _CodexTruncating(Letta, Codex):
    """Codex's rebuild with Letta's overflowing summary request."""


SHARES = (25, 10, 5)

#: The header of a summary message: how many messages it replaces.
SUMMARY_HEADER = re.compile(r"^\[agentcontext: earlier conversation compacted: ([\d,]+) earlier messages \(")
#: A drop marker: how many messages were dropped where it stands.
DROP_MARKER = re.compile(r"^\[agentcontext: ([\d,]+) earlier messages \([\d,]+ tokens\) were dropped")
#: The marker of a text cut head + marker + tail (the head before it, the tail after it).
CUT_MARKER = re.compile(r"\n?\[\.\.\. [\d,]+ lines, [\d,]+ chars omitted[^\n]*? \.\.\.\]\n?")


def _same(out: dict[str, Any], inp: dict[str, Any]) -> bool:
    """Whether output message ``out`` is input message ``inp``, whole or changed in place: equal;
    a tool result for the same call (cut or cleared); an assistant message with the same calls
    (its texts or arguments cut); or its text cut head + marker + tail."""
    if out == inp:
        return True
    if out.get("role") != inp.get("role"):
        return False
    if out.get("role") == "tool":
        return out.get("tool_call_id") == inp.get("tool_call_id")
    calls = [c.get("id") for c in out.get("tool_calls") or []]
    if calls:
        return calls == [c.get("id") for c in inp.get("tool_calls") or []]
    text, was = out.get("content"), inp.get("content")
    if not (isinstance(text, str) and isinstance(was, str)):
        return False
    found = CUT_MARKER.search(text)
    if found is None:
        return False
    head, tail = text[: found.start()], text[found.end() :]
    return len(was) > len(head) + len(tail) and was.startswith(head) and was.endswith(tail)


def account(inp: list[dict[str, Any]], out: list[dict[str, Any]]) -> tuple[list[int], int, int]:
    """The positions of the input messages not in the output, and the counts the output's new
    messages give: messages covered by summaries, and messages counted by drop markers."""
    present: set[int] = set()
    at = 0
    counted = {SUMMARY_HEADER: 0, DROP_MARKER: 0}
    for m in out:
        match = next((i for i in range(at, len(inp)) if inp[i] == m), None)
        if match is None:
            match = next((i for i in range(at, len(inp)) if _same(m, inp[i])), None)
        if match is not None:
            present.add(match)
            at = match + 1
            continue
        text = m.get("content") if isinstance(m.get("content"), str) else ""
        for pattern in counted:
            header = pattern.match(text)
            if header:
                counted[pattern] += int(header.group(1).replace(",", ""))
    missing = [i for i in range(len(inp)) if i not in present]
    return missing, counted[SUMMARY_HEADER], counted[DROP_MARKER]


def _check(inp: list[dict[str, Any]], result: ac.CompactionResult, where: str) -> int:
    """Assert that every input message is kept, summarized or counted, and that the drop stage
    events count what the markers count; the number of messages dropped behind markers."""
    missing, summarized, dropped = account(inp, result.conversation.to_jsonl())
    assert len(missing) == summarized + dropped, (where, missing, summarized, dropped)
    events = sum(s.detail.get("dropped_messages", 0) for s in result.stages if s.stage == "drop")
    assert events == dropped, (where, events, dropped)
    return dropped


@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_message_is_kept_summarized_or_counted(preset: str, transcripts: Path) -> None:
    runs = 0
    for path in support.normalized_files():
        conv = ac.Conversation.from_file(path)
        inp = conv.to_jsonl()
        for share in SHARES:
            budget = max(1, conv.tokens * share // 100)
            result = Compactor(preset).compact(conv, budget=budget)
            _check(inp, result, f"{path.parent.name}/{path.name} at {share}%")
            runs += 1
    assert runs == 3 * len(support.normalized_files()) > 0


def _tool_session(rounds: int, last_result_words: int) -> list[dict[str, Any]]:
    """An earlier exchange, the latest request, ``rounds`` tool rounds, and a last round whose
    result is ``last_result_words`` words long."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Earlier: list the files in the repository please."},
        {"role": "assistant", "content": "The repository holds src/, tests/ and a README."},
        {"role": "user", "content": "Now find where the retry limit is set and raise it to five."},
    ]
    for i in range(rounds + 1):
        words = last_result_words if i == rounds else 250
        call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": f'{{"n": {i}}}'}}
        messages += [
            {"role": "assistant", "content": f"Step {i}: searching.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": " ".join(f"line{i}-{k}" for k in range(words))},
        ]
    return messages


def test_rounds_between_the_summary_and_the_last_round_are_summarized_not_dropped() -> None:
    # On main: a summary of the first messages, then the tool rounds before an oversized last
    # round dropped with no word in the output (only `dropped` in the report).
    conv = ac.Conversation(_tool_session(rounds=14, last_result_words=3000))
    result = Compactor("openharness").compact(conv, budget=conv.tokens // 4)
    assert result.fits and result.conversation.validate() == []
    missing, summarized, dropped = account(conv.to_jsonl(), result.conversation.to_jsonl())
    assert missing and len(missing) == summarized and dropped == 0
    summary = [s for s in result.stages if s.stage == "summarize" and "replanned" in s.detail]
    assert summary and summary[-1].detail["summarized_messages"] == summarized
    assert result.to_dict()["dropped"] == 0


def test_without_a_summary_every_run_of_dropped_messages_gets_a_marker(tmp_path: Path) -> None:
    # The kept part opens with a user message: on main, no marker at all.
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful."}]
    for i in range(12):
        messages += [
            {"role": "user", "content": f"Question {i}: " + "why " * 80},
            {"role": "assistant", "content": f"Answer {i}: " + "because " * 80},
        ]
    conv = ac.Conversation(messages)
    policy = dataclasses.replace(PRESETS["openharness"].compaction, summarize=False, clear_tool_results=False)
    store = ac.ResultStore(tmp_path / "store")
    result = Compactor(policy, store=store).compact(conv, budget=conv.tokens // 3)
    assert result.fits
    out = result.conversation.to_jsonl()
    assert _check(conv.to_jsonl(), result, "user-first") > 0
    marker = out[1]["content"]
    recall_id = re.search(r"recall id (\S+) gives the originals", marker)
    assert recall_id is not None
    stored = [json.loads(line) for line in store.get(recall_id.group(1)).splitlines()]
    assert stored == messages[1 : 1 + len(stored)] and out[2] == messages[1 + len(stored)]


class _Failing:
    """A summarizer that always fails."""

    def summarize(self, request: Any) -> str:
        raise RuntimeError("the summarizer is down")


def test_recompile_without_a_summary_counts_what_it_drops() -> None:
    # On main: `recompile` dropped everything before the suffix that fits, with no marker.
    conv = ac.Conversation(_tool_session(rounds=10, last_result_words=100))
    result = Compactor("openharness", summarizer=_Failing(), fallback=None).recompile(conv, conv.tokens // 3)
    assert result.fits and result.summary is None
    assert _check(conv.to_jsonl(), result, "recompile") > 0
    assert [s.stage for s in result.stages][-1] == "drop"


# -- Claude Code's summarizer overflow: rounds dropped from the summary request ---------------------


@pytest.fixture
def server() -> Any:
    from tests.llm_server import LLMServer

    with LLMServer() as s:
        yield s


def _dropped_rounds_case(
    server: Any, tmp_path: Path, overflows: int, policy: Any = "claude-code", **compact: Any
) -> tuple[Any, Any, Any]:
    """Claude Code's preset over the loopback server, its summary request rejected as too long
    ``overflows`` times (3,000 tokens over each time): the input, the result and the store."""
    from tests.compaction.test_harnesses import _long_session, _summary_reply
    from tests.llm_server import Overflow
    from tests.providers.test_providers import make

    conv = _long_session()
    server.enqueue(*[Overflow(tokens=conv.tokens + 10_000, limit=conv.tokens + 7_000) for _ in range(overflows)])
    server.default = lambda request: _summary_reply(conv)
    provider = make("openai", server, context_window=400_000)
    store = ac.ResultStore(tmp_path / "store")
    summarizer = ac.LLMSummarizer(provider, use_fallback=False)
    result = Compactor(policy, summarizer=summarizer, fallback=None, store=store).compact(conv, **compact)
    return conv, result, store


def _stored(store: ac.ResultStore, recall_id: str) -> list[dict[str, Any]]:
    """The messages stored under ``recall_id`` (JSON Lines in the input's format, Chat here)."""
    lines = [json.loads(line) for line in store.get(recall_id).splitlines()]
    return ac.Conversation(lines, format="openai").to_jsonl()


@pytest.mark.parametrize("overflows", [1, 2])
def test_rounds_dropped_from_the_summary_request_are_counted_by_a_marker(
    server: Any, tmp_path: Path, overflows: int
) -> None:
    # Before: the summary header counted every older message as summarized though the summarizer
    # never saw the rounds dropped from its request (only the event detail said so).
    conv, result, store = _dropped_rounds_case(server, tmp_path, overflows, manual=True)
    inp, out = conv.to_jsonl(), result.conversation.to_jsonl()
    summarize = next(s for s in result.stages if s.stage == "summarize")
    unseen = summarize.detail["dropped_messages"]
    assert summarize.detail["overflow_retries"] == overflows and unseen > 0
    assert len(server.requests) == overflows + 1
    # The last request the summarizer got says how many of the messages it was asked about it lost.
    sent = json.dumps(server.requests[-1].body, ensure_ascii=False)
    assert f"the {unseen:,} oldest messages" in sent
    dropped = _check(inp, result, f"drop_rounds x{overflows}")
    assert dropped == unseen
    missing, summarized, _ = account(inp, out)
    assert summarized == summarize.detail["summarized_messages"] == len(missing) - unseen
    # The marker comes before the summary and gives the originals of exactly what was dropped.
    pre = conv.preamble
    marker = out[pre]["content"]
    assert DROP_MARKER.match(marker) and SUMMARY_HEADER.match(out[pre + 1]["content"])
    found = re.search(r"recall id (\S+) gives the originals", marker)
    assert found is not None
    assert _stored(store, found.group(1)) == inp[pre : pre + unseen]
    header = re.search(r"recall id (\S+) gives the originals", out[pre + 1]["content"])
    assert header is not None
    assert _stored(store, header.group(1)) == inp[pre + unseen : pre + unseen + summarized]
    report = result.to_dict()
    assert report["dropped"] == unseen and report["summarized"] == summarized
    assert result.conversation.validate() == []


def test_rounds_dropped_from_the_summary_request_under_a_budget(server: Any, tmp_path: Path) -> None:
    conv, result, _ = _dropped_rounds_case(server, tmp_path, 1, budget="40%")
    summarize = next(s for s in result.stages if s.stage == "summarize")
    assert summarize.detail.get("dropped_messages", 0) > 0 and result.fits
    assert _check(conv.to_jsonl(), result, "drop_rounds under a budget") == summarize.detail["dropped_messages"]


def test_rounds_dropped_from_codexs_summary_request(server: Any, tmp_path: Path) -> None:
    # Codex keeps the user messages beside its summary: the marker counts only the others.
    policy = dataclasses.replace(PRESETS["codex"].compaction, harness=_CodexDroppingRounds(trigger_margin=0))
    conv, result, _ = _dropped_rounds_case(server, tmp_path, 1, policy, manual=True)
    summarize = next(s for s in result.stages if s.stage == "summarize")
    assert summarize.detail.get("dropped_messages", 0) > 0
    dropped = _check(conv.to_jsonl(), result, "codex with drop_rounds")
    assert 0 < dropped < summarize.detail["dropped_messages"]  # the user messages among them are kept
    assert result.to_dict()["dropped"] == dropped


# -- Letta's summarizer overflow: the middle of the transcript omitted from the summary request -----


def test_messages_omitted_from_lettas_truncated_summary_request_are_counted_by_a_marker(
    server: Any, tmp_path: Path
) -> None:
    # Before: the summary request kept only the head and the tail of the transcript, and the
    # summary header still counted the messages of the omitted middle as summarized.
    from tests.compaction.test_harnesses import _summary_reply
    from tests.compaction.test_harnesses_openclaw_letta import ASK, letta_policy, session
    from tests.providers.test_providers import make

    conv = session(60, result_chars=6_000)
    policy = letta_policy(conv)
    server.default = lambda request: _summary_reply(conv)
    provider = make("openai", server, context_window=10_192)
    store = ac.ResultStore(tmp_path / "store")
    summarizer = ac.LLMSummarizer(provider, use_fallback=False)
    result = Compactor(policy, summarizer=summarizer, fallback=None, store=store).compact(conv)
    assert len(server.requests) == 1
    sent = json.dumps(server.requests[0].body, ensure_ascii=False)
    assert "chars omitted" in sent and ASK in sent  # head + tail of the transcript
    inp, out = conv.to_jsonl(), result.conversation.to_jsonl()
    text = "\n".join(str(m.get("content")) for m in server.requests[0].body["messages"])
    # The results the summarizer never saw any of (neither start nor end) are counted by the marker.
    missing, summarized, _ = account(inp, out)
    never = [i for i in missing if inp[i]["role"] == "tool" and inp[i]["content"][:100] not in text
             and inp[i]["content"][-100:] not in text]  # fmt: skip
    assert never
    dropped = _check(inp, result, "letta truncate")
    assert dropped >= len(never)
    summarize = next(s for s in result.stages if s.stage == "summarize")
    unseen = summarize.detail["omitted_messages"]
    assert dropped == unseen
    assert summarized == summarize.detail["summarized_messages"] == len(missing) - unseen
    # The unseen messages are the middle ones: the summarizer saw the first and the last older
    # messages (their results' starts or ends), not those of the omitted middle.
    pre, at = conv.preamble, summarize.detail["omitted_from"]
    assert at > 0 and pre + at + unseen < pre + len(missing)
    assert set(never) <= set(range(pre + at, pre + at + unseen))
    marker = out[pre]["content"]
    assert DROP_MARKER.match(marker) and SUMMARY_HEADER.match(out[pre + 1]["content"])
    found = re.search(r"recall id (\S+) gives the originals", marker)
    assert found is not None
    assert _stored(store, found.group(1)) == inp[pre + at : pre + at + unseen]
    header = re.search(r"recall id (\S+) gives the originals", out[pre + 1]["content"])
    assert header is not None
    seen = [*inp[pre : pre + at], *inp[pre + at + unseen : pre + len(missing)]]
    assert _stored(store, header.group(1)) == seen and len(seen) == summarized
    report = result.to_dict()
    assert report["dropped"] == unseen and report["summarized"] == summarized
    assert result.conversation.validate() == []


def test_messages_omitted_from_a_truncated_summary_request_under_codex(server: Any, tmp_path: Path) -> None:
    # Codex keeps the user messages beside its summary: the marker counts only the others of the
    # omitted middle, and the header only what the summarizer saw.
    from tests.compaction.test_harnesses import _summary_reply
    from tests.compaction.test_harnesses_openclaw_letta import letta_policy, session
    from tests.providers.test_providers import make

    conv = session(60, result_chars=6_000)
    policy = dataclasses.replace(
        PRESETS["codex"].compaction, harness=_CodexTruncating(sliding_window=None, memory_warning=None),
        context_window=conv.tokens, reserved_output=0,
        safety_margin=0, trigger=0.9, target=0.45, summary_max_tokens=200,
    )  # fmt: skip
    assert letta_policy(conv).harness.summarizer_overflow == "truncate" == policy.harness.summarizer_overflow
    server.default = lambda request: _summary_reply(conv)
    provider = make("openai", server, context_window=10_192)
    summarizer = ac.LLMSummarizer(provider, use_fallback=False)
    store = ac.ResultStore(tmp_path / "store")
    result = Compactor(policy, summarizer=summarizer, fallback=None, store=store).compact(conv)
    summarize = next(s for s in result.stages if s.stage == "summarize")
    dropped = _check(conv.to_jsonl(), result, "codex with truncate")
    assert dropped > 0 and dropped == summarize.detail.get("omitted_messages")  # no user message in the middle here
    _, summarized, _ = account(conv.to_jsonl(), result.conversation.to_jsonl())
    report = result.to_dict()
    assert report["dropped"] == dropped and report["summarized"] == summarized > 0
    assert result.conversation.validate() == []
