"""Building conversations: messages collected in source order, then the pairing rules."""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from agentcontext._core import Conversation
from agentcontext.errors import (
    InvalidMessageError,
)
from agentcontext.importers._reader import (
    JsonDict,
    _Source,
)

#: The content of a result synthesized for a call that has none in the source.
NO_RESULT: Final = "[no tool result recorded in source transcript]"


@dataclass(frozen=True)
class Imported:
    """One conversation read from an agent session file.

    ``name`` is the transcript name: the file name without its format suffix (with the run folder
    in front for SWE-bench output laid out as ``<run>/<instance>/<instance>.traj.json``), plus
    ``--<session>`` for files that hold several sessions (OpenHands output lines, aider sessions).
    :func:`import_files` also puts the parent folder in front of names whose files share a name.
    ``format`` is one of :data:`FORMATS`. ``meta`` holds what the source says about the session
    (model, cwd, session id, version, ...) where it says it, and ``dropped``: how many source
    entries of each kind were left out.
    """

    name: str
    format: str
    conversation: Conversation
    path: Path
    meta: dict[str, Any] = field(default_factory=dict)


class _Builder:
    """Collects messages in source order; ``finish`` applies the pairing rules."""

    def __init__(self, src: _Source) -> None:
        self.src = src
        self.messages: list[JsonDict] = []
        self.dropped: Counter[str] = Counter()
        #: The assistant message that calls join, while nothing else came after it.
        self._open: JsonDict | None = None
        self._pending_extra: JsonDict = {}
        self._pending_text = ""

    def _add(self, message: JsonDict) -> JsonDict:
        if self._pending_extra:
            message.update(self._pending_extra)
            self._pending_extra = {}
        self.messages.append(message)
        self._open = message if message["role"] == "assistant" else None
        return message

    def annotate_next(self, key: str, value: Any, text: str = "") -> None:
        """Put ``key: value`` on the next message added; with none after it, on a user message
        holding ``text`` at the end."""
        self._pending_extra[key] = value
        self._pending_text = text

    def system(self, text: str) -> None:
        self._add({"role": "system", "content": text})

    def user(self, text: str) -> JsonDict:
        return self._add({"role": "user", "content": text})

    def assistant(self, content: str | list[JsonDict] = "", calls: Sequence[JsonDict] = ()) -> JsonDict:
        message: JsonDict = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = list(calls)
        return self._add(message)

    def call(self, call_id: str, name: str, arguments: str) -> None:
        """A call that joins the open assistant message (one with nothing after it), else a new one."""
        call = {"id": call_id, "name": name, "arguments": arguments}
        if self._open is not None:
            self._open.setdefault("tool_calls", []).append(call)
        else:
            self.assistant("", [call])

    def tool(self, call_id: str, text: str, *, is_error: bool = False) -> None:
        message: JsonDict = {"role": "tool", "content": text, "tool_call_id": call_id}
        if is_error:
            message["is_error"] = True
        self._add(message)

    def finish(self) -> tuple[list[JsonDict], dict[str, int]]:
        if self._pending_extra:
            # A marker with nothing after it (a compaction at the very end) stands on its own.
            self._add({"role": "user", "content": self._pending_text})
        return _pair(self.messages)

    def build(self, name: str, fmt: str, meta: JsonDict) -> Imported:
        messages, counts = self.finish()
        meta = {k: v for k, v in meta.items() if v is not None}
        meta["dropped"] = dict(self.dropped)
        meta.update({k: v for k, v in counts.items() if v})
        compactions = [
            {"index": i, **m["compaction"]} for i, m in enumerate(messages) if isinstance(m.get("compaction"), dict)
        ]
        if compactions:
            meta["compactions"] = compactions
        try:
            conv = Conversation(messages, format="jsonl")
        except InvalidMessageError as err:
            if "surrogate" not in str(err):
                raise self.src.fail(f"session {name!r}: {err}") from err
            # Half of a UTF-16 pair (an output cut in the middle of an emoji): valid JSON, but no
            # text. Each one becomes U+FFFD.
            fixed = [0]
            messages = [_replace_surrogates(m, fixed) for m in messages]
            meta["replaced_lone_surrogates"] = fixed[0]
            conv = Conversation(messages, format="jsonl")
        return Imported(name, fmt, conv, self.src.path, meta)


_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _replace_surrogates(value: Any, count: list[int]) -> Any:
    if isinstance(value, str):
        fixed, n = _LONE_SURROGATE.subn("\ufffd", value)
        count[0] += n
        return fixed
    if isinstance(value, list):
        return [_replace_surrogates(v, count) for v in value]
    if isinstance(value, dict):
        return {k: _replace_surrogates(v, count) for k, v in value.items()}
    return value


def _pair(messages: list[JsonDict]) -> tuple[list[JsonDict], dict[str, int]]:
    """Rename reused call ids, put every result right after its call's message, synthesize the
    missing ones and turn results without a call into user messages."""
    counts = {"synthesized_results": 0, "renamed_ids": 0, "orphan_results": 0}
    # 1. Reused ids: the k-th call with an id becomes id#k; results follow their call (first in,
    #    first out), a result after all its calls were answered goes to the latest.
    seen: Counter[str] = Counter()
    waiting: dict[str, deque[str]] = {}
    latest: dict[str, str] = {}
    taken: set[str] = set()
    for m in messages:
        calls = m.get("tool_calls")
        if calls:
            for call in calls:
                original = call["id"]
                seen[original] += 1
                new = original
                if seen[original] > 1 or original in taken:
                    k = max(seen[original], 2)
                    while f"{original}#{k}" in taken:
                        k += 1
                    new = f"{original}#{k}"
                    call["id"] = new
                    counts["renamed_ids"] += 1
                taken.add(new)
                waiting.setdefault(original, deque()).append(new)
                latest[original] = new
        elif m["role"] == "tool":
            original = m["tool_call_id"]
            queue = waiting.get(original)
            if queue:
                m["tool_call_id"] = queue.popleft()
            elif original in latest:
                m["tool_call_id"] = latest[original]
    # 2. Results right after their calls.
    owner: dict[str, int] = {}
    for i, m in enumerate(messages):
        for call in m.get("tool_calls") or ():
            owner[call["id"]] = i
    results: dict[int, list[int]] = {}
    orphans: set[int] = set()
    answered: set[str] = set()
    for j, m in enumerate(messages):
        if m["role"] != "tool":
            continue
        cid = m["tool_call_id"]
        at = owner.get(cid)
        if at is None or at > j or cid in answered:
            orphans.add(j)
        else:
            answered.add(cid)
            results.setdefault(at, []).append(j)
    out: list[JsonDict] = []
    for j, m in enumerate(messages):
        if m["role"] == "tool":
            if j in orphans:
                counts["orphan_results"] += 1
                text = m.get("content") or ""
                note = f"[tool result for call {m['tool_call_id']}, which is not in the source transcript]"
                extra = {k: v for k, v in m.items() if k not in ("role", "content", "tool_call_id", "is_error")}
                out.append({"role": "user", "content": f"{note}\n{text}" if text else note, **extra})
            continue
        out.append(m)
        calls = m.get("tool_calls")
        if not calls:
            continue
        got = results.get(j, [])
        out.extend(messages[k] for k in got)
        have = {messages[k]["tool_call_id"] for k in got}
        for call in calls:
            if call["id"] not in have:
                out.append({"role": "tool", "content": NO_RESULT, "tool_call_id": call["id"]})
                counts["synthesized_results"] += 1
    return out, counts
