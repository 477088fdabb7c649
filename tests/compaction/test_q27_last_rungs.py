"""Issue 27: the last rungs carry what the ledger held. A drop that leaves out the task ledger an
earlier compaction wrote carries it back into the room it leaves; a summary written beside a
ledger and reused by the oversized rung (which carries none) gets back the facts it left to it."""

from __future__ import annotations

import dataclasses
from typing import Any

from agentcontext import Conversation
from agentcontext.compaction import Compactor, resolve_policy
from agentcontext.compaction.ledger import LEDGER_MARKER, Ledger, LedgerArtifact
from agentcontext.compaction.summary_text import summary_message

RULE = "Never edit the generated files under gen/."


def _earlier_ledger() -> dict[str, str]:
    files = tuple(LedgerArtifact(f"src/pkg/mod_{k}.py", ("read", "edited"), "") for k in range(6))
    return Ledger(request="Refactor the parser", request_at="in the summary above", constraints=(RULE,),
                  artifacts=files).message()  # fmt: skip


def _session() -> list[dict[str, Any]]:
    """A working set an earlier compaction wrote (its summary and ledger), then rounds of work, the
    last of them long."""
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        summary_message("## Current state\n- the parser split in two", messages=40, tokens=9_000),
        _earlier_ledger(),
        {"role": "user", "content": "Now port the lexer too."},
    ]
    for k in range(8):
        out += [
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": f"c{k}", "name": "bash", "arguments": f'{{"command": "cat lexer_{k}.txt"}}'}]},
            {"role": "tool", "tool_call_id": f"c{k}", "content": f"line {k} " * (400 if k < 7 else 1200)},
        ]  # fmt: skip
    return out


def _ledger_in(conv: Conversation) -> Ledger | None:
    found = [m["content"] for m in conv.to_jsonl() if str(m.get("content") or "").startswith(LEDGER_MARKER)]
    assert len(found) <= 1
    return Ledger.parse(found[0]) if found else None


def test_a_drop_carries_the_earlier_ledger_into_the_room_it_leaves() -> None:
    conv = Conversation(_session(), format="jsonl", encoding="o200k_base")
    # No summary rung: the drop decides (what a policy without summaries does over the budget).
    policy = dataclasses.replace(resolve_policy("openharness"), summarize=False, clear_tool_results=False,
                                 tool_result_budgets=False)  # fmt: skip
    budget = conv.tokens // 2
    result = Compactor(policy).compact(conv, budget=budget)
    stages = [s.stage for s in result.stages]
    assert "drop" in stages and result.fits, stages
    ledger = _ledger_in(result.conversation)
    assert ledger is not None, "the earlier ledger came back"
    assert RULE in ledger.constraints
    assert ledger.artifacts, "its files too, the room allowing"
    carry = [s for s in result.stages if s.stage == "carry" and "ledger_tokens" in s.detail]
    assert carry and carry[0].detail["ledger_tokens"] > 0
    assert result.conversation.tokens <= budget


def test_no_ledger_is_carried_under_a_target_that_has_none() -> None:
    # Under 1,600 tokens the target carries no ledger (ledger_cap is 0): the drop keeps raw instead.
    small = [m if m.get("role") != "tool" else {**m, "content": m["content"][:300]} for m in _session()]
    conv = Conversation(small, format="jsonl", encoding="o200k_base")
    policy = dataclasses.replace(resolve_policy("openharness"), summarize=False, clear_tool_results=False,
                                 tool_result_budgets=False)  # fmt: skip
    result = Compactor(policy).compact(conv, budget=conv.tokens // 2)
    assert "drop" in [s.stage for s in result.stages] and result.fits
    assert _ledger_in(result.conversation) is None
    assert not [s for s in result.stages if s.stage == "carry" and "ledger_tokens" in s.detail]


def _files_session(files: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Read every module and fix the imports."},
    ]
    for k in range(files):
        out += [
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": f"r{k}", "name": "read_file", "arguments": f'{{"path": "src/pkg/module_{k}.py"}}'}]},
            {"role": "tool", "tool_call_id": f"r{k}", "content": f"import os  # module {k}\n" * 40},
        ]  # fmt: skip
    return out


def test_a_summary_reused_without_its_ledger_gets_back_what_it_left_to_it() -> None:
    from agentcontext.compaction.ladder import LadderRun

    conv = Conversation(_files_session(40), format="jsonl", encoding="o200k_base")
    policy = resolve_policy("openharness").for_budget(4_000)
    run = LadderRun(Compactor(policy), conv, policy, manual=False, one_shot=True)
    stop = len(conv) - 2
    summary = run.write_summary(stop, 160)
    assert summary is not None
    held = run.ledger_messages(stop)
    assert held, "a ledger beside the summary"
    left = [p for p in summary.left_to_ledger.facts] if summary.left_to_ledger is not None else []
    assert left, "the summary left some facts to the ledger"
    text = summary.text
    missing = [p.text for p in left if p.text not in text]
    assert missing, "facts the summary did not hold itself"
    # The oversized rung carries no ledger: the summary is checked again against every fact.
    run._last_rung = True
    assert run.ledger_messages(stop) == []
    again = run.without_ledger(summary)
    assert again.detail["check_without_ledger"]["missing_before"] >= len(missing)
    assert sum(p in again.text for p in missing) > 0, "what it left to the ledger is back in it"
    assert again.left_to_ledger is None
    # A summary written without a ledger beside it is unchanged.
    assert run.without_ledger(again) is again
