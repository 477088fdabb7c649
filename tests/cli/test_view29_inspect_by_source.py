"""``agentcontext inspect --by-source`` (issue 29, item 2): a compiled request written as the body a
provider receives, broken down by source; its parts add up to the request's exact count."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext import cli
from agentcontext.compiler import Registry, ToolSpec, WorkingSet, compile_request
from tests import support

EXAMPLE = support.ROOT / "examples" / "session.jsonl"


def inspect(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = cli.main(["inspect", *args])
    out = capsys.readouterr()
    return status, out.out, out.err


def compiled_body(tmp_path: Path) -> tuple[Path, Any]:
    conv = ac.Conversation(support.synthetic_session(80, seed=11)[1:], format="openai")
    conv = ac.Conversation(conv.to_format("anthropic"), format="anthropic")
    registry = Registry([ToolSpec("read_file", "Read a file.", read_only=True), ToolSpec("bash", "Run a command.")])
    ws = WorkingSet(registry=registry, environment="# Environment\n\n- cwd: /srv\n")
    compiled = compile_request(conv, ws, style="anthropic", max_output_tokens=2_048)
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 2_048,
        "system": compiled.system,
        "tools": compiled.tools,
        "messages": conv.to_anthropic_params(request=True)["messages"],
    }
    path = tmp_path / "request.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    return path, compiled


def test_by_source_json_on_a_compiled_request_adds_up_to_its_exact_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, compiled = compiled_body(tmp_path)
    status, out, err = inspect(capsys, str(path), "--by-source", "--json", "--window", "100000")
    assert status == 0, err
    view = json.loads(out)
    in_request = [
        p for p in view["parts"] if p["kind"] not in ("reserved_output", "safety_margin", "autocompact_buffer", "free")
    ]
    assert sum(p["tokens"] for p in in_request) == view["request_tokens"] == compiled.tokens["input_total"]
    assert sum(p["tokens"] for p in view["parts"]) == view["context_window"] == 100_000
    assert [p["name"] for p in in_request if p["kind"] == "section"] == [
        "base instructions", "tool catalog", "environment"
    ]  # fmt: skip
    assert view["reserved_output"] == 2_048
    for p in view["parts"]:
        assert p["share"] == pytest.approx(p["tokens"] / 100_000)
        if "parts" in p:
            assert sum(q["tokens"] for q in p["parts"]) == p["tokens"]


def test_by_source_on_a_transcript_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = inspect(capsys, str(EXAMPLE), "--by-source", "--window", "128000")
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("request: ") and "128,000-token window" in lines[0]
    total = next(line for line in lines if line.startswith("request total")).split()
    assert int(total[2].replace(",", "")) == ac.Conversation.from_file(EXAMPLE).tokens
    assert any(line.startswith("history: tool") for line in lines)
    assert any(line.strip().startswith("results: read_file") for line in lines)


def test_by_source_refuses_a_bad_window(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = inspect(capsys, str(EXAMPLE), "--by-source", "--window", "0")
    assert status == cli.EXIT_BAD_INPUT and "--window" in err
    status, _, err = inspect(capsys, str(EXAMPLE), "--by-source", "--strategy", "nope")
    assert status == cli.EXIT_BAD_INPUT and "unknown strategy" in err
