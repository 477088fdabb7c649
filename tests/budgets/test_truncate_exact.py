"""truncate(..., exact=True): the largest cut whose whole output fits a token count exactly."""

from __future__ import annotations

import random

import pytest

from agentcontext import count_tokens, truncate
from agentcontext.compaction.harnesses.alyx import largest_head
from agentcontext.errors import BudgetError, OptionError
from tests import support


def _texts() -> list[str]:
    texts = [m["content"] for m in support.synthetic_session(300, seed=3) if isinstance(m.get("content"), str)]
    return [*[t for t in texts if len(t) > 200][:40], "short", "", "ünïcødé 漢字\n" * 300]


def _search(text: str, budget: int, encoding: str, recall_id: str | None) -> str | None:
    """The reference: a binary search over the room given to a plain cut for the largest whose
    whole output fits (the Python search ``exact=True`` replaced)."""

    def cut(room: int) -> str | None:
        try:
            return truncate(text, room, unit="tokens", strategy="head", encoding=encoding,  # type: ignore[arg-type]
                            recall_id=recall_id, not_stored=recall_id is None).text  # fmt: skip
        except BudgetError:
            return None

    best = cut(budget)
    if best is None:
        return None
    lo, hi = budget, 2 * budget + 64
    while lo < hi:
        mid = (lo + hi + 1) // 2
        candidate = cut(mid)
        if candidate is not None and count_tokens(candidate, encoding=encoding) <= budget:  # type: ignore[arg-type]
            lo, best = mid, candidate
        else:
            hi = mid - 1
    return best


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_equals_the_python_search_it_replaces(encoding: str) -> None:
    rng = random.Random(4)
    for text in _texts():
        budget = rng.choice([8, 30, 100, 400, 2000])
        recall = rng.choice([None, "call_7"])
        want = _search(text, budget, encoding, recall)
        try:
            got = truncate(
                text, budget, unit="tokens", strategy="head", encoding=encoding,  # type: ignore[arg-type]
                recall_id=recall, not_stored=recall is None, exact=True,
            ).text  # fmt: skip
        except BudgetError:
            got = None
        assert got == want
        # Alyx's result budget cuts through it.
        assert largest_head(text, budget, encoding=encoding, recall_id=recall) == want  # type: ignore[arg-type]
        if got is not None:
            assert count_tokens(got, encoding=encoding) <= budget  # type: ignore[arg-type]


def test_keeps_more_than_a_plain_cut() -> None:
    text = "\n".join(f"line {i} of the output" for i in range(400))
    plain = truncate(text, 300, unit="tokens", strategy="head")
    exact = truncate(text, 300, unit="tokens", strategy="head", exact=True)
    assert exact.head_chars > plain.head_chars
    assert count_tokens(exact.text) <= 300
    assert exact.truncated and exact.kept == "head"


def test_needs_a_token_unit_and_room_for_the_marker() -> None:
    with pytest.raises(OptionError, match="exact"):
        truncate("x" * 100, 10, unit="chars", exact=True)
    with pytest.raises(BudgetError):
        truncate("word " * 1000, 2, unit="tokens", exact=True)
