"""A session's control state: what a snapshot keeps besides the conversation, and how a resumed
session takes it back.

Captured (:func:`capture`): the mode and how plan mode hides tools, the goal's condition, status and
continuations, the permission grants and a pending permission request, the compaction state
(turns since the last compaction, how many were made, the stage of the last one), the calibration,
the outer turn and depth. :func:`fingerprint` hashes the tool registry (names, definitions and
metadata) and the settings (provider and model, compaction policy, result policy, permission
settings, subagent policy).

Restored (:func:`restore`), each only where it still applies, with one note for everything that is
not:

- the **mode** when the current compiler has it (the system prompt, catalog and memory index are
  compiled anew from the current sources, never taken from the snapshot);
- the **goal**'s status and continuations when the current goal has the same condition;
- **permission grants** by :meth:`~agentcontext.sessions.permissions.Permissions.restore`'s rule:
  a grant comes back only where the current settings would ask for that tool (never over a
  current ``deny``); without current permission settings, none come back;
- a **pending permission request** is asked again: its calls are decided anew under the current
  settings, and the ones that still ask wait in :attr:`Session.pending_permission`;
- a call left unanswered to a tool that no longer exists gets an error result saying so when the
  session goes on;
- the **calibration** when the resumed session has none of its own;
- the **compaction cooldown**.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import TYPE_CHECKING, Any

from agentcontext.errors import AgentContextError
from agentcontext.measure.calibration import Calibration
from agentcontext.sessions import tool_calls
from agentcontext.sessions.permissions import PendingCall, PermissionRequest
from agentcontext.types import SessionState

if TYPE_CHECKING:
    from agentcontext.sessions.loop import Session
    from agentcontext.sessions.snapshots import Snapshot

__all__ = ["capture", "fingerprint", "restore"]


def capture(session: Session) -> SessionState:
    """The control state of ``session`` as a JSON object."""
    compiler = session.compiler
    goal = compiler.working_set.goal if compiler is not None else None
    last = session.compactor.last
    state: SessionState = {
        "mode": compiler.mode if compiler is not None else None,
        "hiding": compiler.hiding if compiler is not None else None,
        "goal": (
            {"condition": goal.condition, "status": goal.status, "continuations": goal.continuations}
            if goal is not None
            else None
        ),
        "permissions": session.permissions.state() if session.permissions is not None else None,
        "pending_permission": session.pending_permission.to_json() if session.pending_permission else None,
        "compaction": {
            "turns_since": session.compactor._turns_since,
            "count": len(session.compactions),
            "last": [e.stage for e in last.stages] if last is not None else None,
        },
        "calibration": session.calibration.to_dict() if session.calibration is not None else None,
        "turn": session.turn,
        "depth": session.depth,
        "unanswered_tools": sorted({c.name for c in tool_calls.unanswered_calls(session)}),
    }
    return state


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value) if f.repr}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_jsonable(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return type(value).__name__  # a store, a function: its kind, not its identity


def fingerprint(session: Session) -> str:
    """A short hash of the tool registry and the settings ``session`` runs under."""
    compiler = session.compiler
    tools: Any
    if compiler is not None:
        tools = [
            {
                "name": t.name,
                "definition": t.definition("openai"),
                "read_only": t.read_only,
                "domain": t.execution_domain,
                "root_only": t.root_only,
                "source": t.source,
            }
            for t in compiler.registry
        ]
    else:
        tools = session.tools or []
    settings = {
        "provider": session.provider.name,
        "model": session.provider.model,
        "tools": tools,
        "functions": sorted(session.functions),
        "compaction": _jsonable(session.compactor.policy),
        "results": _jsonable(session.result_policy),
        "permissions": session.permissions.fingerprint() if session.permissions is not None else None,
        "subagents": _jsonable(session.subagents.policy) if session.subagents is not None else None,
    }
    data = json.dumps(settings, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def _tool_exists(session: Session, name: str) -> bool:
    if name in session.functions:
        return True
    if session.compiler is not None and session.compiler.registry.get(name) is not None:
        return True
    return session.subagents is not None and name == "agent"


def restore(session: Session, snapshot: Snapshot) -> list[str]:
    """Take back ``snapshot``'s control state into the freshly built ``session`` where it still
    applies (see the module docs); return a note for everything that was not restored."""
    control = snapshot.control
    notes: list[str] = []
    if snapshot.fingerprint and snapshot.fingerprint != fingerprint(session):
        notes.append("the tools or settings changed since the snapshot; the request is compiled from the current ones")
    compiler = session.compiler
    mode = control.get("mode")
    if mode is not None:
        if compiler is None:
            notes.append(f"the snapshot was in {mode} mode; this session has no compiler, so no mode")
        elif mode != compiler.mode:
            try:
                compiler.set_mode(mode)
            except AgentContextError as exc:
                notes.append(f"mode {mode!r} not restored: {exc}")
    saved_goal = control.get("goal")
    if isinstance(saved_goal, dict):
        goal = compiler.working_set.goal if compiler is not None else None
        if goal is None:
            condition = saved_goal.get("condition")
            named = f"the goal {condition!r}" if isinstance(condition, str) and condition else "the saved goal"
            notes.append(f"{named} was not restored: this session has no goal")
        elif goal.condition != saved_goal.get("condition"):
            notes.append("the goal changed since the snapshot; the new one starts afresh")
        else:
            status = saved_goal.get("status")
            if status in ("active", "met", "limit"):
                goal.status = status
            continuations = saved_goal.get("continuations")
            if isinstance(continuations, int) and continuations >= 0:
                goal.continuations = continuations
    notes += _restore_permissions(session, control)
    unanswered = control.get("unanswered_tools") or []
    if not isinstance(unanswered, list):
        notes.append("the snapshot's unanswered_tools is not a list; not checked")
        unanswered = []
    gone = [n for n in unanswered if isinstance(n, str) and not _tool_exists(session, n)]
    for name in gone:
        notes.append(f"a call to tool {name!r} was left unanswered and that tool no longer exists; it gets an error")
    calibration = control.get("calibration")
    if isinstance(calibration, dict) and session.calibration is None:
        try:
            session.calibration = Calibration.from_dict(calibration)
        except (AgentContextError, ValueError, TypeError, KeyError) as exc:
            notes.append(f"the calibration was not restored: {exc}")
    compaction = control.get("compaction")
    if isinstance(compaction, dict) and isinstance(compaction.get("turns_since"), int):
        session.compactor._turns_since = max(0, compaction["turns_since"])
    return notes


def _restore_permissions(session: Session, control: dict[str, Any]) -> list[str]:
    notes: list[str] = []
    saved = control.get("permissions")
    permissions = session.permissions
    if isinstance(saved, dict) and saved.get("granted"):
        if not isinstance(saved["granted"], list):
            notes.append("the saved grants were not restored: 'granted' is not a list of tool names")
        elif permissions is None:
            names = ", ".join(map(str, saved["granted"]))
            notes.append(f"saved grants ({names}) were not restored: this session has no permission settings")
        else:
            read_only = [t.name for t in session.compiler.registry if t.read_only] if session.compiler else []
            notes += permissions.restore(saved, read_only=read_only)
    pending = control.get("pending_permission")
    if isinstance(pending, dict):
        try:
            request = PermissionRequest.from_json(pending)
        except AgentContextError as exc:
            notes.append(f"the pending permission request was not restored: {exc}")
            return notes
        if permissions is None:
            notes.append("a pending permission request was dropped: this session has no permission settings")
            return notes
        still: list[PendingCall] = []
        for call in request.calls:
            if (
                permissions.decide(call.name, call.arguments, read_only=tool_calls.read_only(session, call.name))
                == "ask"
            ):
                still.append(call)
        if still:
            session.pending_permission = PermissionRequest(still)
    return notes
