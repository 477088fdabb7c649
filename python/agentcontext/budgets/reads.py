"""File reads for an agent: pages with limits, and dedup of repeated reads of unchanged files."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from agentcontext import _checks
from agentcontext._containment import inside, one_line, opened_inside
from agentcontext._core import Page, read_page
from agentcontext.errors import ArgumentTypeError, FileReadError, OptionError

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_NOFOLLOW", 0)

__all__ = ["FileReader"]


@dataclass
class _ReadRecord:
    number: int
    size: int
    mtime_ns: int
    content_hash: str
    start_line: int
    end_line: int


class FileReader:
    """File reads for an agent: :func:`agentcontext.read_page` with the given limits, plus dedup —
    reading the same range of an unchanged file again (same size, modification time and content
    hash) answers with a short stub naming the earlier read instead of the content.

    With ``root`` (a directory, such as the workspace), a relative path is taken from ``root`` and
    only files whose real path lies inside ``root`` are read: a path that leads out of it, through
    ``..`` or a symlink, is refused (:class:`~agentcontext.errors.FileReadError`,
    ``kind="outside_root"``), and the file opened is the one that was checked. Without ``root``,
    any path the process can read is read."""

    def __init__(
        self,
        *,
        max_lines: int = 2000,
        max_bytes: int = 50 * 1024,
        line_max_chars: int = 2000,
        byte_gate: int | None = 256 * 1024,
        token_gate: int | None = 25_000,
        dedup: bool = True,
        root: str | os.PathLike[str] | None = None,
    ) -> None:
        for name, value in (("max_lines", max_lines), ("max_bytes", max_bytes), ("line_max_chars", line_max_chars)):
            _checks.count(name, value, minimum=1)
        _checks.optional_count("byte_gate", byte_gate)
        _checks.optional_count("token_gate", token_gate)
        self.limits: dict[str, Any] = {
            "max_lines": max_lines,
            "max_bytes": max_bytes,
            "line_max_chars": line_max_chars,
            "byte_gate": byte_gate,
            "token_gate": token_gate,
        }
        self.dedup = dedup
        self.root: str | None = None
        if root is not None:
            if not isinstance(root, str | os.PathLike):
                raise ArgumentTypeError(f"root must be a directory path or None, got {type(root).__name__}")
            self.root = os.path.realpath(root)
            if not os.path.isdir(self.root):
                raise OptionError(f"root {os.fspath(root)!r} is not a directory")
        self.reads = 0
        self._seen: dict[tuple[str, int | None, int | None], _ReadRecord] = {}

    def read(self, path: str | os.PathLike[str], offset: int | None = None, lines: int | None = None) -> str:
        """The answer to a read: the page, or a stub for a repeated read of an unchanged file.

        Raises:
            FileReadError: the read was refused (too large, binary, not UTF-8, past the end, ...);
                its message is the answer to give the model.
        """
        path = _path(path)
        real = os.path.realpath(self._target(path))
        page, stat = self._page(path, real, offset, lines)
        self.reads += 1
        key = (real, offset, lines)
        previous = self._seen.get(key)
        record = _ReadRecord(
            self.reads, stat.st_size, stat.st_mtime_ns, page.content_hash, page.start_line, page.end_line
        )
        self._seen[key] = record
        if (
            self.dedup
            and previous is not None
            and (previous.size, previous.mtime_ns, previous.content_hash)
            == (record.size, record.mtime_ns, record.content_hash)
        ):
            record.number = previous.number
            of_total = "" if page.total_lines is None else f" of {page.total_lines}"
            return (
                f"[{one_line(os.fspath(path))} is unchanged since read #{previous.number} "
                f"(lines {previous.start_line}-{previous.end_line}{of_total}); "
                "that content is still above in this conversation, so it is not repeated.]"
            )
        return page.text

    def _target(self, path: str | os.PathLike[str]) -> str | os.PathLike[str]:
        return path if self.root is None else os.path.join(self.root, path)

    def _page(
        self, path: str | os.PathLike[str], real: str, offset: int | None, lines: int | None
    ) -> tuple[Page, os.stat_result]:
        """The page of ``path`` and the status of the file read; with a root, of the file at
        ``real`` opened and checked inside it."""
        shown = os.fspath(path)
        if self.root is None:
            page = read_page(path, offset, lines, **self.limits)
            try:  # the file read (`real` can be a name the system shows for it: `/tmp/x (deleted)`)
                return page, os.stat(path)
            except OSError as exc:  # gone meanwhile
                raise FileReadError(
                    f"{one_line(shown)} changed while being read ({exc.strerror}); it was not read.", shown, "io"
                ) from None
        if not inside(real, self.root):
            # The real path is not named: it would put the name of a file outside in the answer
            # (a symlink to /proc/self/fd/N resolves to whatever file the process has open as N).
            try:
                link = f" (a symlink to {one_line(os.readlink(self._target(path)))})"
            except (OSError, ValueError):  # not a symlink itself: a directory on the way leads out, or ..
                link = ""
            raise FileReadError(
                f"{one_line(shown)} is outside {self.root}{link}; only files inside it can be read.",
                shown,
                "outside_root",
            )
        try:
            fd = os.open(real, _FLAGS)
        except OSError as exc:  # missing, no permission, a symlink swapped in: read_page names it
            try:
                read_page(real, offset, lines, **self.limits)
            except FileReadError as refused:
                raise FileReadError(str(refused).replace(real, shown), shown, refused.kind) from None
            # It could be read after all (it changed meanwhile): what it is now was not checked.
            raise FileReadError(
                f"{one_line(shown)} changed while being opened ({exc.strerror}); it was not read.", shown, "io"
            ) from None
        try:
            if not opened_inside(fd, real, self.root):
                raise FileReadError(
                    f"{one_line(shown)} changed while being opened and no longer lies inside {self.root}; "
                    "it was not read.",
                    shown,
                    "outside_root",
                )
            # The page is read through the descriptor that was checked: /proc/self/fd/N (Linux), or
            # /dev/fd/N (macOS, the BSDs); only where neither exists, by path and checked after.
            proc = next((p for p in (f"/proc/self/fd/{fd}", f"/dev/fd/{fd}") if os.path.exists(p)), None)
            if proc is None:
                return self._checked_page(shown, real, offset, lines), os.fstat(fd)
            try:
                return read_page(proc, offset, lines, **self.limits), os.fstat(fd)  # exactly the file checked
            except FileReadError as exc:
                raise FileReadError(str(exc).replace(proc, shown), shown, exc.kind) from None
        finally:
            os.close(fd)

    def _checked_page(self, shown: str, real: str, offset: int | None, lines: int | None) -> Page:
        try:
            page = read_page(real, offset, lines, **self.limits)
        except FileReadError as exc:
            raise FileReadError(str(exc).replace(real, shown), shown, exc.kind) from None
        if self.root is not None and not inside(os.path.realpath(real), self.root):
            raise FileReadError(
                f"{one_line(shown)} changed while being read and no longer lies inside {self.root}; it was not read.",
                shown,
                "outside_root",
            )
        return page

    def answer(self, path: str | os.PathLike[str], offset: int | None = None, lines: int | None = None) -> str:
        """Like :meth:`read`, but a refused read is answered with its message instead of raising."""
        try:
            return self.read(path, offset, lines)
        except FileReadError as exc:
            return str(exc)

    def forget(self, path: str | os.PathLike[str] | None = None) -> None:
        """Forget earlier reads (of one file, or all), e.g. after the conversation was compacted and
        the earlier content is no longer in context."""
        if path is None:
            self._seen.clear()
            return
        real = os.path.realpath(self._target(_path(path)))
        for key in [k for k in self._seen if k[0] == real]:
            del self._seen[key]


def _path(path: Any) -> str:
    """``path`` as text; a path that is not text is an ArgumentTypeError and one holding a NUL
    character (which no file name can) a FileReadError, as :func:`agentcontext.read_page` has it,
    instead of the TypeError / ValueError of the path functions."""
    shown = os.fspath(path) if isinstance(path, str | os.PathLike) else path
    if not isinstance(shown, str):
        raise ArgumentTypeError(f"path must be a str or an os.PathLike, got {type(shown).__name__} {shown!r:.80}")
    if "\0" in shown:
        raise FileReadError(f"Cannot read {one_line(shown)}: a file name cannot hold a NUL character.", shown, "io")
    return shown
