"""``Budget.for_model`` takes its share of the model's input limit where the API limits the
input apart from the window: GPT-5's window is 400,000 tokens, but its input may take at most
272,000; three quarters of the window (300,000) gave every adapter a budget the API refuses."""

from __future__ import annotations

import pytest

import agentcontext as ac
from agentcontext.budgets import ModelWindow
from agentcontext.budgets.windows import model_window, register_model


@pytest.mark.parametrize("model", ["gpt-5", "gpt-5-mini", "openai/gpt-5-2025-08-07", "gpt-5-codex"])
def test_a_gpt_5_budget_is_a_share_of_its_input_limit(model: str) -> None:
    budget = ac.Budget.for_model(model)
    assert budget.max_tokens == 204_000
    assert ac.Budget.for_model(model, fraction=1.0).max_tokens == 272_000


def test_a_window_without_an_input_limit_is_read_as_before() -> None:
    assert ac.Budget.for_model("gpt-4o").max_tokens == 96_000
    assert ac.Budget.for_model("gpt-5-chat").max_tokens == 96_000
    assert model_window("gpt-4o").max_input_tokens is None


def test_an_input_limit_is_checked_and_registered() -> None:
    with pytest.raises(ac.OptionError, match="over the context window"):
        ModelWindow(100_000, max_input_tokens=200_000)
    with pytest.raises(ac.OptionError):
        ModelWindow(100_000, max_input_tokens=0)
    entry = register_model("h45-local-model", 100_000, max_input_tokens=60_000)
    try:
        assert ac.Budget.for_model("h45-local-model", fraction=0.5).max_tokens == 30_000
        assert ac.Budget.for_model("gpt-5", windows={"gpt-5": entry}).max_tokens == 45_000
    finally:
        from agentcontext.budgets.windows import MODEL_WINDOWS

        MODEL_WINDOWS.pop("h45-local-model", None)
