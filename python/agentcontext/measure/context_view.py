"""A /context view: one request broken down by where its tokens come from, and the window around it.

:func:`context_view` takes a compiled request with its history (or a session, a request body, or
a history with its system prompt and tools) and returns a :class:`ContextView`: each system-prompt
section (base instructions, tool catalog, skills catalog, environment, project instructions, memory
rules and index, goal), the tool definitions, this request's reminders, the system messages of the
history, the pinned messages, the summary and the task ledger, the rest of the history by role and,
within the assistant and tool roles, by tool — then the reserved output, the safety margin, the
autocompact buffer and the free space. Tokens and the share of the window, for each.

The request's parts add up to the request's exact count, the one the budget uses
(:attr:`ContextView.request_tokens`): for a compiled request ``tokens["input_total"]`` (system
prompt, tool definitions, history and reminders, each counted as the compiler counts it); for a
session without a compiler the session's own count of what travels outside the history plus the
history's. Texts counted together are split by *framing*: each piece gets what it adds to the count
of the text before it (the system prompt's sections joined by newlines, the tool definitions in
their JSON array), so the pieces telescope to the count of the whole even where a token spans a
boundary; a piece's share can then differ by a token from its count alone. History messages are
counted one by one (their overhead included), which adds up exactly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentcontext import _checks
from agentcontext._core import Conversation, count_tokens
from agentcontext.compaction.ledger import LEDGER_MARKER
from agentcontext.compaction.policy import CompactionPolicy, resolve_policy
from agentcontext.compaction.summary_text import SUMMARY_MARKER
from agentcontext.compiler.sections import CompiledRequest
from agentcontext.errors import ArgumentTypeError, OptionError, UnknownModelError
from agentcontext.types import Encoding, FormatOrAuto

__all__ = [
    "SECTION_HEADINGS",
    "SECTION_LABELS",
    "ContextPart",
    "ContextView",
    "context_view",
    "framed",
    "split_sections",
]

#: How each compiled section is named in the view.
SECTION_LABELS: dict[str, str] = {
    "base": "base instructions",
    "tools": "tool catalog",
    "skills": "skills catalog",
    "environment": "environment",
    "instructions": "project instructions",
    "memory": "memory rules and index",
    "goal": "goal",
}

#: The kinds of part, in the order the view lists them.
KINDS = (
    "section", "tools", "reminders", "system", "pinned", "summary", "ledger", "history",
    "reserved_output", "safety_margin", "autocompact_buffer", "free",
)  # fmt: skip
#: The kinds that are not part of the request: the room around it in the window.
WINDOW_KINDS = frozenset({"reserved_output", "safety_margin", "autocompact_buffer", "free"})


@dataclass(frozen=True)
class ContextPart:
    """One source of tokens: its ``name``, its ``kind`` (see :data:`KINDS`), its tokens and their
    share of the window; ``parts`` break it down further (their tokens add up to its own)."""

    name: str
    kind: str
    tokens: int
    share: float
    parts: tuple[ContextPart, ...] = ()

    @property
    def in_request(self) -> bool:
        """Whether these tokens are sent (not room kept free in the window)."""
        return self.kind not in WINDOW_KINDS

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "tokens": self.tokens, "share": self.share}
        if self.parts:
            out["parts"] = [p.to_dict() for p in self.parts]
        return out


@dataclass(frozen=True)
class ContextView:
    """A request by source and the window around it (see :mod:`agentcontext.measure.context_view`).

    The parts in the request (:attr:`request_parts`) add up to :attr:`request_tokens`; with the
    reserved output, the safety margin, the autocompact buffer and the free space they add up to
    the window, unless the request is :attr:`over` the room the window leaves it."""

    parts: tuple[ContextPart, ...]
    #: The request's exact count, the one the budget uses.
    request_tokens: int
    context_window: int
    reserved_output: int
    safety_margin: int
    #: Where auto compaction starts, in tokens of the whole request.
    trigger_tokens: int
    #: Tokens over the room the window leaves the request (0 when it fits).
    over: int
    encoding: Encoding
    #: Where the request came from (``"compiled"``, ``"session"``, ``"body"``, ``"conversation"``).
    source: str = "conversation"
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def request_parts(self) -> list[ContextPart]:
        return [p for p in self.parts if p.in_request]

    @property
    def free_tokens(self) -> int:
        return sum(p.tokens for p in self.parts if p.kind == "free")

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "encoding": self.encoding,
            "request_tokens": self.request_tokens,
            "context_window": self.context_window,
            "reserved_output": self.reserved_output,
            "safety_margin": self.safety_margin,
            "trigger_tokens": self.trigger_tokens,
            "over": self.over,
            "parts": [p.to_dict() for p in self.parts],
            "notes": list(self.notes),
        }

    def format(self) -> str:
        """The view as a text table (what ``agentcontext inspect --by-source`` prints)."""
        from agentcontext.measure.context_render import view_text

        return view_text(self)

    def __str__(self) -> str:
        return self.format()

    def _repr_html_(self) -> str:
        from agentcontext.display import safe_html
        from agentcontext.measure.context_render import view_html

        return safe_html(view_html, self)


# -- counting by framing ------------------------------------------------------------------------


def framed(texts: Sequence[str], joiner: str, encoding: Encoding, *, opening: str = "", closing: str = "") -> list[int]:
    """The tokens each of ``texts`` adds to ``opening + joiner.join(texts) + closing``: piece ``k``
    gets the count of the text through it less the count of the text before it (the joiner before
    it is its own, the opening the first's, the closing the last's), so the pieces add up to the
    count of the whole exactly."""
    if not texts:
        return []
    out: list[int] = []
    before = count_tokens(opening, encoding=encoding) if opening else 0
    text = opening
    for k, piece in enumerate(texts):
        text = text + (joiner if k else "") + piece
        now = count_tokens(text + closing if k == len(texts) - 1 else text, encoding=encoding)
        out.append(now - before)
        before = now
    out[0] += count_tokens(opening, encoding=encoding) if opening else 0
    return out


#: The heading each compiled section after the base instructions opens with, in prompt order.
SECTION_HEADINGS: tuple[tuple[str, str], ...] = (
    ("# Tools", "tools"), ("# Skills", "skills"), ("# Environment", "environment"),
    ("# Project instructions", "instructions"), ("# Memory", "memory"), ("# Goal", "goal"),
)  # fmt: skip


def split_sections(text: str) -> list[tuple[str, str]]:
    """A system prompt the compiler wrote, cut back into its sections (label, text) where a line
    is one of :data:`SECTION_HEADINGS`, each at most once and in prompt order; ``"\n".join`` of
    the texts is ``text``. A prompt with no such line is one ``"system prompt"``."""
    cuts: list[tuple[int, str]] = []
    pos = 0
    for heading, name in SECTION_HEADINGS:
        at = text.find("\n" + heading + "\n", pos)
        if at < 0 and text.endswith("\n" + heading):
            at = len(text) - len(heading) - 1
        if at >= pos:
            cuts.append((at, name))
            pos = at + 1
    if not cuts:
        return [("system prompt", text)]
    out = [(SECTION_LABELS["base"], text[: cuts[0][0]])]
    for k, (at, name) in enumerate(cuts):
        end = cuts[k + 1][0] if k + 1 < len(cuts) else len(text)
        out.append((SECTION_LABELS[name], text[at + 1 : end]))
    return out


def _tool_name(definition: Mapping[str, Any]) -> str:
    fn = definition.get("function")
    name = definition.get("name") or (fn.get("name") if isinstance(fn, Mapping) else None)
    return str(name or definition.get("type") or "tool")


def _tool_parts(tools: Sequence[Mapping[str, Any]], encoding: Encoding) -> list[tuple[str, int]]:
    """Each tool definition's share of the count of ``json.dumps(tools)`` (how the compiler and a
    session count them), by framing within the JSON array."""
    texts = [json.dumps(t) for t in tools]
    counts = framed(texts, ", ", encoding, opening="[", closing="]")
    return [(_tool_name(t), n) for t, n in zip(tools, counts, strict=True)]


# -- the history --------------------------------------------------------------------------------


def _first_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for block in content:
            if isinstance(block, Mapping) and isinstance(block.get("text"), str):
                return str(block["text"])
    return ""


def _classify(conv: Conversation) -> dict[str, list[int]]:
    """Message indices of the history by what they are: ``system`` (the leading system and
    developer messages), ``pinned``, ``summary``, ``ledger`` and ``rest``."""
    out: dict[str, list[int]] = {"system": [], "pinned": [], "summary": [], "ledger": [], "rest": []}
    pinned = set(conv.pinned)
    preamble = conv.preamble
    for i in range(len(conv)):
        if i < preamble:
            out["system"].append(i)
        elif i in pinned:
            out["pinned"].append(i)
        else:
            text = _first_text(conv[i])
            kind = (
                "summary" if text.startswith(SUMMARY_MARKER) else "ledger" if text.startswith(LEDGER_MARKER) else "rest"
            )
            out[kind].append(i)
    return out


def _picked(conv: Conversation, indices: Sequence[int]) -> Conversation:
    """The messages ``indices`` (sorted) of ``conv`` as one conversation, sliced by runs."""
    runs: list[tuple[int, int]] = []
    for i in indices:
        if runs and runs[-1][1] == i:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    if len(runs) == 1 and runs[0] == (0, len(conv)):
        return conv
    return Conversation.concat([conv.slice(lo, hi) for lo, hi in runs]) if runs else conv.slice(0, 0)


def _history_parts(rest: Conversation) -> list[tuple[str, int, list[tuple[str, int]]]]:
    """The history's messages by role, with the assistant's tool calls and the tool results by
    tool inside their role: ``(role, tokens, [(name, tokens), ...])``; each role's inner parts add
    up to it (the text, thinking and message framing of a role are a part of their own)."""
    by_role = rest.tokens_by_role()
    by_tool = rest.tokens_by_tool()
    calls_at = [i for i in range(len(rest)) if rest[i].get("tool_calls")]
    calls = {name: t["tokens"] for name, t in _picked(rest, calls_at).tokens_by_tool().items()} if calls_at else {}
    out: list[tuple[str, int, list[tuple[str, int]]]] = []
    for role in ("system", "developer", "user", "assistant", "tool"):
        tokens = by_role.get(role, 0)
        inner: list[tuple[str, int]] = []
        if role == "assistant" and calls:
            inner = [(f"calls: {name}", n) for name, n in sorted(calls.items(), key=lambda kv: -kv[1])]
            inner.insert(0, ("text, thinking and framing", tokens - sum(calls.values())))
        elif role == "tool" and by_tool:
            results = {name: t["tokens"] - calls.get(name, 0) for name, t in by_tool.items()}
            inner = [(f"results: {name}", n) for name, n in sorted(results.items(), key=lambda kv: -kv[1]) if n]
            if tokens - sum(results.values()):
                inner.append(("message framing", tokens - sum(results.values())))
        if tokens or inner:
            out.append((role, tokens, inner))
    return out


# -- building the view --------------------------------------------------------------------------


@dataclass
class _Head:
    """What a request carries outside its history: named pieces with their tokens, by kind."""

    pieces: list[tuple[str, str, int, list[tuple[str, int]]]] = field(default_factory=list)

    def add(self, kind: str, name: str, tokens: int, inner: list[tuple[str, int]] | None = None) -> None:
        self.pieces.append((kind, name, tokens, inner or []))

    @property
    def tokens(self) -> int:
        return sum(p[2] for p in self.pieces)


def _compiled_head(compiled: CompiledRequest, encoding: Encoding) -> _Head:
    """The compiled request's system prompt by section (framed within the prompt, so they add up
    to ``tokens["system"]``), its tool definitions (``tokens["tools"]``, by tool) and reminders."""
    head = _Head()
    t = compiled.tokens
    texts = [s.text for s in compiled.sections]
    counts = framed(texts, "\n", encoding)
    if sum(counts) != t["system"]:
        raise OptionError("the compiled request was counted in another encoding than its conversation's")
    for s, n in zip(compiled.sections, counts, strict=True):
        head.add("section", SECTION_LABELS.get(s.name, s.name), n)
    if compiled.tools:
        inner = _tool_parts(compiled.tools, encoding)
        if sum(n for _, n in inner) != t["tools"]:
            inner = []  # definitions changed since they were counted: the total is still the request's
        head.add("tools", "tool definitions", t["tools"], inner)
    if t["reminders"]:
        head.add("reminders", "reminders (this request only)", t["reminders"])
    return head


def _outside_head(
    system: str | None, tools: Sequence[Mapping[str, Any]] | None, reminders: str, encoding: Encoding
) -> _Head:
    """A session's head without a compiler: the system prompt, tool definitions and reminders
    counted as one text (as the session counts them), framed into their pieces."""
    head = _Head()
    tools_json = json.dumps(list(tools)) if tools else ""
    pieces = [(k, n, t) for k, n, t in (("section", "system prompt", system or ""), ("tools", "tool definitions", tools_json), ("reminders", "reminders (this request only)", reminders)) if t]  # fmt: skip
    counts = framed([t for _, _, t in pieces], "", encoding)
    for (kind, name, _), n in zip(pieces, counts, strict=True):
        inner = _tool_parts(list(tools or []), encoding) if kind == "tools" else []
        if inner and sum(c for _, c in inner) != n:
            inner = []  # counted inside one text: the tool split would not add up exactly
        head.add(kind, name, n, inner)
    return head


def _body_head(body: Mapping[str, Any], encoding: Encoding) -> tuple[_Head, Any, FormatOrAuto | None]:
    """A request body's system prompt (Anthropic ``system`` blocks, Responses ``instructions``),
    tool definitions, and messages; and its format when it says."""
    head = _Head()
    system = body.get("system", body.get("instructions"))
    texts = (
        [system]
        if isinstance(system, str)
        else [str(b.get("text", "")) for b in system or [] if isinstance(b, Mapping)]
    )
    texts = [t for t in texts if t]
    if len(texts) == 1:
        named = split_sections(texts[0])
    else:
        named = [(f"system block {k + 1}", t) for k, t in enumerate(texts)]
    for (label, _), n in zip(named, framed([t for _, t in named], "\n", encoding), strict=True):
        head.add("section", label, n)
    tools = body.get("tools")
    if isinstance(tools, list) and tools:
        inner = _tool_parts(tools, encoding)
        head.add("tools", "tool definitions", count_tokens(json.dumps(tools), encoding=encoding), inner)
    if "input" in body:
        given = body["input"]
        return head, [{"role": "user", "content": given}] if isinstance(given, str) else given, "responses"
    return head, body.get("messages", []), "anthropic" if "system" in body else None


def _policy(policy: Any) -> CompactionPolicy:
    got = getattr(policy, "policy", policy)  # a Compactor
    if not isinstance(got, CompactionPolicy | str) and getattr(got, "compaction", None) is None:
        raise ArgumentTypeError(
            f"policy must be a preset name, a CompactionPolicy or a Compactor, got {type(policy).__name__}"
        )
    return resolve_policy(got)


def _history(conversation: Any, fmt: FormatOrAuto | None = None, encoding: Encoding | None = None) -> Conversation:
    if isinstance(conversation, Conversation):
        return conversation
    if isinstance(conversation, str | bytes) or not isinstance(conversation, Sequence):
        raise ArgumentTypeError(
            f"conversation must be a Conversation or a list of messages, got {type(conversation).__name__}"
        )
    options: dict[str, Any] = {"encoding": encoding} if encoding else {}
    return Conversation([dict(m) for m in conversation], format=fmt or "auto", **options)


def _parts(head: _Head, history: Conversation, window: int) -> list[ContextPart]:
    """The request's parts: the head's, then the history's (system messages, pinned, summary,
    ledger, then the rest by role)."""

    def part(name: str, kind: str, tokens: int, inner: Sequence[tuple[str, int]] = ()) -> ContextPart:
        children = tuple(ContextPart(n, kind, t, t / window) for n, t in inner)
        return ContextPart(name, kind, tokens, tokens / window, children)

    out = [part(name, kind, tokens, inner) for kind, name, tokens, inner in head.pieces]
    groups = _classify(history)
    totals = history.message_tokens()
    for i in groups["system"]:
        out.append(part(f"{history[i]['role']} message {i}", "system", totals[i], _message_sections(history, i)))
    for kind, label in (("pinned", "pinned messages"), ("summary", "summary"), ("ledger", "task ledger")):
        if groups[kind]:
            inner = [(f"message {i}", totals[i]) for i in groups[kind]] if len(groups[kind]) > 1 else []
            out.append(part(label, kind, sum(totals[i] for i in groups[kind]), inner))
    rest = _picked(history, groups["rest"])
    for role, tokens, inner in _history_parts(rest):
        out.append(part(f"history: {role}", "history", tokens, inner))
    return out


def _message_sections(history: Conversation, i: int) -> list[tuple[str, int]]:
    """A system message's text by compiled section (framed within it) and its message framing,
    adding up to the message's tokens; none when it holds no compiled sections."""
    content = history[i].get("content")
    if not isinstance(content, str):
        return []
    named = split_sections(content)
    if len(named) < 2:
        return []
    counts = framed([t for _, t in named], "\n", history.encoding)
    framing = history.message_tokens()[i] - sum(counts)
    return [*((label, n) for (label, _), n in zip(named, counts, strict=True)), ("message framing", framing)]


def _window_parts(
    request: int, history: int, policy: CompactionPolicy, window: int, reserved: int
) -> tuple[list[ContextPart], int, int]:
    """The room around the request: reserved output, safety margin, autocompact buffer (what the
    trigger keeps free above it) and free space (up to the trigger); the trigger in request tokens
    and the tokens over the room."""
    p = replace(policy, context_window=window, reserved_output=reserved)
    available = p.available
    outside = request - history
    trigger = min(available, outside + p.with_overhead(min(outside, window)).trigger_tokens)
    buffer = max(0, available - max(trigger, request))
    free = max(0, trigger - request)
    rows = [
        ("reserved output", "reserved_output", reserved),
        ("safety margin", "safety_margin", p.safety_margin),
        ("autocompact buffer", "autocompact_buffer", buffer),
        ("free space", "free", free),
    ]
    return [ContextPart(n, k, t, t / window) for n, k, t in rows], trigger, max(0, request - available)


def context_view(
    request: Any,
    conversation: Conversation | Sequence[Mapping[str, Any]] | None = None,
    *,
    system: str | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    policy: Any = "openharness",
    context_window: int | None = None,
    max_output_tokens: int | None = None,
) -> ContextView:
    """The request by source and the window around it (see :mod:`agentcontext.measure.context_view`).

    ``request`` is one of: a :class:`~agentcontext.compiler.CompiledRequest`, with ``conversation``
    the history it was compiled over; a :class:`~agentcontext.Session` (its compiled request, or
    its system prompt and tools, and its history, window and output reserve); a request body as
    a provider receives it (Anthropic ``system``/``tools``/``messages``, OpenAI Chat
    ``messages``/``tools``, Responses ``instructions``/``tools``/``input``); or a history (a
    :class:`~agentcontext.Conversation` or messages) with its ``system`` prompt and ``tools``.

    The window, the output reserve, the safety margin and the trigger are the ``policy``'s (a
    preset name, a :class:`~agentcontext.CompactionPolicy` or a :class:`~agentcontext.Compactor`);
    ``context_window`` and ``max_output_tokens`` override them (a compiled request's
    ``tokens["reserved_output"]``, a session's ``max_output_tokens`` and a request body's
    ``max_tokens`` are used when not given; a body's ``model`` gives its window when the window
    table knows it).

    Raises:
        OptionError: ``conversation`` is not the history the request was compiled over.
        ArgumentTypeError: arguments of the wrong type.
    """
    _checks.optional_count("context_window", context_window, minimum=1)
    _checks.optional_count("max_output_tokens", max_output_tokens, minimum=1)
    pol = _policy(getattr(getattr(request, "compactor", None), "policy", None) or policy)
    notes: list[str] = []
    if isinstance(request, Mapping):
        pol = _model_policy(pol, request.get("model"), context_window, notes)
    history, head, total, source, reserved = _read(request, conversation, system, tools, pol.encoding)
    reserved = max_output_tokens if max_output_tokens is not None else reserved
    window = context_window if context_window is not None else pol.context_window
    reserved = int(reserved) if reserved is not None else pol.reserved_output
    parts = _parts(head, history, window)
    if sum(p.tokens for p in parts) != total:
        raise AssertionError(f"the parts ({sum(p.tokens for p in parts):,}) do not add up to the request ({total:,})")
    room, trigger, over = _window_parts(total, history.tokens, pol, window, reserved)
    return ContextView(
        tuple(parts + room),
        total,
        window,
        reserved,
        pol.safety_margin,
        trigger,
        over,
        history.encoding,
        source,
        tuple(notes),
    )


def _read(
    request: Any,
    conversation: Any,
    system: str | None,
    tools: Sequence[Mapping[str, Any]] | None,
    encoding: Encoding,
) -> tuple[Conversation, _Head, int, str, int | None]:
    """The history, head, request tokens, source kind and output reserve (None: not said) of
    whatever :func:`context_view` was given (``encoding``: a request body's counter)."""
    if isinstance(request, CompiledRequest):
        if conversation is None:
            raise OptionError("a compiled request needs the conversation it was compiled over")
        history = _history(conversation)
        if history.tokens != request.tokens["history_total"]:
            raise OptionError(
                f"the conversation ({history.tokens:,} tokens) is not the history the request was compiled over "
                f"({request.tokens['history_total']:,} tokens)"
            )
        head = _compiled_head(request, history.encoding)
        return history, head, request.tokens["input_total"], "compiled", request.tokens["reserved_output"]
    if hasattr(request, "compactor") and hasattr(request, "conversation"):
        history, head, total = _session(request)
        return history, head, total, "session", request.max_output_tokens
    if isinstance(request, Mapping):
        head, messages, fmt = _body_head(request, encoding)
        history = _history(messages, fmt, encoding)
        reserved = request.get("max_tokens") or request.get("max_output_tokens") or request.get("max_completion_tokens")
        return history, head, head.tokens + history.tokens, "body", reserved
    history = _history(request)
    head = _outside_head(system, tools, "", history.encoding)
    return history, head, head.tokens + history.tokens, "conversation", None


def _session(session: Any) -> tuple[Conversation, _Head, int]:
    """A session's history, head and request tokens, counted as the session counts them before a
    call (its compiled request's counts, or the system prompt, tools and reminders as one text)."""
    history = session.conversation
    compiled = getattr(session, "compiled", None)
    if compiled is not None and not session.tools:
        head = _compiled_head(compiled, history.encoding)
        return (
            history,
            head,
            history.tokens + compiled.tokens["system"] + compiled.tokens["tools"] + compiled.tokens["reminders"],
        )
    system = compiled.system if compiled is not None else session.system
    tools = [*(compiled.tools or []), *(session.tools or [])] if compiled is not None else session.tools
    reminders = "".join(compiled.reminders) if compiled is not None else ""
    head = _outside_head(system or None, tools or None, reminders, "o200k_base")
    return history, head, history.tokens + head.tokens


def _model_policy(policy: CompactionPolicy, model: Any, window: int | None, notes: list[str]) -> CompactionPolicy:
    """``policy`` for a request body's ``model`` when the window table knows it (and no window was given)."""
    if window is not None or not isinstance(model, str) or not model:
        return policy
    try:
        return policy.for_model(model)
    except UnknownModelError:
        notes.append(f"model {model!r} is not in the window table: the policy's window is used")
        return policy
