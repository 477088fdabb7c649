"""Importers for real agent session files.

Every raw file of the shared corpus imports; the transcripts listed in SOURCES.md come out with the
names, message counts per role, tool-call counts and synthesized results of its tables (parsed
here, not copied), with the same content as the normalized files, and every conversation validates
clean. Then detection, ``load``, errors, and the rules the corpus does not exercise (sidechains, a
compaction at the end, pi shell commands, orphan results) on small files written here.
"""

from __future__ import annotations

import json
import pickle
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext import errors, importers
from tests import support

# ---------------------------------------------------------------------------------------------
# The corpus


def sources_tables(root: Path) -> dict[str, dict[str, Any]]:
    """The per-transcript rows of SOURCES.md: ``{transcript: {column: value}}`` (numbers as ints)."""
    rows: dict[str, dict[str, Any]] = {}
    header: list[str] | None = None
    for line in (root / "SOURCES.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells is None:
            header = None
        elif cells[0] == "transcript":
            header = cells
        elif header is not None and not set(cells[0]) <= {"-", ":"}:
            row: dict[str, Any] = {}
            for key, value in zip(header, cells, strict=True):
                digits = value.replace(",", "")
                row[key] = int(digits) if digits.isdigit() else value
            rows[row["transcript"]] = row
    return rows


def raw_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / "raw").rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def table(transcripts: Path) -> dict[str, dict[str, Any]]:
    rows = sources_tables(transcripts)
    assert len(rows) == support.corpus_size(), "SOURCES.md lists every transcript"
    assert len(support.normalized_files()) == support.corpus_size()
    return rows


@pytest.fixture(scope="module")
def corpus(transcripts: Path) -> dict[str, importers.Imported]:
    """Every conversation of every raw file, by name (names unique across the corpus)."""
    items = importers.import_files(raw_files(transcripts))
    names = [item.name for item in items]
    assert len(names) == len(set(names)), [n for n, k in Counter(names).items() if k > 1]
    return {item.name: item for item in items}


def counts(item: importers.Imported) -> dict[str, Any]:
    messages = item.conversation.to_jsonl()
    roles = Counter(m["role"] for m in messages)
    return {
        "format": item.format,
        "msgs": len(messages),
        "user": roles["user"],
        "asst": roles["assistant"],
        "tool": roles["tool"],
        "calls": sum(len(m.get("tool_calls") or []) for m in messages),
        "synth": sum(1 for m in messages if m["role"] == "tool" and m["content"] == importers.NO_RESULT),
    }


def test_every_listed_transcript_has_the_counts_of_sources_md(
    table: dict[str, dict[str, Any]], corpus: dict[str, importers.Imported]
) -> None:
    missing = sorted(set(table) - set(corpus))
    assert not missing, f"not imported: {missing}"
    wrong = {}
    for name, row in table.items():
        got = counts(corpus[name])
        want = {key: row[key] for key in got}
        if got != want:
            wrong[name] = (got, want)
    assert not wrong, wrong
    # (The prose of SOURCES.md says 46 synthesized results; its tables, which the normalized files
    # match, hold 40; 22 of them are in the vendored subset.)
    assert sum(row["synth"] for row in table.values()) == (40 if support.full_corpus() else 22)


def test_every_raw_file_imports_valid_conversations(transcripts: Path, corpus: dict[str, importers.Imported]) -> None:
    files = raw_files(transcripts)
    assert {item.path for item in corpus.values()} == set(files)
    for item in corpus.values():
        assert item.format in importers.FORMATS
        assert item.conversation.format == "jsonl"
        assert item.conversation.validate() == [], item.name
        assert len(item.conversation) > 0
        # Every format also converts to every provider format (no system message after the start).
        for fmt in ("openai", "anthropic", "responses"):
            item.conversation.to_format(fmt)
    # aider: one conversation per session that has a message (most of the 1,133 are console only).
    aider = [item for item in corpus.values() if item.format == "aider-chat-history-md"]
    assert len(aider) == (681 if support.full_corpus() else 6)


def test_aider_transcripts_are_the_largest_sessions_with_five_user_turns(
    table: dict[str, dict[str, Any]], corpus: dict[str, importers.Imported]
) -> None:
    def size(item: importers.Imported) -> int:
        return sum(len(m["content"]) for m in item.conversation.to_jsonl())

    sessions = [i for i in corpus.values() if i.format == "aider-chat-history-md" and counts(i)["user"] >= 5]
    listed = [n for n, r in table.items() if r["format"].startswith("aider")]
    assert len(listed) == (12 if support.full_corpus() else 2)
    largest = sorted(sessions, key=size, reverse=True)[: len(listed)]
    assert sorted(i.name for i in largest) == sorted(n for n, r in table.items() if r["format"].startswith("aider"))


def _text(content: Any) -> str:
    if isinstance(content, list):  # thinking kept: the normalized files dropped it
        return "\n\n".join(block["text"] for block in content if block["type"] == "text")
    return str(content or "")


def _trailing_spaces_trimmed(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.split("\n"))


def test_content_matches_the_normalized_files(
    transcripts: Path, table: dict[str, dict[str, Any]], corpus: dict[str, importers.Imported]
) -> None:
    for name in table:
        (path,) = (transcripts / "normalized").glob(f"*/{name}.jsonl")
        want = support.read_jsonl(path)
        got = corpus[name].conversation.to_jsonl()
        assert [m["role"] for m in got] == [m["role"] for m in want], name
        assert [m.get("tool_calls") for m in got] == [m.get("tool_calls") for m in want], name
        assert [m.get("tool_call_id") for m in got] == [m.get("tool_call_id") for m in want], name
        texts = [_text(m.get("content")) for m in got]
        expected = [m.get("content") or "" for m in want]
        if corpus[name].format == "aider-chat-history-md":
            # The normalized aider files lost two of the spaces at the end of lines in replies
            # (blank lines of indented code); the importer keeps the reply as logged.
            texts = [_trailing_spaces_trimmed(t) for t in texts]
            expected = [_trailing_spaces_trimmed(t) for t in expected]
        assert texts == expected, name


def test_claude_code_thinking_and_compaction(corpus: dict[str, importers.Imported]) -> None:
    if not support.full_corpus():
        pytest.skip("session-624a4a58 (2.5 MB, the one Claude Code auto-compaction) is in the full corpus only")
    item = corpus["session-624a4a58"]
    assert item.meta["dropped"]["thinking_only"] == 1
    assert item.meta["model"] == "claude-sonnet-4-5-20250929"
    assert item.meta["session_id"].startswith("624a4a58")
    messages = item.conversation.to_jsonl()
    thinking = [m for m in messages if isinstance(m["content"], list)]
    assert thinking, "signed thinking is kept"
    for m in thinking:
        kinds = [block["type"] for block in m["content"]]
        assert kinds[0] == "thinking" and "thinking" not in kinds[kinds.count("thinking") :]
        assert all(block["signature"] for block in m["content"] if block["type"] == "thinking")
    # It survives into Anthropic requests, signature included.
    sent = item.conversation.to_anthropic_params()["messages"]
    assert any(b.get("type") == "thinking" for m in sent if isinstance(m["content"], list) for b in m["content"])

    (compaction,) = item.meta["compactions"]
    assert compaction["trigger"] == "auto" and compaction["pre_tokens"] == 155979
    marked = messages[compaction["index"]]
    assert marked["role"] == "user" and marked["compaction"]["source"] == "claude-code"
    assert marked["content"].startswith("This session is being continued from a previous conversation")
    assert sum("compaction" in m for m in messages) == 1


def test_reused_ids_are_renamed_with_their_results(corpus: dict[str, importers.Imported]) -> None:
    renamed = [item for item in corpus.values() if item.meta.get("renamed_ids")]
    # Three SWE-agent replay demos reuse recorded ids; one of them is in the vendored subset.
    assert len(renamed) == (3 if support.full_corpus() else 1)
    for item in renamed:
        messages = item.conversation.to_jsonl()
        ids = [c["id"] for m in messages for c in m.get("tool_calls") or []]
        assert len(ids) == len(set(ids))
        assert any(i.endswith("#2") for i in ids)


# ---------------------------------------------------------------------------------------------
# Detection and load

SAMPLES = {
    "claude-code-jsonl": "codemie/tests/integration/session/fixtures/session-9eda1058.jsonl",
    "codex-rollout-jsonl": "codemie/src/agents/plugins/codex/__tests__/fixtures/"
    "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl",
    "pi-session-jsonl": "pi-mono/packages/coding-agent/test/fixtures/large-session.jsonl",
    "swe-agent-traj": "swe-agent/trajectories/demonstrations/ctf/crypto/eps.traj",
    "mini-swe-agent-1": "mini-swe-agent/tests/test_data/local.traj.json",
    "mini-swe-agent-1.1": "mini-swe-agent/output/deepseek_chat_dev/pyvista__pyvista-4315/pyvista__pyvista-4315.traj.json",
    "openhands-events": "openhands/tests/runtime/trajs/basic.json",
    "openhands-events-legacy": "openhands/tests/unit/resolver/mock_output/output.jsonl",
    "gemini-cli-json": "codemie/tests/integration/metrics/fixtures/gemini/session-2025-12-01T21-45-5b959dae.json",
    "aider-chat-history-md": "aider/tests/fixtures/chat-history.md",
}


def test_samples_cover_every_format() -> None:
    assert set(SAMPLES) == set(importers.FORMATS)


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_detect_each_format(fmt: str, transcripts: Path) -> None:
    path = transcripts / "raw" / SAMPLES[fmt]
    assert importers.detect(path) == fmt
    assert importers.detect(str(path)) == fmt
    items = importers.import_file(path, format=fmt)
    assert items and all(item.format == fmt for item in items)


def test_detect_by_content_not_name(transcripts: Path, tmp_path: Path) -> None:
    # The OpenHands evaluation output is detected as events (not legacy) from its first instance.
    output = transcripts / "raw/openhands/evaluation/benchmarks/multi_swe_bench/examples/output.jsonl"
    assert importers.detect(output) == "openhands-events"
    # A renamed Claude Code session, and one of a single line.
    lines = (transcripts / "raw" / SAMPLES["claude-code-jsonl"]).read_text(encoding="utf-8").splitlines()
    renamed = tmp_path / "whatever.txt"
    renamed.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert importers.detect(renamed) == "claude-code-jsonl"
    user_line = next(line for line in lines if json.loads(line).get("type") == "user")
    one = tmp_path / "one.jsonl"
    one.write_text(user_line + "\n", encoding="utf-8")
    assert importers.detect(one) == "claude-code-jsonl"
    assert len(importers.load(one)) == 1
    # The library's own formats are not agent formats.
    assert importers.detect(support.normalized_files()[0]) is None
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8")
    assert importers.detect(chat) is None


def test_load_reads_library_formats_through_from_file(transcripts: Path, tmp_path: Path) -> None:
    path = support.normalized_files()[0]
    conv = importers.load(path)
    assert conv.format == "jsonl"
    assert conv.to_jsonl() == ac.Conversation.from_file(path).to_jsonl()
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8")
    assert importers.load(chat).format == "openai"
    assert importers.load(chat, format="openai").to_openai() == [{"role": "user", "content": "hi"}]


def test_load_prefers_agent_formats(transcripts: Path) -> None:
    # A mini-swe-agent v1 file is also a valid OpenAI list, without tool calls.
    path = transcripts / "raw" / SAMPLES["mini-swe-agent-1"]
    assert ac.Conversation.from_file(path).tool_calls == 0
    assert importers.load(path).tool_calls == 2
    # Conversation.from_file reads this Claude Code session as one Responses item.
    claude = transcripts / "raw" / SAMPLES["claude-code-jsonl"]
    assert len(importers.load(claude)) == 12


def test_load_picks_a_session_of_a_multi_session_file(transcripts: Path) -> None:
    path = transcripts / "raw/openhands/evaluation/benchmarks/multi_swe_bench/examples/output.jsonl"
    with pytest.raises(errors.SessionSelectionError) as info:
        importers.load(path)
    names = ("output--ponylang__ponyc-4595", "output--ponylang__ponyc-4593", "output--ponylang__ponyc-4588")
    assert info.value.names == names
    assert all(name in str(info.value) for name in names)
    assert isinstance(info.value, errors.TranscriptError)
    by_name = importers.load(path, session="output--ponylang__ponyc-4588")
    assert len(by_name) == 101
    assert importers.load(path, session=2).to_jsonl() == by_name.to_jsonl()
    assert importers.load(path, session=-1).to_jsonl() == by_name.to_jsonl()
    with pytest.raises(errors.SessionSelectionError, match="no session named 'nope'"):
        importers.load(path, session="nope")
    with pytest.raises(errors.SessionSelectionError, match="no session 3"):
        importers.load(path, session=3)
    # A long list is shortened in the message, complete in `names`.
    aider = transcripts / "raw" / SAMPLES["aider-chat-history-md"]
    if support.full_corpus():
        with pytest.raises(errors.SessionSelectionError, match=r"\.\.\. \(681 in all\)") as info:
            importers.load(aider)
        assert len(info.value.names) == 681
        assert len(importers.load(aider, session="chat-history--2024-08-13_13_42_45")) == 49
    else:  # the vendored file holds the first 6 sessions, too few to be shortened
        with pytest.raises(errors.SessionSelectionError) as info:
            importers.load(aider)
        assert len(info.value.names) == 6 and "in all" not in str(info.value)
        assert len(importers.load(aider, session="chat-history--2024-08-06_08_55_14")) == 18


# ---------------------------------------------------------------------------------------------
# Errors


def test_unknown_json_lists_every_format_tried(tmp_path: Path) -> None:
    path = tmp_path / "unknown.json"
    path.write_text(json.dumps({"foo": [1, 2]}), encoding="utf-8")
    assert importers.detect(path) is None
    with pytest.raises(errors.UnknownFormatError) as info:
        importers.import_file(path)
    assert info.value.tried == importers.FORMATS
    assert all(fmt in str(info.value) for fmt in importers.FORMATS)
    assert str(path) in str(info.value) and info.value.path == str(path)
    with pytest.raises(errors.UnknownFormatError) as info:
        importers.load(path)
    assert info.value.tried == importers.FORMATS + importers.LIBRARY_FORMATS
    assert all(fmt in str(info.value) for fmt in info.value.tried)
    assert "Conversation.from_file" in str(info.value)
    assert isinstance(info.value.__cause__, errors.TranscriptError)
    # Plain text too.
    text = tmp_path / "notes.md"
    text.write_text("# notes\n\nnothing to see\n", encoding="utf-8")
    with pytest.raises(errors.UnknownFormatError):
        importers.load(text)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n  \n", encoding="utf-8")
    assert importers.detect(path) is None
    for read in (importers.import_file, importers.load):
        with pytest.raises(errors.UnknownFormatError, match="the file is empty; tried: claude-code-jsonl"):
            read(path)


def test_truncated_json_line_names_the_line(transcripts: Path, tmp_path: Path) -> None:
    lines = (transcripts / "raw" / SAMPLES["claude-code-jsonl"]).read_text(encoding="utf-8").splitlines()
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join([*lines[:6], lines[6][: len(lines[6]) // 2]]), encoding="utf-8")
    for call in (importers.detect, importers.import_file, importers.load):
        with pytest.raises(errors.TranscriptError) as info:
            call(path)
        assert info.value.line == 7
        assert f"{path}: line 7: not valid JSON" in str(info.value)
    # A pretty-printed JSON file broken in the middle names the line of the break.
    doc = json.dumps(json.loads((transcripts / "raw" / SAMPLES["gemini-cli-json"]).read_text()), indent=2)
    broken = tmp_path / "session.json"
    broken.write_text(doc[: len(doc) // 2], encoding="utf-8")
    with pytest.raises(errors.TranscriptError) as info:
        importers.import_file(broken)
    assert info.value.line == doc[: len(doc) // 2].count("\n") + 1


def test_directory_and_missing_file(tmp_path: Path) -> None:
    for call in (importers.detect, importers.import_file, importers.load):
        with pytest.raises(errors.TranscriptReadError) as info:
            call(tmp_path)
        assert isinstance(info.value, OSError) and info.value.path == str(tmp_path)
        with pytest.raises(errors.TranscriptReadError, match="No such file"):
            call(tmp_path / "missing.jsonl")


def test_malformed_content_names_the_line_or_entry(tmp_path: Path) -> None:
    claude = tmp_path / "claude.jsonl"
    good = {"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "hi"}}
    bad = {"type": "assistant", "uuid": "u2", "sessionId": "s", "message": "not an object"}
    claude.write_text(json.dumps(good) + "\n\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(errors.TranscriptError, match=r"claude\.jsonl: line 3: `message` must be an object") as info:
        importers.import_file(claude)
    assert info.value.line == 3

    traj = tmp_path / "x.traj"
    history = [{"role": "system", "content": "s"}, {"role": "wizard", "content": "?"}]
    traj.write_text(json.dumps({"history": history, "trajectory": []}), encoding="utf-8")
    with pytest.raises(errors.TranscriptError, match="entry 1: unknown role 'wizard'") as info:
        importers.import_file(traj)
    assert info.value.index == 1

    # A format forced on a file in another one.
    with pytest.raises(errors.TranscriptError, match="no Claude Code entries"):
        importers.import_file(traj, format="claude-code-jsonl")
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps({"history": history}, indent=2), encoding="utf-8")
    with pytest.raises(errors.TranscriptError, match="not a JSON Lines file"):
        importers.import_file(pretty, format="pi-session-jsonl")
    with pytest.raises(errors.TranscriptError, match="JSON Lines, not one JSON document"):
        importers.import_file(claude, format="swe-agent-traj")
    with pytest.raises(errors.TranscriptError, match="no Codex rollout entries"):
        importers.import_file(claude, format="codex-rollout-jsonl")
    with pytest.raises(errors.TranscriptError, match="no aider session"):
        importers.import_file(claude, format="aider-chat-history-md")
    with pytest.raises(errors.OptionError, match="unknown importer format 'xml'"):
        importers.import_file(traj, format="xml")
    with pytest.raises(errors.OptionError, match="unknown format 'xml'"):
        importers.load(traj, format="xml")


def test_new_errors_pickle() -> None:
    for exc in (
        errors.UnknownFormatError("p: not a transcript", "p", ("a", "b")),
        errors.SessionSelectionError("p: holds 2 sessions", "p", ("x", "y")),
    ):
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is type(exc) and str(back) == str(exc) and back.__dict__ == exc.__dict__


# ---------------------------------------------------------------------------------------------
# Rules the corpus does not exercise


def write_jsonl(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def claude_entry(kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if "id" in extra:
        message["id"] = extra.pop("id")
    return {"type": kind, "uuid": f"u{len(content)}", "sessionId": "s1", "message": message, **extra}


def test_claude_code_sidechains_compaction_and_merged_responses(tmp_path: Path) -> None:
    thinking = {"type": "thinking", "thinking": "plan", "signature": "sig"}
    entries = [
        claude_entry("user", "read a and b", cwd="/repo"),
        claude_entry("assistant", [thinking], id="m1"),
        claude_entry("assistant", [{"type": "text", "text": "Reading."}], id="m1"),
        claude_entry("assistant", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"p": "a"}}], id="m1"),
        claude_entry("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "A"}]),
        claude_entry("assistant", [{"type": "tool_use", "id": "t2", "name": "Read", "input": {"p": "b"}}], id="m1"),
        claude_entry("user", "subagent prompt", isSidechain=True),
        claude_entry("assistant", [{"type": "text", "text": "subagent reply"}], id="s1", isSidechain=True),
        claude_entry(
            "user", [{"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "B"}]}]
        ),
        claude_entry("assistant", [thinking], id="m2"),  # interrupted: thinking only
        claude_entry("user", [{"type": "text", "text": "[Request interrupted by user]"}]),
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "c1",
            "content": "Conversation compacted",
            "compactMetadata": {"trigger": "manual", "preTokens": 1234},
        },
        claude_entry("user", "This session is being continued ... summary", isCompactSummary=True),
        claude_entry("user", "<command-name>/cost</command-name>", isMeta=True),
        claude_entry("assistant", [{"type": "text", "text": "Done."}], id="m3"),
        {"type": "file-history-snapshot", "messageId": "x", "snapshot": {}},
    ]
    (item,) = importers.import_file(write_jsonl(tmp_path / "s.jsonl", entries))
    messages = item.conversation.to_jsonl()
    assert item.conversation.validate() == []
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "user", "user", "user", "assistant"]
    assert messages[1] == {
        "role": "assistant",
        "content": [thinking, {"type": "text", "text": "Reading."}],
        "tool_calls": [
            {"id": "t1", "name": "Read", "arguments": '{"p": "a"}'},
            {"id": "t2", "name": "Read", "arguments": '{"p": "b"}'},
        ],
    }
    assert [m["content"] for m in messages[2:4]] == ["A", "B"]
    # The boundary adds no message: the summary after it carries the marker.
    assert messages[5]["content"].startswith("This session is being continued")
    assert messages[5]["compaction"] == {"source": "claude-code", "trigger": "manual", "pre_tokens": 1234}
    assert messages[6]["content"] == "<command-name>/cost</command-name>", "isMeta lines are kept"
    assert item.meta["dropped"] == {"sidechain": 2, "thinking_only": 1, "file-history-snapshot": 1}
    assert item.meta["cwd"] == "/repo"

    # A boundary with nothing after it becomes a user message of its own.
    trailing = {"type": "system", "subtype": "compact_boundary", "uuid": "c2", "content": "Conversation compacted"}
    (end,) = importers.import_file(write_jsonl(tmp_path / "end.jsonl", [*entries, trailing]))
    last = end.conversation.to_jsonl()
    assert len(last) == 9
    assert last[-1] == {"role": "user", "content": "Conversation compacted", "compaction": {"source": "claude-code"}}
    assert [c["index"] for c in end.meta["compactions"]] == [5, 8]

    # A subagent file (every entry a sidechain) keeps its entries.
    side = [e for e in entries if e.get("isSidechain")]
    (sub,) = importers.import_file(write_jsonl(tmp_path / "agent-1.jsonl", side))
    assert [m["content"] for m in sub.conversation.to_jsonl()] == ["subagent prompt", "subagent reply"]


def test_pi_shell_commands_compaction_and_aborted_calls(tmp_path: Path) -> None:
    call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}}
    entries = [
        {"type": "session", "id": "p1", "cwd": "/w", "provider": "anthropic", "modelId": "claude-x"},
        {"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": "go"}]}},
        {"type": "message", "message": {"role": "assistant", "content": [call], "stopReason": "aborted"}},
        {"type": "message", "message": {"role": "assistant", "content": [], "stopReason": "error"}},
        {"type": "message", "message": {"role": "bashExecution", "command": "make", "output": "", "exitCode": 2}},
        {"type": "compaction", "summary": "we ran ls", "tokensBefore": 900},
        {"type": "thinking_level_change", "thinkingLevel": "high"},
    ]
    (item,) = importers.import_file(write_jsonl(tmp_path / "pi.jsonl", entries))
    messages = item.conversation.to_jsonl()
    assert item.format == "pi-session-jsonl" and item.conversation.validate() == []
    assert messages[2] == {"role": "tool", "content": importers.NO_RESULT, "tool_call_id": "c1"}
    assert messages[3]["content"] == "Ran `make`\n(no output)\n\nCommand exited with code 2"
    assert messages[4]["content"].endswith("<summary>\nwe ran ls\n</summary>")
    assert messages[4]["compaction"] == {"source": "pi", "tokens_before": 900}
    assert item.meta["synthesized_results"] == 1
    assert item.meta["dropped"] == {"empty_assistant/error": 1, "thinking_level_change": 1}
    assert item.meta["model"] == "claude-x"


def test_orphan_results_become_user_messages(tmp_path: Path) -> None:
    call = {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    history = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "task"},
        {"role": "tool", "content": "early", "tool_call_ids": ["a"]},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": [{"type": "text", "text": "ok"}], "tool_call_ids": ["a"]},
        {"role": "tool", "content": "again", "tool_call_ids": ["a"]},
    ]
    path = tmp_path / "fc.traj"
    path.write_text(json.dumps({"history": history}), encoding="utf-8")
    (item,) = importers.import_file(path)
    messages = item.conversation.to_jsonl()
    assert item.conversation.validate() == []
    assert [m["role"] for m in messages] == ["system", "user", "user", "assistant", "tool", "user"]
    assert messages[2]["content"] == "[tool result for call a, which is not in the conversation]\nearly"
    assert messages[4]["content"] == "ok"
    assert messages[5]["content"] == "[another tool result for call a, which already has one]\nagain"
    assert item.meta["orphan_results"] == 2


def test_gemini_codex_and_mini_details(tmp_path: Path) -> None:
    gemini = {
        "sessionId": "g1",
        "messages": [
            {"type": "user", "content": "hi"},
            {"type": "info", "content": "Request cancelled."},
            {"type": "gemini", "content": "", "thoughts": [{"subject": "x"}]},
            {
                "type": "gemini",
                "content": "",
                "toolCalls": [
                    {
                        "id": "r1",
                        "name": "read",
                        "args": {"p": 1},
                        "status": "error",
                        "result": [{"functionResponse": {"id": "r1", "name": "read", "response": {"error": "nope"}}}],
                    },
                    {"id": "r2", "name": "read", "args": {}, "status": "cancelled"},
                ],
            },
        ],
    }
    path = tmp_path / "session-g.json"
    path.write_text(json.dumps(gemini), encoding="utf-8")
    (item,) = importers.import_file(path)
    messages = item.conversation.to_jsonl()
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool"]
    assert messages[2] == {"role": "tool", "content": "nope", "tool_call_id": "r1", "is_error": True}
    assert messages[3]["content"] == importers.NO_RESULT
    assert item.meta["dropped"] == {"info": 1, "empty_or_thoughts_only": 1}

    rollout = [
        {"type": "session_meta", "payload": {"id": "x", "base_instructions": {"text": "be Codex"}}},
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "look"}, {"type": "input_image", "image_url": "data:..."}],
            },
        },
        {"type": "response_item", "payload": {"type": "web_search_call", "status": "completed", "action": {"q": 1}}},
        {
            "type": "response_item",
            "payload": {"type": "custom_tool_call", "call_id": "p", "name": "apply_patch", "input": "*** Begin Patch"},
        },
        {
            "type": "response_item",
            "payload": {"type": "function_call", "call_id": "f", "name": "sh", "arguments": "{}"},
        },
        {"type": "response_item", "payload": {"type": "custom_tool_call_output", "call_id": "p", "output": "ok"}},
    ]
    (item,) = importers.import_file(write_jsonl(tmp_path / "rollout.jsonl", rollout))
    messages = item.conversation.to_jsonl()
    assert messages[1] == {"role": "user", "content": "look\n[image]"}
    assert messages[2]["tool_calls"] == [{"id": "codex-1", "name": "web_search", "arguments": '{"q": 1}'}]
    assert messages[3]["content"].startswith("[web_search_call status=completed;")
    assert messages[4]["tool_calls"][0]["arguments"] == '{"input": "*** Begin Patch"}'
    assert [m.get("tool_call_id") for m in messages[5:]] == ["p", "f"]
    assert messages[6]["content"] == importers.NO_RESULT

    mini = {
        "trajectory_format": "mini-swe-agent-1.1",
        "messages": [
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "no command"},
            {"role": "exit", "content": "diff --git"},
        ],
    }
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps(mini), encoding="utf-8")
    (item,) = importers.import_file(path)
    assert item.name == "run" and len(item.conversation) == 2
    assert item.meta["submission"] == "diff --git"


def test_names_and_disambiguation(tmp_path: Path) -> None:
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    paths = []
    for run in ("run-a", "run-b"):
        (tmp_path / run).mkdir()
        path = tmp_path / run / "inst-1.traj"
        path.write_text(json.dumps({"history": history}), encoding="utf-8")
        paths.append(path)
    assert [i.name for i in importers.import_file(paths[0])] == ["inst-1"]
    assert [i.name for i in importers.import_files(paths)] == ["run-a--inst-1", "run-b--inst-1"]
    # SWE-bench output layout: <run>/<instance>/<instance>.traj.json
    nested = tmp_path / "deepseek" / "inst-2" / "inst-2.traj.json"
    nested.parent.mkdir(parents=True)
    nested.write_text(json.dumps([{"role": "exit", "content": "x"}, {"role": "user", "content": "u"}]))
    assert [i.name for i in importers.import_file(nested)] == ["deepseek--inst-2"]


def test_openhands_actions_without_native_calls(tmp_path: Path) -> None:
    history = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "fix it", "image_urls": ["a.png"]}},
        {"id": 1, "source": "agent", "action": "run", "args": {"command": "ls", "thought": "Look first."}},
        {"id": 2, "source": "agent", "observation": "run", "cause": 1, "content": "a.py"},
        {"id": 3, "source": "agent", "observation": "error", "content": "bad tool call"},
        {"id": 4, "source": "agent", "action": "finish", "args": {"thought": "Done."}},
        {"id": 5, "source": "environment", "observation": "agent_state_changed", "content": ""},
    ]
    path = tmp_path / "events.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    (item,) = importers.import_file(path)
    assert item.format == "openhands-events"
    assert item.conversation.to_jsonl() == [
        {"role": "user", "content": "fix it\n[image]"},
        {
            "role": "assistant",
            "content": "Look first.",
            "tool_calls": [{"id": "oh-1", "name": "run", "arguments": '{"command": "ls"}'}],
        },
        {"role": "tool", "content": "a.py", "tool_call_id": "oh-1"},
        {"role": "user", "content": "bad tool call"},
        {"role": "assistant", "content": "Done."},
    ]
    assert item.meta["dropped"] == {"observation/agent_state_changed": 1}


def test_load_with_cache_returns_copies_rereads_changed_files_and_stays_bounded(tmp_path: Path) -> None:
    """The one loading path's cache (used by ``agentcontext eval`` and the pytest plugin): each call
    returns a copy, a file changed since it was read is read again, and at most CACHED_FILES files
    stay parsed."""
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "one"}) + "\n", encoding="utf-8")
    first = importers.load(path, cache=True)
    first.append({"role": "assistant", "content": "changed by the caller"})
    assert importers.load(path, cache=True).to_jsonl() == [{"role": "user", "content": "one"}]
    path.write_text(json.dumps({"role": "user", "content": "two, longer"}) + "\n", encoding="utf-8")
    assert importers.load(path, cache=True).to_jsonl() == [{"role": "user", "content": "two, longer"}]
    for k in range(importers.CACHED_FILES + 3):
        other = tmp_path / f"other-{k}.jsonl"
        other.write_text(json.dumps({"role": "user", "content": str(k)}) + "\n", encoding="utf-8")
        assert importers.load(other, cache=True).to_jsonl() == [{"role": "user", "content": str(k)}]
    assert len(importers._cache) == importers.CACHED_FILES
    with pytest.raises(errors.OptionError):
        importers.load(path, cache="yes")  # type: ignore[arg-type]
