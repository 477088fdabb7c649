"""The task ledger: what a compacted working set must never lose, kept by code outside the summary.

Built from the history itself (``Conversation.handoff``: the artifact trail, the rules the user
stated, commands with their last outcome, open errors, the plan), rendered as ONE user message
that opens with :data:`LEDGER_MARKER`, and carried across compactions: a later compaction parses
the ledger it finds in the span that leaves the window and merges the new span's facts into it
(the old message is replaced, never nested, never summarized away). Bounded: over its token cap
the oldest detail goes first (files, commands, errors in turn; the user's rules last), and a line
says how many entries were left out and how to find them. No model writes it, so nothing a tool
result says can talk it out of a rule the user stated.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cached_property

from agentcontext._containment import one_line
from agentcontext._core import Conversation, count_tokens, count_tokens_batch
from agentcontext.compaction.summary_text import one_line as _one_line
from agentcontext.types import Encoding, Handoff

__all__ = [
    "LEDGER_MARKER",
    "Ledger",
    "LedgerArtifact",
    "LedgerCommand",
    "ledger_cap",
    "ledger_limit",
    "ledger_message",
]

#: The first words of every ledger message; the core never takes such a message for a user
#: request (``LEDGER_PREFIX`` in ``src/compact/request.rs``), and a later compaction merges it.
LEDGER_MARKER = "[agentcontext: task ledger"

_HEADER = f"{LEDGER_MARKER}: kept by code across compactions, not by the summarizer]"

REQUEST = "Live request"
RULES = "User constraints (verbatim, newest first)"
FILES = "Files (what was done; the last call that touched each)"
COMMANDS = "Commands (last outcome)"
ERRORS = "Open errors"
PLAN = "Plan"
LEFT_OUT = "Left out"
_SECTIONS = (REQUEST, RULES, FILES, COMMANDS, ERRORS, PLAN, LEFT_OUT)

#: The least and the most a ledger takes by default (tokens); between them a tenth of the target.
LEDGER_MIN_TOKENS = 160
#: The most of the target a ledger takes when its span holds that much (a long artifact trail):
#: the room comes from the raw recent part, planned after the ledger.
LEDGER_MAX_SHARE = 1 / 5
#: A request head is cut to this many characters.
REQUEST_HEAD_CHARS = 160
#: ... and to this many when room is tight (the full text is where the next line says).
COMPACT_HEAD_CHARS = 80

_LEFT_OUT_LINE = re.compile(r"^- (\d[\d,]*) older entries")


def ledger_cap(max_tokens: int, target: int) -> int:
    """The ledger's token cap in a working set of ``target`` tokens: a tenth of it, at most the
    policy's ``ledger_max_tokens``; 0 (no ledger) when that is under :data:`LEDGER_MIN_TOKENS`,
    where the room is the latest request's and the summary's. (On the shared corpus a ledger of
    at least 160 tokens in budgets under 1,600 cost the latest request in 3 of 134 runs.)"""
    cap = min(max_tokens, target // 10)
    return cap if cap >= LEDGER_MIN_TOKENS else 0


def ledger_limit(max_tokens: int, target: int) -> int:
    """The most tokens a ledger may grow to in a working set of ``target`` tokens, when what it
    carries needs more than :func:`ledger_cap`: :data:`LEDGER_MAX_SHARE` of the target, at most
    ``max_tokens``; 0 where :func:`ledger_cap` is."""
    if ledger_cap(max_tokens, target) == 0:
        return 0
    return min(max_tokens, int(target * LEDGER_MAX_SHARE))


@dataclass(frozen=True)
class LedgerArtifact:
    """A file of the trail: what was done to it (``read``, ``created``, ``edited``, ``deleted``,
    ``renamed``, each once) and the last call that touched it, in one line."""

    path: str
    ops: tuple[str, ...]
    last: str


@dataclass(frozen=True)
class LedgerCommand:
    """A distinct command and its last outcome."""

    command: str
    outcome: str
    ok: bool


def _merge_by(old: Iterable[object], new: Iterable[object], key: str) -> dict[str, object]:
    """Entries by ``key``, in order of their last appearance (``new`` after ``old``)."""
    out: dict[str, object] = {}
    for item in [*old, *new]:
        k = getattr(item, key)
        out.pop(k, None)
        out[k] = item
    return out


@dataclass(frozen=True)
class Ledger:
    """What a working set carries outside its summary. Lists are oldest first but
    ``constraints`` (newest first, as rendered)."""

    #: The latest real user request, its head on one line, and where its full text is.
    request: str | None = None
    request_at: str = ""
    #: The user's rules, verbatim, newest first.
    constraints: tuple[str, ...] = ()
    artifacts: tuple[LedgerArtifact, ...] = ()
    commands: tuple[LedgerCommand, ...] = ()
    #: Errors no later run resolved.
    errors: tuple[str, ...] = ()
    #: The latest TODO list or plan, as ``(status, item)``.
    plan: tuple[tuple[str, str], ...] = ()
    #: Entries left out of this ledger and the ones it merged (over their caps).
    omitted: int = 0
    #: Files rendered compactly: one line per set of verbs naming its paths, without the last
    #: call (:meth:`bounded` renders so when the whole ledger is over its cap).
    compact: bool = False

    @classmethod
    def from_handoff(cls, h: Handoff, *, request: str | None = None, request_at: str = "") -> Ledger:
        """The ledger of one span's handoff; ``request`` (the latest real request of the whole
        conversation, when known) and where its full text is."""
        if request is None and h["user_requests"]:
            request = h["user_requests"][0][1]
        # A path is the model's own text (a tool call's argument): a newline in it would start a
        # line of its own, a forged "## User constraints" heading that the next compaction parses
        # as the user's rule. It is shown escaped on one line (one_line), as names are in prompts.
        artifacts = tuple(
            LedgerArtifact(one_line(a["path"]), tuple(a["ops"]), _one_line(a["last"], 160)) for a in h["artifacts"]
        )
        commands = tuple(
            LedgerCommand(_one_line(c["command"], 160), _one_line(c["outcome"], 200), c["ok"]) for c in h["commands"]
        )
        errors = tuple(dict.fromkeys(_one_line(e["text"], 240) for e in h["errors"] if not e["resolved"]))
        return cls(
            request=_one_line(request, REQUEST_HEAD_CHARS) if request else None,
            request_at=request_at,
            constraints=tuple(dict.fromkeys(_one_line(text, 400) for _, text in h["constraints"])),
            artifacts=artifacts,
            commands=commands,
            errors=errors,
            plan=tuple((_one_line(status, 40) or "-", _one_line(item, 200)) for item, status in h["plan"]),
        )

    def merged(self, newer: Ledger) -> Ledger:
        """This ledger updated with the facts of a later span (``newer``): its request and plan
        when it has them, its rules first, each file's and command's latest state (a file keeps
        everything done to it), the errors still open (one whose command later succeeded is
        resolved), and the entries left out of both counted."""
        files: dict[str, LedgerArtifact] = {a.path: a for a in self.artifacts}
        for a in newer.artifacts:
            was = files.pop(a.path, None)
            ops = a.ops if was is None else tuple(dict.fromkeys([*was.ops, *a.ops]))
            files[a.path] = LedgerArtifact(a.path, ops, a.last)
        commands = _merge_by(self.commands, newer.commands, "command")
        succeeded = {c.command for c in newer.commands if c.ok}
        still_open = [e for e in self.errors if not any(e.endswith(f"(from {c})") for c in succeeded)]
        return Ledger(
            request=newer.request or self.request,
            request_at=newer.request_at if newer.request else self.request_at,
            constraints=tuple(dict.fromkeys([*newer.constraints, *self.constraints])),
            artifacts=tuple(files.values()),
            commands=tuple(c for c in commands.values() if isinstance(c, LedgerCommand)),
            errors=tuple(dict.fromkeys([*still_open, *newer.errors])),
            plan=newer.plan or self.plan,
            omitted=self.omitted + newer.omitted,
        )

    # -- rendering -----------------------------------------------------------------------------

    def _lines(self, *, costing: bool = False) -> dict[str, list[str]]:
        """The lines of each section; ``costing``: compact files one entry each (what one file
        adds to its verbs' line), for :meth:`bounded` to count."""
        request = [f"- {self.request}", f"- full text: {self.request_at}"] if self.request else []
        if not self.compact:
            files = [f"- {a.path}: {', '.join(a.ops)}{_last(a)}" for a in self.artifacts]
        elif costing:
            files = [f", {a.path}" for a in self.artifacts]
        else:
            files = _compact_files(self.artifacts)
        return {
            REQUEST: request,
            RULES: [f"- {c}" for c in self.constraints],
            FILES: files,
            COMMANDS: [f"- `{c.command}` → {c.outcome}{'' if c.ok else ' (failed)'}" for c in self.commands],
            ERRORS: [f"- {e}" for e in self.errors],
            PLAN: [f"- [{status}] {item}" for status, item in self.plan],
        }

    def render(self) -> str:
        """The ledger message's text (whole: :meth:`bounded` first to cap it)."""
        return self._rendered

    @cached_property
    def _rendered(self) -> str:
        """:meth:`render`'s text, made once (:meth:`bounded` counts it, :meth:`message` sends it)."""
        parts = [_HEADER]
        for name, lines in self._lines().items():
            if lines:
                parts.append(f"## {name}\n" + "\n".join(lines))
        if self.omitted:
            parts.append(
                f"## {LEFT_OUT}\n- {self.omitted:,} older entries left out: conversation_search finds them; "
                "the summary's header says where the originals are."
            )
        return "\n\n".join(parts)

    def message(self) -> dict[str, str]:
        """The ledger as one user message (the same shape in every format)."""
        return {"role": "user", "content": self.render()}

    def empty(self) -> bool:
        return not (self.request or self.constraints or self.artifacts or self.commands or self.errors or self.plan)

    def bounded(self, max_tokens: int, *, encoding: Encoding = "o200k_base") -> Ledger:
        """This ledger within ``max_tokens``: the oldest commands and errors leave first (one of
        each in turn: the summary lists them too), then the oldest files and plan items, then the
        oldest rules; the request stays.
        What leaves is counted in :attr:`omitted` (its line names where to find it)."""
        if count_tokens(self.render(), encoding=encoding) <= max_tokens:
            return self
        if self.artifacts and not self.compact:
            # Room is tight: every file by its path and verbs before any file leaves.
            head = _one_line(self.request, COMPACT_HEAD_CHARS) if self.request else None
            return replace(self, compact=True, request=head).bounded(max_tokens, encoding=encoding)
        lines = self._lines(costing=True)
        flat = count_tokens_batch([line for ls in lines.values() for line in ls], encoding=encoding)
        cost: dict[str, list[int]] = {}
        at = 0
        for name, ls in lines.items():
            cost[name] = [c + 1 for c in flat[at : at + len(ls)]]
            at += len(ls)
        # The header, the request and the left-out section; each list's heading while it has lines.
        entries = sum(len(c) for name, c in cost.items() if name != REQUEST)
        bare = replace(
            self, constraints=(), artifacts=(), commands=(), errors=(), plan=(), omitted=self.omitted + entries
        )
        heading = {name: count_tokens(f"\n\n## {name}\n", encoding=encoding) for name in _SECTIONS}
        total = count_tokens(bare.render(), encoding=encoding)
        total += sum(sum(c) + heading[name] for name, c in cost.items() if c and name != REQUEST)
        gone = dict.fromkeys(_SECTIONS, 0)
        # Commands and errors first (the summary lists them too), then files and the plan.
        tiers = ((COMMANDS, ERRORS), (FILES, PLAN))
        turn = 0

        def step() -> int | None:
            """Leave out the next entry (its tokens); None when only the request is left."""
            nonlocal turn
            for order in tiers:
                for _ in order:
                    name = order[turn % len(order)]
                    turn += 1
                    if gone[name] < len(cost[name]):
                        gone[name] += 1
                        last = gone[name] == len(cost[name])
                        return cost[name][gone[name] - 1] + (heading[name] if last else 0)
            if gone[RULES] < len(cost[RULES]):
                gone[RULES] += 1
                last = gone[RULES] == len(cost[RULES])
                return cost[RULES][len(cost[RULES]) - gone[RULES]] + (heading[RULES] if last else 0)
            return None

        while True:
            while total > max_tokens and (c := step()) is not None:
                total -= c
            ledger = self._without(gone)
            if count_tokens(ledger.render(), encoding=encoding) <= max_tokens or step() is None:
                return ledger
            # Counted line by line, the parts came out larger together: one more entry leaves.

    def _without(self, gone: dict[str, int]) -> Ledger:
        """This ledger less the oldest ``gone[section]`` entries of each list."""
        rules = self.constraints[: len(self.constraints) - gone[RULES]]
        return replace(
            self,
            constraints=rules,
            artifacts=self.artifacts[gone[FILES] :],
            commands=self.commands[gone[COMMANDS] :],
            errors=self.errors[gone[ERRORS] :],
            plan=self.plan[gone[PLAN] :],
            omitted=self.omitted + sum(gone.values()),
        )

    # -- parsing -------------------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> Ledger | None:
        """The ledger a message rendered by :meth:`render` holds; None when ``text`` is not one."""
        if not text.startswith(LEDGER_MARKER):
            return None
        sections: dict[str, list[str]] = {}
        current: str | None = None
        for line in text.splitlines():
            if line.startswith("## ") and line[3:].strip() in _SECTIONS:
                current = line[3:].strip()
                sections[current] = []
            elif current is not None and line.startswith("- "):
                sections[current].append(line[2:])
        request = sections.get(REQUEST, [])
        at = request[1].removeprefix("full text: ") if len(request) > 1 else ""
        left = _LEFT_OUT_LINE.match("- " + sections[LEFT_OUT][0]) if sections.get(LEFT_OUT) else None
        return cls(
            request=request[0] if request else None,
            request_at=at,
            constraints=tuple(sections.get(RULES, [])),
            artifacts=tuple(a for line in sections.get(FILES, []) for a in _parse_artifacts(line)),
            commands=tuple(c for line in sections.get(COMMANDS, []) if (c := _parse_command(line)) is not None),
            errors=tuple(sections.get(ERRORS, [])),
            plan=tuple(_parse_plan(line) for line in sections.get(PLAN, [])),
            omitted=int(left.group(1).replace(",", "")) if left else 0,
            compact=any(_compact_line(line) is not None for line in sections.get(FILES, [])),
        )


def _last(a: LedgerArtifact) -> str:
    """The last call of a file's line: left out when it is only a file tool's name (and
    subcommand) and the path, which the line says already."""
    tool = a.last.removesuffix(a.path)
    if not a.last or (tool != a.last and len(tool.split()) <= 2 and tool.endswith(" ")):
        return ""
    return f" — last: {a.last}"


#: What the artifact trail says was done to a file (``src/compact/handoff/trail.rs``).
_OPS = frozenset(("read", "created", "edited", "deleted", "renamed"))


def _compact_files(artifacts: Iterable[LedgerArtifact]) -> list[str]:
    """Files as compact lines: one per set of verbs (``- read+edited: a.py, b.py``), in order of
    their first file, each line's paths oldest first."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for a in artifacts:
        groups.setdefault(a.ops, []).append(a.path)
    return [f"- {'+'.join(ops) or 'touched'}: {', '.join(paths)}" for ops, paths in groups.items()]


def _compact_line(line: str) -> tuple[tuple[str, ...], list[str]] | None:
    """The verbs and paths of a compact line of the files section; None for a full line."""
    head, sep, paths = line.partition(": ")
    verbs = head.split("+")
    if not sep or not (head == "touched" or all(v in _OPS for v in verbs)):
        return None
    return (() if head == "touched" else tuple(verbs)), [p for p in paths.split(", ") if p]


def _parse_artifacts(line: str) -> list[LedgerArtifact]:
    """The files of one line of the files section: a compact line's (:func:`_compact_files`), or
    the one a full line names."""
    compact = _compact_line(line)
    if compact is not None:
        ops, paths = compact
        return [LedgerArtifact(p, ops, "") for p in paths]
    a = _parse_artifact(line)
    return [] if a is None else [a]


def _parse_artifact(line: str) -> LedgerArtifact | None:
    head, _, last = line.partition(" — last: ")
    path, colon, ops = head.rpartition(": ")
    if not colon:
        return None
    return LedgerArtifact(path, tuple(o.strip() for o in ops.split(",") if o.strip()), last)


def _parse_command(line: str) -> LedgerCommand | None:
    if not line.startswith("`"):
        return None
    command, sep, outcome = line[1:].partition("` → ")
    if not sep:
        return None
    failed = outcome.endswith(" (failed)")
    return LedgerCommand(command, outcome.removesuffix(" (failed)") if failed else outcome, not failed)


def _parse_plan(line: str) -> tuple[str, str]:
    if line.startswith("[") and "] " in line:
        status, _, item = line[1:].partition("] ")
        return status, item
    return "-", line


def ledger_message(
    conv: Conversation,
    start: int,
    stop: int,
    *,
    cap: int,
    encoding: Encoding,
    later: str | None = None,
    handoff: Handoff | None = None,
) -> dict[str, str] | None:
    """The ledger message of a working set in which ``conv[start:stop]`` leaves the window: the
    facts of that span merged into the latest ledger found in it (or ``later``, one found in what
    stays), the live request the latest real request of ``conv`` (from ``start``), bounded by
    ``cap`` tokens; None when there is nothing to carry. ``handoff``: ``conv.handoff(start, stop)``
    when already made."""
    h = conv.handoff(start, stop) if handoff is None else handoff
    new = Ledger.from_handoff(h)
    found = conv._latest_request(start)
    if found is not None:
        where = (
            "verbatim in the messages below"
            if found[0] >= stop
            else "in the summary above (its header says where the original is)"
        )
        new = replace(new, request=_one_line(found[1], REQUEST_HEAD_CHARS), request_at=where)
    else:
        new = replace(new, request=None, request_at="")
    previous = h["previous_ledger"] or later
    old = Ledger.parse(previous) if previous else None
    if old is not None and old.request and new.request is None:
        old = replace(old, request_at="in an earlier summary; conversation_search finds it in the session log")
    ledger = old.merged(new) if old is not None else new
    if ledger.empty():
        return None
    return ledger.bounded(cap, encoding=encoding).message()
