"""Building conversations: messages collected in source order, then the pairing rules."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from agentcontext._core import Conversation, repair
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

    def finish(self) -> list[JsonDict]:
        if self._pending_extra:
            # A marker with nothing after it (a compaction at the very end) stands on its own.
            self._add({"role": "user", "content": self._pending_text})
        return self.messages

    def build(self, name: str, fmt: str, meta: JsonDict) -> Imported:
        messages = self.finish()
        meta = {k: v for k, v in meta.items() if v is not None}
        meta["dropped"] = dict(self.dropped)
        replaced: int | None = None
        try:
            conv, messages = _paired(messages, meta)
        except InvalidMessageError as err:
            if "surrogate" not in str(err):
                raise self.src.fail(f"session {name!r}: {err}") from err
            # Half of a UTF-16 pair (an output cut in the middle of an emoji): valid JSON, but no
            # text. Each one becomes U+FFFD.
            fixed = [0]
            messages = [_replace_surrogates(m, fixed) for m in messages]
            replaced = fixed[0]
            conv, messages = _paired(messages, meta)
        compactions = [
            {"index": i, **m["compaction"]} for i, m in enumerate(messages) if isinstance(m.get("compaction"), dict)
        ]
        if compactions:
            meta["compactions"] = compactions
        if replaced is not None:
            meta["replaced_lone_surrogates"] = replaced
        return Imported(name, fmt, conv, self.src.path, meta)


def _paired(messages: list[JsonDict], meta: JsonDict) -> tuple[Conversation, list[JsonDict]]:
    """The conversation of ``messages`` under the pairing rules, applied by :func:`repair` (the
    one implementation, in the core): every result right after its call, reused ids renamed
    ``id#2``, ``id#3``, ... with their results, a result with no call before it (or a second one
    for a call) made a user message that says so. A call with no result gets one that says the
    source recorded none (:data:`NO_RESULT`, not repair's words for an interrupted call). The
    counts go to ``meta``."""
    fixed, changes = repair(messages, format="jsonl")
    if changes:
        kinds = Counter(c["kind"] for c in changes)
        counts = {
            "synthesized_results": kinds["synthesized_result"],
            "renamed_ids": kinds["renamed_id"],
            "orphan_results": kinds["orphan_to_user"] + kinds["duplicate_to_user"],
        }
        meta.update({k: v for k, v in counts.items() if v})
        messages = fixed
        synthesized = {c["id"] for c in changes if c["kind"] == "synthesized_result"}
        for m in messages if synthesized else ():
            if m["role"] == "tool" and m.get("tool_call_id") in synthesized:
                m["content"] = NO_RESULT
                m.pop("is_error", None)
    return Conversation(messages, format="jsonl"), messages


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
