"""The ``to_dict``/``to_json`` results of reports and results have exactly the keys of their
TypedDicts (``agentcontext.types``), nested ones too; ``Conversation._raw_start_*`` take one mode
each; ``agentcontext.compiler`` loads a submodule only when asked; ``Subagents`` needs no factory."""

from __future__ import annotations

import json
import subprocess
import sys
import typing
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import agentcontext as ac
from agentcontext import types as t
from agentcontext.compaction.harnesses.claude_code import drop_oldest_rounds
from agentcontext.compaction.pricing import EVAL_PRICES, clear_rung, requests_cost, resolve_prices
from agentcontext.compiler import WorkingSet, compile_request
from agentcontext.errors import OptionError
from agentcontext.measure.metrics import evaluate, summarize_evaluations
from agentcontext.memory.flush import FlushReport
from agentcontext.providers import Completion, Provider, Usage
from agentcontext.sessions.log import SessionLog
from agentcontext.sessions.permissions import PendingCall, PermissionRequest, Permissions, Rule
from agentcontext.sessions.snapshots import Snapshot, SnapshotStore
from agentcontext.sessions.state import capture
from agentcontext.sessions.subagents import Subagents

CHAT: list[dict[str, Any]] = [{"role": "system", "content": "Be terse."}]
for _k in range(12):
    CHAT += [
        {"role": "user", "content": f"Read part {_k} of src/app_{_k}.py."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": f"c{_k}", "type": "function", "function": {"name": "read", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": f"c{_k}", "content": f"line {_k}\n" * 200},
    ]
CHAT.append({"role": "assistant", "content": "Done."})


def assert_shape(value: Any, td: Any) -> None:
    """``value`` is a dict with the required keys of ``td``, and no key ``td`` does not name;
    the values that are TypedDicts (alone, in a list, in a dict, or optional) are checked too."""
    assert isinstance(value, dict), td.__name__
    hints = typing.get_type_hints(td)
    assert td.__required_keys__ <= set(value) <= set(hints), (td.__name__, sorted(value))
    for key, hint in hints.items():
        if key in value and value[key] is not None:
            _check_nested(value[key], hint)


def _check_nested(value: Any, hint: Any) -> None:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.is_typeddict(hint):
        assert_shape(value, hint)
    elif typing.get_origin(hint) is list and args and typing.is_typeddict(args[0]):
        for item in value:
            assert_shape(item, args[0])
    elif typing.get_origin(hint) is dict and len(args) == 2:
        for item in value.values():
            if item is not None:
                _check_nested(item, args[1])
    elif len(args) == 1 and typing.is_typeddict(args[0]):  # X | None
        assert_shape(value, args[0])


class Instant(Provider):
    """Answers every call at once with ``ok``."""

    format = "openai"
    name = "instant"

    def _request(self, conversation: ac.Conversation, max_output_tokens: int, system: str | None) -> dict[str, Any]:
        return {"model": self.model, "max_tokens": max_output_tokens}

    def _send(self, body: dict[str, Any]) -> Any:
        return SimpleNamespace(http_response=SimpleNamespace(content=b'{"text": "ok"}'))

    def _completion(self, data: dict[str, Any]) -> Completion:
        message = {"role": "assistant", "content": data["text"]}
        return Completion("openai", self.model, [message], data["text"], [], Usage(3, 1), "stop", data)


def test_a_compaction_result_and_its_stage_events_have_their_shapes() -> None:
    conv = ac.Conversation(CHAT)
    result = ac.Compactor(ac.CompactionPolicy(context_window=20_000)).compact(conv, budget=conv.tokens // 3)
    out = result.to_dict()
    assert_shape(out, t.CompactionResultDict)
    assert out["stages"] and out["tokens_after"] < out["tokens_before"]
    for event in result.stages:
        assert_shape(event.to_dict(), t.StageEventDict)


def test_costs_evaluations_and_their_summary_have_their_shapes() -> None:
    cost = requests_cost([100, 200], [0, 100], resolve_prices(EVAL_PRICES[0]))
    assert_shape(cost.to_dict(), t.CostDict)
    assert cost.to_dict()["dollars"] == pytest.approx(cost.dollars)
    row = evaluate(ac.Conversation(CHAT), "claude-code", 1_500)
    with_cost = row.to_dict(prices=None)
    assert_shape(with_cost, t.EvaluationDict)
    assert set(with_cost["cost"]) == set(EVAL_PRICES)
    without = row.to_dict()
    assert "cost" not in without
    assert_shape(without, t.EvaluationDict)
    [summary] = summarize_evaluations([row])
    assert_shape(summary, t.StrategySummary)
    assert summary["strategy"] == row.strategy


def test_the_clear_rung_decision_and_dropped_rounds_have_their_shapes() -> None:
    before = ac.Conversation(CHAT)
    cleared, _ = before.clear_tool_results(recent_messages=2, recent_tools=1)
    decision = clear_rung("gpt-5", 1.0, before=before, after=cleared, first_changed=3, limit=before.tokens)
    assert decision is not None
    assert_shape(decision[1], t.ClearDecision)
    assert len({"pays", "why", "does_not_pay"} & set(decision[1])) == 1
    request = ac.SummaryRequest(before, before.preamble, len(before) - 1, None, 2_000)
    dropped = drop_oldest_rounds(request, 500)
    assert dropped is not None
    assert_shape(dropped[1], t.DroppedRounds)
    assert dropped[1]["dropped_rounds"] >= 1


def test_a_compiled_request_and_a_calibration_have_their_shapes() -> None:
    compiled = compile_request(CHAT, WorkingSet(base="Be terse."), format="openai")
    out = compiled.to_dict()
    assert_shape(out, t.CompiledRequestDict)
    assert out["tokens"]["input_total"] == compiled.tokens["input_total"] > 0
    calibration = ac.Calibration()
    calibration.observe("gpt-test", ac.Conversation(CHAT), 5_000)
    saved = calibration.to_dict()
    assert_shape(saved, t.CalibrationDict)
    assert saved["models"]["gpt-test"]["observations"] == 1
    assert ac.Calibration.from_dict(saved).to_dict() == saved


def test_permissions_snapshots_and_the_session_state_have_their_shapes(tmp_path: Path) -> None:
    rule = Rule("bash", "deny", arguments="rm ")
    assert_shape(rule.to_json(), t.RuleDict)
    request = PermissionRequest([PendingCall("c1", "bash", "{}")], {"c1": True})
    assert_shape(request.to_json(), t.PermissionRequestDict)
    permissions = Permissions([rule])
    assert_shape(permissions.state(), t.PermissionState)
    session = ac.Session(Instant("m", context_window=50_000), permissions=permissions)
    session.send("hello")
    state = capture(session)
    assert_shape(state, t.SessionState)
    assert state["turn"] == session.turn and state["permissions"] == permissions.state()
    snapshot = Snapshot(session.conversation, control=dict(state), turn=session.turn)
    assert_shape(snapshot.to_json(), t.SnapshotDict)
    store = SnapshotStore(tmp_path)
    store.save(snapshot)
    info = store.info()
    assert_shape(info.to_json(), t.SnapshotInfoDict)
    assert json.loads(json.dumps(info.to_json()))["control"] == json.loads(json.dumps(dict(state)))


def test_a_flush_report_and_a_reconcile_record_have_their_shapes(tmp_path: Path) -> None:
    report = FlushReport(calls=1, tool_calls=[("memory_write", {}, "ok")], written=["a"])
    assert_shape(report.to_dict(), t.FlushReportDict)
    assert report.to_dict()["tool_calls"] == 1
    log = SessionLog(tmp_path / "s.jsonl")
    log.append(ac.Conversation(CHAT[:3]))
    record = log.reconcile(ac.Conversation([*CHAT[:2], {"role": "user", "content": "other"}]))
    assert record is not None
    assert_shape(record, t.ReconcileRecord)
    assert all(set(e) in ({"ref"}, {"data"}) for e in record["working_set"])


# -- Conversation._raw_start_*: one mode each ----------------------------------------------------


def test_each_raw_start_mode_answers_its_own_question() -> None:
    conv = ac.Conversation(CHAT)
    sizes = conv.message_tokens()
    cuts = conv._cut_points()
    start = conv._raw_start_at_least(keep_messages=4)
    assert start in cuts and len(conv) - start >= 4
    assert conv._raw_start_at_least() == max(c for c in cuts if c > conv.preamble)
    room = sum(sizes[-7:])
    fits = conv._raw_start_fits(room)
    assert sum(sizes[fits:]) <= room and fits in cuts
    assert conv._raw_start_fits(-1) == len(conv)
    stepped = conv._raw_start_steps(room, 0.3, 0.1)
    assert stepped is not None and sum(sizes[stepped:]) <= room
    assert conv._raw_start_steps(0, 0.3, 0.1) is None


@pytest.mark.parametrize(("first", "step"), [(float("nan"), 0.1), (0.3, 0.0), (0.3, float("inf")), (0.3, -0.1)])
def test_a_step_schedule_that_does_not_move_forward_is_refused(first: float, step: float) -> None:
    with pytest.raises(OptionError, match="finite positive step"):
        ac.Conversation(CHAT)._raw_start_steps(100, first, step)


# -- start-up and the subagents' factory ---------------------------------------------------------


def test_the_cache_prefix_module_loads_without_the_rest_of_the_compiler() -> None:
    code = (
        "import sys, agentcontext.compiler.prefix, agentcontext.measure.metrics;"
        "print(sorted(m for m in sys.modules if m.startswith('agentcontext.compiler')), 'subprocess' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['agentcontext.compiler', 'agentcontext.compiler.prefix'] False"
    from agentcontext import compiler

    for name in compiler.__all__:
        value = getattr(compiler, name)
        assert getattr(sys.modules[compiler._EXPORTS[name]], name) is value
    with pytest.raises(AttributeError):
        _ = compiler.not_a_name  # type: ignore[attr-defined]


def test_subagents_make_children_of_the_parents_class_without_a_factory() -> None:
    parent = ac.Session(Instant("m", context_window=50_000))
    assert Subagents(parent).new_session is ac.Session
    assert Subagents(parent, new_session=ac.Session).new_session is ac.Session
