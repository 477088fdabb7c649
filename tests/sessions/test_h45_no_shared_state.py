"""What the compiler and a snapshot hand out, and what they are given, are not shared with the
caller: editing a compiled request's tool definition (as an SDK wrapper adding strict-mode fields
does) changed the registry's tool, the caller's schema and every later request, whose counted
tokens and tools_json no longer matched what was sent; a Snapshot kept the caller's control
dict, so editing it (or a to_json() result) changed the saved state."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import agentcontext as ac
from agentcontext.compiler import Compiler
from agentcontext.compiler.registry import Registry, ToolSpec
from agentcontext.compiler.sections import WorkingSet
from agentcontext.errors import OptionError
from agentcontext.sessions.snapshots import Snapshot, SnapshotStore

CONV = ac.Conversation([{"role": "user", "content": "hi"}])


def _schema() -> dict[str, object]:
    return {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}


@pytest.mark.parametrize("style", ["anthropic", "openai", "responses"])
def test_editing_a_compiled_definition_changes_nothing_else(style: str) -> None:
    schema = _schema()
    registry = Registry()
    registry.tool("x", "d", lambda a: "ok", input_schema=schema)
    compiler = Compiler(WorkingSet(registry=registry))
    first = compiler.compile(CONV, style=style)
    assert first.tools is not None
    definition = first.tools[0]
    params = definition.get("input_schema") or definition.get("parameters") or definition["function"]["parameters"]
    params["properties"]["b"] = {"type": "string"}
    params["additionalProperties"] = False
    second = compiler.compile(CONV, style=style)
    assert schema == _schema()
    assert registry.get("x") is not None and registry.get("x").input_schema == _schema()  # type: ignore[union-attr]
    assert json.loads(second.tools_json) == second.tools
    assert second.tools_json == first.tools_json


def test_a_tool_keeps_its_own_schema() -> None:
    schema = _schema()
    tool = ToolSpec("x", "d", schema)
    schema["properties"]["b"] = {"type": "integer"}  # type: ignore[index]
    assert tool.input_schema == _schema()
    tool.definition("anthropic")["input_schema"]["properties"].clear()
    assert tool.input_schema == _schema()


def test_an_mcp_listing_edited_after_it_was_added() -> None:
    listing = {"tools": [{"name": "t", "description": "d", "inputSchema": _schema()}]}
    registry = Registry()
    registry.add_mcp("s", listing)
    listing["tools"][0]["inputSchema"]["properties"]["z"] = {}  # type: ignore[index]
    assert registry.get("t").input_schema == _schema()  # type: ignore[union-attr]


def test_a_snapshot_owns_its_control(tmp_path: Path) -> None:
    control = {"mode": "plan", "goal": {"verdicts": [1]}}
    snap = Snapshot(CONV, control=control)
    control["goal"]["verdicts"].append(2)  # type: ignore[index]
    snap.to_json()["control"]["goal"]["verdicts"].append(3)
    assert snap.control == {"mode": "plan", "goal": {"verdicts": [1]}}
    store = SnapshotStore(tmp_path / "s")
    store.save(snap)
    loaded = store.current()
    assert loaded is not None and loaded.control == {"mode": "plan", "goal": {"verdicts": [1]}}


def test_a_control_that_cannot_be_copied_is_a_typed_error() -> None:
    with pytest.raises(OptionError, match="control must be a JSON object"):
        Snapshot(CONV, control={"lock": threading.Lock()})
