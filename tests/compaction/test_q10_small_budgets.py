"""Small budgets (issue 27: the artifact trail at 10%, every request present): the ledger's
compact file form, its room taken from the raw part when its span needs it, the summary's files
before its other facts (shell-made ones too), nothing listed twice beside the ledger, and the
opening of every earlier request."""

from __future__ import annotations

import json
from typing import Any

from agentcontext import Conversation, count_tokens
from agentcontext.compaction import Compactor
from agentcontext.compaction.ledger import LEDGER_MARKER, Ledger, LedgerArtifact, ledger_cap, ledger_limit
from agentcontext.compaction.summarize import OfflineSummarizer, SummaryRequest
from agentcontext.probes import extract, found_in, working_set_text

RULE = "Never touch the migrations folder."


def call(cid: str, command: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": command})}}


def shell(cid: str, command: str, result: str, text: str = "") -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": text or None, "tool_calls": [call(cid, command)]},
        {"role": "tool", "tool_call_id": cid, "content": result},
    ]


def shell_session(files: int = 24, asks: int = 0) -> list[dict[str, Any]]:
    """A mini-swe-agent-like session: a task with a rule, files made with here-documents (no
    file tool), long outputs, and ``asks`` later short requests."""
    out: list[dict[str, Any]] = [{"role": "system", "content": "You solve tasks in a shell."}]
    out.append({"role": "user", "content": f"Fix the date parser in the app package. {RULE} " + "Context. " * 60})
    for k in range(files):
        out += shell(
            f"c{k}", f"cat > /testbed/scripts/check_case_{k}.py << 'EOF'\nprint({k})\nEOF", "<returncode>0</returncode>"
        )
        out += shell(
            f"r{k}", f"python /testbed/scripts/check_case_{k}.py", f"line {k}\n" * 160, text=f"Case {k}. " * 30
        )
    for k in range(asks):
        ask = f"Request number {k}: now also handle the time zone case {k} in utils. " + "Details. " * 40
        out.append({"role": "user", "content": ask})
        out += shell(f"a{k}", f"ls dir{k}", f"entry {k}\n" * 60)
    out += [{"role": "user", "content": "Now write the changelog."}, {"role": "assistant", "content": "On it."}]
    return out


def artifacts(conv: Conversation) -> list[Any]:
    return [p for p in extract(conv) if p.kind == "artifact"]


def test_a_ledger_over_its_cap_names_every_file_compactly_before_any_leaves() -> None:
    ledger = Ledger(
        request="Refactor the loaders.",
        request_at="verbatim in the messages below",
        constraints=(RULE,),
        artifacts=tuple(
            LedgerArtifact(f"src/pkg/loader_{k}.py", ("read", "edited") if k % 2 else ("created",), f"sed -i 's/a/b/' src/pkg/loader_{k}.py")
            for k in range(20)
        ),
    )  # fmt: skip
    full = count_tokens(ledger.render())
    bounded = ledger.bounded(full * 2 // 3)
    text = bounded.render()
    assert count_tokens(text) <= full * 2 // 3
    assert bounded.compact and [a.path for a in bounded.artifacts] == [a.path for a in ledger.artifacts]
    # One line per set of verbs, the paths only; the rule stays.
    assert "- created: src/pkg/loader_0.py, src/pkg/loader_2.py" in text and "sed -i" not in text and RULE in text
    assert "- read+edited: src/pkg/loader_1.py" in text
    parsed = Ledger.parse(text)
    assert parsed is not None and parsed.render() == text
    # Smaller still: the oldest files leave, counted, the newest stays.
    tiny = ledger.bounded(full // 4)
    assert count_tokens(tiny.render()) <= full // 4
    assert tiny.artifacts[-1].path == "src/pkg/loader_19.py" and tiny.omitted > 0 and tiny.constraints == (RULE,)


def test_the_ledger_may_grow_from_a_tenth_to_a_fifth_of_the_target() -> None:
    assert ledger_cap(2_000, 3_000) == 300 and ledger_limit(2_000, 3_000) == 600
    assert ledger_limit(2_000, 100_000) == 2_000, "the policy's cap still bounds it"
    assert ledger_cap(2_000, 1_000) == 0 and ledger_limit(2_000, 1_000) == 0, "no ledger where there was none"


def test_a_small_budget_keeps_the_shell_made_files_and_the_rule() -> None:
    conv = Conversation(shell_session(), format="openai")
    budget = conv.tokens // 10
    result = Compactor("openharness").compact(conv, budget=budget)
    assert result.fits and result.conversation.tokens <= budget and not result.conversation.validate()
    haystack = working_set_text(result.conversation)
    trail = artifacts(conv)
    kept = [p for p in trail if found_in(p, haystack)]
    # The newest files all stay (the oldest leave first, counted, when the room is not there).
    assert len(trail) == 24 and len(kept) >= 8 and kept == trail[-len(kept) :], [p.text for p in kept]
    assert RULE in haystack
    # The ledger took more than its usual tenth: its span's trail needed it (within a fifth).
    ledger = next(
        m["content"] for m in result.conversation.to_jsonl() if str(m.get("content", "")).startswith(LEDGER_MARKER)
    )
    assert budget // 10 < count_tokens(ledger) <= budget // 5


def request(conv: Conversation, stop: int, cap: int, **context: Any) -> SummaryRequest:
    return SummaryRequest(conv, conv.preamble, stop, None, cap, original=conv, context=context)


def test_the_summary_lists_files_before_other_facts_and_none_the_ledger_names() -> None:
    conv = Conversation(shell_session(files=12), format="openai")
    stop = len(conv) - 2
    made = [f"/testbed/scripts/check_case_{k}.py" for k in range(12)]
    summary = OfflineSummarizer().summarize(request(conv, stop, 700))
    assert count_tokens(summary) <= 700
    files = summary[summary.index("## Files modified") :]
    # The trail's files (here-documents, no file tool) come first, newest first.
    assert files.index(made[11]) < files.index(made[10]) and "## Commands" not in summary.split("## Files modified")[0]
    assert sum(path in summary for path in made) >= 6
    # A file the ledger beside the summary names takes no line when room is tight.
    held = "[agentcontext: task ledger]\n## Files\n- created: " + ", ".join(made)
    many = Conversation(shell_session(files=40), format="openai")  # over the cap: room is tight
    beside = OfflineSummarizer().summarize(request(many, len(many) - 2, 700, held=held))
    assert not any(f"- {path}" in beside for path in made)
    # With room, the summary names them too.
    roomy = OfflineSummarizer().summarize(request(conv, stop, 20_000, held=held))
    assert all(f"- {path}" in roomy for path in made)


def test_every_earlier_request_keeps_at_least_its_opening() -> None:
    conv = Conversation(shell_session(files=4, asks=14), format="openai")
    summary = OfflineSummarizer().summarize(request(conv, len(conv) - 2, 900))
    assert count_tokens(summary) <= 900
    # Too long for the users' share whole: the older ones by their openings.
    assert summary.count("Details.") < 14 * 40
    for k in range(14):
        assert f"Request number {k}: now also handle the time zone" in summary, k
