"""Argument checks for the Python half of the API: a value of the wrong type or out of range is an
:class:`~agentcontext.errors.OptionError` that names the argument and the value, as the compiled
core does for its own arguments (never ``TypeError``, ``OverflowError`` or a bare ``ValueError``).
The command line's helpers are here too: its read-only subcommands' parsers, and the output
files a command writes (:func:`check_output`, :func:`write_output`, :func:`check_report_output`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import operator
import os
import re
import stat
import tempfile
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agentcontext.errors import ArgumentTypeError, OptionError

if TYPE_CHECKING:
    import argparse

#: The largest count the compiled core accepts (``usize`` on 64-bit platforms).
MAX_COUNT = 2**64 - 1


def _shown(value: Any) -> str:
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    if value is None or isinstance(value, bool | int | float):
        return text
    return f"{type(value).__name__} {text}"


def count(name: str, value: Any, *, minimum: int = 0) -> int:
    """``value`` as an int of at least ``minimum`` (0 or 1) and at most :data:`MAX_COUNT`."""
    what = "a non-negative integer" if minimum == 0 else "a positive integer"
    if isinstance(value, bool | float | str | bytes):
        raise ArgumentTypeError(f"{name} must be {what}, got {_shown(value)}")
    try:
        number = operator.index(value)
    except TypeError:
        raise ArgumentTypeError(f"{name} must be {what}, got {_shown(value)}") from None
    if number < minimum:
        raise OptionError(f"{name} must be {what}, got {number}")
    if number > MAX_COUNT:
        raise OptionError(f"{name} is too large: {number} (the largest accepted is {MAX_COUNT})")
    return number


def flag(name: str, value: Any) -> bool:
    """``value``, which must be True or False (a truthy string or 1 is refused, not guessed)."""
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be True or False, got {_shown(value)}")
    return value


def optional_count(name: str, value: Any, *, minimum: int = 0) -> int | None:
    """:func:`count`, or None."""
    return None if value is None else count(name, value, minimum=minimum)


def number(name: str, value: Any, *, low: float = 0.0, high: float = math.inf, low_open: bool = False) -> float:
    """``value`` as a finite number in ``[low, high]`` (``(low, high]`` with ``low_open``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArgumentTypeError(f"{name} must be a number, got {_shown(value)}")
    result = float(value) if not isinstance(value, int) or abs(value) < 2**1023 else math.inf
    if not math.isfinite(result) or result < low or result > high or (low_open and result == low):
        bounds = f"{'over' if low_open else 'at least'} {low:g}" + (f" and at most {high:g}" if high < math.inf else "")
        raise OptionError(f"{name} must be a finite number {bounds}, got {value!r}")
    return result


def count_map(name: str, value: Any) -> dict[str, int]:
    """A mapping of names to non-negative ints, each value checked as ``name['key']``."""
    if not isinstance(value, Mapping):
        raise ArgumentTypeError(f"{name} must be a mapping of names to integers, got {_shown(value)}")
    out: dict[str, int] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise ArgumentTypeError(f"{name} keys must be names (str), got {_shown(key)}")
        out[key] = count(f"{name}[{key!r}]", item)
    return out


#: The deepest nesting of arrays and objects accepted in a tool call's JSON arguments.
MAX_ARGUMENT_DEPTH = 128

# A JSON string (possibly unterminated) or one bracket: brackets inside strings are not nesting.
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)


def json_arguments(
    text: str, what: str = "tool arguments", object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None
) -> Any:
    """``text`` (a tool call's JSON arguments) parsed by :func:`json.loads`.

    Text that is not JSON raises :class:`json.JSONDecodeError` (a ``ValueError``) as ``json.loads``
    does. Nesting deeper than :data:`MAX_ARGUMENT_DEPTH` is an :class:`OptionError` naming
    ``what``, decided from the text alone, before parsing: never a ``RecursionError``, and the same
    answer at any stack depth of the caller (a permission check and the tool that runs agree).
    ``object_pairs_hook`` is :func:`json.loads`'s."""
    if text.count("[") + text.count("{") > MAX_ARGUMENT_DEPTH:
        depth = 0
        for match in _JSON_TOKEN.finditer(text):
            token = match.group()
            if token in ("[", "{"):
                depth += 1
                if depth > MAX_ARGUMENT_DEPTH:
                    raise OptionError(
                        f"{what} are nested deeper than {MAX_ARGUMENT_DEPTH} levels of arrays and objects"
                    )
            elif token in ("]", "}") and depth > 0:
                depth -= 1
    return json.loads(text, object_pairs_hook=object_pairs_hook)


def lone_surrogate(value: str) -> str | None:
    """Where ``value`` holds a lone surrogate (which UTF-8 cannot encode: not text), said for a
    message (``"character 5 (U+D800)"``, with the line and column when it has several lines);
    None when it is valid text."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        at = exc.start
        where = f"character {at + 1}"
        if "\n" in value:
            line = value.count("\n", 0, at) + 1
            where = f"line {line}, column {at - (value.rfind(chr(10), 0, at) + 1) + 1}"
        return f"{where} (U+{ord(value[at]):04X})"
    return None


def text(name: str, value: str) -> str:
    """``value`` if it is valid Unicode text; an :class:`OptionError` naming ``name`` and where the
    lone surrogate is otherwise (a string from ``\\ud800`` in JSON, or from bytes that are not UTF-8
    on a command line)."""
    where = lone_surrogate(value)
    if where is not None:
        raise OptionError(f"{name} is not valid Unicode text: a lone surrogate at {where}")
    return value


def file_name(name: str, value: Any) -> Any:
    """``value``, a path (``str`` or ``os.PathLike``), checked to be a name the file system can take:
    one holding a lone surrogate (outside surrogateescape's range) or a NUL character is an
    :class:`OptionError` naming the argument (every ``os`` call on it raises a bare
    ``UnicodeEncodeError`` or ``ValueError``). A value of
    another type is returned as it is, for the caller's own type check."""
    try:
        encoded = os.fsencode(value)
    except UnicodeEncodeError:
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise OptionError(f"{name} is not a valid file name: it holds a lone surrogate, got {shown}") from None
    except TypeError:
        return value
    if b"\0" in encoded:
        # Every os call on it raises a bare ValueError ("embedded null byte").
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise OptionError(f"{name} is not a valid file name: it holds a NUL character, got {shown}")
    return value


def path_argument(name: str, value: Any) -> Any:
    """``value`` checked as :func:`file_name` checks it, and to be a ``str`` or ``os.PathLike``
    (anything else is an :class:`ArgumentTypeError` naming the argument)."""
    if not isinstance(value, str | os.PathLike):
        raise ArgumentTypeError(f"{name} must be a str or os.PathLike, got {type(value).__name__}")
    return file_name(name, value)


def shown_line(text: str) -> str:
    """``text`` as one line a terminal shows as it is: a character that is not printable (a line
    break, an escape that would move the cursor or clear the screen, from a file's name or
    content) is written as its escape (``\\n``, ``\\x1b``)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


#: The control characters (Unicode category Cc) but a line break and a tab.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def shown_text(text: str) -> str:
    """``text`` (lines, a report) as a terminal shows it: a control character other than a line
    break or a tab (an escape that would clear the screen, set the window title or move the
    cursor, a carriage return that would print over a line, from a file's name or content) is
    written as its escape (``\\x1b``, ``\\r``)."""
    return _CONTROLS.sub(lambda m: repr(m.group())[1:-1], text)


def human_size(size: int) -> str:
    """A size as messages write it, as :func:`agentcontext.read_page` does (and the core's ``files::human``): ``512 KB``, ``3.2 MB``, ``5.0 GB``."""
    if size >= 1 << 30:
        return f"{size / (1 << 30):.1f} GB"
    if size >= 1 << 20:
        return f"{size / (1 << 20):.1f} MB"
    return f"{-(-size // 1024)} KB"


#: The exit statuses of the commands that only read (``memory``, ``search``, ``sessions``,
#: ``prompt``), shown by their ``--help``.
READ_EXIT_STATUS = """exit status:
  0  success
  2  bad input: a bad argument, or a file or directory that cannot be read (one line on stderr)"""


def read_command(sub: Any, name: str, help: str, description: str) -> argparse.ArgumentParser:
    """A subcommand of ``sub`` that only reads: its help line, its description and the exit statuses
    in its ``--help``."""
    import argparse  # only with the command line

    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help,
        description=description,
        epilog=READ_EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def max_bytes_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """``--max-bytes SIZE``: the largest ``what`` (a file argument's metavar) read, 1G by default
    (for every command line: ``agentcontext inspect|compact|search``)."""
    parser.add_argument(
        "--max-bytes",
        type=_byte_size,
        default=1 << 30,
        metavar="SIZE",
        help=f"refuse a {what} larger than this (e.g. 2G, 500M; default: 1G); only regular files are read",
    )


def session_choice(text: str | None) -> str | int | None:
    """``--session``: an index when it is ASCII digits, else a session name. (``str.isdigit`` is
    also true of ``"²"`` and ``"٣"``, which ``int`` refuses or reads as a number: a traceback, or a
    session named so that could not be picked.)"""
    if text is not None and text.isascii() and text.isdigit():
        return int(text)
    return text


def _byte_size(text: str) -> int:
    """``--max-bytes``: a number of bytes, or one with a K, M or G suffix (powers of 1024)."""
    import argparse

    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    digits = text[:-1] if scale > 1 else text
    if not (digits.isascii() and digits.isdigit()) or int(digits) == 0:
        raise argparse.ArgumentTypeError(f"expected a size such as 2G, 500M or 1000000, got {text!r}")
    return int(digits) * scale


# -- the files a command writes ------------------------------------------------------------


def check_output(path: str, flag: str = "-o") -> None:
    """Refuse an ``-o`` path (or the path of the option ``flag``) that cannot be written before any
    work is done: a directory, a folder that does not exist, a file without write permission."""
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise OptionError(f"cannot write {flag} {path}: it is a directory")
    if not os.path.isdir(parent):
        raise OptionError(f"cannot write {flag} {path}: no such directory {parent}")
    target = path if os.path.exists(path) else parent
    if not os.access(target, os.W_OK):
        raise OptionError(f"cannot write {flag} {path}: permission denied")


def write_output(path: str, text: str, flag: str = "-o") -> None:
    """Write ``text`` to the ``-o`` path (or the path of the option ``flag``). A regular file (or
    a new one) is replaced whole: the text goes to a temporary file beside it, synced, then renamed
    over it, so a write that fails (a full disk, a killed process) leaves the file as it was, even
    when it is the input. A FIFO is written only if a process reads it (never waited for); a device
    (``/dev/null``, a terminal) is written as it is."""
    data = text.encode("utf-8")
    try:
        info: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        info = None
    except OSError as err:
        raise OptionError(f"cannot write {flag} {path}: {err.strerror or err}") from None
    if info is not None and not stat.S_ISREG(info.st_mode):
        try:
            _write_special(path, info, data, flag)
        except OSError as err:
            raise OptionError(f"cannot write {flag} {path}: {err.strerror or err}") from None
        return
    target = os.path.realpath(path)  # a symlink is written through, as open() did
    try:
        try:
            fd, tmp = tempfile.mkstemp(
                dir=os.path.dirname(target), prefix=f".{os.path.basename(target)}.", suffix=".tmp"
            )
        except PermissionError:
            if info is None:
                raise
            # A file that may be written in a folder that may not: written in place, as before.
            info = None  # a failure now may have changed it
            with open(target, "wb") as f:
                f.write(data)
            return

        def mode() -> None:
            # The mode the file had (or a new file's: 0o666 less the umask), not mkstemp's 0o600.
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(tmp, stat.S_IMODE(info.st_mode) if info is not None else 0o666 & ~mask)

        replace_durably(fd, tmp, target, data, before=mode)
    except OSError as err:
        kept = "; it is as it was" if info is not None else ""
        raise OptionError(f"cannot write {flag} {path}: {err.strerror or err}{kept}") from None


def replace_durably(
    fd: int,
    tmp: str | os.PathLike[str],
    target: str | os.PathLike[str],
    data: bytes,
    *,
    before: Callable[[], None] | None = None,
) -> None:
    """Write ``data`` to the new file open at ``fd`` (named ``tmp``), flushed to the disk, then,
    after ``before()``, move it to ``target`` (replacing whatever holds that name: a symlink
    itself, not its target). On any failure ``tmp`` is removed where it can be and the error is
    raised as it came (the caller names it): ``target`` is as it was."""
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if before is not None:
            before()
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_special(path: str, info: os.stat_result, data: bytes, flag: str) -> None:
    """Write ``data`` to ``path``, a file that is not regular: a FIFO only when a process has it
    open for reading (opening it to write would otherwise wait for one forever)."""
    flags = os.O_WRONLY
    if stat.S_ISFIFO(info.st_mode):
        flags |= os.O_NONBLOCK
    elif not stat.S_ISCHR(info.st_mode):
        raise OptionError(f"cannot write {flag} {path}: it is not a regular file, a FIFO or a device")
    try:
        fd = os.open(path, flags)
    except OSError as err:
        if err.errno == errno.ENXIO:
            raise OptionError(f"cannot write {flag} {path}: a FIFO that no process is reading") from None
        raise
    with os.fdopen(fd, "wb") as f:
        if flags & os.O_NONBLOCK:
            os.set_blocking(fd, True)  # a reader is there: wait for it to take the data
        f.write(data)


def check_report_output(flag: str, path: str, start: bytes) -> None:
    """Refuse a report path that holds something else than a report `eval` wrote (a file that
    starts otherwise): ``eval --json a.jsonl b.jsonl`` takes ``a.jsonl`` for the report's path
    (``--json`` is a flag in the other commands), and replaced that transcript with the report."""
    check_output(path, flag)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return
    except OSError as err:
        raise OptionError(f"cannot write {flag} {path}: {err.strerror or err}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return  # /dev/stdout, /dev/null, a FIFO: nothing there to lose
        head = os.read(fd, max(len(start), 256))
    finally:
        os.close(fd)
    if head and not head.startswith(start):
        first = head.split(b"\n", 1)[0].decode("utf-8", "replace")
        raise OptionError(
            f"{flag} {path}: the file exists and is not a report eval wrote (it starts {first[:60]!r}); "
            "it is not overwritten: remove it or name another file"
        )


# -- locks a fork must not copy while they are held -------------------------------------------

#: Every live object (a SessionLog, a SnapshotStore, a MemoryStore) whose ``_mutex`` guards a write
#: under an OS file lock.
_LIVE: weakref.WeakSet[Any] = weakref.WeakSet()
_HELD_FOR_FORK: list[threading.RLock] = []
_REGISTERED = False


def hold_across_forks(owner: Any) -> None:
    """Take ``owner._mutex`` (a ``threading.RLock``) across every ``os.fork`` of this process
    (``multiprocessing``'s fork start method included). A child forked while another thread was
    mid-write inherited the mutex held by a thread it does not have (its first write waited for
    ever) and the descriptor holding the file lock (the lock stayed held, for every process, until
    the child exited). The mutexes are taken before the fork, waiting for a write in progress, and
    released after it in the parent and in the child.

    The hooks are registered on the first call, after the core's own (``_core`` registers them
    when it is imported): ``before`` hooks run newest first, so these wait for the writing thread
    while the core's locks are still free to it (taken first, the core's locks stopped a writer
    that counts tokens, and the fork waited for it for ever)."""
    global _REGISTERED
    if not _REGISTERED and hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_before_fork, after_in_parent=_after_fork, after_in_child=_after_fork)
        _REGISTERED = True
    _LIVE.add(owner)


def _before_fork() -> None:
    for owner in sorted(_LIVE, key=id):
        owner._mutex.acquire()
        _HELD_FOR_FORK.append(owner._mutex)


def _after_fork() -> None:
    while _HELD_FOR_FORK:
        _HELD_FOR_FORK.pop().release()
