"""The text reports of `inspect`, `inspect --by-source`, `compact`, `eval` and `prompt` show a
control character from the file they read (a tool name, a message the summary quotes, a line of
AGENTS.md) as its escape. Before, they wrote it to the terminal as it was: a transcript or a
cloned repository could clear the screen (``ESC [2J``), set the window title (``ESC ]0;...BEL``)
or move the cursor over what was printed. ``search``, ``memory`` and ``sessions`` escaped already."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcontext import cli

ESC = "\x1b[2J"
TITLE = "\x1b]0;pwned\x07"
NAME = "ba\x1b[31msh"


def transcript(path: Path) -> Path:
    messages: list[dict[str, object]] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(12):
        messages += [
            {"role": "user", "content": f"step {i}: look {TITLE} at {ESC} src/file{i}.py\r and fix it"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": NAME, "arguments": '{"command": "ls"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"out {ESC} vault\n" * 120},
            {"role": "assistant", "content": f"Done {ESC} with step {i}."},
        ]
    path.write_text("".join(json.dumps(m) + "\n" for m in messages))
    return path


def shown(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    cli.main(list(argv))
    out = capsys.readouterr().out
    assert out
    return out


@pytest.mark.parametrize(
    "argv",
    [
        ["inspect", "{t}"],
        ["inspect", "{t}", "--by-source"],
        ["compact", "{t}", "--budget", "1500"],
        ["eval", "{t}", "--budget", "30%", "--strategy", "pi", "--prices", "none", "--per-transcript"],
    ],
    ids=["inspect", "by-source", "compact", "eval"],
)
def test_reports_escape_control_characters(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    path = transcript(tmp_path / f"t{TITLE}.jsonl")
    out = shown(capsys, *(a.format(t=path) for a in argv))
    assert not any(c in out for c in "\x1b\x07\r"), repr(out[:400])
    assert "\\x1b" in out


def test_the_inspect_table_stays_aligned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = shown(capsys, "inspect", str(transcript(tmp_path / "t.jsonl")))
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("tool ") and "calls" in line)
    rule, row = lines[at + 1 : at + 3]
    assert row.startswith("ba\\x1b[31msh ") and len(rule.split("  ")[0]) == len("ba\\x1b[31msh")


def test_prompt_escapes_a_project_files_control_characters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "AGENTS.md").write_text(f"Use tabs.\tAlways.\n{TITLE}Run {ESC}make check.\n")
    out = shown(capsys, "prompt", "--workspace", str(tmp_path), "--no-git")
    assert "\x1b" not in out and "\x07" not in out
    assert "Use tabs.\tAlways.\n\\x1b]0;pwned\\x07Run \\x1b[2Jmake check." in out  # tabs and lines as they are
    cli.main(["prompt", "--workspace", str(tmp_path), "--no-git", "--json"])
    assert TITLE in json.loads(capsys.readouterr().out)["system"]  # --json holds the exact text
