"""Reminders: rules attached to events that put a short block in the next request only.

Events: a tool about to run (its name and JSON arguments matched by regular expressions), a turn
count (``every`` N turns or ``at`` turn N), context pressure (the request reaching a share of the
window; fires when it crosses up, again only after it fell below) and a mode change. Each event
fires a rule once; its text joins the next request as a ``<system-reminder>`` block at the end
and is gone from the request after (kept in history only for a rule with ``persist=True``).
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from agentcontext import _checks
from agentcontext.errors import ArgumentTypeError, OptionError

__all__ = ["Reminder", "Reminders", "render_reminders"]

Trigger = Literal["tool", "turn", "pressure", "mode"]


@dataclass(frozen=True)
class Reminder:
    """One rule. ``on`` is the event; ``text`` may name ``{tool}``, ``{turn}``, ``{share}``,
    ``{mode}`` (what the event gave)."""

    on: Trigger
    text: str
    #: ``on="tool"``: regular expressions the tool name / its JSON arguments must match (search).
    tool: str | None = None
    arguments: str | None = None
    #: ``on="turn"``: fire every ``every`` turns, or once at turn ``at``.
    every: int | None = None
    at: int | None = None
    #: ``on="pressure"``: the share of the context window that fires it.
    share: float = 0.75
    #: ``on="mode"``: only when changing to this mode (any when None).
    mode: str | None = None
    #: Keep the reminder in the conversation history instead of the next request only.
    persist: bool = False

    def __post_init__(self) -> None:
        if self.on not in ("tool", "turn", "pressure", "mode"):
            raise OptionError(f'a reminder is on "tool", "turn", "pressure" or "mode", got {self.on!r}')
        if not isinstance(self.text, str) or not self.text.strip():
            raise OptionError("a reminder needs a non-empty text")
        try:
            # What _fire gives it: a field it cannot read ({turn[0]}, {tool.x}) is a mistake in the
            # rule, refused now rather than raised from the agent loop when the event comes.
            self.text.format(tool="bash", turn=1, share="75%", mode="plan")
        except (AttributeError, TypeError) as exc:
            raise OptionError(f"reminder text {self.text!r:.80} names a field it cannot read: {exc}") from None
        except (KeyError, IndexError, ValueError):
            pass  # braces that are not fields: the text is used as it is
        for name, pattern in (("tool", self.tool), ("arguments", self.arguments)):
            if pattern is not None and not isinstance(pattern, str):
                raise ArgumentTypeError(
                    f"reminder {name} must be a regular expression (str) or None, got {type(pattern).__name__}"
                )
            if pattern is not None:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise OptionError(f"reminder pattern {pattern!r} is not a regular expression: {exc}") from None
        if self.on == "turn":
            if (self.every is None) == (self.at is None):
                raise OptionError('a reminder on "turn" needs exactly one of every= or at=')
            _checks.optional_count("every", self.every, minimum=1)
            _checks.optional_count("at", self.at, minimum=1)
        if self.on == "pressure":
            _checks.number("share", self.share, low=0.0, high=1.0, low_open=True)
        if self.mode is not None and not isinstance(self.mode, str):
            raise ArgumentTypeError(f"reminder mode must be a mode name or None, got {type(self.mode).__name__}")
        _checks.flag("persist", self.persist)


@dataclass
class Reminders:
    """The rules and the reminders waiting for the next request."""

    rules: Sequence[Reminder] = ()
    #: ``(rule, rendered text)`` waiting for the next request.
    pending: list[tuple[Reminder, str]] = field(default_factory=list)
    #: Every reminder fired, ``{"on", "text", "persist"}``, in order.
    fired: list[dict[str, object]] = field(default_factory=list)
    _above: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        rules: object = self.rules
        if isinstance(rules, Reminder):
            rules = [rules]  # one rule
        if isinstance(rules, str | bytes | Mapping) or not isinstance(rules, Iterable):
            raise ArgumentTypeError(f"reminder rules must be a list of Reminder objects, got {type(rules).__name__}")
        self.rules = list(rules)
        for r in self.rules:
            if not isinstance(r, Reminder):
                raise OptionError(f"reminders are Reminder objects, got {type(r).__name__}")

    def _fire(self, rule: Reminder, **values: object) -> None:
        text = _filled(rule.text, values)
        self.pending.append((rule, text))
        self.fired.append({"on": rule.on, "text": text, "persist": rule.persist})

    def tool_called(self, name: str, arguments: str) -> None:
        """A tool is about to run."""
        for r in self.rules:
            if r.on != "tool":
                continue
            if r.tool is not None and not re.search(r.tool, name):
                continue
            if r.arguments is not None and not re.search(r.arguments, arguments):
                continue
            self._fire(r, tool=_tool_shown(name))

    def turn(self, number: int) -> None:
        """Turn ``number`` (1-based: user inputs so far) is about to be answered."""
        for r in self.rules:
            if r.on == "turn" and ((r.every and number % r.every == 0) or r.at == number):
                self._fire(r, turn=number)

    def pressure(self, tokens: int, window: int) -> None:
        """The request is ``tokens`` of a ``window``-token context window."""
        share = tokens / window if window > 0 else 0.0
        for i, r in enumerate(self.rules):
            if r.on != "pressure":
                continue
            if share >= r.share and i not in self._above:
                self._above.add(i)
                self._fire(r, share=f"{share:.0%}")
            elif share < r.share:
                self._above.discard(i)

    def mode_changed(self, mode: str) -> None:
        for r in self.rules:
            if r.on == "mode" and (r.mode is None or r.mode == mode):
                self._fire(r, mode=mode)

    def take(self) -> list[tuple[Reminder, str]]:
        """The pending reminders; they are no longer pending."""
        out, self.pending = self.pending, []
        return out


#: A tool name shown as it is in a reminder (what the APIs accept as a function name, and MCP's
#: ``server:tool`` and ``server/tool`` forms).
_PLAIN_TOOL_NAME = re.compile(r"[A-Za-z0-9_.:/-]{1,200}")


def _tool_shown(name: str) -> str:
    """The tool name a model called, as a reminder shows it: a plain name as it is, any other as
    a JSON string with ``<`` and ``>`` escaped too. The model writes the name: as it was, one
    holding a line break or ``</system-reminder>`` closed the reminder block and wrote lines of
    its own after it."""
    if _PLAIN_TOOL_NAME.fullmatch(name):
        return name
    return json.dumps(name).replace("<", "\\u003c").replace(">", "\\u003e")


def render_reminders(texts: Sequence[str]) -> str:
    """The reminder block of one request."""
    return "<system-reminder>\n" + "\n".join(t.strip() for t in texts) + "\n</system-reminder>"


#: ``str.format``'s conversions (``{x!r}``); another one leaves the field as written.
_CONVERSIONS: dict[str, Callable[[object], object]] = {"r": repr, "a": ascii, "s": str}


def _same(value: object) -> object:
    return value


def _filled(text: str, values: Mapping[str, object]) -> str:
    """``text`` with each field that names one of ``values`` alone (``{tool}``, ``{share:>5}``)
    filled in as :meth:`str.format` fills it, every other field (``{arguments}``, ``{tool.x}``,
    ``{turn[0]}``) left as it is written: one unknown field does not keep the others unfilled, and
    no attribute or item of a value is read. Braces that are not fields: the text as it is."""
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError:
        return text
    out: list[str] = []
    for literal, name, spec, conversion in parts:
        out.append(literal)
        if name is None:
            continue
        convert = _CONVERSIONS.get(conversion) if conversion else _same
        if name in values and convert is not None:
            try:
                out.append(format(convert(values[name]), spec or ""))
                continue
            except (ValueError, TypeError):
                pass
        out.append("{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}")
    return "".join(out)
