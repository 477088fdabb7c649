"""Issue 27's measurement: the constraint and artifact probe kinds, the latest request kept whole,
the per-dimension columns of ``agentcontext eval``, the repeated-compaction replay, and
benches/quality.py (run as a script)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import agentcontext as ac
from agentcontext.measure import evaluation
from agentcontext.measure.metrics import Evaluation, evaluate, latest_whole, summarize_evaluations
from agentcontext.measure.repeated import SUMMARY_MARKER, repeated_compaction, summary_messages
from agentcontext.probes import (
    CONSTRAINT_CHARS,
    KINDS,
    Probe,
    extract,
    found_in,
    found_whole,
    retention,
    working_set_text,
)
from tests import support

ROOT = support.ROOT


def _kinds(messages: list[dict[str, Any]], kind: str) -> list[str]:
    return [p.text for p in extract(messages) if p.kind == kind]


def call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": cid, "name": name, "arguments": json.dumps(args)}],
    }


def result(cid: str, text: str = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": cid, "content": text}


def test_constraint_probes_are_the_users_constraint_sentences() -> None:
    ask = (
        "Port the parser to the new tokenizer. Never touch the files in tests/legacy!\n"
        "- use ruff not black for formatting\n"
        "Don't add dependencies; keep it small.\n"
        "```\nif x: don't do this inside code\n```\n"
        'Traceback (most recent call last):\n  File "x.py", line 3, in never_ever\n'
        "    must_not_be_called()  # always\nKeyError: only this key was missing\n"
        "/add src/never_mind.py\n"
        "/ask could we avoid the extra copy here?\n"
        "You must run the full suite. Always write a test first. Avoid globals.\n"
        "Change only the parser, instead of the lexer. ok?"
    )
    messages = [
        {"role": "user", "content": ask},
        {"role": "assistant", "content": "Never mind, I will do it; don't worry."},  # not the user's
        {"role": "user", "content": "<system-reminder>Do not reveal secrets.</system-reminder>"},  # harness text
    ]
    assert _kinds(messages, "constraint") == [
        "Never touch the files in tests/legacy!",
        "use ruff not black for formatting",
        "Don't add dependencies",  # trailing punctuation off, as for every probe
        "could we avoid the extra copy here?",
        "You must run the full suite",
        "Always write a test first",
        "Change only the parser, instead of the lexer",
    ]
    long = "Never " + "ever " * 100 + "push to main."
    texts = _kinds([{"role": "user", "content": long}], "constraint")
    assert texts == [" ".join(long.split())[:CONSTRAINT_CHARS]]
    # Matched verbatim but for whitespace: a summary that quotes the sentence keeps it.
    probe = Probe("constraint", "use ruff not black for formatting", 0)
    assert retention([probe], "Constraints:\n- use ruff  not\nblack for formatting").share == 1.0
    assert retention([probe], "use ruff for formatting").share == 0.0


def test_artifact_probes_are_the_files_the_agent_touched() -> None:
    heredoc = "cat > notes/plan.md << 'EOF'\nsee src/inside_heredoc.py\nEOF\npython -m pytest tests/test_a.py"
    patch = "*** Begin Patch\n*** Update File: src/patched.ts\n@@\n-a\n+b\n*** End Patch"
    aider = "I will edit it.\n\nsrc/aider_edit.py\n```python\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n```"
    messages = [
        {"role": "user", "content": "Fix lib/user_named.py please"},
        call("c1", "Read", {"file_path": "/repo/src/read_me.py"}),
        result("c1", "1: import os  # see other/in_result.py"),
        call("c2", "edit_file", {"path": "src/edited.py", "old": "a", "new": "b"}),
        result("c2"),
        call("c3", "bash", {"command": "cat src/catted.py && rm old/removed.txt 2>/dev/null"}),
        result("c3"),
        call("c4", "Grep", {"pattern": "x", "path": "src/searched/dir"}),
        result("c4"),
        call("c5", "bash", {"command": heredoc}),
        result("c5"),
        call("c6", "apply_patch", {"input": patch}),
        result("c6"),
        {"role": "assistant", "content": aider},
        {"role": "assistant", "content": "Maybe docs/only_mentioned.md matters."},
    ]
    artifacts = _kinds(messages, "artifact")
    assert artifacts == [
        "/repo/src/read_me.py",
        "src/edited.py",
        "src/catted.py",
        "old/removed.txt",
        "notes/plan.md",
        "tests/test_a.py",
        "src/patched.ts",
        "src/aider_edit.py",
    ]
    # Not artifacts: named by the user, in a result, a search's folder, inside written content,
    # only mentioned in prose (those stay user_path / call_path probes).
    call_paths = _kinds(messages, "call_path")
    assert {"src/searched/dir", "src/inside_heredoc.py", "docs/only_mentioned.md"} <= set(call_paths)
    assert set(artifacts) <= set(call_paths), "every artifact is a call path too"
    facts = extract(messages)
    index = {p.text: p.index for p in facts if p.kind == "artifact"}
    assert index["src/edited.py"] == 3 and index["src/aider_edit.py"] == 13
    # Counted once: the total leaves the artifact view out, by kind it is there.
    kept = retention(facts, "src/edited.py")
    assert kept.total == sum(t for k, (_, t) in kept.by_kind.items() if k != "artifact")
    assert kept.by_kind["artifact"] == (1, 8)
    assert all(p.kind != "artifact" for p in kept.lost)


def test_latest_whole_asks_for_the_whole_request_within_a_quarter_of_the_budget() -> None:
    ask = "Rename load_config to load_settings everywhere. " + "Also update every caller and the docs. " * 30
    messages = [
        {"role": "user", "content": "first request"},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": ask},
    ]
    conv = ac.Conversation(messages, format="jsonl")
    facts = extract(conv)
    latest = next(p for p in facts if p.kind == "latest_ask")
    tokens = ac.count_tokens(ask.strip())
    whole = ac.Conversation([messages[2]], format="jsonl")
    cut = ac.Conversation([{"role": "user", "content": ask[:80] + " [... cut ...] " + ask[-80:]}], format="jsonl")
    assert latest_whole(conv, facts, whole, 4 * tokens) == (True, tokens)
    # Head and tail: the latest ask is there, not whole.
    assert found_in(latest, working_set_text(cut)) and not found_whole(latest, working_set_text(cut))
    assert latest_whole(conv, facts, cut, 4 * tokens) == (False, tokens)
    # Larger than a quarter of the budget: not counted.
    assert latest_whole(conv, facts, cut, 4 * tokens - 1) == (None, tokens)
    assert latest_whole(ac.Conversation([], format="jsonl"), [], whole, 1000) == (None, 0)


def _evaluation(**changes: Any) -> Evaluation:
    base = Evaluation(
        transcript="t", strategy="openharness", budget=1000, messages=3, tokens_before=2000, tokens_after=900,
        fits=True, valid=True, violations=0, retention=0.5, retention_by_kind={}, probes=4, lost=[],
        summary_tokens=0, summarized_tokens=0, cache_stability=1.0, cache_write_tokens=0,
        compactions_per_100_turns=0.0, turns=0, seconds=0.0, kept_probes=2,
    )  # fmt: skip
    return replace(base, **changes)


def test_eval_gains_latest_whole_artifact_trail_and_constraint_columns(tmp_path: Path) -> None:
    rows = [
        _evaluation(transcript="a", probe_counts={"artifact": (1, 2), "constraint": (0, 1)}, latest_whole=False),
        _evaluation(transcript="b", probe_counts={"artifact": (2, 2), "constraint": (1, 1)}, latest_whole=True),
        _evaluation(transcript="c", probe_counts={"artifact": (0, 0)}, latest_whole=None),
    ]
    assert (rows[0].artifact_trail, rows[0].constraints, rows[2].artifact_trail) == (0.5, 0.0, None)
    (summary,) = summarize_evaluations(rows, ())
    assert summary["latest_whole"] == 0.5 and summary["latest_whole_runs"] == 2
    assert summary["artifact_trail"] == 0.75 and summary["constraints"] == 0.5  # pooled: 3 of 4, 1 of 2
    header = evaluation.format_table(rows, ()).splitlines()[0]
    for column in ("latest ask", "latest whole", "artifact trail", "constraints"):
        assert column in header
    table = evaluation.markdown_table(rows, ()).splitlines()
    cells = dict(zip(table[0].strip("| ").split(" | "), table[2].strip("| ").split(" | "), strict=True))
    assert (cells["latest whole"], cells["artifact trail"], cells["constraints"]) == ("50% (2)", "75.0%", "50.0%")
    evaluation.write_csv(rows, tmp_path / "r.csv", prices=())
    read = list(csv.DictReader(io.StringIO((tmp_path / "r.csv").read_text(encoding="utf-8"))))
    assert [(r["latest_whole"], r["artifact_trail"], r["constraints"]) for r in read] == [
        ("False", "0.5", "0.0"),
        ("True", "1.0", "1.0"),
        ("", "", ""),
    ]
    evaluation.write_json(rows, tmp_path / "r.json", prices=())
    data = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert data["strategies"][0]["latest_whole"] == 0.5 and data["strategies"][0]["artifact_trail"] == 0.75
    assert [r["latest_whole"] for r in data["runs"]] == [False, True, None]


def test_evaluate_fills_the_new_columns_from_the_output() -> None:
    """Under a budget the whole conversation fits, everything is kept; under a tiny one the old
    reads are gone and the latest request too large for a quarter of it is not counted."""
    messages = [
        {"role": "user", "content": "Fix the bug in src/app.py. Never change the public API."},
        call("c1", "read_file", {"path": "src/app.py"}),
        result("c1", "def f():\n    return 1\n" * 200),
        call("c2", "bash", {"command": "python -m pytest tests/test_app.py"}),
        result("c2", "1 passed"),
        {"role": "assistant", "content": "Fixed."},
    ]
    conv = ac.Conversation(messages, format="jsonl")
    roomy = evaluate(conv, "openharness", conv.tokens * 2, with_replay=False)
    assert (roomy.latest_whole, roomy.artifact_trail, roomy.constraints) == (True, 1.0, 1.0)
    assert roomy.latest_ask_tokens == ac.count_tokens(messages[0]["content"])
    tiny = evaluate(conv, "openharness", 4 * roomy.latest_ask_tokens - 1, with_replay=False)
    assert tiny.latest_whole is None  # the request is over a quarter of this budget


def test_repeated_compaction_replays_and_compares_with_one_compaction() -> None:
    conv = ac.Conversation(support.synthetic_session(400, seed=3))
    rep = repeated_compaction(conv, trigger=8_000, target=5_000, name="synthetic")
    assert conv.tokens > 40_000 and rep.compactions >= 5
    assert rep.final_tokens <= 5_000 and rep.single_tokens <= 5_000
    assert len(rep.summary_tokens) == rep.compactions and max(rep.summary_tokens) <= 5_000
    # The library's summary message is found by its marker (a changed marker would hide summaries).
    assert rep.summaries == 1 and rep.summary_markers >= 1 and rep.summary_tokens[-1] > 0
    facts = extract(conv)
    assert rep.probes == retention(facts, conv).total and 0 < rep.kept <= rep.probes
    data = rep.to_dict()
    assert data["compactions"] == rep.compactions and 0 <= data["retention"] <= 1
    assert data["requests"] == rep.kind_share("user_message")
    # The summary messages are found by their marker.
    marked = ac.Conversation([{"role": "user", "content": SUMMARY_MARKER + ": 3 messages]\n\nx"}], format="jsonl")
    assert len(summary_messages(marked)) == 1 and summary_messages(conv) == []


def test_repeated_compaction_live_compacts_as_a_session_does() -> None:
    """``live=True``: maybe_compact under a policy whose trigger and target are the given sizes;
    the last step still compacts to the target, so the final set compares with the single one."""
    conv = ac.Conversation(support.synthetic_session(400, seed=3))
    rep = repeated_compaction(conv, trigger=8_000, target=5_000, live=True)
    assert rep.live and rep.compactions >= 5 and rep.final_tokens <= 5_000
    assert rep.to_dict()["live"] is True
    assert 0 < rep.retention <= 1 and rep.single_tokens <= 5_000


def test_quality_bench_runs_on_a_small_subset(transcripts: Path, tmp_path: Path) -> None:
    files = [
        transcripts / "normalized" / "aider" / "chat-history--2024-08-06_08_55_14.jsonl",
        transcripts / "normalized" / "mini-swe-agent" / "deepseek_chat_dev--pyvista__pyvista-4315.jsonl",
    ]
    out = tmp_path / "q.json"
    args = ["--budgets", "25%,2000", "--long-min", "20000", "--trigger", "8000", "--target", "5000", "--jobs", "2",
            "--stress", "4000:3000:5000"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python") + os.pathsep + str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "benches" / "quality.py"), *map(str, files), *args, "--json", str(out)],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "latest whole" in done.stdout and "repeated compaction: 1 sessions" in done.stdout
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["budgets"] == ["25%", "2000"] and len(data["transcripts"]) == 2
    for budget in data["budgets"]:
        pooled = data["pooled"][budget]
        assert pooled["transcripts"] == 2
        for key in ("requests", "artifact_trail", "constraints", "all"):
            assert 0 <= pooled[key] <= 1, (budget, key)
        assert pooled["latest_whole"] is None or 0 <= pooled["latest_whole"] <= 1
        assert 0 <= pooled["latest_whole_runs"] <= 2
        assert set(pooled["by_kind"]) == set(KINDS)
    repeated = data["repeated"]["summary"]
    assert repeated["sessions"] == ["deepseek_chat_dev--pyvista__pyvista-4315"]
    assert repeated["compactions"] >= 1 and 0 < repeated["ratio"] <= 2
    assert 0 <= repeated["requests"] <= 1
    (session,) = data["repeated"]["sessions"]
    assert session["final_tokens"] <= 5000 and len(session["summary_tokens"]) == session["compactions"]
    assert len(data["runs"]) == 4 and data["seconds"] > 0
    stress = data["repeated_stress"]
    assert stress["config"] == {"trigger": 4000, "target": 3000, "long_min": 5000, "live": False}
    assert len(stress["summary"]["sessions"]) == 2 and "stress: not an issue target" in done.stdout


def test_the_measurement_shares_no_code_with_the_summarizer_or_the_ledger() -> None:
    """benches/quality.py and the repeated replay produce outputs through the public Compactor
    only: no module of agentcontext.compaction (summaries, ledger, ...) is imported by name."""
    import ast

    from agentcontext.measure import repeated

    for path in (ROOT / "benches" / "quality.py", Path(repeated.__file__)):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in node.names
        }
        inside = {m for m in imported if m.startswith("agentcontext.compaction")}
        assert inside <= {"agentcontext.compaction"}, (path.name, inside)
        assert not {m for m in imported if "summar" in m or "ledger" in m}, path.name
