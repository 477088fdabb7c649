"""The append-only session log: every message ever seen, and a record of every compaction, in
JSON Lines. Nothing is ever deleted from it; the working set is rebuilt from it, and any
compaction can be rolled back.

Records (one JSON object per line):

- ``{"type": "session", "version": 1, "format": "openai"}`` — the header;
- ``{"type": "message", "index": N, "data": [...]}`` — message N in the session's format (a list,
  as one message may be written as several items in some formats);
- ``{"type": "compaction", "seq": K, "upto": N, "working_set": [...], "summary": ..., "stages":
  [...], "tokens_before": ..., "tokens_after": ...}`` — after compaction K the working set is the
  listed entries (``{"ref": i}`` for original message i, ``{"data": [...]}`` for a new or changed
  one) followed by every message with index >= ``upto``.

Appends are crash-safe: each record is one ``write`` of a whole line followed by ``fsync``; a
torn last line (a crash mid-append) is detected on load, reported in ``torn``, and ignored, and
the next append starts on a fresh line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agentcontext import _checks
from agentcontext._core import Conversation
from agentcontext.errors import TranscriptError
from agentcontext.types import Encoding, Format

__all__ = ["SessionLog"]


class SessionLog:
    """An append-only JSONL log of one session."""

    def __init__(
        self, path: str | os.PathLike[str], *, format: Format = "openai", encoding: Encoding = "o200k_base"
    ) -> None:
        self.path = Path(path)
        self.format: Format = format
        self.encoding: Encoding = encoding
        self.messages: list[list[dict[str, Any]]] = []
        self.compactions: list[dict[str, Any]] = []
        #: The line number of a torn last record found on load, if any.
        self.torn: int | None = None
        #: Byte offset where the torn record starts (the next append writes over it).
        self._torn_at: int | None = None
        #: Line numbers of earlier records that are not valid JSON (left by crashes in older
        #: versions or by outside edits); skipped, never deleted.
        self.skipped_lines: list[int] = []
        if self.path.exists() and self.path.stat().st_size > 0:
            self._load()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._write({"type": "session", "version": 1, "format": format})

    # -- reading ---------------------------------------------------------------------------

    def _load(self) -> None:
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        complete = lines[:-1]
        if lines[-1].strip():
            # The file does not end with a line break: the last record was cut mid-write.
            self.torn = len(lines)
            self._torn_at = len(raw) - len(lines[-1])
        for number, line in enumerate(complete, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                self.skipped_lines.append(number)
                continue
            if not isinstance(record, dict):
                raise TranscriptError(f"{self.path}: line {number}: not a log record", str(self.path), number)
            kind = record.get("type")
            if kind == "session":
                self.format = record.get("format", self.format)
            elif kind == "message":
                self.messages.append(record["data"])
            elif kind == "compaction":
                self.compactions.append(record)

    def originals(self) -> Conversation:
        """Every message ever logged, as one conversation."""
        return self._conversation(self.messages)

    def working_set(self, *, upto_compaction: int | None = None) -> Conversation:
        """The working set after the last compaction (or after compaction ``upto_compaction``;
        0 means before any): its entries, then every message logged since."""
        _checks.optional_count("upto_compaction", upto_compaction)
        records = self.compactions if upto_compaction is None else self.compactions[:upto_compaction]
        if not records:
            return self._conversation(self.messages)
        last = records[-1]
        data: list[list[dict[str, Any]]] = [
            self.messages[e["ref"]] if "ref" in e else e["data"] for e in last["working_set"]
        ]
        data += self.messages[last["upto"] :]
        return self._conversation(data)

    def working_set_origins(self) -> list[int | None]:
        """For each message of :meth:`working_set`, its log index (None for a new or changed one)."""
        if not self.compactions:
            return list(range(len(self.messages)))
        last = self.compactions[-1]
        origins: list[int | None] = [e.get("ref") for e in last["working_set"]]
        return origins + list(range(last["upto"], len(self.messages)))

    def rollback(self) -> Conversation:
        """The working set as it was before the last compaction (appends a rollback record that
        undoes it; nothing is deleted)."""
        if not self.compactions:
            return self.working_set()
        before = self.working_set(upto_compaction=len(self.compactions) - 1)
        origins = self._origins_upto(len(self.compactions) - 1)
        self._record_working_set(before, origins, extra={"rollback_of": len(self.compactions)})
        return before

    def _origins_upto(self, k: int) -> list[int | None]:
        if k == 0:
            return list(range(len(self.messages)))
        last = self.compactions[k - 1]
        return [e.get("ref") for e in last["working_set"]] + list(range(last["upto"], len(self.messages)))

    def _conversation(self, data: Iterable[list[dict[str, Any]]]) -> Conversation:
        flat = [item for items in data for item in items]
        return Conversation(flat, format=self.format, encoding=self.encoding)

    # -- writing ---------------------------------------------------------------------------

    def _write(self, record: Mapping[str, Any]) -> None:
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        if self._torn_at is not None:
            # The torn fragment was never a record: the next one is written in its place.
            os.truncate(self.path, self._torn_at)
            self._torn_at = None
            self.torn = None
        with self.path.open("ab") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def append(self, conversation: Conversation, start: int = 0) -> None:
        """Log the messages of ``conversation`` from position ``start`` on (in the session's format)."""
        _checks.count("start", start)
        each = conversation.export_each()
        for data in each[start:]:
            self._write({"type": "message", "index": len(self.messages), "data": data})
            self.messages.append(data)

    def record_compaction(self, result: Any, origins: list[int | None] | None = None) -> None:
        """Log a compaction: ``result`` is a :class:`agentcontext.compaction.CompactionResult` of
        the current working set (``origins`` maps its input positions to log indices; by default
        the working set this log rebuilds)."""
        origins = self.working_set_origins() if origins is None else origins
        mapped = [origins[p] if p is not None and p < len(origins) else None for p in result.provenance]
        self._record_working_set(
            result.conversation,
            mapped,
            extra={
                "summary": result.summary,
                "stages": [s.to_dict() for s in result.stages],
                "tokens_before": result.tokens_before,
                "tokens_after": result.tokens_after,
                "first_kept": result.first_kept,
            },
        )

    def _record_working_set(self, conv: Conversation, origins: list[int | None], extra: Mapping[str, Any]) -> None:
        each = conv.export_each()
        entries = [{"ref": o} if o is not None else {"data": d} for o, d in zip(origins, each, strict=True)]
        record = {
            "type": "compaction",
            "seq": len(self.compactions) + 1,
            "upto": len(self.messages),
            "working_set": entries,
            **extra,
        }
        self._write(record)
        self.compactions.append(record)
