"""The adapters' ``Budget`` refuses a flag that is not True or False, and a model that is not a
name, at construction (a truthy string was taken as True before)."""

from __future__ import annotations

from typing import Any

import pytest

from agentcontext.errors import ArgumentTypeError
from agentcontext.integrations._fit import Budget


@pytest.mark.parametrize("field", ["clear", "clear_tool_inputs"])
@pytest.mark.parametrize("value", ["x", "False", 1, 0, None])
def test_a_flag_must_be_true_or_false(field: str, value: Any) -> None:
    with pytest.raises(ArgumentTypeError, match=f"{field} must be True or False"):
        Budget(1_000, **{field: value})


def test_flags_and_a_model_name_are_kept() -> None:
    budget = Budget(1_000, clear=False, clear_tool_inputs=True, model="gpt-4.1")
    assert (budget.clear, budget.clear_tool_inputs, budget.model) == (False, True, "gpt-4.1")
    with pytest.raises(ArgumentTypeError, match="model must be a model name"):
        Budget(1_000, model=5)  # type: ignore[arg-type]
