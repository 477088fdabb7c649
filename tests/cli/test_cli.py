"""The command line, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests import support

EXAMPLE = support.ROOT / "examples" / "session.jsonl"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentcontext", *args], capture_output=True, text=True, check=False)


def test_inspect_prints_tables() -> None:
    out = run("inspect", str(EXAMPLE))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "openai format, 305 messages, 157 tool calls" in lines[0]
    assert lines[2].split() == ["role", "messages", "o200k_base", "cl100k_base", "heuristic", "share"]
    total = next(line for line in lines if line.startswith("total")).split()
    assert total[1] == "305"
    assert any(line.startswith("read_file") for line in lines)


def test_inspect_json_matches_the_library() -> None:
    import agentcontext as ac

    out = run("inspect", str(EXAMPLE), "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    conv = ac.Conversation.from_file(EXAMPLE)
    assert report["messages"] == len(conv) == 305
    assert report["tool_calls"] == conv.tool_calls
    assert report["tokens"]["o200k_base"] == conv.tokens
    assert report["tokens"]["cl100k_base"] == conv.stats(encoding="cl100k_base")["tokens"]
    assert set(report["tokens"]) == {"o200k_base", "cl100k_base", "heuristic"}
    assert sum(r["o200k_base"] for r in report["by_role"].values()) == conv.tokens
    assert report["by_tool"]["read_file"]["calls"] == conv.tokens_by_tool()["read_file"]["calls"]
    assert report["by_tool"]["read_file"]["tokens"]["o200k_base"] == conv.tokens_by_tool()["read_file"]["tokens"]


def test_inspect_reads_every_format(tmp_path: Path) -> None:
    import agentcontext as ac

    conv = ac.Conversation.from_file(EXAMPLE)
    anthropic = tmp_path / "request.json"
    anthropic.write_text(json.dumps(conv.to_anthropic_params()))
    responses = tmp_path / "items.json"
    responses.write_text(json.dumps({"input": conv.to_responses()}))
    for path, fmt in [(anthropic, "anthropic"), (responses, "responses")]:
        report = json.loads(run("inspect", str(path), "--json").stdout)
        assert report["format"] == fmt
        assert report["tool_calls"] == conv.tool_calls
    forced = json.loads(run("inspect", str(anthropic), "--json", "--format", "anthropic").stdout)
    assert forced["format"] == "anthropic"


def test_bad_files_exit_2_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "a"}\n{"role": "user", "content": [\n')
    out = run("inspect", str(bad))
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr.count("\n") == 1
    assert str(bad) in out.stderr and "line 2" in out.stderr

    out = run("inspect", str(tmp_path / "missing.jsonl"))
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "missing.jsonl" in out.stderr


def test_usage_errors_exit_2() -> None:
    assert run().returncode == 2
    assert run("inspect", str(EXAMPLE), "--format", "xml").returncode == 2


def test_agent_session_files_are_read_as_they_are(tmp_path: Path) -> None:
    claude = support.ROOT / "examples" / "claude-code-session.jsonl"
    out = run("inspect", str(claude), "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["format"] == "claude-code-jsonl"
    assert (report["messages"], report["tool_calls"]) == (11, 5)
    # A file with several sessions needs --session, by name or index.
    aider = tmp_path / ".aider.chat.history.md"
    aider.write_text(
        "# aider chat started at 2024-08-01 10:00:00\n\n#### Fix the bug in app.py please now\n\nDone, fixed app.py.\n\n"
        "# aider chat started at 2024-08-02 11:00:00\n\n#### Add a test for parse_config please\n\nAdded the test.\n",
        encoding="utf-8",
    )
    out = run("compact", str(aider), "--budget", "50%")
    assert out.returncode == 2
    assert "holds 2 sessions; pick one with --session" in out.stderr
    out = run("compact", str(aider), "--budget", "1000", "--session", "1", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["format"] == "aider-chat-history-md"
    names = run("inspect", str(aider), "--session", "nope")
    assert names.returncode == 2 and "2024-08-02" in names.stderr


# -- protocol-valid output ---------------------------------------------------------------------

#: An orphan result (message 3) and a reused call id (message 4).
INVALID = [
    {"role": "user", "content": "list the files"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "a.py b.py"},
    {"role": "tool", "tool_call_id": "ghost", "content": "a result nobody asked for"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{\"path\": \"src\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "c.py"},
    {"role": "user", "content": "thanks"},
]  # fmt: skip


def pairing_events(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """``("call", id)`` and ``("result", id)`` in order, read from the wire shape of any format
    (independent of the library: what a provider checks)."""
    events: list[tuple[str, str]] = []
    for m in messages:
        if m.get("type") in ("function_call", "custom_tool_call"):
            events.append(("call", m["call_id"]))
        elif m.get("type") in ("function_call_output", "custom_tool_call_output"):
            events.append(("result", m["call_id"]))
        if m.get("role") == "tool":
            events.append(("result", m["tool_call_id"]))
        events += [("call", c["id"]) for c in m.get("tool_calls") or []]
        for block in m.get("content") if isinstance(m.get("content"), list) else []:
            if block.get("type") == "tool_use":
                events.append(("call", block["id"]))
            elif block.get("type") == "tool_result":
                events.append(("result", block["tool_use_id"]))
    return events


def assert_pairs(messages: list[dict[str, Any]]) -> None:
    events = pairing_events(messages)
    calls = [i for kind, i in events if kind == "call"]
    assert len(calls) == len(set(calls)), f"reused call ids in {calls}"
    seen: set[str] = set()
    for kind, i in events:
        if kind == "call":
            seen.add(i)
        else:
            assert i in seen, f"result {i!r} without an earlier call"


def test_compact_repairs_invalid_input_so_the_output_validates(tmp_path: Path) -> None:
    import agentcontext as ac

    src = tmp_path / "invalid.jsonl"
    src.write_text("".join(json.dumps(m) + "\n" for m in INVALID))
    assert [v["kind"] for v in ac.validate(INVALID)] == ["orphan_result", "duplicate_id"]
    for target in ("openai", "responses", "anthropic", "jsonl"):
        out_file = tmp_path / f"out-{target}.jsonl"
        out = run("compact", str(src), "--budget", "100%", "-o", str(out_file), "--to", target, "--json")
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout)
        assert report["repaired"] == [
            {"kind": "orphan_to_user", "index": 3, "id": "ghost"},
            {"kind": "renamed_id", "index": 4, "id": "c1"},
        ]
        written = [json.loads(line) for line in out_file.read_text().splitlines()]
        assert report["output"]["messages"] == len(written)
        assert ac.validate(written, format=target) == [], target
        assert_pairs(written)
        assert len([e for e in pairing_events(written) if e[0] == "call"]) == 2
    table = run("compact", str(src), "--budget", "100%")
    assert table.returncode == 0, table.stderr
    assert "repaired the input first (2 changes" in table.stdout
    assert "message 3: made result 'ghost', which has no call, a user message" in table.stdout
    assert "message 4: renamed reused call id 'c1'" in table.stdout
    # A valid transcript is not touched and says so.
    assert json.loads(run("compact", str(EXAMPLE), "--budget", "50%", "--json").stdout)["repaired"] == []


def test_compact_no_repair_refuses_invalid_input(tmp_path: Path) -> None:
    src = tmp_path / "invalid.jsonl"
    src.write_text("".join(json.dumps(m) + "\n" for m in INVALID))
    out_file = tmp_path / "out.jsonl"
    out = run("compact", str(src), "--budget", "100%", "-o", str(out_file), "--no-repair")
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr.count("\n") == 1
    assert "message 3" in out.stderr and "'ghost'" in out.stderr and "orphan_result" in out.stderr
    assert "(and 1 more)" in out.stderr
    assert not out_file.exists()
    ok = run("compact", str(EXAMPLE), "--budget", "50%", "--no-repair", "-o", str(out_file))
    assert ok.returncode == 0, ok.stderr


def test_eval_lists_and_counts_files_it_cannot_read(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    for n in range(4):
        (folder / f"ok{n}.jsonl").write_text(
            json.dumps({"role": "user", "content": f"question {n}"}) + "\n"
            + json.dumps({"role": "assistant", "content": "an answer " * 20}) + "\n"
        )  # fmt: skip
    bad = {
        "broken.jsonl": '{"role": "user",\n',
        "truncated.json": "[1, 2\n",
        "notes.md": "just some notes\n",
    }
    for name, text in bad.items():
        (folder / name).write_text(text)
    report = tmp_path / "r.json"
    out = run("eval", str(folder), "--budget", "50%", "--strategy", "pi,codex", "--workers", "1", "--json", str(report))
    assert out.returncode == 2, out.stderr
    failures = [line for line in out.stderr.splitlines() if line.startswith("agentcontext: failed: ")]
    assert len(failures) == 3
    for name in bad:
        line = next(f for f in failures if str(folder / name) in f)
        assert "Error: " in line  # the reason
    assert "3 of 7 transcripts failed" in out.stderr
    summary = json.loads(report.read_text())["strategies"]
    assert [(s["transcripts"], s["errors"]) for s in summary] == [(7, 3), (7, 3)]
    assert "7 (3 failed)" in out.stdout
    skipped = run("eval", str(folder), "--budget", "50%", "--strategy", "pi", "--workers", "1", "--skip-errors")
    assert skipped.returncode == 0, skipped.stderr
    assert len([line for line in skipped.stderr.splitlines() if line.startswith("agentcontext: failed: ")]) == 3
    assert "7 (3 failed)" in skipped.stdout


def test_help_documents_every_exit_status() -> None:
    for command in ([], ["inspect"], ["compact"], ["eval"]):
        out = run(*command, "--help")
        assert out.returncode == 0
        status = out.stdout.split("exit status:", 1)[1]
        codes = [line.split()[0] for line in status.splitlines() if line[:4].strip().isdigit()]
        assert codes == ["0", "2", "3"], command
        assert "--skip-errors" in status and "--no-repair" in status


def test_a_command_imports_only_what_it_needs() -> None:
    # `inspect` builds only its own parser: the ladder, compiler, sessions and memory modules (half
    # its time and a sixth of its memory) are not imported; --help still lists every command.
    heavy = [
        "agentcontext.compaction",
        "agentcontext.compiler",
        "agentcontext.sessions",
        "agentcontext.compaction.pricing",
    ]
    code = (
        "import sys\nfrom agentcontext.cli import main\nmain(sys.argv[1:])\n"
        f"print([m for m in {heavy!r} if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "inspect", str(EXAMPLE)], capture_output=True, text=True, check=True
    )
    assert out.stdout.splitlines()[-1] == "[]"
    listed = run("--help").stdout
    for command in ("inspect", "compact", "eval", "memory", "search", "sessions", "prompt"):
        assert f"    {command}" in listed, command
    bad = run("nope")
    assert bad.returncode == 2 and "invalid choice: 'nope'" in bad.stderr and "prompt" in bad.stderr


def test_version_prints_the_package_version() -> None:
    import agentcontext as ac

    out = run("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"agentcontext {ac.__version__}\n"
    assert ac.__version__ and ac.__version__[0].isdigit()
    assert "--version" in run("--help").stdout


def test_compact_reports_the_tokens_of_what_it_wrote(tmp_path: Path) -> None:
    # `--to anthropic` reported tokens_after in the source format (37,239 tokens at 100%) while the
    # file it wrote reads back as 36,742: the report is of what was written, in the format written.
    import agentcontext as ac

    for target in ("anthropic", "openai", "responses", "jsonl"):
        out_file = tmp_path / f"{target}.jsonl"
        out = run("compact", str(EXAMPLE), "--budget", "100%", "--to", target, "-o", str(out_file), "--json")
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout)
        reread = ac.Conversation.from_file(out_file, format=target).tokens
        assert report["tokens_after"] == report["output"]["tokens"] == reread, target
        assert report["fits"] and report["tokens_after"] <= report["budget"]
    assert report["tokens_after"] == ac.Conversation.from_file(EXAMPLE).tokens  # openai to jsonl: the same count
    anthropic = ac.Conversation.from_file(tmp_path / "anthropic.jsonl").tokens
    assert anthropic != ac.Conversation.from_file(EXAMPLE).tokens  # the case the report got wrong
    table = run("compact", str(EXAMPLE), "--budget", "100%", "--to", "anthropic", "-o", str(tmp_path / "a.jsonl"))
    assert f"-> {anthropic:,} (fits)" in table.stdout
    assert f"wrote 261 messages (anthropic, {anthropic:,} tokens)" in table.stdout


def test_compact_to_a_larger_format_over_the_budget_does_not_fit(tmp_path: Path) -> None:
    # Compacted as Anthropic messages to just under the budget, the same messages written as OpenAI
    # Chat are more tokens: the written file is over the budget, so the budget is not met (exit 3).
    import agentcontext as ac

    source = tmp_path / "anthropic.jsonl"
    source.write_text(
        "".join(json.dumps(m) + "\n" for m in ac.Conversation.from_file(EXAMPLE).to_format("anthropic")),
        encoding="utf-8",
    )
    out_file = tmp_path / "openai.jsonl"
    out = run("compact", str(source), "--budget", "50%", "--to", "openai", "-o", str(out_file), "--json")
    assert out.returncode == 3, out.stderr
    report = json.loads(out.stdout)
    written = ac.Conversation.from_file(out_file, format="openai").tokens
    assert report["tokens_after"] == written > report["budget"] >= report["stages"][-1]["tokens_after"]
    assert not report["fits"]
    assert report["reason"].startswith(f"written in openai format the output is {written:,} tokens, over the budget")
    assert out.stderr.count("\n") == 1 and "cannot be met: written in openai format" in out.stderr


def test_a_missing_directory_reads_without_the_os_error_code(tmp_path: Path) -> None:
    # "cannot list the memory directory …: No such file or directory (os error 2)": Rust's io::Error
    # text, code and all, reached the one line the CLI prints.
    missing = tmp_path / "missing"
    for command in (["memory", "index", str(missing)], ["memory", "search", str(missing), "x"]):
        out = run(*command)
        assert out.returncode == 2
        assert (
            out.stderr
            == f"agentcontext: error: cannot list the memory directory {missing}: No such file or directory\n"
        )
    out = run("search", str(tmp_path / "missing.jsonl"), "x")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "No such file or directory" in out.stderr and "os error" not in out.stderr
