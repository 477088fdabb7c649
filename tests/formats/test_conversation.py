"""The Rust-owned Conversation: incremental appends, exports, repr, and use from many threads."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import agentcontext as ac
from tests import support


def test_extend_counts_only_new_messages_and_keeps_totals() -> None:
    session = support.synthetic_session(400, seed=2)
    conv = ac.Conversation(format="openai")
    for start in range(0, len(session), 37):
        conv.extend(session[start : start + 37])
    whole = ac.Conversation(session)
    assert conv.message_tokens() == whole.message_tokens()
    assert conv.stats() == whole.stats()
    assert conv.to_openai() == session


def test_extend_accepts_any_iterable() -> None:
    conv = ac.Conversation()
    conv.extend(m for m in [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    conv.extend(({"role": "user", "content": "c"},))
    assert len(conv) == 3


def test_getitem_and_repr() -> None:
    conv = ac.Conversation([{"role": "user", "content": "hi"}])
    assert conv[0] == {"role": "user", "content": "hi"}
    assert repr(conv).startswith("Conversation(1 messages, ")
    assert conv.format == "openai"
    assert conv.encoding == "o200k_base"


def test_to_format_by_name() -> None:
    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    conv = ac.Conversation(chat)
    assert conv.to_format("openai") == chat
    assert conv.to_format("anthropic") == chat  # system inline as the first element
    assert conv.to_format("auto") == chat


def test_anthropic_system_parameter() -> None:
    conv = ac.Conversation(
        [{"role": "user", "content": "hi"}],
        system=[{"type": "text", "text": "rules", "cache_control": {"type": "ephemeral"}}],
    )
    assert conv.format == "anthropic"
    assert conv.to_anthropic_params() == {
        "system": [{"type": "text", "text": "rules", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "hi"}],
    }
    assert conv.tokens_by_role()["system"] > 0


def test_many_threads_append_and_count_one_conversation() -> None:
    conv = ac.Conversation(format="openai")
    session = support.synthetic_session(800, seed=4)
    # Each worker appends whole turns (user message through its last tool result) so pairs stay intact.
    turns: list[list[dict[str, Any]]] = []
    for m in session:
        if m["role"] == "user" or not turns:
            turns.append([])
        turns[-1].append(m)
    seen_totals: list[int] = []
    lock = threading.Lock()

    def work(turn: list[dict[str, Any]]) -> None:
        conv.extend(turn)
        total = conv.tokens
        stats = conv.stats()
        with lock:
            seen_totals.append(total)
        assert sum(stats["by_role"].values()) == stats["tokens"]

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(work, turns))
    reference = ac.Conversation(session)
    assert len(conv) == len(session)
    assert conv.tokens == reference.tokens
    assert conv.stats()["by_tool"] == reference.stats()["by_tool"]
    assert sorted(conv.message_tokens()) == sorted(reference.message_tokens())
    assert max(seen_totals) == reference.tokens
