"""The session log's file: the OS lock every reader and writer takes, and the records parsed from
its lines, checked before they join a :class:`~agentcontext.SessionLog`'s view (see
:mod:`agentcontext.sessions.log` for the format and the concurrency contract)."""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeGuard, get_args

from agentcontext import _json
from agentcontext.errors import ArgumentTypeError, OptionError, TranscriptError
from agentcontext.types import Encoding, Format

if TYPE_CHECKING:
    from agentcontext.sessions.log import SessionLog

_FORMATS: tuple[str, ...] = get_args(Format)
_ENCODINGS: tuple[str, ...] = get_args(Encoding)

if sys.platform == "win32":
    import msvcrt

    #: The byte locked on Windows. ``msvcrt.locking`` locks are mandatory (they block reads and
    #: writes of the locked range through other handles), so the lock sits far past any data a log
    #: will hold; Windows allows locking beyond the end of a file.
    _LOCK_OFFSET = 1 << 62

    def _lock(fd: int, *, exclusive: bool) -> None:
        # msvcrt has no shared lock: readers take the exclusive one too. LK_LOCK gives up after
        # ten one-second retries, so wait here with LK_NBLCK for as long as the holder lives.
        del exclusive
        delay = 0.001
        while True:
            os.lseek(fd, _LOCK_OFFSET, os.SEEK_SET)
            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            except OSError as exc:
                if exc.errno not in (errno.EACCES, errno.EDEADLOCK):
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
            else:
                return

    def _unlock(fd: int) -> None:
        os.lseek(fd, _LOCK_OFFSET, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(fd: int, *, exclusive: bool) -> None:
        # flock locks belong to the open file description: they exclude other opens of the file in
        # this process too, and are released when the last descriptor closes or the process dies.
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _check_encoding(encoding: object) -> None:
    """Refuse an encoding a conversation would refuse: taken, it failed only when the log's
    messages were read back (``originals``, ``working_set``, a resume), long after the mistake."""
    if not isinstance(encoding, str):
        raise ArgumentTypeError(f"encoding must be a str, got {type(encoding).__name__}")
    if encoding not in _ENCODINGS:
        raise OptionError(f"encoding must be one of {', '.join(_ENCODINGS)}; got {encoding!r}")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _whole_record(tail: bytes) -> bool:
    """Whether ``tail`` is a whole JSON object (a proper prefix of one never is)."""
    try:
        return isinstance(_json.loads(tail), dict)
    except (_json.IntegerTooLongError, RecursionError):
        return True  # whole, but not readable: parsing it names the problem
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False


#: Bytes that may stand between JSON values outside strings: whitespace, structure, and the
#: characters of numbers and of ``true``, ``false`` and ``null``.
_OUTSIDE_STRINGS = frozenset(b" \t\r\n:,+-.0123456789eEtrufalsn")
#: What a crash may leave after the bytes a writer wrote: zeros (a file system that had grown the
#: file but not written its last block) and whitespace.
_FILLER = b"\0 \t\r"


def _cut_record(tail: bytes) -> bool:
    """Whether ``tail`` (a last line without its line break) is what an append cut short leaves:
    the start of one JSON object, possibly followed by zero bytes, or nothing but such filler.

    Only those bytes are removed by a repair. Anything else (records joined without a line break,
    a log whose lines end in a lone carriage return, another tool's text) is not the start of one
    record and is kept. The check follows strings and brackets, not the whole JSON grammar: it
    tells a cut from more data after a closed object or from text that is not JSON."""
    data = tail.rstrip(b"\0").lstrip(b" \t\r")
    if not data.strip(_FILLER):
        return True
    if data[0] != ord("{"):
        return False
    depth = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
            elif byte < 0x20:
                return False  # a raw control character is never inside a JSON string
        elif byte == 0x22:
            in_string = True
        elif byte in b"{[":
            depth += 1
        elif byte in b"}]":
            depth -= 1
            if depth == 0:
                return False  # the object closed: what follows it is more than one cut record
        elif byte not in _OUTSIDE_STRINGS:
            return False
    return True


def _cut_tail(fd: int, tail: bytes | None, start: int, length: int) -> bool:
    """Whether the ``length`` bytes at ``start`` (the last line, without a line break; ``tail``
    its bytes, None when they were not kept as they cannot start a record) are what an append
    cut short leaves (:func:`~agentcontext.sessions.log_file._cut_record`)."""
    if tail is not None:
        return _cut_record(tail)
    os.lseek(fd, start, os.SEEK_SET)
    while length > 0:
        chunk = os.read(fd, min(length, 1 << 24))
        if not chunk:
            break
        if chunk.strip(_FILLER):
            return False
        length -= len(chunk)
    return True


def _is_index(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


#: The version of the log's records this library reads and writes (the header's ``"version"``).
LOG_VERSION = 1

#: How every header SessionLog writes starts (``json.dumps`` with its separators, keys in this order).
_HEADER_START = b'{"type":"session","version":1,"format":"'


def _torn_header(tail: bytes | None) -> bool:
    """Whether ``tail`` (a first line without its line break) can be a header whose write was cut."""
    return tail is not None and (
        _HEADER_START.startswith(tail) or (tail.startswith(_HEADER_START) and _cut_record(tail))
    )


#: Why a line nested deeper than Python's JSON parser goes (it raised RecursionError) is refused.
_TOO_DEEP = "a JSON value nested deeper than Python's JSON parser reads (not a record SessionLog writes)"


class _Pending:
    """Records parsed from new lines of the file, checked, and added to the log's view only by
    :meth:`commit` (so an invalid record leaves the view as it was)."""

    def __init__(self, log: SessionLog) -> None:
        self.log = log
        self.format: Format = log.format
        self.messages: list[list[dict[str, Any]]] = []
        self.compactions: list[dict[str, Any]] = []
        self.skipped: list[int] = []
        self.others = 0

    def _error(self, number: int, what: str) -> TranscriptError:
        path = str(self.log.path)
        return TranscriptError(f"{path}: line {number}: {what}", path, number)

    def parse(self, lines: Sequence[bytes | None], first: int) -> None:
        """Parse ``lines`` (numbered from ``first``); a None line is one that is not JSON."""
        for number, line in enumerate(lines, start=first):
            if number == 1:
                self.check_header(line)
            if line is None:
                self.skipped.append(number)
                continue
            if not line.strip():
                continue
            try:
                record = _json.loads(line)
            except _json.IntegerTooLongError as exc:
                raise self._error(number, f"{exc.msg} (column {exc.colno})") from None
            except RecursionError:
                raise self._error(number, _TOO_DEEP) from None
            except (json.JSONDecodeError, UnicodeDecodeError):
                self.skipped.append(number)
                continue
            if not isinstance(record, dict):
                raise self._error(number, "not a log record")
            kind = record.get("type")
            if kind == "message":
                data = record.get("data")
                if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
                    raise self._error(number, 'a message record without a "data" list of message objects')
                self.messages.append(data)
            elif kind == "compaction":
                self._check_compaction(record, number)
                self.compactions.append(record)
            elif kind == "session":
                fmt = record.get("format", self.format)
                if fmt not in _FORMATS:
                    raise self._error(number, f"the header's format must be one of {', '.join(_FORMATS)}; got {fmt!r}")
                self.format = fmt
                self.others += 1
            else:
                self.others += 1

    def check_header(self, line: bytes | None) -> None:
        """Line 1 of a log is the header SessionLog writes. A file that starts otherwise (a
        transcript, any other JSON Lines) is not a session log: taken for an empty one, its own
        lines were counted as records of another kind and the next append wrote log records into
        it."""
        what = "not JSON"
        if line is not None:
            try:
                record = _json.loads(line)
            except _json.IntegerTooLongError as exc:
                raise self._error(1, f"{exc.msg} (column {exc.colno})") from None
            except RecursionError:
                raise self._error(1, _TOO_DEEP) from None
            except (json.JSONDecodeError, UnicodeDecodeError):
                record = None
            if isinstance(record, dict) and record.get("type") == "session":
                version = record.get("version", LOG_VERSION)
                if version != LOG_VERSION or isinstance(version, bool):
                    # A later version's records may mean something else: not read, never appended to.
                    raise self._error(
                        1,
                        f"a session log of version {version!r}; this library reads and writes version "
                        f"{LOG_VERSION} (left as it is)",
                    )
                return
            if isinstance(record, dict):
                kind = record.get("type")
                what = 'a JSON object with no "type"' if kind is None else f"a JSON object with type {kind!r}"
            elif record is not None:
                what = f"a JSON {type(record).__name__}, not an object"
        raise self._error(
            1,
            f"not a session log: its first line is {what}, not the header a SessionLog starts with "
            '({"type": "session", ...}); SessionLog reads and appends to its own logs only (read a transcript '
            "with agentcontext.importers.load)",
        )

    def _check_compaction(self, record: dict[str, Any], number: int) -> None:
        count = len(self.log.messages) + len(self.messages)
        upto = record.get("upto")
        if not _is_index(upto) or not 0 <= upto <= count:
            raise self._error(
                number, f'a compaction record whose "upto" is not a message count from 0 to {count}: {upto!r}'
            )
        entries = record.get("working_set")
        if not isinstance(entries, list):
            raise self._error(number, 'a compaction record without a "working_set" list')
        for i, entry in enumerate(entries):
            if isinstance(entry, dict) and "ref" in entry:
                ref = entry["ref"]
                if not _is_index(ref) or not 0 <= ref < count:
                    raise self._error(
                        number,
                        f"working_set[{i}] refers to message {ref!r}, but the {count} messages logged "
                        f"before this compaction are numbered 0 to {count - 1}",
                    )
            elif not isinstance(entry, dict) or not isinstance(entry.get("data"), list):
                raise self._error(number, f'working_set[{i}] has neither a "ref" nor a "data" list')

    def commit(self) -> None:
        log = self.log
        log.format = self.format
        log.messages.extend(self.messages)
        log.compactions.extend(self.compactions)
        log.skipped_lines.extend(self.skipped)
