"""The message numbers of a session log search, fuzzed against a plain reference of how the log
(SessionLog) numbers its messages: only lines that are JSON objects of type ``message`` count, and
the last line without a line break is not read. Lines of records joined without a line break,
lines that are not UTF-8, notes, other records, blank lines, LF and CRLF line ends."""

from __future__ import annotations

import json
import random
from pathlib import Path

from agentcontext.memory.conversation import conversation_search
from agentcontext.sessions.log import SessionLog

HEADER = b'{"type":"session","version":1,"format":"openai"}'


def _record(index: int, text: str) -> bytes:
    record = {"type": "message", "index": index, "data": [{"role": "user", "content": text}]}
    return json.dumps(record, separators=(",", ":")).encode()


def _line(rng: random.Random, index: int, kinds: list[str]) -> bytes:
    kind, text = rng.choice(kinds), rng.choice(["needle", "other", "needle other"])
    if kind == "joined":
        return _record(index, text) + rng.choice([b"", b" ", b" \t"]) + _record(index + 1, text)
    if kind == "not_utf8":
        record = _record(index, text)
        return record[:-5] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80"]) + record[-5:]
    if kind == "note":
        return _record(index, text) + b" note"
    if kind == "garbage":
        return b"garbage " + text.encode()
    if kind == "other":
        return b'{"type":"other","x":"' + text.encode() + b'"}'
    if kind == "blank":
        return b"   "
    if kind == "braces_in_text":
        return _record(index, text + ' }{"a" } {')
    if kind == "trailing_brace":
        return _record(index, text) + rng.choice([b" x}", b"}", b"\xc2\xa0}", b' {"a": 1}', b"\xc2\xa0", b"\x0b"])
    return _record(index, text)


def _reference(data: bytes) -> tuple[list[int], int]:
    """The numbers of the messages holding "needle", and how many messages the log has."""
    hits, count = [], 0
    for line in data.split(b"\n")[1:-1]:
        try:
            record = json.loads(line)
        except ValueError:  # not JSON, or not UTF-8
            continue
        if isinstance(record, dict) and record.get("type") == "message":
            if any("needle" in str(m.get("content", "")) for m in record["data"]):
                hits.append(count)
            count += 1
    return hits, count


KINDS = ["message", "joined", "not_utf8", "note", "garbage", "other", "blank", "braces_in_text"]


def _check(tmp_path: Path, kinds: list[str], seeds: range) -> list[str]:
    wrong = []
    for seed in seeds:
        rng = random.Random(seed)
        eol = rng.choice([b"\n", b"\r\n"])
        lines = [HEADER] + [_line(rng, i, kinds) for i in range(rng.randint(1, 8))]
        data = eol.join(lines) + (eol if rng.random() < 0.7 else b"")
        path = tmp_path / f"{seed}.jsonl"
        path.write_bytes(data)
        expected, count = _reference(data)
        assert len(SessionLog(path).messages) == count  # the reference is the log's numbering
        for query, regex in (("needle", False), ("ne+dle", True)):
            result = conversation_search(path, query, regex=regex, limit=100)
            got = sorted(h["message"] for h in result["hits"])
            if (got, result["messages"]) != (expected, count):
                wrong.append(f"{seed} {query}: {got} of {result['messages']}, expected {expected} of {count}")
    return wrong


def test_search_numbers_messages_as_the_log_does(tmp_path: Path) -> None:
    # A line that is not UTF-8 was read lossily by the search: numbered as a message (every later
    # message one more than the log's) and searched, where the log cannot read it.
    assert _check(tmp_path, KINDS, range(300)) == []


def test_a_record_with_a_trailing_note_ending_in_a_brace_is_numbered_as_the_log_does(tmp_path: Path) -> None:
    # A line that cannot match was numbered as a message when it ended with a brace; now only
    # when its first object ends where the line does (its braces counted outside strings, 64
    # bytes a step, no parse: see src/search/log/object.rs), as the log reads it.
    assert _check(tmp_path, [*KINDS, "trailing_brace"], range(100)) == []
