"""The measure helpers and budgets as a new user met them: each test failed before its fix
(session 46): a float budget was truncated (0.5 became 0 tokens), bad helper arguments were bare
TypeError/AttributeError, ``kinds=[]`` made a check that could not fail, and the helpers' own
docstring examples named a probe kind that does not exist."""

from __future__ import annotations

import ast
import re
from typing import Any

import pytest

import agentcontext as ac
from agentcontext import errors
from agentcontext.compaction import parse_budget
from agentcontext.measure import pytest_plugin, testing
from agentcontext.measure.testing import assert_cache_stable, assert_retains
from tests import support


def small() -> ac.Conversation:
    return ac.Conversation.from_file(support.ROOT / "examples" / "session.jsonl").slice(0, 40)


# -- budgets: a float was truncated to an int, so 0.5 became a budget of 0 tokens ---------------


@pytest.mark.parametrize("share", [0.5, 0.25])
def test_a_fractional_budget_says_to_write_a_share(share: float) -> None:
    with pytest.raises(
        errors.OptionError, match=rf"budget {share} is not a whole number of tokens.*'{share * 100:g}%'"
    ):
        parse_budget(share, 1000)
    with pytest.raises(errors.OptionError, match=rf"budget {share} is not a whole number"):
        ac.Compactor("openharness").compact(small(), budget=share)


@pytest.mark.parametrize("bad", [8000.9, -0.5, float("nan"), float("inf")])
def test_a_budget_that_is_not_a_whole_number_is_refused(bad: float) -> None:
    with pytest.raises(errors.OptionError, match="budget must be a whole number of tokens"):
        parse_budget(bad, 1000)


def test_a_whole_float_budget_is_its_tokens_and_a_share_over_100_names_the_range() -> None:
    assert parse_budget(8000.0, 1000) == 8000
    with pytest.raises(errors.OptionError, match=r"a percentage in \(0, 100\], got '150%'"):
        parse_budget("150%", 1000)


# -- assertion helpers: bare TypeError/AttributeError, and a kinds=[] check that could not fail ----


def test_assert_retains_and_assert_cache_stable_type_their_arguments() -> None:
    conv = small()
    result = ac.Compactor("openharness").compact(conv, budget="50%")
    with pytest.raises(errors.ArgumentTypeError, match="min_share must be a number from 0 to 1, got str"):
        assert_retains(result, min_share="0.9")  # type: ignore[arg-type]
    with pytest.raises(errors.ArgumentTypeError, match=r"facts must be a string, a metrics\.Probe or an iterable"):
        assert_retains(result, 5)  # type: ignore[arg-type]
    with pytest.raises(errors.ArgumentTypeError, match="min_share must be a number from 0 to 1, got str"):
        assert_cache_stable(conv, "openharness", "50%", min_share="0.9")  # type: ignore[arg-type]
    with pytest.raises(errors.OptionError, match="min_share must be between 0 and 1, got 2"):
        assert_cache_stable(conv, "openharness", "50%", min_share=2)
    with pytest.raises(errors.ArgumentTypeError, match="expected a Conversation, got list"):
        assert_cache_stable([], "openharness", "50%", min_share=0.5)  # type: ignore[arg-type]


def test_assert_retains_refuses_an_empty_kinds_list() -> None:
    result = ac.Compactor("openharness").compact(small(), budget=200)
    with pytest.raises(errors.OptionError, match="kinds is empty"):
        assert_retains(result, kinds=[], min_share=1.0)


@pytest.mark.parametrize("module", [testing, pytest_plugin])
def test_the_kinds_in_the_helpers_docstring_examples_exist(module: Any) -> None:
    """The examples said ``kinds=["path", "error"]``, an OptionError: there is no kind "error"."""
    examples = re.findall(r"kinds=(\[[^\]]*\])", module.__doc__)
    assert examples
    result = ac.Compactor("openharness").compact(small(), budget="50%")
    for kinds in examples:
        assert_retains(result, kinds=ast.literal_eval(kinds), min_share=0.0)


# -- Calibration.load / save: a bare FileNotFoundError, save's naming a temporary file -------------


def test_calibration_files_that_cannot_be_read_or_written_are_typed_errors_naming_the_file(tmp_path: Any) -> None:
    missing = tmp_path / "no-such-dir" / "calibration.json"
    with pytest.raises(errors.TranscriptReadError, match=r"calibration\.json: cannot read the calibration: ") as read:
        ac.Calibration.load(missing)
    assert isinstance(read.value, OSError) and read.value.path == str(missing)
    with pytest.raises(errors.TranscriptReadError, match=r"calibration\.json: cannot write the calibration: ") as wrote:
        ac.Calibration().save(missing)
    assert wrote.value.path == str(missing) and ".tmp" not in str(wrote.value)
    ac.Calibration().save(tmp_path / "c.json")
    assert ac.Calibration.load(tmp_path / "c.json").to_dict() == ac.Calibration().to_dict()


# -- replay_policy: "25%" was a bare TypeError, 0 a policy with a 1-token window -------------------


def test_replay_policy_takes_tokens_and_says_how_to_pass_a_share() -> None:
    from agentcontext.measure.metrics import replay_policy

    policy = ac.PRESETS["openharness"].compaction
    with pytest.raises(errors.ArgumentTypeError, match=r"replay_policy must be tokens .* parse_budget\(budget"):
        replay_policy(policy, "25%")  # type: ignore[arg-type]
    for bad in (0, -5):
        with pytest.raises(errors.OptionError, match="budget must be a positive integer"):
            replay_policy(policy, bad)
    assert replay_policy(policy, 6_000).context_window > 6_000
