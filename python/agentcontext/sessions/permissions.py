r"""Permissions: which tool calls run without asking, which are refused, and which wait for the user.

A :class:`Permissions` decides ``"allow"``, ``"deny"`` or ``"ask"`` for each call from its settings,
the first that applies of:

1. the first :class:`Rule` whose tool pattern (``fnmatch``) and optional argument pattern (a regular
   expression, see below) match;
2. ``read_only`` for tools whose metadata says they only read (never decided from a tool's name);
3. ``default``;

then a grant the user gave in this session (:meth:`Permissions.grant`, "always allow this tool")
turns an ``"ask"`` into ``"allow"``, and nothing else: a call the settings deny stays denied after
an "always allow" of its tool.

**What an argument pattern sees.** Not the JSON text the model sent (where ``rm \u002drf``,
``r\u006d -rf`` or ``rm\t-rf`` spell the same command in other bytes) but the decoded arguments,
parsed as the tool that runs them parses them:

- the **canonical rendering**: the decoded value written back as JSON with keys sorted at every
  level, no spaces (``{"a":1,"b":["x","y"]}``), non-ASCII characters as themselves and only the
  escapes JSON requires (``\"``, ``\\`` and control characters: a tab is ``\t``);
- each **string** in it, decoded, at any depth (object keys and values, array items): here a tab
  is a tab, so ``rm\s+-rf`` finds ``"rm\t-rf"``; with them, the keys and values of the pairs a
  repeated key shadows (the rendering keeps the last, as ``json.loads`` and the tools read it; a
  tool that parses the text itself may keep the first).

A ``"deny"`` or ``"ask"`` rule matches when its pattern is found (``re.search``) in the canonical
rendering or in any one of the strings. An ``"allow"`` rule matches only when its pattern is found
in the canonical rendering, so one string the model controls (another key's value) cannot make an
allow rule apply to a call whose command is elsewhere; to allow one exact call, anchor the pattern
over the whole object (``^\{"command":"git status"\}$``). Arguments that are not JSON (or are
nested deeper than 128 levels, which no tool runs) are matched as the text itself, for every rule,
and, for a ``"deny"`` or ``"ask"`` rule, also as that text with its JSON escapes decoded (text that
almost parses cannot hide a command in escapes).

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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from agentcontext import _checks
from agentcontext.errors import ArgumentTypeError, OptionError
from agentcontext.types import PendingCallDict, PermissionRequestDict, PermissionState, RuleDict

__all__ = ["Arguments", "Decision", "PendingCall", "PermissionRequest", "Permissions", "Rule"]

Decision = Literal["allow", "deny", "ask"]
_DECISIONS: tuple[str, ...] = get_args(Decision)


def _tool_name(name: Any) -> str:
    if not isinstance(name, str):
        raise ArgumentTypeError(f"a tool name must be a str, got {type(name).__name__}")
    return name


def _decision(name: str, value: Any) -> Decision:
    if value not in _DECISIONS:
        raise OptionError(f"{name} must be one of {', '.join(_DECISIONS)}, got {value!r}")
    return value  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Rule:
    """``decision`` for calls to tools matching ``tool`` (an ``fnmatch`` pattern) whose decoded
    arguments contain a match of ``arguments`` (a regular expression; None matches any): found in
    their canonical JSON rendering, or, for a ``"deny"`` or ``"ask"`` rule, in any one string of
    them (see the module docs for exactly what a pattern sees)."""

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

    def matches(self, name: str, arguments: str | Arguments) -> bool:
        """Whether this rule applies to a call to ``name`` with ``arguments`` (the JSON text the
        model sent, or its :class:`Arguments`)."""
        _tool_name(name)
        if not fnmatch.fnmatchcase(name, self.tool):
            return False
        if self.arguments is None:
            return True
        seen = arguments if isinstance(arguments, Arguments) else Arguments(arguments)
        pattern = re.compile(self.arguments)
        if pattern.search(seen.canonical) is not None:
            return True
        return self.decision != "allow" and any(pattern.search(s) is not None for s in seen.strings)

    def to_json(self) -> RuleDict:
        return {"tool": self.tool, "decision": self.decision, "arguments": self.arguments}


class Arguments:
    """A call's arguments as argument patterns see them (see the module docs): ``canonical``, the
    decoded value rendered as canonical JSON, and ``strings``, every string in it (keys and
    values, at any depth), decoded. Arguments that are not JSON give the text itself for both, and
    also, in ``strings``, the text with its JSON escapes decoded (``\\u002d`` as ``-``): text that
    almost parses (trailing bytes, an integer too long for Python) cannot hide a command from a
    deny rule in escapes."""

    __slots__ = ("canonical", "strings", "text")

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise ArgumentTypeError(
                f"tool call arguments must be the JSON text the model sent (str), got {type(text).__name__}"
            )
        self.text = text
        # The pairs an object's repeated key shadows (json.loads keeps the last): a deny rule sees
        # their strings too, for a tool that reads the arguments with another parser (first wins).
        shadowed: list[tuple[str, Any]] = []

        def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
            value = dict(items)
            if len(value) != len(items):
                shadowed.extend(items)
            return value

        try:
            value = _checks.json_arguments(text, object_pairs_hook=pairs)
        except ValueError:  # not JSON, or nested too deeply to be run by any tool (OptionError)
            self.canonical = text
            unescaped = _unescape(text)
            self.strings: tuple[str, ...] = (text,) if unescaped == text else (text, unescaped)
            return
        self.canonical = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        self.strings = tuple(_strings([value, *(x for pair in shadowed for x in pair)]))


_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _unescape(text: str) -> str:
    """``text`` with every JSON string escape replaced by its character (surrogate pairs joined)."""
    if "\\" not in text:
        return text
    out = _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else _SIMPLE[m.group(2)], text)
    return out.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _strings(value: Any) -> Iterator[str]:
    """Every string in a parsed JSON value: object keys and values, array items (depth-first, with
    an explicit stack: the value's depth is bounded, but no recursion is needed)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for key, inner in item.items():
                yield key
                stack.append(inner)
        elif isinstance(item, list):
            stack.extend(item)


@dataclass(frozen=True)
class PendingCall:
    """One tool call waiting for the user's answer."""

    id: str
    name: str
    arguments: str

    def to_json(self) -> PendingCallDict:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass
class PermissionRequest:
    """The calls of one model reply that wait for the user (``answers`` fills as they come)."""

    calls: list[PendingCall]
    answers: dict[str, bool] = field(default_factory=dict)

    @property
    def answered(self) -> bool:
        return all(c.id in self.answers for c in self.calls)

    def to_json(self) -> PermissionRequestDict:
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
        if isinstance(rules, Rule):
            rules = (rules,)  # one rule
        if isinstance(rules, str | bytes | Mapping) or not isinstance(rules, Iterable):
            raise ArgumentTypeError(f"rules must be a list of Rule objects, got {type(rules).__name__}")
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
        _tool_name(name)
        seen = Arguments(arguments)
        for rule in self.rules:
            if rule.matches(name, seen):
                return rule.decision
        return self.read_only if read_only else self.default

    def decide(self, name: str, arguments: str = "", *, read_only: bool = False) -> Decision:
        """``"allow"``, ``"deny"`` or ``"ask"`` for a call to ``name`` with ``arguments`` (the JSON
        text the model sent; rules see it decoded). A grant of ``name`` turns only ``"ask"`` into
        ``"allow"``: a rule's ``"deny"`` stands."""
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

    def state(self) -> PermissionState:
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
