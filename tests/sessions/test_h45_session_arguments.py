"""SubagentPolicy flags and paths, and SnapshotStore.clear's control, are checked when given:
a string flag is truthy (fork="false" forked every child) and a list as control raised a bare
TypeError (an empty list was taken for no control)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcontext.errors import ArgumentTypeError, OptionError
from agentcontext.sessions.snapshots import SnapshotStore
from agentcontext.sessions.subagents import SubagentPolicy


@pytest.mark.parametrize("name", ["fork", "keep_workspace"])
@pytest.mark.parametrize("value", ["false", "no", 0, 1, None])
def test_subagent_policy_flags_are_true_or_false(name: str, value: object) -> None:
    with pytest.raises(ArgumentTypeError, match=f"{name} must be True or False"):
        SubagentPolicy(**{name: value})  # type: ignore[arg-type]


@pytest.mark.parametrize("log_dir", [5, "a\0b", b"logs"])
def test_subagent_policy_log_dir_is_a_path(log_dir: object) -> None:
    with pytest.raises(OptionError, match="log_dir"):
        SubagentPolicy(log_dir=log_dir)  # type: ignore[arg-type]


def test_subagent_policy_good_values(tmp_path: Path) -> None:
    policy = SubagentPolicy(fork=True, keep_workspace=True, log_dir=tmp_path)
    assert policy.fork is True and policy.log_dir == tmp_path


@pytest.mark.parametrize("control", [[1], [], "mode=plan", 5])
def test_snapshot_clear_control_must_be_a_mapping(tmp_path: Path, control: object) -> None:
    store = SnapshotStore(tmp_path / "s")
    with pytest.raises(OptionError, match="control must be a mapping"):
        store.clear(control=control)  # type: ignore[arg-type]
    assert store.current() is None  # nothing was written


def test_snapshot_clear_keeps_the_control_given(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "s")
    store.clear(control={"mode": "plan"})
    snap = store.current()
    assert snap is not None and snap.control == {"mode": "plan"} and snap.reason == "clear"
