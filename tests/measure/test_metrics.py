"""Quality metrics (probe facts, retention, replay and prompt-cache stability) and the batch
evaluation behind ``agentcontext eval``, over the shared corpus and small hand-made cases."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.cli import main
from agentcontext.compaction import Compactor
from agentcontext.compaction.pricing import PRICES
from agentcontext.errors import OptionError
from agentcontext.measure import evaluation
from agentcontext.measure.metrics import Probe, evaluate, probes, replay, replay_policy, retention, working_set_text
from tests import support

ROOT = support.ROOT


def session() -> ac.Conversation:
    return ac.Conversation(support.synthetic_session(300, seed=5))


def test_probes_cover_every_kind() -> None:
    conv = session()
    facts = probes(conv)
    kinds = {p.kind for p in facts}
    assert {"latest_ask", "user_message", "user_path", "call_path", "exception", "test"} <= kinds
    latest = next(p for p in facts if p.kind == "latest_ask")
    messages = conv.to_jsonl()
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    assert latest.index == last_user and latest.text == " ".join(messages[last_user]["content"].split())
    assert len({(p.kind, p.text) for p in facts}) == len(facts), "no repeats"
    for p in facts:
        assert 0 <= p.index < len(conv)
        assert p.text[:60] in " ".join(json.dumps(messages[p.index], ensure_ascii=False).split()) or p.kind in (
            "latest_ask",
            "user_message",
        ), p


def test_every_probe_is_retained_by_the_original_itself() -> None:
    conv = session()
    kept = retention(probes(conv), conv)
    assert kept.share == 1.0 and kept.lost == []


def test_retention_counts_what_a_working_set_lost() -> None:
    conv = session()
    facts = probes(conv)
    tail = conv.slice(len(conv) - 10)
    kept = retention(facts, tail)
    assert 0 < kept.kept < kept.total
    assert {(p.kind, p.text) for p in kept.lost} == {
        (p.kind, p.text) for p in facts if p.kind != "artifact" and not _in(p, working_set_text(tail))
    }
    # An artifact path is a call_path probe too: counted once in the total, by kind in both.
    assert sum(t for kind, (_, t) in kept.by_kind.items() if kind != "artifact") == kept.total
    assert retention([], tail).share == 1.0


def _in(p: Probe, text: str) -> bool:
    from agentcontext.measure.metrics import found_in

    return found_in(p, text)


def test_probes_match_whitespace_folded_and_json_escaped() -> None:
    opening = Probe("user_message", "Rename the parse_config helper and keep the public API", 0)
    assert retention([opening], "- Rename the  parse_config\n helper and keep the public API unchanged").share == 1.0
    assert retention([opening], "- Renamed something").share == 0.0
    path = Probe("call_path", 'src/a "b".py', 0)
    assert retention([path], '{"path": "src/a \\"b\\".py"}').share == 1.0
    ask = Probe("latest_ask", "Do it. " + "x " * 100 + "End of the ask.", 5)
    assert retention([ask], ask.text[:60] + " [... cut ...] " + ask.text[-60:]).share == 1.0
    assert retention([ask], ask.text[:60]).share == 0.0  # the end of the latest ask counts too


def test_probes_know_a_real_user_request() -> None:
    """Harness texts in user turns are not requests (a Claude Code task notification quoting a
    <summary> once became the latest ask); paths in tool results are not probes; prose with a
    slash is not a path."""
    messages = [
        {"role": "user", "content": "Port the parser in lib/parse.py to the new tokenizer and/or API v2."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "name": "bash", "arguments": '{"command": "pytest tests/test_parse.py::test_empty"}'}]},
        {"role": "tool", "tool_call_id": "c1",
         "content": "src/other/file.py:1: KeyError: 'x'\nFAILED tests/test_parse.py::test_empty"},
        {"role": "user", "content": "<task-notification>\n<summary>Background command done</summary>"},
        {"role": "user", "content": "[Request interrupted by user]"},
    ]  # fmt: skip
    facts = metrics_probes(messages)
    by_kind: dict[str, list[str]] = {}
    for p in facts:
        by_kind.setdefault(p.kind, []).append(p.text)
    assert by_kind["latest_ask"] == [" ".join(messages[0]["content"].split())]
    assert by_kind["user_message"] == [messages[0]["content"][:60].strip()]
    assert by_kind["user_path"] == ["lib/parse.py"]
    assert "tests/test_parse.py::test_empty" in by_kind["test"]
    assert by_kind["exception"] == ["KeyError"]
    assert "src/other/file.py" not in by_kind.get("call_path", [])  # only named in a tool result


def metrics_probes(messages: list[dict[str, Any]]) -> list[Probe]:
    return probes(ac.Conversation(messages, format="jsonl"))


def test_probes_share_no_code_with_the_summarizer() -> None:
    """The measuring stick imports nothing of the library: not the handoff extraction, not the
    summarizer's identifier patterns, not the text walkers."""
    import ast

    import agentcontext.probes as module

    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    imported = {
        (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    assert {m for m in imported if m.startswith("agentcontext")} <= {"agentcontext._core"}  # a type, for hints
    assert ".handoff(" not in Path(module.__file__).read_text(encoding="utf-8")


def test_replay_of_an_append_only_strategy_is_fully_cache_stable() -> None:
    conv = session()
    never = replace(ac.PRESETS["openharness"].compaction, context_window=10 * conv.tokens)
    rep = replay(conv, Compactor(never))
    calls = sum(1 for m in conv.to_jsonl()[1:] if m["role"] == "assistant")
    assert rep.turns == calls
    assert rep.compactions == []
    assert rep.prefix_tokens[1:] == rep.request_tokens[:-1]
    assert rep.cache_stability == pytest.approx(sum(rep.request_tokens[:-1]) / sum(rep.request_tokens[1:]))
    assert rep.request_tokens == rep.uncompacted_tokens
    assert rep.cache_write_tokens == rep.request_tokens[-1]


def test_replay_with_compactions_breaks_the_prefix_where_it_compacts() -> None:
    conv = session()
    policy = replay_policy(ac.PRESETS["openharness"].compaction, conv.tokens // 4)
    rep = replay(conv, Compactor(policy))
    assert rep.compactions, "a budget of a quarter forces compactions"
    assert 0 < rep.cache_stability < 1
    assert rep.peak_tokens <= policy.available + max(conv.message_tokens())
    for i in range(1, rep.turns):
        if i in rep.compactions:
            assert rep.prefix_tokens[i] < rep.request_tokens[i - 1]
        else:
            assert rep.prefix_tokens[i] == rep.request_tokens[i - 1]
    assert rep.compactions_per_100_turns == pytest.approx(100 * len(rep.compactions) / rep.turns)


def test_evaluate_one_strategy() -> None:
    conv = session()
    e = evaluate(conv, "openharness", "25%", name="synthetic")
    assert e.valid and e.fits and e.budget == conv.tokens // 4
    assert e.tokens_after <= e.budget < e.tokens_before
    assert 0 < e.reduction < 1 and 0 < e.retention <= 1
    assert e.summary_ratio is not None and 0 < e.summary_ratio < 1
    assert e.turns > 0 and 0 <= e.cache_stability <= 1
    assert e.to_dict()["reduction"] == e.reduction
    with pytest.raises(OptionError, match="unknown strategy"):
        evaluate(conv, "nope", 1000)
    with pytest.raises(OptionError, match="budget"):
        evaluate(conv, "pi", "-5%")


# -- the CLI over the shared corpus ----------------------------------------------------------


@pytest.fixture(scope="module")
def corpus_run(transcripts: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("eval")
    args = [
        "eval", str(transcripts / "normalized"), "--budget", "25%", "--strategy", "openharness,pi,claude-code,codex",
        "--json", str(out / "r.json"), "--csv", str(out / "r.csv"), "--workers", "2", "--no-progress",
    ]  # fmt: skip
    buf = io.StringIO()
    import contextlib

    with contextlib.redirect_stdout(buf):
        code = main(args)
    return {
        "code": code,
        "stdout": buf.getvalue(),
        "json": json.loads((out / "r.json").read_text()),
        "csv": out / "r.csv",
    }


def test_eval_over_the_whole_corpus(corpus_run: dict[str, Any]) -> None:
    assert corpus_run["code"] == 0
    data = corpus_run["json"]
    runs = data["runs"]
    assert len(runs) == support.corpus_size() * 4
    assert {r["strategy"] for r in runs} == {"openharness", "pi", "claude-code", "codex"}
    assert all(r["valid"] and r["error"] is None for r in runs)
    for r in runs:
        assert r["tokens_after"] <= r["tokens_before"]
        assert 0 <= r["retention"] <= 1 and 0 <= r["cache_stability"] <= 1
    big = [r for r in runs if r["tokens_before"] > 20_000]
    assert big and all(r["fits"] for r in big), "every large transcript fits a quarter of itself"
    rows = {s["strategy"]: s for s in data["strategies"]}
    assert set(rows) == {"openharness", "pi", "claude-code", "codex"}
    lines = corpus_run["stdout"].splitlines()
    assert lines[0].split()[:3] == ["strategy", "transcripts", "valid"]
    assert "retention by probe kind" in lines
    kinds_at = lines.index("retention by probe kind")
    assert lines[kinds_at + 1].split() == ["strategy", "latest", "ask", "user", "message", "user", "path", "call",
                                          "path", "exception", "test", "identifier", "constraint", "artifact"]  # fmt: skip
    # One line per strategy in each table, one per strategy and price table in the cost table.
    cost_at = lines.index(evaluation.COST_TITLE)
    assert sum(1 for line in lines[:kinds_at] if line.split() and line.split()[0] in rows) == 4
    assert sum(1 for line in lines[kinds_at:cost_at] if line.split() and line.split()[0] in rows) == 4
    assert sum(1 for line in lines[cost_at:] if line.split() and line.split()[0] in rows) == 8
    # The default price tables: one Anthropic, one OpenAI model, a column each.
    assert lines[0].split()[-5:] == ["cost", "claude-sonnet-4-5", "cost", "gpt-5", "time"]
    assert data["prices"] == ["claude-sonnet-4-5", "gpt-5"]
    for name, row in rows.items():
        mine = [r for r in runs if r["strategy"] == name]
        for table in ("claude-sonnet-4-5", "gpt-5"):
            prices = PRICES[table]
            read = sum(r["cached_tokens"] for r in mine)
            written = sum(r["cache_write_tokens"] for r in mine)
            cost = row["cost"][table]
            assert (cost["read_tokens"], cost["written_tokens"]) == (read, written)
            assert cost["dollars"] == pytest.approx((read * prices.cache_read + written * prices.cache_write) / 1e6)
            assert cost["dollars"] == pytest.approx(sum(r["cost"][table]["dollars"] for r in mine))
    # Pooled retention: kept probes over all probes of all transcripts, not a mean of shares.
    for name, row in rows.items():
        mine = [r for r in runs if r["strategy"] == name]
        assert row["retention"] == pytest.approx(sum(r["kept_probes"] for r in mine) / sum(r["probes"] for r in mine))
        # Fill over the outputs that fit a budget their original exceeded; the rest are counted as over.
        fills = [r["tokens_after"] / r["budget"] for r in mine if r["tokens_before"] > r["budget"] and r["fits"]]
        assert row["fill"] == pytest.approx(sum(fills) / len(fills)) and max(fills) <= 1.0
        assert row["over"] == sum(not r["fits"] for r in mine) and all(r["over"] == (not r["fits"]) for r in mine)
        assert all(r["fill"] is None for r in mine if not r["fits"])


def test_eval_csv_has_one_row_per_transcript_and_strategy(corpus_run: dict[str, Any]) -> None:
    with open(corpus_run["csv"], newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == support.corpus_size() * 4
    assert list(rows[0]) == [*evaluation.CSV_COLUMNS, "cost_claude-sonnet-4-5", "cost_gpt-5"]
    for r in rows:
        read, written = int(r["cached_tokens"]), int(r["cache_write_tokens"])
        assert float(r["cost_gpt-5"]) == pytest.approx((read * 0.125 + written * 1.25) / 1e6)
    assert len({(r["transcript"], r["strategy"]) for r in rows}) == len(rows)


def test_docs_eval_table_is_what_the_command_prints(transcripts: Path) -> None:
    if not support.full_corpus():
        pytest.skip("the docs' eval table is measured on the full corpus (set AGENTCONTEXT_SHARED)")
    page = (ROOT / "docs" / "how-to" / "evaluate.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- eval-command -->\n```bash\n(.+?)\n```\n\n(\|.+?)\n\n(?!\|)", page, re.DOTALL)
    assert found, "docs/how-to/evaluate.md has the eval command and its table"
    command, table = found.group(1), found.group(2)
    args = command.split()[1:]
    assert args[0] == "eval" and "--markdown" in args
    args = [str(transcripts / "normalized") if a == "../shared/data/transcripts/normalized" else a for a in args]
    buf = io.StringIO()
    import contextlib

    with contextlib.redirect_stdout(buf):
        assert main([*args, "--no-progress"]) == 0
    assert buf.getvalue().strip() == table.strip()


def test_eval_raw_sessions_and_errors(transcripts: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = transcripts / "raw" / "codemie"
    rows = evaluation.run([raw], ["openharness"], "30%", workers=1)
    assert len(rows) == (8 if support.full_corpus() else 3) and all(r.valid for r in rows)
    assert {r.transcript for r in rows} >= {"session-9eda1058", "session-2025-12-01T21-45-5b959dae"}
    bogus = tmp_path / "x.json"
    bogus.write_text('{"hello": 1}')
    assert main(["eval", str(bogus), "--budget", "10%"]) == 2
    assert "tried" in capsys.readouterr().err
    assert main(["eval", str(raw), "--budget", "10%", "--strategy", "nope"]) == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["eval", str(empty), "--budget", "10%"]) == 2
    assert "no transcripts" in capsys.readouterr().err


def test_progress_bar(transcripts: Path) -> None:
    stream = io.StringIO()
    evaluation.run([transcripts / "normalized" / "openhands"], ["pi"], 2000, workers=1, progress=stream)
    lines = stream.getvalue().splitlines()
    n = 9 if support.full_corpus() else 6  # openhands transcripts
    assert lines[-1].startswith(f"eval [##############################] {n}/{n}")
    assert 1 < len(lines) <= n + 2


def test_parallel_and_serial_runs_agree(transcripts: Path) -> None:
    folder = transcripts / "normalized" / "swe-agent"
    serial = evaluation.run([folder], ["openharness", "pi"], "25%", workers=1)
    parallel = evaluation.run([folder], ["openharness", "pi"], "25%", workers=2)
    strip = [{k: v for k, v in r.to_dict().items() if k != "seconds"} for r in serial]
    assert strip == [{k: v for k, v in r.to_dict().items() if k != "seconds"} for r in parallel]


def test_ray_engine_matches_local(transcripts: Path) -> None:
    ray = pytest.importorskip("ray", reason="Ray is the test-ray extra: pip install -e '.[test,test-ray]'")
    folder = transcripts / "normalized" / "openhands"
    local = evaluation.run([folder], ["openharness", "claude-code"], "25%", workers=1)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        remote = evaluation.run([folder], ["openharness", "claude-code"], "25%", engine="ray")
        assert ray.is_initialized(), "a cluster the caller started is left running"
    finally:
        ray.shutdown()
    strip = [{k: v for k, v in r.to_dict().items() if k != "seconds"} for r in local]
    assert strip == [{k: v for k, v in r.to_dict().items() if k != "seconds"} for r in remote]


def test_baseline_keeps_every_user_message_and_a_recent_suffix() -> None:
    from agentcontext.measure.metrics import baseline_suffix_users

    conv = session()
    messages = conv.to_jsonl()
    for share in (0.1, 0.25, 0.5):
        budget = int(conv.tokens * share)
        out = baseline_suffix_users(conv, budget)
        assert out.tokens <= budget and not out.validate()
        kept = out.to_jsonl()
        users = [m for m in messages if m["role"] == "user"]
        assert all(u in kept for u in users), "every user message of this session fits"
        # The system prompt, older user messages, then a non-empty contiguous suffix of the original.
        assert kept[0] == messages[0]
        assert any(
            all(m["role"] == "user" for m in kept[1:k]) and kept[k:] == messages[len(messages) - (len(kept) - k) :]
            for k in range(1, len(kept))
        )
    e = evaluate(conv, "baseline-suffix-users", "25%")
    assert e.strategy == "baseline-suffix-users" and e.valid and e.fits and e.latest_ask


def test_eval_per_transcript_lines(transcripts: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = transcripts / "normalized" / "openhands"
    args = ["eval", str(folder), "--budget", "25%", "--strategy", "openharness,baseline-suffix-users"]
    assert main([*args, "--workers", "1", "--no-progress", "--per-transcript"]) == 0
    out = capsys.readouterr().out
    lines = out.split("retention per transcript\n", 1)[1].splitlines()
    assert lines[0].split() == ["transcript", "probes", "openharness", "baseline-suffix-users"]
    rows = evaluation.run([folder], ["openharness", "baseline-suffix-users"], "25%", workers=1)
    by = {(r.transcript, r.strategy): r for r in rows}
    body = {line.split()[0]: line for line in lines[2:]}
    assert len(body) == len(list(folder.glob("*.jsonl"))) == len(rows) // 2 > 0
    for name, line in body.items():
        ours, base = by[name, "openharness"], by[name, "baseline-suffix-users"]
        assert f"{ours.retention:.1%}" in line
        assert ("< baseline" in line) == (ours.retention < base.retention)
        assert ("no ask" in line) == (ours.latest_ask is False or base.latest_ask is False)


def test_an_output_over_its_budget_has_no_fill_and_is_counted_over() -> None:
    # mini-swe-agent/local at 25%: the system prompt alone is most of the budget. On main its
    # output (4x the budget) entered the mean fill, which then read 111%.
    system = "You are a careful agent. " + " ".join(f"Rule {i}: never skip step {i}." for i in range(120))
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": "Fix the failing test in tests/test_app.py."},
        {"role": "assistant", "content": "Done: the fixture was stale."},
        {"role": "user", "content": "Thanks, now run the whole suite."},
    ]
    conv = ac.Conversation(messages, format="openai")
    over = evaluate(conv, "openharness", "25%", with_replay=False)
    assert not over.fits and over.over and over.fill is None and over.to_dict()["over"] is True
    longer = ac.Conversation(support.synthetic_session(300, seed=2), format="openai")
    fitting = evaluate(longer, "openharness", "25%", with_replay=False)
    assert fitting.fits and not fitting.over and fitting.fill is not None and 0.8 <= fitting.fill <= 1.0
    (row,) = evaluation.summarize_evaluations([over, fitting])
    assert row["over"] == 1 and row["fill"] == pytest.approx(fitting.fill) and row["filled"] == 1.0
    table = evaluation.format_table([over, fitting])
    assert "fill ≥ 80%" in table.splitlines()[0]
    cells = evaluation.per_transcript_table([replace(over, transcript="a"), replace(fitting, transcript="b")])
    assert "over " in cells.splitlines()[2] and "fill " in cells.splitlines()[3]
