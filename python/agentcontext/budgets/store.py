"""The content-addressed store of full tool results that markers and previews point to."""

from __future__ import annotations

import codecs
import hashlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from agentcontext import _checks
from agentcontext.budgets.ids import MAX_ID_CHARS, RECALL_ID, _check_id, _shown
from agentcontext.budgets.recall import Recall
from agentcontext.errors import ArgumentTypeError, OptionError, RecallError

__all__ = ["MAX_ID_CHARS", "RECALL_ID", "ResultStore"]


class ResultStore:
    """A content-addressed store of full tool results, one file per result under ``directory``.

    The id of a text is derived from its SHA-256, so storing the same text twice gives the same
    id and one file. Writes go to a temporary file in the same directory and are renamed into
    place, so concurrent writers (threads or processes) of the same result leave one intact file
    and a reader never sees a partial one. A text can also be stored under an alias (a tool call
    id), which :meth:`alias` resolves to its recall id. Only regular files are read back: a
    symlink or anything else planted under a stored name is refused. A result is read back only
    as the text its recall id was derived from: a file changed on disk (edited, truncated) no
    longer has that hash, and reading it raises :class:`RecallError` instead of returning it.
    Beside each result the store records its size in bytes (``<recall id>.len``): a file of
    another size is refused before it is read, and no more than that size is read (a huge file
    planted under a stored name is never read whole). A result stored without that record (by
    an earlier version) has its hash checked in a first pass that keeps none of it, before its
    text is read.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(_checks.path_argument("directory", directory))
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OptionError(f"cannot use {self.directory} as a result store: {exc.strerror or exc}") from None
        if not self.directory.is_dir():
            raise OptionError(f"cannot use {self.directory} as a result store: not a folder")

    @staticmethod
    def id_for(text: str) -> str:
        return "r-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]

    def path_for(self, recall_id: str) -> Path:
        _check_id(recall_id)
        if not RECALL_ID.fullmatch(recall_id):
            raise RecallError(
                f"not a recall id: recall_id={_shown(recall_id)} (expected r- and 20 hex digits)", recall_id
            )
        return self.directory / f"{recall_id}.txt"

    def _size_path(self, recall_id: str) -> Path:
        return self.directory / f"{recall_id}.len"

    def _alias_path(self, alias: str) -> Path:
        return self.directory / f"a-{hashlib.sha256(alias.encode('utf-8', 'surrogatepass')).hexdigest()[:20]}.ref"

    def _write(self, path: Path, data: bytes, recall_id: str) -> None:
        """Write ``data`` to ``path`` atomically; a failure of the file system (the folder gone,
        a full disk) is a :class:`RecallError` naming the path, and leaves nothing behind."""
        try:
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{path.stem}.", suffix=".tmp")
        except OSError as exc:
            raise RecallError(f"{path}: cannot store the result: {exc.strerror or exc}", recall_id) from None
        try:
            # Replaces whatever holds the name, a planted symlink included (the link, not its target).
            _checks.replace_durably(fd, tmp, path, data)
        except OSError as exc:
            raise RecallError(f"{path}: cannot store the result: {exc.strerror or exc}", recall_id) from None

    def _open(self, path: Path, recall_id: str) -> int | None:
        """A descriptor of the regular file at ``path`` (None when there is none); anything else is refused."""
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            return None
        except OSError as exc:
            if path.is_symlink():
                raise RecallError(
                    f"{path} is a symlink; the store reads only its own regular files", recall_id
                ) from None
            raise RecallError(f"{path}: cannot read the stored result: {exc.strerror}", recall_id) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise RecallError(f"{path} is not a regular file; the store reads only its own files", recall_id)
        return fd

    def _read(self, path: Path, recall_id: str, *, limit: int) -> str | None:
        """The text of a regular file at ``path`` of at most ``limit`` bytes (None when there is
        none); anything else is refused."""
        fd = self._open(path, recall_id)
        if fd is None:
            return None
        return "".join(self._decode(os.fdopen(fd, "rb"), path, recall_id, limit=limit))

    def _result(self, recall_id: str) -> tuple[BinaryIO, int | None] | None:
        """The open file of the result stored under ``recall_id`` and its recorded size (None
        when there is no file), the file's size checked against the record; with no record, its
        hash is checked in a first pass that keeps none of it. :meth:`_decode` reads it then."""
        path = self.path_for(recall_id)
        fd = self._open(path, recall_id)
        if fd is None:
            return None
        try:
            size = self._recorded_size(recall_id)
            if size is not None and os.fstat(fd).st_size != size:
                raise _mismatch(path, recall_id)
            again = os.dup(fd) if size is None else None
        except BaseException:
            os.close(fd)
            raise
        f = os.fdopen(fd, "rb")
        if again is not None:
            try:
                # Hashed before anything is kept: a planted file is refused holding one chunk.
                for _ in self._decode(f, path, recall_id, limit=None, keep=False):
                    pass
            except BaseException:
                os.close(again)
                raise
            f = os.fdopen(again, "rb")
            f.seek(0)
        return f, size

    def _recorded_size(self, recall_id: str) -> int | None:
        """The size in bytes the store recorded for the result ``recall_id`` when it stored it;
        None when it has no record. A record that is not one (a symlink, a directory, not a
        number) is refused."""
        path = self._size_path(recall_id)
        text = self._read(path, recall_id, limit=_SIZE_DIGITS)
        if text is None:
            return None
        if not (text.isascii() and text.isdigit()):
            raise RecallError(f"{path}: not a size the store recorded (changed outside the store?)", recall_id)
        return int(text)

    @staticmethod
    def _decode(
        f: BinaryIO,
        path: Path,
        recall_id: str,
        chunk: int = 1 << 20,
        *,
        limit: int | None,
        verify: bool = False,
        keep: bool = True,
    ) -> Iterator[str]:
        """The text of the open file ``f`` (closed when done), decoded a chunk at a time. The file
        object is made by the caller, before this generator starts: a generator never iterated
        never runs its body, and a descriptor it was to wrap would never be closed; a file
        object is closed when it is collected. A file longer than ``limit`` bytes (None: no
        limit) raises :class:`RecallError` after ``limit + 1`` bytes are read. ``keep=False``:
        nothing is decoded or given (only the checks).

        With ``verify``, the bytes are hashed as they are read, and once they are all read (before
        the iteration ends) bytes whose id (:meth:`id_for`) is not ``recall_id`` raise
        :class:`RecallError`: a consumer that reads every piece, as :meth:`get` and the pager do,
        never takes a changed file for the stored result."""
        decoder = codecs.getincrementaldecoder("utf-8")()
        digest = hashlib.sha256() if verify or not keep else None
        left = limit
        with f:
            try:
                while data := f.read(chunk if left is None else min(chunk, left + 1)):
                    if left is not None:
                        left -= len(data)
                        if left < 0:
                            raise _TooLong(str(_mismatch(path, recall_id)), recall_id)
                    if digest is not None:
                        digest.update(data)
                    if keep:
                        yield decoder.decode(data)
                if digest is not None and "r-" + digest.hexdigest()[:20] != recall_id:
                    raise _mismatch(path, recall_id)
                if keep:
                    yield decoder.decode(b"", final=True)
            except UnicodeDecodeError:
                raise RecallError(
                    f"{path}: the stored result is not UTF-8 (changed outside the store?)", recall_id
                ) from None

    def pieces(self, recall_id: str) -> Iterator[str]:
        """The text stored under ``recall_id``, in pieces read as they are consumed (memory holds
        one piece, whatever the size of the result). A file changed on disk raises
        :class:`RecallError` once its last piece is read, before the iteration ends: use the
        pieces only after they were all read (as :meth:`recall`'s pager does)."""
        found = self._result(recall_id)
        if found is None:
            raise RecallError(f"no stored result with recall id {recall_id!r}", recall_id)
        return self._decode(found[0], self.path_for(recall_id), recall_id, limit=found[1], verify=True)

    def _holds(self, path: Path) -> bool:
        try:
            return stat.S_ISREG(os.lstat(path).st_mode)
        except OSError:
            return False

    @staticmethod
    def _holds_data(path: Path, data: bytes, chunk: int = 1 << 20) -> bool:
        """Whether ``path`` is a regular file that holds exactly ``data`` (compared a chunk at a
        time, after its size)."""
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            return False
        # Told apart before a file object is made: Python's refuses a directory (a bare
        # IsADirectoryError out of ``put``, the descriptor left open).
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
            os.close(fd)
            return False
        with os.fdopen(fd, "rb") as f:
            view, at = memoryview(data), 0
            while piece := f.read(chunk):
                if view[at : at + len(piece)] != piece:
                    return False
                at += len(piece)
            return at == len(data)

    def put(self, text: str, *, alias: str | None = None) -> str:
        """Store ``text`` and return its recall id; with ``alias`` (a tool call id), the alias
        resolves to that id from now on (:meth:`alias`). A file of the store that no longer holds
        ``text`` (changed on disk) is written again. Both must be text: a lone surrogate in
        either is an :class:`OptionError`, raised before anything is written; a file system that
        cannot take it (the folder gone, a full disk) is a :class:`RecallError` naming the file."""
        if not isinstance(text, str):
            raise ArgumentTypeError(f"text must be a string, not {type(text).__name__}")
        data = _checks.text("text", text).encode("utf-8")
        recall_id = self.id_for(text)
        path = self.path_for(recall_id)
        record = None
        if alias is not None:
            _checks.text("alias", _check_id(alias, "alias"))
            record = f"{alias}\n{recall_id}"
        if not self._holds_data(path, data):
            self._write(path, data, recall_id)
        # Then its size: read before the size is written, the result is checked as an earlier
        # version's (its hash first).
        size = str(len(data)).encode("ascii")
        if not self._holds_data(self._size_path(recall_id), size):
            self._write(self._size_path(recall_id), size, recall_id)
        if alias is not None and record is not None:
            ref = self._alias_path(alias)
            if not self._holds_data(ref, record.encode("utf-8")):
                self._write(ref, record.encode("utf-8"), alias)
        return recall_id

    def alias(self, name: str) -> str | None:
        """The recall id stored under the alias ``name``, or None."""
        _check_id(name, "alias")
        try:
            text = self._read(self._alias_path(name), name, limit=_ALIAS_BYTES)
        except _TooLong:
            return None  # longer than any alias record: not one the store wrote
        if text is None:
            return None
        stored_name, _, recall_id = text.rpartition("\n")
        return recall_id if stored_name == name and RECALL_ID.fullmatch(recall_id) else None

    def get(self, recall_id: str) -> str:
        """The full text stored under ``recall_id``.

        Raises:
            RecallError: nothing is stored under it, or the file was changed on disk (its text no
                longer has the hash the id was derived from).
        """
        found = self._result(recall_id)
        if found is None:
            raise RecallError(f"no stored result with recall id {recall_id!r}", recall_id)
        return "".join(self._decode(found[0], self.path_for(recall_id), recall_id, limit=found[1], verify=True))

    def __contains__(self, recall_id: object) -> bool:
        return (
            isinstance(recall_id, str)
            and bool(RECALL_ID.fullmatch(recall_id))
            and self._holds(self.path_for(recall_id))
        )

    def recall(
        self,
        recall_id: str,
        offset: int = 1,
        lines: int = 500,
        *,
        char_offset: int | None = None,
        max_chars: int = 20_000,
        path: str | None = None,
    ) -> str:
        """The answer of the ``recall`` tool for a stored result: see :meth:`Recall.recall`."""
        _check_id(recall_id)
        return Recall(self).recall(recall_id, offset, lines, char_offset=char_offset, max_chars=max_chars, path=path)


#: The most bytes a size record holds (a decimal count of bytes).
_SIZE_DIGITS = 20

#: The most bytes an alias record holds: the alias (at most MAX_ID_CHARS characters, each at most
#: 4 bytes in UTF-8), a newline and a recall id.
_ALIAS_BYTES = 4 * MAX_ID_CHARS + 1 + 23


class _TooLong(RecallError):
    """A file of the store longer than its record says (or than any record of its kind)."""


def _mismatch(path: Path, recall_id: str) -> RecallError:
    return RecallError(
        f"{path}: the stored result does not match its recall id {recall_id} (changed or truncated outside the store?)",
        recall_id,
    )
