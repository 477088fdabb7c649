"""Permissions: which tool calls run without asking, which are refused, and which wait for the user.

A :class:`Permissions` decides ``"allow"``, ``"deny"`` or ``"ask"`` for each call, in this order:

1. a grant the user gave in this session (:meth:`Permissions.grant`, "always allow this tool");
2. the first :class:`Rule` whose tool pattern (``fnmatch``) and optional argument pattern (a regular
   expression searched in the call's JSON arguments) match;
3. ``read_only`` for tools whose metadata says they only read (never decided from a tool's name);
4. ``default``.

A call that asks pauses the agent loop before any call of that model reply runs
(:class:`PermissionRequest`); the user's answers resume it.

**Restoring saved state** (a snapshot taken under other settings): a saved grant is restored only
when the current settings, without any grant, would *ask* for that tool — a grant never overrides
a current ``deny`` and is moot under ``allow``. Any other grant is dropped and reported. A pending
request is asked again (its calls are decided anew under the current settings).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from agentcontext.errors import OptionError

__all__ = ["Decision", "PendingCall", "PermissionRequest", "Permissions", "Rule"]

Decision = Literal["allow", "deny", "ask"]
_DECISIONS: tuple[str, ...] = get_args(Decision)


def _decision(name: str, value: Any) -> Decision:
    if value not in _DECISIONS:
        raise OptionError(f"{name} must be one of {', '.join(_DECISIONS)}, got {value!r}")
    return value  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Rule:
    """``decision`` for calls to tools matching ``tool`` (an ``fnmatch`` pattern) whose JSON
    arguments contain a match of ``arguments`` (a regular expression; None matches any)."""

    tool: str
    decision: Decision
    arguments: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.tool, str) or not self.tool:
            raise OptionError(f"Rule.tool must be a non-empty pattern, got {self.tool!r}")
        _decision("Rule.decision", self.decision)
        if self.arguments is not None:
            if not isinstance(self.arguments, str):
                raise OptionError(f"Rule.arguments must be a regular expression or None, got {self.arguments!r}")
            try:
                re.compile(self.arguments)
            except re.error as exc:
                raise OptionError(f"Rule.arguments {self.arguments!r} is not a regular expression: {exc}") from None

    def matches(self, name: str, arguments: str) -> bool:
        if not fnmatch.fnmatchcase(name, self.tool):
            return False
        return self.arguments is None or re.search(self.arguments, arguments) is not None

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "decision": self.decision, "arguments": self.arguments}


@dataclass(frozen=True)
class PendingCall:
    """One tool call waiting for the user's answer."""

    id: str
    name: str
    arguments: str

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass
class PermissionRequest:
    """The calls of one model reply that wait for the user (``answers`` fills as they come)."""

    calls: list[PendingCall]
    answers: dict[str, bool] = field(default_factory=dict)

    @property
    def answered(self) -> bool:
        return all(c.id in self.answers for c in self.calls)

    def to_json(self) -> dict[str, Any]:
        return {"calls": [c.to_json() for c in self.calls], "answers": dict(self.answers)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PermissionRequest:
        calls = data.get("calls")
        if not isinstance(calls, list) or not all(isinstance(c, Mapping) for c in calls):
            raise OptionError("a permission request needs a list of calls")
        return cls([PendingCall(str(c.get("id")), str(c.get("name")), str(c.get("arguments", ""))) for c in calls])


class Permissions:
    """The permission settings of a session, plus the grants its user gave (see the module docs).

    ``rules`` are tried in order; ``read_only`` is the decision for tools whose metadata marks them
    read-only when no rule matched; ``default`` for every other call.
    """

    def __init__(self, rules: Iterable[Rule] = (), *, default: Decision = "ask", read_only: Decision = "allow") -> None:
        self.rules: tuple[Rule, ...] = tuple(rules)
        for rule in self.rules:
            if not isinstance(rule, Rule):
                raise OptionError(f"rules must be Rule objects, got {type(rule).__name__}")
        self.default: Decision = _decision("default", default)
        self.read_only: Decision = _decision("read_only", read_only)
        #: Tools the user allowed for the rest of the session.
        self.granted: set[str] = set()

    def __repr__(self) -> str:
        return f"Permissions({len(self.rules)} rules, default={self.default!r}, read_only={self.read_only!r})"

    def settings_decision(self, name: str, arguments: str = "", *, read_only: bool = False) -> Decision:
        """The decision of the settings alone (rules, read_only, default), without grants."""
        for rule in self.rules:
            if rule.matches(name, arguments):
                return rule.decision
        return self.read_only if read_only else self.default

    def decide(self, name: str, arguments: str = "", *, read_only: bool = False) -> Decision:
        """``"allow"``, ``"deny"`` or ``"ask"`` for a call to ``name`` with ``arguments`` (JSON)."""
        decision = self.settings_decision(name, arguments, read_only=read_only)
        if decision == "ask" and name in self.granted:
            return "allow"
        return decision

    def grant(self, name: str) -> None:
        """Allow every later call to ``name`` in this session (a user's "always allow")."""
        if not isinstance(name, str) or not name:
            raise OptionError(f"grant() takes a tool name, got {name!r}")
        self.granted.add(name)

    def fingerprint(self) -> str:
        """A hash of the settings (rules, read_only, default), for snapshots."""
        data = json.dumps(
            {"rules": [r.to_json() for r in self.rules], "default": self.default, "read_only": self.read_only},
            sort_keys=True,
        )
        return hashlib.sha256(data.encode()).hexdigest()[:16]

    def state(self) -> dict[str, Any]:
        """What a snapshot keeps: the grants and the fingerprint of the settings they were given under."""
        return {"granted": sorted(self.granted), "settings": self.fingerprint()}

    def restore(self, state: Mapping[str, Any], *, read_only: Sequence[str] = ()) -> list[str]:
        """Restore saved grants that are compatible with the current settings (see the module docs)
        and return one note per grant dropped. ``read_only`` names the current read-only tools."""
        granted = state.get("granted", [])
        if not isinstance(granted, list):
            raise OptionError("saved permission state: 'granted' must be a list of tool names")
        notes = []
        for name in granted:
            if not isinstance(name, str):
                continue
            now = self.settings_decision(name, read_only=name in read_only)
            if now == "ask":
                self.granted.add(name)
            else:
                why = "the current settings deny it" if now == "deny" else "the current settings allow it anyway"
                notes.append(f"the saved grant for tool {name!r} was not restored: {why}")
        return notes

    def for_child(self) -> Permissions:
        """The same settings without this session's grants (a subagent's own permission state)."""
        return Permissions(self.rules, default=self.default, read_only=self.read_only)
