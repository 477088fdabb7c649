"""conversation_search over a real session log: facts that left the working set (cleared tool
results) are found again with their message index and recall id."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentcontext import Conversation, SessionLog
from agentcontext.compaction import Compactor
from agentcontext.errors import FileReadError, OptionError
from agentcontext.memory import ConversationSearch, conversation_search
from tests import support


def _session(n_calls: int = 12) -> list[dict]:
    messages: list[dict] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Find why the deploy fails."},
    ]
    for i in range(n_calls):
        call = f"call_{i}"
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call,
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"cmd": f"step {i}"})},
                    }
                ],
            }
        )
        lines = [f"log line {j} of step {i}: nothing to see" for j in range(300)]
        if i == 2:
            lines[150] = "note: vault token expired for service quokka-7731 (rotate with vault kv rotate)"
        body = "\n".join(lines)
        messages.append({"role": "tool", "tool_call_id": call, "content": body})
    messages.append({"role": "assistant", "content": "Still looking."})
    return messages


def test_finds_a_fact_that_exists_only_in_a_cleared_result(tmp_path: Path) -> None:
    log = SessionLog(tmp_path / "session.jsonl", format="openai")
    conv = Conversation(_session(), format="openai")
    log.append(conv)
    result = Compactor("openharness").compact(conv, budget=conv.tokens // 5)
    log.record_compaction(result)
    working = json.dumps(log.working_set().to_openai())
    assert "quokka-7731" not in working  # it left the window
    found = conversation_search(log.path, "quokka-7731 vault")
    assert found["messages"] == len(conv)
    top = found["hits"][0]
    assert (top["message"], top["role"], top["recall_id"]) == (7, "tool", "call_2")
    assert any("vault token expired for service quokka-7731" in s for s in top["snippets"])
    regex = conversation_search(log.path, r"quokka-\d{4}", regex=True)
    assert [h["recall_id"] for h in regex["hits"]] == ["call_2"]
    tool = ConversationSearch(log.path)
    text = tool.execute({"query": "QUOKKA-7731"})
    assert "message 7 (tool), recall id call_2" in text
    assert tool.definition("anthropic")["name"] == "conversation_search"
    assert tool.definition()["function"]["parameters"]["required"] == ["query"]


def test_ranking_prefers_messages_with_more_and_rarer_words(tmp_path: Path) -> None:
    log = SessionLog(tmp_path / "s.jsonl", format="openai")
    msgs = [
        {"role": "user", "content": "the build"},
        {"role": "user", "content": "the build failed on arm64 with a linker error"},
        {"role": "user", "content": "another build"},
        {"role": "user", "content": "arm64 runners"},
        {"role": "user", "content": "unrelated"},
    ]
    log.append(Conversation(msgs, format="openai"))
    hits = conversation_search(log.path, "arm64 linker build")["hits"]
    # Holding all the words wins; arm64 (in 2 messages) is rarer than build (in 3).
    assert [h["message"] for h in hits][:2] == [1, 3]
    assert sorted(h["message"] for h in hits[2:]) == [0, 2]
    assert conversation_search(log.path, "arm64", limit=1)["matched"] == 2
    assert len(conversation_search(log.path, "arm64", limit=1)["hits"]) == 1


def test_anthropic_log_and_unicode(tmp_path: Path) -> None:
    log = SessionLog(tmp_path / "a.jsonl", format="anthropic")
    msgs = [
        {"role": "user", "content": "Größe prüfen"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "tu_1", "name": "read", "input": {"path": "x"}}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": "Die GRÖßE ist 42 \u2028 MiB"}],
        },
    ]
    log.append(Conversation(msgs, format="anthropic"))
    hits = conversation_search(log.path, "größe")["hits"]
    assert {h["message"] for h in hits} == {0, 2}
    assert {h["recall_id"] for h in hits} == {None, "tu_1"}
    # Escaped non-ASCII in the raw JSON (another writer) is still found.
    raw = tmp_path / "escaped.jsonl"
    raw.write_text(
        '{"type":"session","version":1,"format":"openai"}\n'
        + json.dumps(
            {"type": "message", "index": 0, "data": [{"role": "user", "content": "caf\u00e9 crème"}]}, ensure_ascii=True
        )
        + "\n"
    )
    assert "\\u00e9" in raw.read_text()
    assert conversation_search(raw, "café")["hits"][0]["message"] == 0


@pytest.mark.parametrize(
    ("query", "kwargs"),
    [("", {}), ("   ", {}), ("(", {"regex": True}), ("x", {"limit": 0}), ("x", {"limit": -1}), ("x", {"snippets": 0})],
)
def test_bad_queries_are_option_errors(tmp_path: Path, query: str, kwargs: dict) -> None:
    log = SessionLog(tmp_path / "s.jsonl")
    with pytest.raises(OptionError):
        conversation_search(log.path, query, **kwargs)
    if "snippets" not in kwargs:  # not a tool argument
        assert ConversationSearch(log.path).execute({"query": query, **kwargs}).startswith("Error")


def test_missing_special_and_linked_logs_are_file_errors(tmp_path: Path) -> None:
    with pytest.raises(FileReadError):
        conversation_search(tmp_path / "missing.jsonl", "x")
    with pytest.raises(FileReadError):
        conversation_search(tmp_path, "x")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(FileReadError, match="not a regular file"):
        conversation_search(tmp_path / "fifo", "x")
    real = SessionLog(tmp_path / "real.jsonl")
    (tmp_path / "link.jsonl").symlink_to(real.path)
    with pytest.raises(FileReadError):
        conversation_search(tmp_path / "link.jsonl", "x")
    assert ConversationSearch(tmp_path / "missing.jsonl").execute({"query": "x"}).startswith("Error")


def test_torn_and_garbage_lines_are_skipped_like_the_log_does(tmp_path: Path) -> None:
    log = SessionLog(tmp_path / "s.jsonl")
    log.append(
        Conversation([{"role": "user", "content": "alpha"}, {"role": "user", "content": "beta"}], format="openai")
    )
    with open(log.path, "ab") as f:
        f.write(b"garbage line\n")
        f.write(b'{"type":"message","index":2,"data":[{"role":"user","content":"gamma torn')
    assert SessionLog(log.path).torn is not None
    assert conversation_search(log.path, "gamma")["hits"] == []
    assert conversation_search(log.path, "beta")["hits"][0]["message"] == 1
    assert conversation_search(log.path, "beta")["messages"] == len(SessionLog(log.path).messages)


def test_a_file_of_several_sessions_is_searched_one_session_at_a_time(
    transcripts: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `agentcontext search` on such a file said "pass session=<name or index>", which the command
    # had no way to pass: the file could not be searched at all.
    from agentcontext.cli import main
    from agentcontext.errors import SessionSelectionError

    path = str(transcripts / "raw/openhands/evaluation/benchmarks/multi_swe_bench/examples/output.jsonl")
    with pytest.raises(SessionSelectionError):
        conversation_search(path, "error")
    by_index = conversation_search(path, "error", session=2)
    assert by_index == conversation_search(path, "error", session="output--ponylang__ponyc-4588")
    assert by_index["messages"] == 101

    assert main(["search", path, "error"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds 3 sessions; pick one with --session NAME or INDEX" in err
    assert main(["search", path, "error", "--session", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["messages"] == 101
    assert main(["search", path, "error", "--session", "nope"]) == 2
    assert "no session 'nope'; pick one with --session" in capsys.readouterr().err

    log = SessionLog(tmp_path / "s.log")
    log.append(Conversation([{"role": "user", "content": "an error"}]))
    with pytest.raises(OptionError, match="is a session log, which holds one session"):
        conversation_search(log.path, "error", session=1)


def test_records_that_cannot_be_read_are_reported_not_silently_left_out(tmp_path: Path) -> None:
    # Before: a torn line and a record with an integer too large were left out of "searched N
    # messages" with no word; now they are counted as skipped, in the result and in the CLI.
    import subprocess
    import sys

    log = SessionLog(tmp_path / "session.jsonl", format="openai")
    log.append(Conversation([{"role": "user", "content": "the needle is here"}], format="openai"))
    with log.path.open("a", encoding="utf-8") as f:
        f.write('{"type":"message","index":1,"data":[{"role":"user","content":"a torn nee\n')
        f.write('{"type":"message","index":1,"data":[{"role":"user","content":"needle","n":' + "9" * 5000 + "}]}\n")
        f.write('{"type":"message","index":1,"data":[{"role":"assistant","content":"another needle"}]}\n')
    # A line the prefilter rules out is not parsed: there only the torn line is seen.
    for query, counted in (("needle", (2, 2)), ("nowhere", (3, 1))):
        found = conversation_search(log.path, query)
        assert (found["messages"], found["skipped"]) == counted, query
    found = conversation_search(log.path, "needle")
    assert sorted(h["message"] for h in found["hits"]) == [0, 1]
    root = support.ROOT
    env = {**os.environ, "PYTHONPATH": str(root / "python")}
    for query, says in (("needle", "(of 2 in the session) (2 records could not be read)"),
                        ("nowhere", "No message matches (searched 3 messages) (1 record could not be read).")):  # fmt: skip
        proc = subprocess.run(
            [sys.executable, "-m", "agentcontext", "search", str(log.path), query],
            check=False, capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert says in proc.stdout, proc.stdout
    # A transcript read as inspect reads it has no records to skip.
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "a needle"}]))
    assert conversation_search(chat, "needle")["skipped"] == 0


def test_a_duplicated_key_counts_with_its_last_value_as_json_loads_reads_it(tmp_path: Path) -> None:
    # D6: both values of a key written twice in a record were searched (and counted in the
    # message's length); `json.loads` (and the log's own reader) keep only the last one.
    log = SessionLog(tmp_path / "session.jsonl", format="openai")
    log.append(Conversation([{"role": "user", "content": "plain hay"}], format="openai"))
    records = [
        '{"type":"message","index":1,"data":[{"role":"tool","tool_call_id":"c1","content":"old needle","content":"new hay"}]}',
        '{"type":"message","index":2,"data":[{"role":"user","content":"first needle"}],"data":[{"role":"user","content":"hay"}]}',
        '{"type":"message","index":3,"data":[{"role":"user","content":"hay","content":"needle at last"}]}',
    ]
    with log.path.open("a", encoding="utf-8") as f:
        f.writelines(r + "\n" for r in records)
    assert [json.loads(r)["data"][0]["content"] for r in records] == ["new hay", "hay", "needle at last"]
    for regex in (False, True):
        found = conversation_search(log.path, "needle", regex=regex)
        assert (found["messages"], found["matched"]) == (4, 1), regex
        hit = found["hits"][0]
        assert (hit["message"], hit["snippets"]) == (3, ["needle at last"])
    hit = conversation_search(log.path, "new")["hits"][0]
    assert (hit["message"], hit["recall_id"], hit["snippets"]) == (1, "c1", ["new hay"])


def test_an_object_of_many_keys_one_written_twice_reads_as_json_loads_reads_it(tmp_path: Path) -> None:
    # The parser's check of a key met twice and the tree it reads such a record as: a hash set of
    # the keys (it searched those before each key: 27 s for one line of 100,000 keys; the count
    # of keys compared is pinned in src/search/log/text.rs).
    log = SessionLog(tmp_path / "session.jsonl", format="openai")
    log.append(Conversation([{"role": "user", "content": "plain hay"}], format="openai"))
    members = ",".join(f'"k{i}":"v{i} needle"' for i in range(20_000))
    records = [
        '{"type":"message","index":1,"data":[{"role":"user",' + members + "}]}",
        '{"type":"message","index":2,"data":[{"role":"user",' + members + ',"k7":"hay"}]}',
    ]
    with log.path.open("a", encoding="utf-8") as f:
        f.writelines(r + "\n" for r in records)
    assert [len(json.loads(r)["data"][0]) for r in records] == [20_001, 20_001]
    found = conversation_search(log.path, "needle", limit=2)
    assert (found["messages"], found["matched"]) == (3, 2)
    assert sorted((h["message"], h["matches"]) for h in found["hits"]) == [(1, 20_000), (2, 19_999)]
    hay = conversation_search(log.path, "hay", limit=3)["hits"]
    assert {h["message"]: h["matches"] for h in hay} == {0: 1, 2: 1}  # k7's last value, once


@pytest.mark.xfail(
    strict=True,
    reason='a record is told a message by its first bytes ({"type":"message"...); a later second '
    '"type" (which json.loads and the log\'s reader keep) is not read, so the record takes a message '
    "index the log does not give it and every later index is one off",
)
def test_a_record_whose_type_is_written_twice_takes_the_index_the_log_gives_it(tmp_path: Path) -> None:
    log = SessionLog(tmp_path / "session.jsonl", format="openai")
    log.append(Conversation([{"role": "user", "content": "plain hay"}], format="openai"))
    records = [
        '{"type":"message","index":1,"data":[{"role":"user","content":"a note"}],"type":"note"}',
        '{"type":"message","index":1,"data":[{"role":"user","content":"the needle"}]}',
    ]
    with log.path.open("a", encoding="utf-8") as f:
        f.writelines(r + "\n" for r in records)
    assert [json.loads(r)["type"] for r in records] == ["note", "message"]
    messages = SessionLog(log.path).messages
    assert len(messages) == 2 and messages[1][0]["content"] == "the needle"
    found = conversation_search(log.path, "needle")
    assert (found["messages"], [h["message"] for h in found["hits"]]) == (2, [1])
