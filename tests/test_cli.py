"""The command line, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
    anthropic.write_text(json.dumps(conv.to_anthropic()))
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
