"""The model window table: names as LiteLLM users write them, the override, the typed error for an
unknown model, the model's counter, and ``Budget.for_model``."""

from __future__ import annotations

import pytest

import agentcontext as ac
from agentcontext.errors import ArgumentTypeError, OptionError, UnknownModelError
from agentcontext.integrations import Budget
from agentcontext.providers import (
    MODEL_WINDOWS,
    ModelWindow,
    context_window,
    encoding_for_model,
    model_window,
    register_model,
)


@pytest.mark.parametrize(
    ("name", "window", "output"),
    [
        ("gpt-4.1", 1_047_576, 32_768),
        ("gpt-4.1-2025-04-14", 1_047_576, 32_768),
        ("openai/gpt-4.1-mini", 1_047_576, 32_768),
        ("azure/gpt-4o", 128_000, 16_384),
        ("gpt-4o-2024-05-13", 128_000, 4_096),
        ("gpt-5-2025-08-07", 400_000, 128_000),
        ("gpt-5-chat-latest", 128_000, 16_384),
        ("o3-mini", 200_000, 100_000),
        ("o1-mini-2024-09-12", 128_000, 65_536),
        ("gpt-4-0613", 8_192, 8_192),
        ("gpt-3.5-turbo-0125", 16_385, 4_096),
        ("claude-sonnet-4-5-20250929", 200_000, 64_000),
        ("anthropic/claude-opus-4-1-20250805", 200_000, 32_000),
        ("openrouter/anthropic/claude-sonnet-4.5", 200_000, 64_000),
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", 200_000, 64_000),
        ("vertex_ai/claude-3-5-sonnet@20240620", 200_000, 8_192),
        ("Claude-3-Haiku-20240307", 200_000, 4_096),
        ("gemini/gemini-2.5-pro", 1_048_576, 65_536),
        ("claude-opus-4-6", 200_000, None),
    ],
)
def test_names_as_written_by_users_find_their_entry(name: str, window: int, output: int | None) -> None:
    entry = model_window(name)
    assert (entry.context_window, entry.max_output_tokens) == (window, output)
    assert context_window(name) == window


def test_a_prefix_matches_only_at_a_boundary_and_unknown_models_name_the_closest() -> None:
    # gpt-4.5 is not gpt-4 (8K): an unknown model is an error, never a guess.
    with pytest.raises(UnknownModelError) as err:
        model_window("gpt-4.5-preview")
    assert err.value.model == "gpt-4.5-preview"
    assert "gpt-4" in err.value.close_matches
    assert "closest known" in str(err.value) and "register_model" in str(err.value)
    assert isinstance(err.value, OptionError)
    with pytest.raises(UnknownModelError) as err:
        context_window("clade-sonet-4-5")
    assert "claude-sonnet-4-5" in err.value.close_matches
    with pytest.raises(UnknownModelError) as err:
        encoding_for_model("zz")
    assert err.value.close_matches == []
    with pytest.raises(ArgumentTypeError):
        model_window(None)  # type: ignore[arg-type]


def test_the_model_picks_the_counter() -> None:
    assert encoding_for_model("gpt-4.1") == "o200k_base"
    assert encoding_for_model("openai/o4-mini") == "o200k_base"
    assert encoding_for_model("gpt-5-mini") == "o200k_base"
    assert encoding_for_model("gpt-4-turbo-2024-04-09") == "cl100k_base"
    assert encoding_for_model("gpt-3.5-turbo") == "cl100k_base"
    assert encoding_for_model("claude-haiku-4-5") == "heuristic"
    assert encoding_for_model("gemini-2.0-flash-001") == "heuristic"


def test_windows_passed_in_win_over_the_table_and_register_model_extends_it() -> None:
    assert context_window("gpt-4.1", windows={"gpt-4.1": 64_000}) == 64_000
    assert context_window("my-local-model-q4", windows={"my-local-model": 32_768}) == 32_768
    assert context_window("gpt-4o", 50_000) == 50_000
    entry = ModelWindow(100_000, 8_000, "cl100k_base")
    assert model_window("org/mine-7b", windows={"mine": entry}) is entry
    with pytest.raises(ArgumentTypeError):
        model_window("mine", windows={"mine": "big"})  # type: ignore[dict-item]
    with pytest.raises(OptionError):
        ModelWindow(0)
    with pytest.raises(OptionError):
        ModelWindow(1_000, encoding="gpt2")  # type: ignore[arg-type]
    try:
        register_model("Acme/Local-70B", 65_536, max_output_tokens=4_096, encoding="o200k_base")
        assert model_window("local-70b-instruct") == ModelWindow(65_536, 4_096, "o200k_base")
    finally:
        del MODEL_WINDOWS["local-70b"]
    with pytest.raises(UnknownModelError):
        model_window("local-70b")


def test_budget_for_model_takes_the_window_share_and_the_counter() -> None:
    b = Budget.for_model("gpt-4.1-2025-04-14")
    assert (b.max_tokens, b.encoding, b.model) == (int(1_047_576 * 0.75), "o200k_base", "gpt-4.1-2025-04-14")
    c = Budget.for_model("anthropic/claude-sonnet-4-5", fraction=0.5, reserved_output=8_000, recent_tools=1)
    assert (c.max_tokens, c.encoding, c.reserved_output, c.recent_tools) == (100_000, "heuristic", 8_000, 1)
    assert Budget.for_model("claude-sonnet-4-5", encoding="o200k_base").encoding == "o200k_base"
    assert Budget.for_model("tiny", windows={"tiny": 1_000}, fraction=1).max_tokens == 1_000
    assert ac.Budget is Budget
    with pytest.raises(OptionError):
        Budget.for_model("gpt-4.1", fraction=1.5)
    with pytest.raises(OptionError):
        Budget.for_model("gpt-4.1", fraction=0)
    with pytest.raises(UnknownModelError):
        Budget.for_model("gpt-4.5-preview")


def test_a_provider_takes_its_window_from_the_same_table() -> None:
    from agentcontext.providers import OpenAIChatProvider

    assert OpenAIChatProvider("openai/gpt-4.1", client=object()).context_window == 1_047_576
    with pytest.raises(UnknownModelError):
        OpenAIChatProvider("my-local-model", client=object())


def test_a_compaction_policy_takes_the_models_window_and_counter() -> None:
    base = ac.CompactionPolicy()
    policy = base.for_model("openai/gpt-4.1-mini")
    assert (policy.context_window, policy.encoding, policy.reserved_output) == (1_047_576, "o200k_base", 8_192)
    small = ac.CompactionPolicy(reserved_output=20_000).for_model("claude-3-haiku-20240307")
    assert (small.context_window, small.encoding, small.reserved_output) == (200_000, "heuristic", 4_096)
    assert base.for_model("local", windows={"local": 32_000}).context_window == 32_000
    with pytest.raises(UnknownModelError):
        base.for_model("gpt-4.5-preview")
