"""Defects found following up h47-attack (h47-follow), each with the input that showed it."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from typing import Any

import pytest

import agentcontext as ac


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((100,), {"recent_tool": 1}, "unknown option 'recent_tool' \\(did you mean recent_tools\\?\\)"),
        ((100,), {"colour": "red"}, "unknown option 'colour': it takes max_tokens, encoding, clear"),
        ((), {}, "Budget needs max_tokens"),
        ((100,), {"max_tokens": 5}, "Budget got max_tokens twice"),
        (tuple(range(1, 12)), {}, "at most 10 positional arguments, got 11"),
    ],
)
def test_budget_names_a_wrong_call(args: tuple[Any, ...], kwargs: dict[str, Any], message: str) -> None:
    """``Budget(100, recent_tool=1)`` was Python's bare ``TypeError`` from the dataclass (outside
    AgentContextError), where ``Budget.for_model`` names the closest option."""
    with pytest.raises(ac.ArgumentTypeError, match=message):
        ac.Budget(*args, **kwargs)


def test_budget_stays_a_dataclass() -> None:
    budget = ac.Budget(100, recent_tools=1)
    assert ac.Budget(max_tokens=100, recent_tools=1) == budget
    assert pickle.loads(pickle.dumps(budget)) == budget
    assert copy.copy(budget) == budget and copy.deepcopy(budget) == budget
    assert dataclasses.replace(budget, recent_tools=2).recent_tools == 2
    with pytest.raises(ac.ArgumentTypeError, match="did you mean recent_tools"):
        dataclasses.replace(budget, recent_tool=2)
    assert list(inspect.signature(ac.Budget).parameters)[:2] == ["max_tokens", "encoding"]

