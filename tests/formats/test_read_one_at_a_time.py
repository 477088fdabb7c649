"""Lists and files are read one message at a time (the parsed JSON of the whole list is never
held): what comes out must be what reading them all at once gave, whatever the input's shape."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import agentcontext as ac

PLAIN = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
ANTHROPIC_TOOL = [
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {"path": "."}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}]},
]
NATIVE_TOOL = [{"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "ls", "arguments": "{}"}]}]


@pytest.mark.parametrize("make", [list, tuple, iter], ids=["list", "tuple", "iterator"])
def test_a_late_sign_of_the_format_rereads_the_earlier_messages_in_it(make):
    messages = PLAIN * 3 + ANTHROPIC_TOOL
    conv = ac.Conversation(make(messages))
    assert conv.format == "anthropic"
    assert conv.to_format("anthropic") == messages
    assert [m["role"] for m in conv.to_jsonl()][-2:] == ["assistant", "tool"]


def test_the_strongest_sign_wins_wherever_it_comes(tmp_path: Path):
    # Anthropic first, then a tool call written the native way: the whole list is the native format.
    messages = PLAIN + ANTHROPIC_TOOL[:1] + NATIVE_TOOL + [{"role": "tool", "tool_call_id": "c1", "content": "x"}]
    assert ac.detect_format(messages) == "jsonl"
    conv = ac.Conversation(messages)
    assert conv.format == "jsonl"
    path = tmp_path / "s.json"
    path.write_text(json.dumps(messages))
    from_file = ac.Conversation.from_file(path)
    assert from_file.format == "jsonl"
    assert from_file.to_format("jsonl") == conv.to_format("jsonl")
    lines = tmp_path / "s.jsonl"
    lines.write_text("".join(json.dumps(m) + "\n" for m in messages))
    assert ac.Conversation.from_file(lines).to_format("jsonl") == conv.to_format("jsonl")


def test_a_message_invalid_only_in_an_early_guess_is_not_an_error():
    # Plain messages guess OpenAI Chat; this one is invalid there (content blocks Chat does not
    # know, a role it refuses) but fine once the Anthropic tool call shows the format.
    odd = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}]}
    messages = [*PLAIN, ANTHROPIC_TOOL[0], odd]
    assert ac.Conversation(messages).format == "anthropic"


def test_a_message_that_cannot_be_converted_is_reported_before_one_that_cannot_be_read():
    bad_read = {"role": "alien", "content": "x"}
    bad_convert = {"role": "user", "content": {1, 2}}
    with pytest.raises(ac.errors.AgentContextError, match=r"message 3"):
        ac.Conversation([*PLAIN, bad_read, bad_convert])
    with pytest.raises(ac.errors.AgentContextError, match=r"message 2"):
        ac.Conversation([*PLAIN, bad_read, *PLAIN])


def test_the_list_is_read_as_it_was_when_passed():
    class Growing(list):
        """A list that grows while it is iterated (a hostile or buggy caller)."""

        def __iter__(self):
            for item in list.__iter__(self):
                if len(self) < 50:
                    self.append({"role": "user", "content": "more"})
                yield item

    conv = ac.Conversation(Growing(PLAIN * 2 + ANTHROPIC_TOOL))
    assert conv.format == "anthropic"


def test_the_allocator_option_is_set_only_while_the_core_loads_and_never_over_the_users():
    code = (
        "import os, agentcontext as ac\n"
        "before = os.environ.get('MIMALLOC_ARENA_EAGER_COMMIT')\n"
        "ac.count_tokens('x')\n"
        "print(before, os.environ.get('MIMALLOC_ARENA_EAGER_COMMIT'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "MIMALLOC_ARENA_EAGER_COMMIT"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "None"]
    env["MIMALLOC_ARENA_EAGER_COMMIT"] = "1"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "1"]


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"], ids=["plain", "bom"])
@pytest.mark.parametrize("newline", [b"\n", b"\r\n"], ids=["lf", "crlf"])
def test_files_read_through_a_buffer_keep_their_lines(tmp_path: Path, bom: bytes, newline: bytes):
    messages = PLAIN * 3 + ANTHROPIC_TOOL
    lines = tmp_path / "s.jsonl"
    lines.write_bytes(bom + newline + newline.join(json.dumps(m).encode() for m in messages) + newline)
    array = tmp_path / "s.json"
    array.write_bytes(bom + newline + json.dumps(messages, indent=1).encode().replace(b"\n", newline))
    for path in (lines, array):
        conv = ac.Conversation.from_file(path)
        assert conv.format == "anthropic"
        assert conv.to_format("anthropic") == messages
    # An invalid message is named by its line (JSON Lines: the blank first line counts).
    bad = [*messages[:4], {"role": "alien", "content": "x"}, *messages[4:]]
    lines.write_bytes(bom + newline + newline.join(json.dumps(m).encode() for m in bad) + newline)
    with pytest.raises(ac.errors.AgentContextError, match=r"line 6\b"):
        ac.Conversation.from_file(lines)
    # Broken JSON is named by its line too, wherever the format guess stood.
    array.write_bytes(bom + newline + json.dumps(messages, indent=1).encode().replace(b"\n", newline)[:-3])
    with pytest.raises(ac.errors.AgentContextError, match=r"not valid JSON"):
        ac.Conversation.from_file(array)


def test_a_file_is_read_as_it_was_when_opened_even_when_read_again(tmp_path: Path):
    # Many plain lines then a sign of the format: the reader starts over, reading the file again.
    messages = PLAIN * 500 + ANTHROPIC_TOOL
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in messages))
    conv = ac.Conversation.from_file(path)
    assert len(conv) == len(messages)
    assert conv.format == "anthropic"


def test_a_request_body_file_reads_its_system_like_the_system_argument(tmp_path: Path):
    user = [{"role": "user", "content": "hi"}]
    # A null system is no system: not an empty system message, and no format implied.
    null = tmp_path / "null.json"
    null.write_text(json.dumps({"system": None, "messages": user}))
    from_file = ac.Conversation.from_file(null)
    plain = ac.Conversation(user, system=None)
    assert (from_file.format, len(from_file), from_file.tokens) == (plain.format, len(plain), plain.tokens)
    # An integer out of the 64-bit range in the system is refused, as in a message or the argument
    # (it was read as a float, rounded).
    blocks = [{"type": "text", "text": "s", "meta": 2**70}]
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps({"system": blocks, "messages": user}))
    with pytest.raises(ac.errors.AgentContextError, match="64-bit range"):
        ac.Conversation.from_file(huge)
    with pytest.raises(ac.errors.AgentContextError, match="64-bit range"):
        ac.Conversation(user, system=blocks)


@pytest.mark.parametrize("make", [list, tuple, iter, lambda b: (x for x in b)], ids=["list", "tuple", "iter", "gen"])
def test_system_may_be_any_iterable_of_blocks(make):
    blocks = [{"type": "text", "text": "You are terse."}, {"type": "text", "text": "Cite files."}]
    messages = [{"role": "user", "content": "hi"}]
    want = ac.Conversation(messages, system=blocks)
    got = ac.Conversation(messages, system=make(blocks))
    assert got.to_format("anthropic") == want.to_format("anthropic")
    assert got.tokens == want.tokens
    assert ac.convert(messages, to="anthropic", system=make(blocks)) == ac.convert(
        messages, to="anthropic", system=blocks
    )
    assert ac.trim_messages(messages, 1000, system=make(blocks)) == ac.trim_messages(messages, 1000, system=blocks)


def test_an_exception_in_a_system_generator_reaches_the_caller():
    def blocks():
        yield {"type": "text", "text": "a"}
        raise KeyError("from the generator")

    with pytest.raises(KeyError, match="from the generator"):
        ac.Conversation([{"role": "user", "content": "hi"}], system=blocks())
