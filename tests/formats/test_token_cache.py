"""The token-count memo: frameworks pass the whole list on every call, so counts are kept across
calls. Counts must stay exact, the memo bounded and reported, and threads must share it safely."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

import agentcontext as ac
from tests import support


@pytest.fixture(autouse=True)
def _fresh_memo() -> Iterator[None]:
    default = ac.token_cache_info()["capacity"]
    ac.token_cache_clear()
    yield
    ac.token_cache_clear(capacity=default)


def _uncached(messages: list[dict[str, Any]], budget: int, **kw: Any) -> Any:
    ac.token_cache_clear(capacity=0)
    try:
        return ac.trim_messages(messages, budget, **kw)
    finally:
        ac.token_cache_clear(capacity=131_072)


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base", "heuristic"])
def test_counts_are_the_same_with_and_without_the_memo(encoding: str) -> None:
    session = support.synthetic_session(400)
    budget = ac.Conversation(session, encoding=encoding).tokens // 2
    expected = _uncached(session, budget, encoding=encoding)
    first = ac.trim_messages(session, budget, encoding=encoding)
    again = ac.trim_messages(session, budget, encoding=encoding)
    assert first == expected and again == expected
    # The general path (list contents) counts through the same memo.
    as_parts = [
        {**m, "content": [{"type": "text", "text": m["content"]}]} if m["role"] == "user" else m for m in session
    ]
    assert (
        ac.Conversation(as_parts, encoding=encoding).message_tokens()
        == ac.Conversation(session, encoding=encoding).message_tokens()
    )


def test_a_list_that_grew_by_one_message_costs_one_count() -> None:
    session = support.synthetic_session(300)
    budget = ac.Conversation(session).tokens // 2
    ac.trim_messages(session, budget, clear=False)
    before = ac.token_cache_info()
    grown = [*session, {"role": "user", "content": "And now also update the changelog for the release notes."}]
    ac.trim_messages(grown, budget, clear=False)
    after = ac.token_cache_info()
    assert after["misses"] - before["misses"] == 1
    assert after["hits"] - before["hits"] >= len(session) // 2


def test_the_memo_stays_within_its_capacity_and_reports_it() -> None:
    ac.token_cache_clear(capacity=64)
    session = support.synthetic_session(600)
    budget = ac.Conversation(session).tokens // 3
    assert ac.trim_messages(session, budget) == _uncached(session, budget)
    ac.token_cache_clear(capacity=64)
    ac.trim_messages(session, budget)
    info = ac.token_cache_info()
    assert info["capacity"] == 64
    assert 0 < info["entries"] <= 64
    assert 0 < info["bytes"] < 64 * 1024
    ac.token_cache_clear()
    assert ac.token_cache_info()["entries"] == 0


def test_capacity_zero_turns_it_off() -> None:
    ac.token_cache_clear(capacity=0)
    ac.trim_messages(support.synthetic_session(50), 2_000)
    assert ac.token_cache_info()["entries"] == 0


@pytest.mark.parametrize("bad", [-1, 2**64, "10", 1.5])
def test_a_bad_capacity_is_refused_by_name(bad: Any) -> None:
    with pytest.raises(ac.OptionError, match="capacity"):
        ac.token_cache_clear(capacity=bad)


def test_threads_share_the_memo() -> None:
    session = support.synthetic_session(500)
    budget = ac.Conversation(session).tokens // 2
    expected = _uncached(session, budget)
    ac.token_cache_clear(capacity=256)  # small: threads evict each other's entries
    results: list[Any] = []
    errors: list[Exception] = []

    def work() -> None:
        try:
            for _ in range(3):
                results.append(ac.trim_messages(session, budget))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 12 and all(r == expected for r in results)
    assert ac.token_cache_info()["entries"] <= 256
