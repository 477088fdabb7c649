"""Probe facts: what a compacted working set should still hold, found in the raw messages.

This module is the measuring stick for compaction, so it shares no code with what it measures:
it does not use the handoff extraction (``Conversation.handoff``) that the offline summarizer
writes its summary from, nor the summarizer's identifier patterns, nor the library's text
walkers. It reads the messages in the library's own format (``to_jsonl``) with its own walker
and a handful of regular expressions, documented here:

========================  ==========================================================================
kind                      what
========================  ==========================================================================
``latest_ask``            the latest real user request: its first and last 60 characters
``user_message``          the first 60 characters of every real user message
``user_path``             file paths in user text
``call_path``             file paths in tool-call inputs (arguments, commands) and assistant text
``exception``             exception and error type names in tool results (``KeyError``, ``E0502``)
``test``                  test ids (``tests/test_x.py::test_y``) and test function names (``test_*``)
                          in tool inputs and results
``identifier``            URLs, git branch names, commit hashes and ticket ids in user text and
                          tool inputs
``constraint``            a sentence of a real user message that states a constraint or a
                          correction ("never ...", "don't ...", "use X not Y", "instead of", "must",
                          "always", "avoid", "only"), whitespace folded, its first
                          :data:`CONSTRAINT_CHARS` characters; not in fenced or indented code,
                          tracebacks or error lines, not a harness command line (``/add x``)
``artifact``              the artifact trail: each file the agent read, created, edited or deleted —
                          the path arguments of file tools (``file_path``, ``path``, ...; not of
                          search and listing tools), the paths in shell commands (heredoc bodies
                          left out) and in patch headers (``*** Update File: x``), and the files of
                          search/replace edit blocks in assistant text (aider). Each such path is
                          also a ``call_path`` probe (the older kind is unchanged), so
                          :func:`retention` counts it once: by kind, not in the total (:data:`VIEWS`);
                          the artifact probe's index is the first message that touches the file
========================  ==========================================================================

Other code picks probes by kind (``[p for p in extract(c) if p.kind == "constraint"]``): the kinds
and their texts are stable.

A "real" user message is a user turn with text that is not only tool results and is not one
of the texts harnesses put in user turns without the user typing them: an earlier compaction's
summary or task ledger, a task notification, an interruption marker, command output echoed by the harness,
or a system reminder.

Paths in tool *results* are not probes: they are dominated by directory listings and search
hits, and a path that mattered is named again by the agent in a later call or message.

The ``latest_ask`` probe is found by its head and tail (:func:`found_in`); :func:`found_whole`
asks for its whole text (the request carried verbatim).

Every text is compared with whitespace runs folded to one space, so a summary that re-wraps a
message still holds it; paths, tests and identifiers also count when written JSON-escaped
(inside a tool input). Retention is pooled: :func:`retention` counts kept and total probes, so
that averages over many transcripts weigh a long session by its facts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from agentcontext._core import Conversation

__all__ = [
    "CONSTRAINT_CHARS",
    "KINDS",
    "OPENING",
    "VIEWS",
    "Probe",
    "Retention",
    "extract",
    "fold",
    "found_in",
    "found_whole",
    "is_user_request",
    "request_text",
    "retention",
    "working_set_text",
]

ProbeKind = Literal[
    "latest_ask", "user_message", "user_path", "call_path", "exception", "test", "identifier", "constraint", "artifact"
]
#: Every probe kind, in report order.
KINDS: tuple[ProbeKind, ...] = (
    "latest_ask",
    "user_message",
    "user_path",
    "call_path",
    "exception",
    "test",
    "identifier",
    "constraint",
    "artifact",
)
#: Kinds that are a view of other probes (each ``artifact`` is also a ``call_path``): reported by
#: kind, left out of a :class:`Retention`'s total so that a fact counts once.
VIEWS: frozenset[str] = frozenset({"artifact"})
#: How many characters of a user message (after folding whitespace) make its probe.
OPENING = 60
#: How many characters of a constraint sentence (after folding whitespace) make its probe.
CONSTRAINT_CHARS = 200

# Texts harnesses place in user turns that the user did not type (every text of this library's opens
# with ``[agentcontext: ``: a summary, the task ledger, a marker of dropped messages).
_NOT_ASKED = re.compile(
    r"^\s*(?:\[agentcontext: |This session is being continued from a previous"
    r"|<task-notification>|<local-command-|<command-name>|<command-message>|<system-reminder>"
    r"|\[Request interrupted by user|Caveat: The messages below were generated|<bash-(?:input|stdout|stderr)>"
    r"|The conversation history before this point was compacted|Another language model started to solve)",
)
_PATH = re.compile(
    r"(?<![\w@:/.-])(?:~?/|\.{1,2}/)?(?:[\w.-]+/)+[\w.-]*\w"  # with a slash: src/app.py, /etc/hosts, ./x/y
    r"|(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\.(?:py|pyi|rs|ts|tsx|js|jsx|mjs|go|java|kt|c|h|cc|cpp|hpp|rb|php|cs|swift"
    r"|md|rst|txt|toml|yaml|yml|json|jsonl|cfg|ini|sh|sql|html|css|lock|ex|exs|erl|scala|vue|svelte)\b"
)
_URL = re.compile(r"https?://[^\s\"'<>()\]\\]+")
_EXCEPTION = re.compile(r"\b[A-Z][A-Za-z0-9]*(?:Error|Exception)\b|\b[A-Z]\d{4}\b")
_TEST = re.compile(r"[\w./-]+\.py::[\w\[\]:.-]+|\btest_\w{3,}")
_BRANCH = re.compile(r"\bgit\s+(?:checkout\s+-b|switch\s+-c|switch|checkout|branch|push\s+\S+)\s+([\w./-]{3,})")
_HASH = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
_TICKET = re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d{1,6}\b")
# A user sentence that constrains or corrects the agent.
_CONSTRAINT = re.compile(
    r"\b(?:never|don[\u2019']?t|do not|must(?:n[\u2019']?t)?|always|avoid\w*|only|instead|rather than"
    r"|should(?:n[\u2019']?t| not)|no need to|not allowed)\b|\buse\b.{0,60}?\bnot\b",
    re.IGNORECASE,
)
#: How every match of :data:`_CONSTRAINT` starts (a word of it at a word start, whatever the
#: whitespace between its words): a line without one states no constraint.
_CONSTRAINT_HINT = re.compile(r"\b(?:never|do|must|always|avoid|only|instead|rather|should|no|use)", re.IGNORECASE)
#: The two patterns above as they match ASCII text lowercased (:func:`_matches`).
_CONSTRAINT_LOWER = re.compile(_CONSTRAINT.pattern)
_CONSTRAINT_HINT_LOWER = re.compile(_CONSTRAINT_HINT.pattern)
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")
_FENCE = re.compile(r"^\s*(?:```|~~~).*?^\s*(?:```|~~~)[^\n]*$", re.MULTILINE | re.DOTALL)
_CODE_LINE = re.compile(r"(?: {4}|\t)|\s*(?:File \"|Traceback |[\w.]*(?:Error|Exception)\b:)")
_COMMAND_LINE = re.compile(r"\s*/([a-z][\w-]*)(?:\s+|$)")
_ASKING_COMMANDS = frozenset(("ask", "code", "architect"))  # aider: the rest of the line is a request
_BULLET = re.compile(r"^\s*(?:[-*+>•]|\d+[.)])\s+")
# The file arguments of file tools; the command arguments of shells; tools that only search.
_FILE_KEYS = frozenset(("file_path", "path", "paths", "notebook_path", "filename", "file_name", "target_file", "file"))
_COMMAND_KEYS = frozenset(("command", "cmd"))
_SEARCH_TOOL = re.compile(r"grep|glob|search|find|list|^ls$", re.IGNORECASE)
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^(?:\+\+\+|---) [ab]/(\S+)", re.MULTILINE)
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1[^\n]*\n.*?^\s*\2\s*$", re.MULTILINE | re.DOTALL)
_EDIT_BLOCK = re.compile(r"^([^\n`]*\S)[ \t]*\n```[^\n]*\n<<<<<<< SEARCH", re.MULTILINE)
_NOT_A_FILE = ("/dev/", "/proc/")


@dataclass(frozen=True)
class Probe:
    """One fact of the original conversation: its ``kind``, the ``text`` to look for, and the
    index of the first message that holds it."""

    kind: ProbeKind
    text: str
    index: int


def fold(text: str) -> str:
    """``text`` with every whitespace run folded to one space and none at either end: how every
    text is compared (a haystack for :func:`found_in`)."""
    return " ".join(text.split())


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a JSON value (a tool input)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _parts(message: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """``(where, text)`` for each text of a message in the library's format: ``text`` (message
    text), ``input`` (a tool call's name and input strings) or ``result`` (a tool result)."""
    content = message.get("content")
    if isinstance(content, str):
        yield ("result" if message.get("role") == "tool" else "text"), content
    elif isinstance(content, list):
        for block in content:
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                yield "text", block["text"]
            elif kind in ("tool_use", "server_tool_use"):
                yield "input", str(block.get("name", ""))
                for s in _strings(block.get("input")):
                    yield "input", s
            elif kind == "tool_result":
                inner = block.get("content")
                if isinstance(inner, str):
                    yield "result", inner
                else:
                    for s in _strings(inner):
                        yield "result", s
            elif kind in ("thinking",) and isinstance(block.get("thinking"), str):
                yield "text", block["thinking"]
    for call in message.get("tool_calls") or ():
        if isinstance(call, Mapping):
            yield "input", str(call.get("name", ""))
            arguments = call.get("arguments")
            if isinstance(arguments, str):
                yield "input", arguments
            else:
                for s in _strings(arguments if arguments is not None else call.get("input")):
                    yield "input", s


def _path_matches(text: str) -> Iterator[re.Match[str]]:
    """``_PATH.finditer(text)``, word by word: a match holds no whitespace and needs a slash or a
    dot, and at a word's start both lookbehinds see what they see at the text's start (not a
    path character), so only the words with a slash or a dot are searched (the same matches, in
    order, without trying the regex at every position of the prose between: faster for short
    texts too)."""
    for word in text.split():
        if "/" in word or "." in word:
            yield from _PATH.finditer(word)


def _paths(text: str) -> Iterator[str]:
    """File paths in ``text``: a name with a known extension, or slashes that look like a path
    (a leading ``/``, ``./`` or ``~/``, two or more slashes, or a dot in the last part), not
    prose such as ``and/or``."""
    for m in _path_matches(text):
        path = m.group(0)
        last = path.rsplit("/", 1)[-1]
        if "/" not in path or path.startswith(("/", "./", "../", "~/")) or path.count("/") >= 2 or "." in last:
            yield path


def is_user_request(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` (in the library's format) is a real user request (see the module docs)."""
    return _is_ask(message) is not None


def request_text(message: Mapping[str, Any]) -> str | None:
    """The text of ``message`` when it is a real user request (its text parts joined by newlines,
    not whitespace folded), else None."""
    return _is_ask(message)


def _is_ask(message: Mapping[str, Any]) -> str | None:
    """The text of a real user request, or None."""
    if message.get("role") != "user":
        return None
    texts = [t for where, t in _parts(message) if where == "text"]
    text = "\n".join(texts).strip()
    if not text or _NOT_ASKED.match(text):
        return None
    return text


def _matches(pattern: re.Pattern[str], lower: re.Pattern[str], text: str) -> bool:
    """Whether ``pattern`` (lowercase and ``re.IGNORECASE``) matches in ``text``: on ASCII text,
    ``lower`` (the same pattern without the flag) in the text lowercased, which finds the same
    matches (an ASCII letter matches a pattern's letter ignoring case exactly when its lowercase
    is it; ``\\b`` sees the same word characters) several times faster in ``re``."""
    if text.isascii():
        return lower.search(text.lower()) is not None
    return pattern.search(text) is not None


def _constraints(text: str) -> Iterator[str]:
    """The sentences of a user message that state a constraint or a correction, whitespace folded
    and cut to :data:`CONSTRAINT_CHARS`: outside fenced and indented code, tracebacks and error
    lines, not harness command lines."""
    if not _matches(_CONSTRAINT_HINT, _CONSTRAINT_HINT_LOWER, text):
        return  # the lines and sentences are cut from it: none holds a constraint word either
    for line in _FENCE.sub("\n", text).splitlines():
        if _CODE_LINE.match(line):
            continue  # indented code, a traceback line, an error message
        command = _COMMAND_LINE.match(line)
        if command is not None and command.group(1) not in _ASKING_COMMANDS:
            continue  # a harness command (/add x, /undo): the rest is a path or nothing
        if command is not None:
            line = line[command.end() :]
        if not _matches(_CONSTRAINT_HINT, _CONSTRAINT_HINT_LOWER, line):
            continue
        for sentence in _SENTENCE_END.split(line):
            sentence = fold(_BULLET.sub("", sentence))
            if len(sentence.split()) >= 3 and _matches(_CONSTRAINT, _CONSTRAINT_LOWER, sentence):
                yield sentence[:CONSTRAINT_CHARS]


def _calls(message: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """``(name, input)`` of each tool call of a message; an input given as a JSON string parsed."""
    content = message.get("content")
    for block in content if isinstance(content, list) else ():
        if isinstance(block, Mapping) and block.get("type") in ("tool_use", "server_tool_use"):
            yield str(block.get("name", "")), block.get("input")
    for call in message.get("tool_calls") or ():
        if isinstance(call, Mapping):
            arguments = call.get("arguments")
            value = arguments if arguments is not None else call.get("input")
            if isinstance(value, str):
                try:
                    value = json.loads(value)
                except ValueError:
                    value = {"command": value}
            yield str(call.get("name", "")), value


def _touched(message: Mapping[str, Any]) -> Iterator[str]:
    """The files a message's tool calls read, write, edit or delete (the ``artifact`` kind), and
    in assistant text the files of search/replace edit blocks."""
    texts: list[str] = []
    for name, value in _calls(message):
        if not isinstance(value, Mapping):
            continue
        searching = bool(_SEARCH_TOOL.search(name))
        for key, v in value.items():
            if key in _FILE_KEYS and not searching:
                texts.extend(_strings(v))
            elif key in _COMMAND_KEYS or (key == "code" and "python" in name.lower()):
                texts.extend(_HEREDOC.sub(lambda m: m.group(0).split("\n", 1)[0], c) for c in _strings(v))
            for s in _strings(v):
                texts.extend(a or b for a, b in _PATCH_FILE.findall(s))
    if message.get("role") == "assistant":
        for where, text in _parts(message):
            if where == "text":
                texts.extend(_EDIT_BLOCK.findall(text))
    for text in texts:
        for path in _paths(text):
            if not path.startswith(_NOT_A_FILE):
                yield path


def extract(
    conversation: Conversation | Iterable[Mapping[str, Any]], *, kinds: Collection[str] | None = None
) -> list[Probe]:
    """The probe facts of a conversation (or of messages in the library's format), each once, at
    the first message that holds it. See the module docs for the kinds. ``kinds``: only the probes
    of these kinds (the same ones, found faster: the others are not looked for); default all."""
    messages = conversation.to_jsonl() if hasattr(conversation, "to_jsonl") else list(conversation)
    out: list[Probe] = []
    seen: set[tuple[str, str]] = set()
    wanted = frozenset(KINDS if kinds is None else kinds)

    def add(kind: ProbeKind, text: str, index: int) -> None:
        text = text.strip().rstrip(".,:;)'\"`")
        if len(text) >= 3 and (kind, text) not in seen and kind in wanted:
            seen.add((kind, text))
            out.append(Probe(kind, text, index))

    latest: tuple[int, str] | None = None
    for i, message in enumerate(messages):
        ask = _is_ask(message)
        if ask is not None:
            latest = (i, ask)
            _add_ask(add, ask, i, wanted)
            continue
        _add_other(add, message, i, wanted)
        if "artifact" in wanted:
            for path in _touched(message):
                add("artifact", path, i)
    if latest is not None and "latest_ask" in wanted:
        i, text = latest
        folded = fold(text)
        out.insert(0, Probe("latest_ask", folded, i))
    return out


def _add_ask(add: Callable[[ProbeKind, str, int], None], ask: str, i: int, kinds: frozenset[str]) -> None:
    """The probes of a real user request (of ``kinds``)."""
    if "user_message" in kinds:
        # Folding a prefix of a text gives a prefix of the folded text: a long request's opening
        # comes from its first few hundred characters.
        opening = fold(ask[: 8 * OPENING])[:OPENING]
        add("user_message", opening if len(opening) == OPENING else fold(ask)[:OPENING], i)
    if "user_path" in kinds:
        for path in _paths(ask):
            add("user_path", path, i)
    if "identifier" in kinds:
        for pattern in (_URL, _HASH, _TICKET):
            for m in pattern.finditer(ask):
                add("identifier", m.group(0), i)
        for m in _BRANCH.finditer(ask):
            add("identifier", m.group(1), i)
    if "constraint" in kinds:
        for sentence in _constraints(ask):
            add("constraint", sentence, i)


def _add_other(
    add: Callable[[ProbeKind, str, int], None], message: Mapping[str, Any], i: int, kinds: frozenset[str]
) -> None:
    """The probes of any other message (of ``kinds``): paths in tool inputs and assistant text,
    identifiers in tool inputs, tests in tool inputs and results, exceptions in tool results."""
    paths, identifiers, tests = "call_path" in kinds, "identifier" in kinds, "test" in kinds
    exceptions = "exception" in kinds
    for where, text in _parts(message):
        if paths and (where == "input" or (where == "text" and message.get("role") == "assistant")):
            for path in _paths(text):
                add("call_path", path, i)
        if identifiers and where == "input":
            for m in _URL.finditer(text):
                add("identifier", m.group(0), i)
            for m in _BRANCH.finditer(text):
                add("identifier", m.group(1), i)
        if tests and where in ("input", "result"):
            for m in _TEST.finditer(text):
                add("test", m.group(0), i)
        if exceptions and where == "result":
            for m in _EXCEPTION.finditer(text):
                add("exception", m.group(0), i)


def working_set_text(conversation: Conversation | Iterable[Mapping[str, Any]]) -> str:
    """Every text of a working set (message texts, tool names and inputs, tool results) as one
    string, whitespace folded."""
    messages = conversation.to_jsonl() if hasattr(conversation, "to_jsonl") else list(conversation)
    return fold("\n".join(text for m in messages for _, text in _parts(m)))


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def found_in(probe: Probe, haystack: str) -> bool:
    """Whether ``probe`` is in ``haystack`` (a :func:`working_set_text`, whitespace folded): the latest ask by its
    first and last :data:`OPENING` characters, the rest by their exact text (also JSON-escaped)."""
    if probe.kind == "latest_ask":
        text = probe.text
        return text[:OPENING] in haystack and text[-OPENING:] in haystack
    return found_whole(probe, haystack)


def found_whole(probe: Probe, haystack: str) -> bool:
    """Whether the whole text of ``probe`` (for the latest ask: the full request, not only its
    head and tail) is in ``haystack``, verbatim but for whitespace."""
    text = probe.text
    if text in haystack:
        return True
    escaped = _escaped(text)
    return escaped != text and escaped in haystack


@dataclass(frozen=True)
class Retention:
    """Which probes a working set kept: overall, per kind, and the lost ones."""

    total: int
    kept: int
    by_kind: dict[str, tuple[int, int]]
    lost: list[Probe]

    @property
    def share(self) -> float:
        """Kept / total (1.0 when there is nothing to keep)."""
        return self.kept / self.total if self.total else 1.0

    def kind_share(self, kind: str) -> float | None:
        kept, total = self.by_kind.get(kind, (0, 0))
        return kept / total if total else None


def retention(facts: Iterable[Probe], working_set: Conversation | Iterable[Mapping[str, Any]] | str) -> Retention:
    """Which of ``facts`` the working set still holds (see :func:`found_in`). Every kind is
    counted in ``by_kind``; ``total``, ``kept`` and ``lost`` leave out the kinds of :data:`VIEWS`
    (an ``artifact`` path is a ``call_path`` probe too: counted once)."""
    haystack = fold(working_set) if isinstance(working_set, str) else working_set_text(working_set)
    by_kind: dict[str, list[int]] = {}
    lost: list[Probe] = []
    kept = total = 0
    for p in facts:
        counts = by_kind.setdefault(p.kind, [0, 0])
        counts[1] += 1
        found = found_in(p, haystack)
        counts[0] += found
        if p.kind in VIEWS:
            continue
        total += 1
        kept += found
        if not found:
            lost.append(p)
    return Retention(total, kept, {k: (v[0], v[1]) for k, v in by_kind.items()}, lost)
