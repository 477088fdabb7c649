"""Conversation.replace: new messages in place of a run, as a rebuild through the format reads them."""

from __future__ import annotations

from typing import Any

import pytest

import agentcontext as ac
from agentcontext.errors import InvalidMessageError, MessageIndexError, OptionError
from tests import support

FORMATS = ["openai", "responses", "anthropic", "jsonl"]

NEW: list[dict[str, Any]] = [
    {"role": "user", "content": "[agentcontext: earlier conversation compacted: 3 earlier messages]\n\nnotes"},
    {
        "role": "assistant",
        "content": "Reading.",
        "tool_calls": [{"id": "r1", "type": "function", "function": {"name": "read", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "r1", "content": "x = 1"},
]


def _rebuilt(messages: list[dict[str, Any]], like: ac.Conversation) -> ac.Conversation:
    """What the compaction ladder wrote before ``replace``: a read, a write and a read again."""
    f, e = like.format, like.encoding
    return ac.Conversation(ac.Conversation(messages, format="jsonl").to_format(f), format=f, encoding=e)


def _in(fmt: str, encoding: str = "o200k_base") -> ac.Conversation:
    session = support.synthetic_session(60, seed=5)
    written = ac.Conversation(session, format="openai").to_format(fmt)
    return ac.Conversation(written, format=fmt, encoding=encoding)


@pytest.mark.parametrize("fmt", FORMATS)
def test_equals_the_rebuild_it_replaces_in_every_format(fmt: str) -> None:
    conv = _in(fmt, "cl100k_base")
    n = len(conv)
    for lo, hi in [(1, 1), (0, n), (3, 9), (n, n), (10, n)]:  # 0, 0 would put a user turn before the system prompt
        got = conv.replace(lo, hi, NEW)
        want = ac.Conversation.concat([conv.slice(0, lo), _rebuilt(NEW, conv), conv.slice(hi)])
        assert got.to_format(fmt) == want.to_format(fmt), (fmt, lo, hi)
        assert got.message_tokens() == want.message_tokens()
        assert (got.tokens, got.format, got.encoding) == (want.tokens, fmt, "cl100k_base")
        assert got.stats() == want.stats()
    assert len(conv) == n, "the conversation is not changed"


@pytest.mark.parametrize("fmt", FORMATS)
def test_replacing_everything_is_a_rebuild_like_the_conversation(fmt: str) -> None:
    conv = _in(fmt)
    for stop in (None, len(conv)):
        whole = conv.replace(0, stop, NEW)
        assert whole.to_format(fmt) == _rebuilt(NEW, conv).to_format(fmt)
        assert whole.tokens == _rebuilt(NEW, conv).tokens


def test_messages_in_the_conversations_own_format_are_read_as_given() -> None:
    conv = _in("anthropic")
    own = [{"role": "user", "content": [{"type": "text", "text": "Go on."}]}]
    got = conv.replace(1, 2, own, format="anthropic")
    assert got.to_format("anthropic")[1] == own[0]
    assert got.to_format("anthropic")[2:] == conv.to_format("anthropic")[2:]
    assert got.message_tokens()[2:] == conv.message_tokens()[2:]


def test_pins_of_untouched_messages_move_with_them() -> None:
    conv = _in("openai")
    for i in (0, 4, 8):
        conv.pin(i)
    got = conv.replace(2, 6, NEW[:1])
    assert got.pinned == [0, 5]
    assert conv.pinned == [0, 4, 8]


def test_a_bad_range_or_message_is_refused() -> None:
    conv = _in("openai")
    with pytest.raises(MessageIndexError):
        conv.replace(0, len(conv) + 1, NEW)
    with pytest.raises(OptionError, match="start"):
        conv.replace(5, 4, NEW)
    with pytest.raises(InvalidMessageError):
        conv.replace(0, 1, [{"role": 7}])
    with pytest.raises(OptionError, match="format"):
        conv.replace(0, 1, NEW, format="yaml")  # type: ignore[arg-type]
