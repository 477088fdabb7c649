"""The Harness protocol: the generic ladder changes a rung only through a harness's hooks, a
custom harness plugs in through ``CompactionPolicy(harness=...)``, and the generic compaction
modules import no harness module (not even inside a function)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from agentcontext import compaction
from agentcontext.compaction import PRESETS, CompactionPolicy, Compactor, Harness
from agentcontext.compaction.harnesses.claude_code import ClaudeCode
from agentcontext.compaction.harnesses.openclaw import OpenClaw
from agentcontext.compaction.state import LadderState
from agentcontext.errors import OptionError
from tests.compaction.test_harnesses_openclaw_letta import session


def _policy(conv: Any, harness: Harness) -> CompactionPolicy:
    return CompactionPolicy(
        "custom", context_window=conv.tokens, reserved_output=0, safety_margin=0, trigger=0.9, target=0.5,
        harness=harness,
    )  # fmt: skip


@dataclasses.dataclass(frozen=True)
class _Gated(Harness):
    """Clearing always waits; the raw recent part starts at the last message."""

    def clear_gate(self, run: LadderState) -> str | None:
        return "the custom gate is closed"

    def raw_start(self, run: LadderState, start: int) -> int:
        return len(run.original) - 1


def test_a_custom_harness_changes_rungs_through_its_hooks() -> None:
    conv = session(20, result_chars=6_000)
    plain = Compactor(_policy(conv, Harness())).compact(conv)
    gated = Compactor(_policy(conv, _Gated())).compact(conv)
    assert plain.stages[0].stage == "clear" and "deferred" not in plain.stages[0].detail
    assert gated.stages[0].detail["deferred"] == "the custom gate is closed"
    summarize = next(s for s in gated.stages if s.stage == "summarize")
    assert summarize.detail["kept_raw"] == 1  # the hook's raw start, not the policy's 12 messages


def test_harness_options_scale_and_follow_a_budget() -> None:
    policy = PRESETS["claude-code"].compaction
    assert policy.harness == ClaudeCode(trigger_margin=13_000)
    assert policy.scaled(2.0).harness == ClaudeCode(trigger_margin=6_500)
    assert policy.for_budget(50_000).harness == ClaudeCode(trigger_margin=0)
    assert (
        PRESETS["openharness"].compaction.harness == Harness()
        and PRESETS["openharness"].compaction.scaled(2.0).harness == Harness()
    )
    with pytest.raises(OptionError, match="MAX_HISTORY_SHARE"):
        PRESETS["openclaw"].compaction.from_env({"AGENTCONTEXT_COMPACT__MAX_HISTORY_SHARE": "half"})
    assert PRESETS["openclaw"].compaction.from_env(
        {"AGENTCONTEXT_COMPACT__SOFT_TRIM_CHARS": "none"}
    ).harness == OpenClaw(soft_trim_chars=None)


def _imports(path: Path) -> list[str]:
    """Every module ``path`` imports, at module level or inside a function."""
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    return out


def test_the_generic_modules_import_no_harness() -> None:
    root = Path(compaction.__file__).parent
    generic = [p for p in root.glob("*.py") if p.name not in ("__init__.py", "presets.py")]
    assert {p.stem for p in generic} >= {"policy", "harness", "state", "ladder", "compactor", "summaries", "resort"}
    for path in generic:
        wired = [m for m in _imports(path) if ".harnesses" in m or m.endswith("compaction.presets")]
        assert wired == [], path.name
