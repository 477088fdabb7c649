"""The append-only session log: every message ever seen, and a record of every compaction, in
JSON Lines. Nothing is ever deleted from it; the working set is rebuilt from it, and any
compaction can be rolled back.

Records (one JSON object per line):

- ``{"type": "session", "version": 1, "format": "openai"}`` — the header;
- ``{"type": "message", "index": N, "data": [...]}`` — message N in the session's format (a list,
  as one message may be written as several items in some formats); N is the record's position
  among the message records of the file (0, 1, 2, ... without gaps or repeats; logs written by
  earlier versions under concurrent writers may repeat indices: the position is what ``ref`` and ``upto``
  mean, and new records continue from the count of message records);
- ``{"type": "compaction", "seq": K, "upto": N, "working_set": [...], "summary": ..., "stages":
  [...], "tokens_before": ..., "tokens_after": ...}`` — after compaction K the working set is the
  listed entries (``{"ref": i}`` for original message i, ``{"data": [...]}`` for a new or changed
  one) followed by every message with index >= ``upto``. A compaction record with a
  ``"reconciled"`` object is not a compaction: it sets the working set to a session's
  conversation that the log's did not match (:meth:`SessionLog.reconcile`, after a resume from a
  snapshot older than the log's tail) and says what it set aside.

Concurrency contract
--------------------

Any number of :class:`SessionLog` objects — in one thread, several threads or several processes —
may append to the same log file at once:

- **One writer at a time.** Every write takes an exclusive OS lock on the log file
  (``fcntl.flock`` on POSIX, ``msvcrt.locking`` of one byte far past the end of the data on
  Windows) and holds it across "read what other writers appended, repair a torn tail, append,
  flush and ``fsync``". The lock belongs to the open file, so the OS releases it when the holder
  dies, even by ``kill -9``.
- **An acknowledged record is never lost.** Once :meth:`SessionLog.append`,
  :meth:`SessionLog.record_compaction` or :meth:`SessionLog.rollback` has returned, its records
  are complete lines on disk (``fsync``-ed) and no later writer removes them.
- **Indices are unique and gapless across processes.** The next message index is derived under
  the lock from the file itself (its message records), never from an object's memory alone.
  Before writing, an object reads the records other writers appended since it last looked; they
  become part of its :attr:`SessionLog.messages` and :attr:`SessionLog.compactions`.
- **Torn tails are repaired only under the lock.** A writer killed mid-append leaves a last line
  without its line break. Opening or reading a log never modifies it; the next writer, holding
  the lock (so no live writer can be mid-append), removes exactly the bytes after the last line
  break — the record that was never acknowledged — and nothing before them. (If those bytes are a
  whole JSON record that only lacks its line break, the line break is added instead; if they are
  not the start of one record — records joined without a line break, another tool's text — no
  append left them: they are kept, the line break is added, and the line is skipped as one that
  is not a record.)
- **Readers never see a partial record.** Loading (and :meth:`SessionLog.refresh`) takes a shared
  lock (on Windows, the same exclusive lock), so it waits for an append in progress to finish;
  bytes after the last line break are reported in :attr:`SessionLog.torn` and never parsed as a
  record. An object's view is the file as of its last load, refresh or write.
- **Compactions are last-writer-wins.** A compaction record describes the working set its writer
  saw (``upto`` is the number of messages in that view); messages other processes appended later
  still follow it. If two processes compact at once, the later record is the working set.

Not guaranteed: locks on network file systems (NFS, SMB) are only as good as the server's lock
support — on Linux NFS, ``flock`` is emulated with per-process ``fcntl`` locks, so two objects in
one process are not excluded from each other there (one object is still safe across threads);
writers that bypass this class (an editor, an older agentcontext that wrote without the lock)
are not excluded; a writer stopped (``SIGSTOP``) while holding the lock blocks the others until
it resumes or dies, and on Linux a steady stream of readers can delay a writer; ``fsync`` on macOS does not flush the drive's cache (``F_FULLFSYNC``).
Replacing or truncating the file under a live object is detected on its next write or refresh
and refused with :class:`~agentcontext.errors.TranscriptError`.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentcontext import _checks
from agentcontext._core import Conversation
from agentcontext.errors import OptionError, TranscriptError, TranscriptReadError
from agentcontext.sessions.log_file import (
    _FORMATS,
    _check_encoding,
    _cut_tail,
    _kind,
    _lock,
    _Pending,
    _torn_header,
    _unlock,
    _whole_record,
)
from agentcontext.types import Encoding, Format, LoggedData, LoggedRef, ReconcileRecord

__all__ = ["SessionLog"]

_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # POSIX: opening a FIFO must not wait for a writer
#: The bytes a JSON value can start with (after JSON whitespace): a line starting with anything
#: else is never a record, so its bytes are not kept while it is read.
_JSON_START = frozenset(b'{["-0123456789tfn')
#: The largest log read unless ``max_bytes`` allows more: 1 GiB, as a transcript
#: (:meth:`Conversation.from_file`); a log's messages are held in memory.
MAX_LOG_BYTES = 1 << 30


class SessionLog:
    """An append-only JSONL log of one session, safe to share between threads and processes (see
    the module's concurrency contract).

    Opening a log that does not exist (or is empty) creates it with its header; opening an existing
    one reads it (waiting for an append in progress) and never modifies it. ``path`` must be a
    regular file: a directory, FIFO, socket or device raises
    :class:`~agentcontext.errors.TranscriptReadError`, and so does a file over ``max_bytes`` (default
    1 GiB; checked on every load, refresh and write, as the file grows), a file that cannot be read,
    and one that reports a size of 0 but is not empty (a ``/proc`` file). A file whose first line is
    not a log's header (a transcript, notes) raises :class:`~agentcontext.errors.TranscriptError`
    (line 1) and is left as it is: a log is only ever a file SessionLog made; so does a header of
    another version than :data:`~agentcontext.sessions.log_file.LOG_VERSION`. The file is read as a
    stream: memory holds its records, not its bytes. A record that is not a valid log record (a
    message without a ``data`` list, a ``ref`` to a message that does not precede it, ...) raises
    :class:`~agentcontext.errors.TranscriptError` naming the file and line — on load, or on the
    next write or :meth:`refresh` if another writer appended it (nothing is written after it then).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        format: Format = "openai",
        encoding: Encoding = "o200k_base",
        max_bytes: int = MAX_LOG_BYTES,
    ) -> None:
        self.max_bytes = _checks.count("max_bytes", max_bytes, minimum=1)
        if format not in _FORMATS:
            raise OptionError(f"format must be one of {', '.join(_FORMATS)}; got {format!r}")
        _check_encoding(encoding)
        if not isinstance(path, (str, os.PathLike)):
            raise OptionError(f"path must be a str or os.PathLike; got {type(path).__name__}")
        self.path = Path(_checks.file_name("path", path))
        self.format: Format = format
        self.encoding: Encoding = encoding
        self.messages: list[list[dict[str, Any]]] = []
        self.compactions: list[dict[str, Any]] = []
        #: The line number of a torn last record (bytes after the last line break, left by a writer
        #: that died mid-append) found by the last load or refresh; None when the file ends with a
        #: complete line. It is never read as a record, and the next write (under the lock) removes it
        #: (or, when it is not the start of one record, keeps it as a line of its own, skipped).
        self.torn: int | None = None
        #: Line numbers of earlier records that are not valid JSON (left by crashes in older
        #: versions or by outside edits); skipped, never deleted.
        self.skipped_lines: list[int] = []
        self._mutex = threading.RLock()
        _checks.hold_across_forks(self)
        self._offset = 0  # bytes of the file read into this view (always the end of a line)
        self._lines = 0  # complete lines read into this view
        self._identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the file read
        self._check_kind()
        exists = self.path.exists() and self.path.stat().st_size > 0
        if exists:
            with self._locked(exclusive=False) as fd:
                self._sync(fd, repair=False)
        else:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise TranscriptReadError(
                    exc.errno or 0,
                    f"{self.path}: cannot create the session log's folder: {exc.strerror}",
                    str(self.path),
                ) from exc
            # Another process may create it between the check and the lock: _writing sees it.
            with self._writing(create=True):
                pass

    # -- the file and its lock --------------------------------------------------------------

    def _not_a_log_file(self, mode: int) -> TranscriptReadError:
        return TranscriptReadError(
            errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL,
            f"{self.path}: is {_kind(mode)}, not a session log file",
            str(self.path),
        )

    def _check_kind(self) -> None:
        try:
            info = self.path.stat()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise TranscriptReadError(
                exc.errno or 0, f"{self.path}: cannot open the session log: {exc.strerror}", str(self.path)
            ) from exc
        if not stat.S_ISREG(info.st_mode):
            raise self._not_a_log_file(info.st_mode)
        if info.st_size == 0:
            # A file that reports no size may still hold bytes (/proc, /sys): it would be taken for
            # a new log and written to. Only a file that is really empty is one.
            try:
                fd = os.open(self.path, os.O_RDONLY | _BINARY | _NONBLOCK)
                try:
                    first = os.read(fd, 1)
                finally:
                    os.close(fd)
            except OSError as exc:
                raise TranscriptReadError(
                    exc.errno or 0, f"{self.path}: cannot read the session log: {exc.strerror}", str(self.path)
                ) from exc
            if first:
                raise TranscriptReadError(
                    errno.EINVAL,
                    f"{self.path}: reports a size of 0 but is not empty (a /proc or /sys file?), not a session log file",
                    str(self.path),
                )

    @contextmanager
    def _locked(self, *, exclusive: bool, create: bool = False) -> Iterator[int]:
        flags = (os.O_RDWR | os.O_APPEND if exclusive else os.O_RDONLY) | _BINARY | _NONBLOCK
        if create:
            flags |= os.O_CREAT
        try:
            fd = os.open(self.path, flags, 0o666)
        except OSError as exc:
            raise TranscriptReadError(
                exc.errno or 0, f"{self.path}: cannot open the session log: {exc.strerror}", str(self.path)
            ) from exc
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise self._not_a_log_file(mode)
            try:
                _lock(fd, exclusive=exclusive)
            except OSError as exc:
                raise TranscriptReadError(
                    exc.errno or 0,
                    f"{self.path}: cannot lock the session log ({exc.strerror}); its file system may not "
                    "support file locks",
                    str(self.path),
                ) from exc
            try:
                yield fd
            except TranscriptReadError:
                raise
            except OSError as exc:
                # A read, write or sync of the log that failed (EIO, ENOSPC, ...): named, typed.
                raise TranscriptReadError(
                    exc.errno or 0, f"{self.path}: cannot read or write the session log: {exc.strerror}", str(self.path)
                ) from exc
            finally:
                _unlock(fd)
        finally:
            os.close(fd)

    @staticmethod
    def _read_lines(fd: int, offset: int, size: int) -> Iterator[tuple[bytes | None, int, bool]]:
        """The lines of the file from ``offset`` to ``size``, read as a stream: each line's bytes
        (without its line break; None for a line that cannot start a JSON value, whose bytes are
        not kept), its length with its line break, and whether it has one (only a last line may not)."""
        os.lseek(fd, offset, os.SEEK_SET)
        left = size - offset
        parts: list[bytes] = []
        length = 0
        junk = started = False
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                break
            left -= len(chunk)
            pos = 0
            while pos < len(chunk):
                nl = chunk.find(b"\n", pos)
                piece = chunk[pos:] if nl < 0 else chunk[pos:nl]
                length += len(piece)
                if not started:
                    lead = piece.lstrip(b" \t\r")
                    if lead:
                        started = True
                        junk = lead[0] not in _JSON_START
                if not junk:
                    parts.append(piece)
                if nl < 0:
                    break
                yield (None if junk else b"".join(parts)), length + 1, True
                parts, length, junk, started = [], 0, False, False
                pos = nl + 1
        if length:
            yield (None if junk else b"".join(parts)), length, False

    def _sync(self, fd: int, *, repair: bool) -> int:
        """Read the complete records appended since this view last looked (the caller holds the
        lock). With ``repair`` (the caller holds the exclusive lock) a torn tail is repaired.
        Returns how many records were read; nothing changes in the view if a record is invalid."""
        info = os.fstat(fd)
        identity = (info.st_dev, info.st_ino)
        if self._identity is not None and (identity != self._identity or info.st_size < self._offset):
            raise TranscriptError(
                f"{self.path}: the session log was replaced or truncated since it was read "
                f"({self._offset:,} bytes read, the file now holds {info.st_size:,}); "
                "open it again with SessionLog(path)",
                str(self.path),
            )
        if info.st_size > self.max_bytes:
            raise TranscriptReadError(
                errno.EFBIG,
                f"{self.path}: is {_checks.human_size(info.st_size)} ({info.st_size:,} bytes), over the {_checks.human_size(self.max_bytes)} "
                f"({self.max_bytes:,} bytes) limit for a session log; pass a larger max_bytes to SessionLog to read it",
                str(self.path),
            )
        pending = _Pending(self)
        read = lines = 0
        tail: bytes | None = None
        tail_length = 0
        for line, length, complete in self._read_lines(fd, self._offset, info.st_size):
            if complete:
                pending.parse([line], self._lines + lines + 1)
                read += length
                lines += 1
            else:
                tail, tail_length = line, length
        if tail_length and self._lines + lines == 0 and not _torn_header(tail):
            # A first line with no line break is a torn header only if it is the start of one: the
            # repair below would otherwise delete a file that is not a log ("my notes", no newline).
            pending.check_header(tail)
        if tail_length and repair:
            if tail is not None and _whole_record(tail):
                # A complete record that only lacks its line break (written without one by
                # another tool, or its writer died just before the break): keep it.
                pending.parse([tail], self._lines + lines + 1)
                os.write(fd, b"\n")
                read += tail_length + 1
                lines += 1
            elif _cut_tail(fd, tail, self._offset + read, tail_length):
                # Bytes of an append that never finished: its writer died holding the lock (we
                # hold it now, so no live writer is mid-append). Never a record, never acknowledged.
                os.ftruncate(fd, self._offset + read)
            else:
                # Not the start of one record (records joined without a line break, lines ended
                # by a lone carriage return, another tool's text): no append left it, and it may
                # be all a user has. It is kept, ended by a line break, and skipped as a line
                # that is not a record.
                pending.parse([tail], self._lines + lines + 1)
                os.write(fd, b"\n")
                read += tail_length + 1
                lines += 1
            os.fsync(fd)
            tail_length = 0
        self._identity = identity
        pending.commit()
        self._offset += read
        self._lines += lines
        self.torn = self._lines + 1 if tail_length else None
        return len(pending.messages) + len(pending.compactions) + pending.others

    def _append_lines(self, fd: int, records: Sequence[Mapping[str, Any]]) -> None:
        """Append ``records`` (the caller holds the exclusive lock and has synced), flush and fsync.
        A failed write is cut back off, so no half record is left behind by a live process."""
        data = self._encode(records)
        start = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        except BaseException:
            os.ftruncate(fd, start)
            raise
        pending = _Pending(self)
        pending.parse(data.split(b"\n")[:-1], self._lines + 1)
        pending.commit()
        self._offset += len(data)
        self._lines += len(records)

    def _encode(self, records: Sequence[Mapping[str, Any]]) -> bytes:
        """The lines of ``records``, made before any byte is written: a record that is not JSON or
        not text (a lone surrogate) is an :class:`~agentcontext.errors.OptionError` and the file
        is left as it was."""
        lines = []
        for record in records:
            try:
                line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
            except (TypeError, ValueError) as exc:
                raise OptionError(
                    f"{self.path}: a {record.get('type')} record is not JSON: {exc}; nothing was written"
                ) from None
            if _checks.lone_surrogate(line) is not None:
                raise OptionError(
                    f"{self.path}: a {record.get('type')} record is not valid Unicode text (a lone surrogate); "
                    "nothing was written"
                )
            lines.append(line + "\n")
        return "".join(lines).encode("utf-8")

    @contextmanager
    def _writing(self, *, create: bool = False) -> Iterator[int]:
        """Hold the exclusive lock with this view caught up with the file, any torn tail repaired,
        and the header written if the file is empty (new, or holding only a torn header)."""
        with self._mutex, self._locked(exclusive=True, create=create) as fd:
            self._sync(fd, repair=True)
            if self._offset == 0:
                self._append_lines(fd, [{"type": "session", "version": 1, "format": self.format}])
            yield fd

    # -- reading ---------------------------------------------------------------------------

    def refresh(self) -> int:
        """Read the records other writers appended since this object last read or wrote the file
        (waits for an append in progress); returns how many were read. Never modifies the file."""
        with self._mutex, self._locked(exclusive=False) as fd:
            return self._sync(fd, repair=False)

    def originals(self) -> Conversation:
        """Every message ever logged, as one conversation."""
        with self._mutex:
            return self._conversation(self.messages)

    def working_set(self, *, upto_compaction: int | None = None) -> Conversation:
        """The working set after the last compaction (or after compaction ``upto_compaction``;
        0 means before any): its entries, then every message logged since."""
        with self._mutex:
            if upto_compaction is not None and (
                _checks.count("upto_compaction", upto_compaction) > len(self.compactions)
            ):
                raise OptionError(
                    f"upto_compaction must be an integer from 0 to {len(self.compactions)} "
                    f"(the compactions logged); got {upto_compaction!r}"
                )
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
        with self._mutex:
            return self._origins_upto(len(self.compactions))

    def rollback(self) -> Conversation:
        """The working set as it was before the last compaction (appends a rollback record that
        undoes it; nothing is deleted). The last compaction is the last one this object has seen."""
        with self._mutex:
            if not self.compactions:
                return self.working_set()
            before = self.working_set(upto_compaction=len(self.compactions) - 1)
            origins = self._origins_upto(len(self.compactions) - 1)
            self._record_working_set(
                before, origins, upto=len(self.messages), extra={"rollback_of": len(self.compactions)}
            )
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

    def append(self, conversation: Conversation, start: int = 0) -> None:
        """Log the messages of ``conversation`` from position ``start`` on (in the session's format).

        The messages are written together under the log's lock, with the next indices of the file
        (records other writers appended meanwhile are read into :attr:`messages` first), and are on
        disk when this returns."""
        if not isinstance(conversation, Conversation):
            raise OptionError(f"conversation must be an agentcontext.Conversation; got {type(conversation).__name__}")
        self._check_format(conversation, "conversation")
        if _checks.count("start", start) > len(conversation):
            raise OptionError(
                f"start must be an integer from 0 to {len(conversation)} (the conversation's length); got {start!r}"
            )
        each = conversation._export_each()[start:]
        if not each:
            return
        with self._writing() as fd:
            first = len(self.messages)
            self._append_lines(
                fd, [{"type": "message", "index": first + i, "data": data} for i, data in enumerate(each)]
            )

    def record_compaction(self, result: Any, origins: list[int | None] | None = None) -> None:
        """Log a compaction: ``result`` is a :class:`agentcontext.compaction.CompactionResult` of
        the current working set (``origins`` maps its input positions to log indices; by default
        the working set this log rebuilds). ``upto`` is the number of messages this object has
        seen: messages other writers appended meanwhile follow the new working set."""
        if isinstance(getattr(result, "conversation", None), Conversation):
            self._check_format(result.conversation, "the compacted conversation")
        with self._mutex:
            seen = len(self.messages)
            origins = self.working_set_origins() if origins is None else origins
            for position, origin in enumerate(origins):
                if origin is not None and (
                    isinstance(origin, bool) or not isinstance(origin, int) or not 0 <= origin < seen
                ):
                    raise OptionError(
                        f"origins[{position}] must be None or a message index from 0 to {seen - 1}; got {origin!r}"
                    )
            mapped = [origins[p] if p is not None and p < len(origins) else None for p in result.provenance]
            self._record_working_set(
                result.conversation,
                mapped,
                upto=seen,
                extra={
                    "summary": result.summary,
                    "stages": [s.to_dict() for s in result.stages],
                    "tokens_before": result.tokens_before,
                    "tokens_after": result.tokens_after,
                    "first_kept": result.first_kept,
                },
            )

    def reconcile(self, conversation: Conversation, *, reason: str = "resume") -> ReconcileRecord | None:
        """Make the working set ``conversation`` when it is not (a session resumed from a snapshot
        older than the log's tail: a process killed mid-turn logged that turn's input and calls, and
        the snapshot does not hold them). The longest common prefix keeps its entries; messages of
        ``conversation`` after it that the log never saw are logged; the log's messages after it
        leave the working set — never the log — and the record says so: a compaction record with
        ``"reconciled": {"reason", "set_aside", "set_aside_messages", "added_messages"}``.
        Returns that record, or None when the working set already was ``conversation``."""
        if not isinstance(conversation, Conversation):
            raise OptionError(f"conversation must be an agentcontext.Conversation; got {type(conversation).__name__}")
        if not isinstance(reason, str) or not reason:
            raise OptionError(f"reason must be a non-empty string; got {reason!r}")
        self._check_format(conversation, "conversation")
        wanted = conversation._export_each()
        with self._writing() as fd:
            origins = self._origins_upto(len(self.compactions))
            current = self._working_data()
            same = 0
            while same < min(len(current), len(wanted)) and current[same] == wanted[same]:
                same += 1
            if same == len(current) == len(wanted):
                return None
            added = wanted[same:]
            first = len(self.messages)
            if added:
                self._append_lines(
                    fd, [{"type": "message", "index": first + i, "data": data} for i, data in enumerate(added)]
                )
            kept: list[LoggedRef | LoggedData] = [
                {"ref": o} if o is not None else {"data": d}
                for o, d in zip(origins[:same], current[:same], strict=True)
            ]
            entries = kept + [{"ref": first + i} for i in range(len(added))]
            aside = origins[same:]
            record: ReconcileRecord = {
                "type": "compaction",
                "seq": len(self.compactions) + 1,
                "upto": len(self.messages),
                "working_set": entries,
                "summary": None,
                "stages": [],
                "reconciled": {
                    "reason": reason,
                    # Log indices of the messages set aside (None: one a compaction had changed).
                    "set_aside": aside,
                    "set_aside_messages": len(aside),
                    "added_messages": len(added),
                },
            }
            self._append_lines(fd, [record])
            return record

    def _check_format(self, conversation: Conversation, what: str) -> None:
        """Refuse a conversation in another format than the log's: its messages written as they are
        would be records the log cannot read back (an OpenAI ``tool`` message in an Anthropic log)."""
        if conversation.format != self.format:
            raise OptionError(
                f"{self.path}: {what} is in {conversation.format!r} format, the log's messages are in "
                f"{self.format!r}; convert it first (Conversation(c.to_format({self.format!r}), "
                f"format={self.format!r})); nothing was written"
            )

    def _working_data(self) -> list[list[dict[str, Any]]]:
        """The working set's messages as logged (the caller holds the mutex)."""
        if not self.compactions:
            return list(self.messages)
        last = self.compactions[-1]
        data = [self.messages[e["ref"]] if "ref" in e else e["data"] for e in last["working_set"]]
        return data + self.messages[last["upto"] :]

    def _record_working_set(
        self, conv: Conversation, origins: list[int | None], *, upto: int, extra: Mapping[str, Any]
    ) -> None:
        each = conv._export_each()
        entries = [{"ref": o} if o is not None else {"data": d} for o, d in zip(origins, each, strict=True)]
        with self._writing() as fd:
            record = {"type": "compaction", "seq": len(self.compactions) + 1, "upto": upto, "working_set": entries}
            self._append_lines(fd, [{**record, **extra}])
