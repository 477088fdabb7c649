"""aider ``.aider.chat.history.md`` (``aider-chat-history-md``)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Final

from agentcontext.importers._builder import Imported, _Builder
from agentcontext.importers._reader import (
    JsonDict,
    _base_name,
    _require,
    _Source,
)

_AIDER_START: Final = re.compile(r"^# aider chat started at (.*)$", re.MULTILINE)


def _aider_is_user(line: str) -> bool:
    return (line.startswith("#### ") and line.endswith("  ")) or line.rstrip() == "####"


def _aider_closes(line: str) -> bool:
    """The last line of a console entry: text stripped by aider, then two spaces."""
    return line.rstrip() == ">" or (line.endswith("  ") and len(line) > 2 and not line[-3].isspace())


def _aider_is_console(line: str) -> bool:
    return line.startswith("> ") or line.rstrip() == ">"


def _import_aider(src: _Source) -> list[Imported]:
    base = _base_name(src.path)
    lines = src.text.replace("\r\n", "\n").split("\n")
    _require(src, bool(_AIDER_START.search(src.text)), "aider session (`# aider chat started at`)")
    sessions: list[tuple[str, list[tuple[str, str]], JsonDict]] = []
    messages: list[tuple[str, str]] = []
    meta: JsonDict = {}
    user: list[str] = []
    reply: list[str] = []
    started: str | None = None
    console = 0  # console entries of the session, dropped

    def flush_reply() -> None:
        text = "\n".join(reply).strip()
        reply.clear()
        if text:
            messages.append(("assistant", text))

    def flush_user() -> None:
        if user:
            messages.append(("user", "\n".join(user)))
            user.clear()

    def end_session() -> None:
        nonlocal messages, meta, console
        flush_user()
        flush_reply()
        if messages:
            meta["dropped"] = {"console_entries": console} if console else {}
            sessions.append((started or "", messages, meta))
        messages = []
        meta = {}
        console = 0

    # An editor's mode line (``-*- mode: fundamental -*-``) is no part of the chat.
    i = 1 if lines and re.fullmatch(r"\s*-\*-.*-\*-\s*", lines[0]) else 0
    while i < len(lines):
        line = lines[i]
        match = _AIDER_START.match(line)
        if match:
            end_session()
            started = match.group(1).strip()
            meta = {"started": started}
            i += 1
            continue
        if _aider_is_user(line):
            flush_reply()
            text = line[5:] if line.startswith("#### ") else ""
            user.append(text[:-2] if text.endswith("  ") else text.rstrip())
            i += 1
            continue
        if _aider_is_console(line):
            if line.startswith("> Models: ") and "model" not in meta:
                meta["model"] = line[len("> Models: ") :].split(" with ")[0].strip()
            elif line.startswith("> Aider v") and "aider_version" not in meta:
                meta["aider_version"] = line[len("> Aider v") :].strip()
            console += 1
            i = _aider_console_end(lines, i) + 1
            continue
        if user and not line.strip():
            i += 1
            continue
        flush_user()
        reply.append(line)
        i += 1
    end_session()
    return _aider_sessions(src, base, sessions)


def _aider_console_end(lines: list[str], i: int) -> int:
    """The last line of the console entry that starts at line ``i``: its first line that ends with
    two spaces (aider adds them to the end of each entry, after stripping it), or the line before
    the next session or user input."""
    j = i
    while not _aider_closes(lines[j]) and j + 1 < len(lines):
        nxt = lines[j + 1]
        if _AIDER_START.match(nxt) or _aider_is_user(nxt):
            break
        j += 1
    return j


def _aider_sessions(
    src: _Source, base: str, sessions: list[tuple[str, list[tuple[str, str]], JsonDict]]
) -> list[Imported]:
    """One conversation per session (its start time, messages and meta), named by its start time."""
    out: list[Imported] = []
    used: Counter[str] = Counter()
    for started_at, msgs, session_meta in sessions:
        key = re.sub(r"[: ]", "_", started_at) if started_at else "preamble"
        name = f"{base}--{key}"
        used[name] += 1
        if used[name] > 1:
            name = f"{name}#{used[name]}"
        b = _Builder(src)
        b.dropped.update(session_meta.pop("dropped"))
        for role, text in msgs:
            if role == "user":
                b.user(text)
            else:
                b.assistant(text)
        out.append(b.build(name, "aider-chat-history-md", session_meta))
    return out


# ---------------------------------------------------------------------------------------------
