"""Compile one request: the system prompt by sections, the tool catalog of the mode, the history,
and the reminders of this request only — with the tokens of every source.

:class:`~agentcontext.compiler.sections.WorkingSet` holds the sources (base instructions, registry, skills, workspace with its
project instructions and environment, memory, goal). :func:`compile_request` is the stateless
entry point (for frameworks that keep their own history); :class:`Compiler` is the stateful one a
:class:`~agentcontext.Session` calls before every model call: it keeps the mode, the reminders and
the goal, runs tools through the full registry (refusing what the mode hides), and reports every
section change with its cost in cache-prefix tokens (:class:`agentcontext.compiler.prefix.Replay`).

Section order, stable first: base instructions, tool catalog, skill catalog, environment, project
instructions, memory (rules and index), goal. The environment and the project instructions are
read once, when the working set is loaded (:meth:`WorkingSet.load`, :meth:`Compiler.refresh`), so
they do not change under the cache on every call; the memory index is read on every call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentcontext import _checks
from agentcontext._containment import one_line
from agentcontext._core import Conversation, convert, count_tokens
from agentcontext.compiler.environment import environment_section
from agentcontext.compiler.goal import EvidenceJudge
from agentcontext.compiler.instructions import project_instructions
from agentcontext.compiler.modes import Mode, ToolHiding, check_hiding, check_mode, hidden_reason
from agentcontext.compiler.prefix import Replay, shared_prefix_tokens
from agentcontext.compiler.registry import Registry, ToolSpec, ToolStyle
from agentcontext.compiler.reminders import Reminder, Reminders, render_reminders
from agentcontext.compiler.sections import SECTION_ORDER, CompiledRequest, Section, WorkingSet
from agentcontext.errors import ArgumentTypeError, OptionError
from agentcontext.types import Encoding, Format, JsonDict

__all__ = ["Compiler", "compile_request"]

_STYLE_OF: dict[str, ToolStyle] = {"anthropic": "anthropic", "openai": "openai", "responses": "responses"}


class _Counter:
    """Exact token counts of texts, each counted again only when it changes."""

    def __init__(self, encoding: Encoding) -> None:
        self.encoding = encoding
        self.last: dict[str, tuple[str, int]] = {}

    def __call__(self, key: str, text: str) -> int:
        got = self.last.get(key)
        if got is not None and got[0] == text:
            return got[1]
        n = count_tokens(text, encoding=self.encoding) if text else 0
        self.last[key] = (text, n)
        return n


def _tool_catalog(tools: Sequence[ToolSpec]) -> str | None:
    if not tools:
        return None
    by_source: dict[str, list[str]] = {}
    for t in tools:
        by_source.setdefault(t.source, []).append(t.name + (" (read-only)" if t.read_only else ""))
    lines = ["# Tools", "", "The tools of this session, by source (their definitions come with the request):"]
    lines += [f"- {one_line(source)}: {', '.join(names)}" for source, names in by_source.items()]
    return "\n".join(lines) + "\n"


def _is_result(message: Mapping[str, Any]) -> bool:
    if message.get("role") == "tool" or message.get("type") == "function_call_output":
        return True
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _pending_results(conversation: Conversation) -> int:
    n = len(conversation)
    i = n
    while i > 0 and _is_result(conversation[i - 1]):
        i -= 1
    if i == n:
        return 0
    return sum(conversation.message_tokens()[i:]) if n - i < n else conversation.tokens


def _tail(texts: list[str], fmt: Format) -> list[JsonDict]:
    if not texts:
        return []
    message: list[JsonDict] = [{"role": "user", "content": render_reminders(texts)}]
    if fmt == "anthropic":
        return list(convert(message, to="anthropic", source="jsonl").get("messages", []))
    if fmt == "jsonl":
        return message
    return list(convert(message, to=fmt, source="jsonl"))


@dataclass(frozen=True)
class _Catalog:
    """What a registry gives a request in one mode: computed once per registry version."""

    visible: list[str]
    hidden: dict[str, str]
    definitions: list[JsonDict] | None
    definitions_json: str
    text: str | None


def _catalog(reg: Registry, mode: Mode, hiding: ToolHiding, style: ToolStyle, root: bool) -> _Catalog:
    tools = list(reg)
    hidden = {t.name: why for t in tools if (why := hidden_reason(t, mode, root=root)) is not None}
    shown = [t for t in tools if t.name not in hidden] if hiding == "filter" else tools
    definitions = [t.definition(style) for t in shown] or None
    return _Catalog(
        [t.name for t in tools if t.name not in hidden],
        hidden,
        definitions,
        json.dumps(definitions) if definitions else "",
        _tool_catalog(shown),
    )


def _compile(
    conversation: Conversation,
    ws: WorkingSet,
    *,
    mode: Mode,
    hiding: ToolHiding,
    style: ToolStyle,
    max_output_tokens: int,
    reminders: Sequence[str],
    count: Callable[[str, str], int],
    registry: Registry | None = None,
    catalog: _Catalog | None = None,
) -> CompiledRequest:
    reg = registry if registry is not None else ws.effective()
    cat = catalog if catalog is not None else _catalog(reg, mode, hiding, style, ws.root)
    texts: dict[str, str | None] = {
        "base": ws.base.rstrip("\n") + "\n" if ws.base else None,
        "tools": cat.text,
        "skills": ws.skills.section() if ws.skills is not None else None,
        "environment": ws.environment,
        "instructions": ws.instructions.section() if ws.instructions is not None else None,
        "memory": None,
        "goal": ws.goal.section() if ws.goal is not None and ws.goal.status == "active" else None,
    }
    if ws.memory is not None:
        from agentcontext.memory.section import memory_section

        # The rules name only the memory tools this request offers (a subagent has no writes; plan
        # mode filters them out). With "deny" the catalog and the prompt stay the same in every
        # mode: the rules say which memory tools plan mode refuses.
        shown = set(cat.visible) if hiding == "filter" else {t.name for t in reg}
        offered = [t for t in reg if t.source == "memory" and t.name in shown]
        refused = [t.name for t in offered if hiding == "deny" and hidden_reason(t, "plan", root=ws.root)]
        texts["memory"] = memory_section(ws.memory, tools=[t.name for t in offered], refused_in_plan=refused)
    sections = [Section(name, t, count("section:" + name, t)) for name in SECTION_ORDER if (t := texts[name])]
    system = "\n".join(s.text for s in sections)
    tools_tokens = count("tools", cat.definitions_json) if cat.definitions else 0
    reminder_texts = list(reminders)
    tail = _tail(reminder_texts, conversation.format)
    reminder_tokens = count("reminders", render_reminders(reminder_texts)) if reminder_texts else 0
    system_tokens = count("system", system)
    by_role = {k: v for k, v in conversation.tokens_by_role().items() if v}
    history = conversation.tokens
    return CompiledRequest(
        system=system,
        sections=sections,
        # New objects every request (from the JSON the tokens were counted on): a caller or SDK
        # editing a definition changes neither the cached catalog nor the registry's tools.
        tools=json.loads(cat.definitions_json) if cat.definitions else None,
        tools_json=cat.definitions_json,
        visible=list(cat.visible),
        hidden=dict(cat.hidden),
        mode=mode,
        hiding=hiding,
        tail=tail,
        reminders=reminder_texts,
        tokens={
            "sections": {s.name: s.tokens for s in sections},
            "system": system_tokens,
            "tools": tools_tokens,
            "history": by_role,
            "history_total": history,
            "pending_results": _pending_results(conversation),
            "reminders": reminder_tokens,
            "reserved_output": max_output_tokens,
            "input_total": system_tokens + tools_tokens + history + reminder_tokens,
        },
    )


def _as_conversation(conversation: Conversation | Sequence[Mapping[str, Any]], fmt: Format | None) -> Conversation:
    if isinstance(conversation, Conversation):
        return conversation
    messages = [dict(m) for m in conversation]
    return Conversation(messages, format=fmt) if fmt is not None else Conversation(messages)


def compile_request(
    conversation: Conversation | Sequence[Mapping[str, Any]],
    working_set: WorkingSet,
    *,
    mode: str = "default",
    hiding: str = "filter",
    style: str | None = None,
    format: Format | None = None,
    max_output_tokens: int = 4_096,
    reminders: Sequence[str] = (),
) -> CompiledRequest:
    """Compile one request from ``working_set`` and a history kept by the caller (a
    :class:`Conversation`, or messages in ``format``, detected when None). ``style`` is the tool
    definition shape (``"anthropic"``, ``"openai"``, ``"responses"``; by default the history's
    format, ``"openai"`` for JSONL). ``max_output_tokens`` is the reply's cap, counted as
    ``tokens["reserved_output"]``. ``reminders`` are texts for this request only (in plan mode the plan-mode notice
    comes first). Nothing is
    kept between calls."""
    if not isinstance(working_set, WorkingSet):
        raise OptionError(f"working_set must be a WorkingSet, got {type(working_set).__name__}")
    _checks.count("max_output_tokens", max_output_tokens, minimum=1)
    conv = _as_conversation(conversation, format)
    tool_style = _check_style(style if style is not None else _STYLE_OF.get(conv.format, "openai"))
    if isinstance(reminders, str) or not all(isinstance(r, str) for r in reminders):
        raise OptionError("reminders must be a list of texts")
    checked_mode, checked_hiding = check_mode(mode), check_hiding(hiding)
    registry = working_set.effective()
    if checked_mode == "plan":
        # Stateless: every plan-mode request says so, at the end (the cached prefix is not touched).
        reminders = [plan_notice(registry, checked_hiding, root=working_set.root), *reminders]
    return _compile(
        conv,
        working_set,
        mode=checked_mode,
        hiding=checked_hiding,
        style=tool_style,
        max_output_tokens=max_output_tokens,
        registry=registry,
        reminders=reminders,
        count=lambda _k, text: count_tokens(text, encoding=conv.encoding) if text else 0,
    )


def plan_notice(registry: Registry, hiding: ToolHiding, *, root: bool = True) -> str:
    """The reminder that announces plan mode (with ``deny``, it names the tools that will be refused,
    since the catalog still lists them)."""
    hidden = [t.name for t in registry if hidden_reason(t, "plan", root=root)]
    refused = f" Calls to these tools will be refused: {', '.join(hidden)}." if hidden and hiding == "deny" else ""
    return "Plan mode: investigate and plan; do not change anything. Only read-only tools may be used." + refused


def _check_style(style: object) -> ToolStyle:
    if style in _STYLE_OF:
        return _STYLE_OF[str(style)]
    raise OptionError(f'tool style must be "anthropic", "openai" or "responses", got {style!r}')


@dataclass
class _Previous:
    head: Conversation
    conversation: Conversation
    length: int
    history_tokens: int
    sections: dict[str, int]
    texts: dict[str, str]


class Compiler:
    """The stateful compiler a :class:`~agentcontext.Session` calls before every model call.

    ``hiding`` is how plan mode hides tools (:data:`~agentcontext.compiler.modes.ToolHiding`:
    ``"filter"`` or ``"deny"``). ``reminders`` are :class:`Reminder` rules (or a :class:`Reminders`). Events
    (:attr:`events`, dicts with an ``event`` key): ``section_changed`` / ``section_added`` /
    ``section_removed`` (with ``cache_prefix_tokens`` and ``request_tokens`` of that request, so
    ``request_tokens - cache_prefix_tokens`` is what the change cost in cache writes),
    ``tools_changed``, ``mode_changed``, ``tool_refused``, ``reminder``, ``goal_verdict``,
    ``goal_met``, ``goal_continued``, ``goal_limit``.
    """

    def __init__(
        self,
        working_set: WorkingSet | None = None,
        *,
        mode: str = "default",
        hiding: str = "filter",
        reminders: Reminders | Sequence[Reminder] | None = None,
    ) -> None:
        self.working_set = working_set if working_set is not None else WorkingSet()
        if not isinstance(self.working_set, WorkingSet):
            raise OptionError(f"working_set must be a WorkingSet, got {type(self.working_set).__name__}")
        self.mode: Mode = check_mode(mode)
        self.hiding: ToolHiding = check_hiding(hiding)
        if reminders is not None and not isinstance(reminders, Reminders | Sequence):
            raise ArgumentTypeError(
                f"reminders must be a Reminders, a list of Reminder or None, got {type(reminders).__name__}"
            )
        self.reminders = reminders if isinstance(reminders, Reminders) else Reminders(list(reminders or []))
        self.events: list[dict[str, Any]] = []
        #: Every request compiled, in order.
        self.requests: list[CompiledRequest] = []
        self._request_tokens: list[int] = []
        self._prefix_tokens: list[int] = []
        self._previous: _Previous | None = None
        self._counter: _Counter | None = None
        self._registry: Registry | None = None
        self._notice: list[str] = []
        self._turns = 0
        self._scanned: tuple[Conversation | None, int] = (None, 0)
        self._catalogs: dict[tuple[int, str, str, str, bool], _Catalog] = {}
        self.working_set.effective()  # a tool name two sources claim is refused here, not at the first request
        if self.mode == "plan":
            self._notice.append(plan_notice(self.registry, self.hiding, root=self.working_set.root))

    # -- sources -----------------------------------------------------------------------------

    @property
    def registry(self) -> Registry:
        """The effective registry (built once; :meth:`refresh` rebuilds it)."""
        if self._registry is None:
            self._registry = self.working_set.effective()
        return self._registry

    def refresh(self, *, git: bool = True) -> None:
        """Read the workspace's project instructions and environment again and rebuild the
        registry; a section that changed is reported by the next request."""
        _checks.flag("git", git)
        ws = self.working_set
        if ws.workspace is not None:
            ws.instructions = project_instructions(ws.workspace, names=ws.instruction_names)
            ws.environment = environment_section(ws.workspace, git=git)
        self._registry = None

    def set_mode(self, mode: str) -> None:
        """Change the mode. The next request carries a notice of it (and fires ``on="mode"``
        reminders); with ``filter`` its catalog changes too."""
        new = check_mode(mode)
        if new == self.mode:
            return
        self.events.append({"event": "mode_changed", "from": self.mode, "to": new})
        self.mode = new
        if new == "plan":
            self._notice.append(plan_notice(self.registry, self.hiding, root=self.working_set.root))
        else:
            self._notice.append("Default mode: every tool of the session may be used again.")
        self.reminders.mode_changed(new)

    # -- compile -----------------------------------------------------------------------------

    def compile(
        self,
        conversation: Conversation,
        *,
        style: str | None = None,
        max_output_tokens: int = 4_096,
        context_window: int | None = None,
        record: bool = True,
    ) -> CompiledRequest:
        """Compile the next request over ``conversation``: sections, the mode's catalog, and the
        reminders due (they are used up). Counts turns (user inputs) and context pressure for the
        reminders. With ``record``, the request counts as sent over ``conversation`` (section
        change events, the cache-prefix metric); else call :meth:`record` with the history
        actually sent (a Session does, after compaction)."""
        _checks.count("max_output_tokens", max_output_tokens, minimum=1)
        _checks.optional_count("context_window", context_window, minimum=1)
        _checks.flag("record", record)
        if not isinstance(conversation, Conversation):
            raise ArgumentTypeError(f"compile() takes a Conversation, got {type(conversation).__name__}")
        if self._counter is None or self._counter.encoding != conversation.encoding:
            self._counter = _Counter(conversation.encoding)
        tool_style = _check_style(style if style is not None else _STYLE_OF.get(conversation.format, "openai"))
        for _ in range(self._new_inputs(conversation)):
            self._turns += 1
            self.reminders.turn(self._turns)
        if context_window is not None:
            self.reminders.pressure(self._estimate(conversation) + max_output_tokens, context_window)
        due = self.reminders.take()
        for _, text in due:
            self.events.append({"event": "reminder", "text": text})
        texts = [*self._notice, *(text for rule, text in due if not rule.persist)]
        self._notice = []
        compiled = _compile(
            conversation,
            self.working_set,
            mode=self.mode,
            hiding=self.hiding,
            style=tool_style,
            max_output_tokens=max_output_tokens,
            reminders=texts,
            count=self._counter,
            registry=self.registry,
            catalog=self._catalog(tool_style),
        )
        compiled.persist = [text for rule, text in due if rule.persist]
        if record:
            self.record(conversation, compiled)
        return compiled

    def _catalog(self, style: ToolStyle) -> _Catalog:
        reg = self.registry
        key = (reg.version, self.mode, self.hiding, style, self.working_set.root)
        got = self._catalogs.get(key)
        if got is None:
            if len(self._catalogs) > 16:
                self._catalogs.clear()
            got = self._catalogs[key] = _catalog(reg, self.mode, self.hiding, style, self.working_set.root)
        return got

    def _new_inputs(self, conversation: Conversation) -> int:
        """User inputs (not tool results) added since the last compile: the new messages of the
        same conversation; after a compaction replaced it, its last message; at first, all."""
        seen, length = self._scanned
        n = len(conversation)
        if seen is None:
            start = 0
        elif conversation is seen:
            start = min(length, n)
        else:
            start = max(0, n - 1)
        self._scanned = (conversation, n)
        return sum(1 for i in range(start, n) if _is_input(conversation[i]))

    def _estimate(self, conversation: Conversation) -> int:
        prev = self.requests[-1].tokens if self.requests else None
        outside = (prev["system"] + prev["tools"]) if prev else 0
        return outside + conversation.tokens

    def record(self, conversation: Conversation, compiled: CompiledRequest) -> None:
        """``compiled`` was sent over ``conversation``: report what changed since the previous
        request and measure the part of it that is a prefix of the previous one."""
        self.requests.append(compiled)
        pieces = [("tool_definitions", compiled.tools_json)] if compiled.tools else []
        pieces += [(s.name, s.text) for s in compiled.sections]
        texts = dict(pieces)
        prev = self._previous
        if prev is not None and prev.texts == texts:
            head = prev.head  # unchanged: not counted again
        else:
            head = Conversation([{"role": "system", "content": t} for _, t in pieces], format="jsonl")
        head_tokens = head.tokens
        history = conversation.tokens
        request = head_tokens + history + compiled.tokens["reminders"]
        call = len(self._request_tokens)
        if prev is None:
            prefix = 0
        else:
            prefix = shared_prefix_tokens(prev.head, head)
            if prefix == head_tokens and prev.head.tokens == head_tokens:
                if conversation is prev.conversation and len(conversation) >= prev.length:
                    prefix += prev.history_tokens
                else:
                    prefix += shared_prefix_tokens(prev.conversation.slice(0, prev.length), conversation)
        now = {**compiled.tokens["sections"], "tool_definitions": compiled.tokens["tools"]}
        if prev is not None:
            for name in dict.fromkeys([*prev.texts, *texts]):
                before, after = prev.texts.get(name), texts.get(name)
                if before == after:
                    continue
                kind = "added" if before is None else "removed" if after is None else "changed"
                self.events.append(
                    {
                        "event": "tools_changed" if name == "tool_definitions" else f"section_{kind}",
                        "section": name,
                        "call": call,
                        "tokens_before": prev.sections.get(name, 0),
                        "tokens_after": now.get(name, 0),
                        "cache_prefix_tokens": prefix,
                        "request_tokens": request,
                    }
                )
        self._request_tokens.append(request)
        self._prefix_tokens.append(prefix)
        self._previous = _Previous(
            head,
            conversation,
            len(conversation),
            history,
            now,
            texts,
        )

    def replay(self) -> Replay:
        """The requests so far as a :class:`agentcontext.compiler.prefix.Replay`: request tokens and the
        part of each that is a prefix of the previous request (``cache_stability``)."""
        n = len(self._request_tokens)
        return Replay(list(self._request_tokens), list(self._prefix_tokens), [], list(self._request_tokens[:n]))

    # -- execution ---------------------------------------------------------------------------

    def execute(
        self,
        name: str,
        arguments: str,
        fallback: Mapping[str, Callable[[Any], Any]] | None = None,
        *,
        read_only: Collection[str] = (),
    ) -> str | None:
        """Run tool call ``name`` (``arguments`` as JSON text) through the full registry. A tool
        the mode hides, or outside the bundle, is refused with a tool error that says why and
        never runs. A ``fallback`` function (a tool without metadata) runs in default mode; in
        plan mode only when its name is in ``read_only``. Returns None when neither the registry
        nor ``fallback`` has ``name`` (the caller decides)."""
        tool = self.registry.get(name)
        if tool is None and self.working_set.registry is not None:
            tool = self.working_set.registry.get(name)  # outside the bundle: still refused below
            if tool is not None:
                return self._refuse(name, "it is not in this session's tool bundle")
        if tool is not None:
            why = hidden_reason(tool, self.mode, root=self.working_set.root)
            if why is not None:
                return self._refuse(name, why, mode=True)
        elif self.mode == "plan" and fallback is not None and name in fallback and name not in read_only:
            return self._refuse(
                name, "it has no metadata in the registry, so it cannot be shown to be read-only", mode=True
            )
        self.reminders.tool_called(name, arguments)
        fn: Callable[[Any], Any] | None = tool.function if tool is not None else None
        if fn is None and fallback is not None:
            fn = fallback.get(name)
        if fn is None:
            return None
        try:
            parsed: Any = _checks.json_arguments(arguments, f"the arguments of {name!r}") if arguments else {}
        except OptionError as exc:  # nested too deeply: never run
            return f"Error: {exc}. The call was not run."
        except ValueError:
            parsed = arguments
        out = fn(parsed)
        return out if isinstance(out, str) else json.dumps(out)

    def _refuse(self, name: str, why: str, *, mode: bool = False) -> str:
        self.events.append({"event": "tool_refused", "tool": name, "mode": self.mode, "reason": why})
        where = f" in {self.mode} mode" if mode else ""
        return f"Error: tool {name!r} is not available{where}: {why}. The call was not run."

    # -- goal --------------------------------------------------------------------------------

    def after_reply(self, conversation: Conversation) -> str | None:
        """The agent ended a reply naturally: in default mode, let the goal's judge look at the
        evidence. Returns the continuation input to add, or None."""
        goal = self.working_set.goal
        if goal is None or goal.status != "active" or self.mode != "default":
            return None
        workspace = self.working_set.workspace
        if isinstance(goal.judge, EvidenceJudge) and goal.judge.workspace is None and workspace is not None:
            goal.judge = goal.judge.within(workspace)  # its paths are this workspace's
        continuation = goal.check(conversation)
        verdict = goal.verdicts[-1]
        self.events.append({"event": "goal_verdict", "met": verdict.met, "missing": verdict.missing})
        status: str = goal.status
        if status == "met":
            self.events.append({"event": "goal_met"})
        elif status == "limit":
            self.events.append({"event": "goal_limit", "continuations": goal.continuations})
        else:
            self.events.append({"event": "goal_continued", "continuation": goal.continuations})
        return continuation


def _is_input(message: Mapping[str, Any]) -> bool:
    return message.get("role") == "user" and not _is_result(message)
