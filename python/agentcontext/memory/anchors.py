"""Workspace anchors: notes, plan or TODO files the agent maintains in its workspace, re-attached
after every compaction (as re-attached read files are) within a token budget, so the plan
survives any number of compactions.

:meth:`WorkspaceAnchors.messages` reads each file now (current content, not what the history
said) and renders one user message per file, in the order given, fitting all of them into
``max_tokens``: a file that does not fit whole is cut (head and tail, with a marker naming the
file to read for the rest); files after the budget is spent are listed as not re-attached.
Missing files are skipped; special files, directories and files over ``max_bytes`` are reported
in the message instead of read.

Paths resolve against the workspace: ``workspace=``, else the workspace of the
:class:`~agentcontext.Session` compiler the anchors are used with, else the directory that was
current when the anchors were made (an absolute path without a workspace: its own directory).
A path that leaves that root — ``..``, an absolute path elsewhere, a symlink pointing out — is
reported in the message instead of read.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentcontext import _checks
from agentcontext._containment import read_text, real_root
from agentcontext._core import count_tokens, truncate
from agentcontext.errors import ArgumentTypeError, BudgetError, OptionError
from agentcontext.types import Encoding

__all__ = ["WorkspaceAnchors"]

_HEADER = "[Re-attached after compaction: current content of workspace file {path}]\n"
#: Tokens a cut file keeps at least (below this it is listed as not re-attached).
_MIN_TOKENS = 64


class WorkspaceAnchors:
    """The anchor files of one workspace and the budget they share."""

    def __init__(
        self,
        paths: Iterable[str | os.PathLike[str]],
        *,
        workspace: str | os.PathLike[str] | None = None,
        max_tokens: int = 4_000,
        max_bytes: int = 1_000_000,
        encoding: Encoding = "o200k_base",
    ) -> None:
        if isinstance(paths, str | os.PathLike):
            paths = [paths]  # one path, not its characters
        if isinstance(paths, bytes) or not isinstance(paths, Iterable):
            raise ArgumentTypeError(f"paths must be a path or a list of paths, got {type(paths).__name__}")
        self.paths = [Path(_checks.path_argument(f"paths[{i}]", p)) for i, p in enumerate(paths)]
        if workspace is not None and not isinstance(workspace, (str, os.PathLike)):
            raise OptionError(f"workspace must be a path or None, got {type(workspace).__name__}")
        if workspace is not None:
            _checks.path_argument("workspace", workspace)
        #: The root relative paths resolve against and no path may leave (None: not given; see the module).
        self.workspace: Path | None = None if workspace is None else Path(workspace).absolute()
        self._cwd = Path.cwd()
        _checks.count("max_tokens", max_tokens, minimum=1)
        _checks.count("max_bytes", max_bytes, minimum=1)
        if encoding not in ("o200k_base", "cl100k_base"):
            raise OptionError(f'encoding must be "o200k_base" or "cl100k_base", got {encoding!r:.80}')
        self.max_tokens = max_tokens
        self.max_bytes = max_bytes
        self.encoding: Encoding = encoding

    def within(self, workspace: str | os.PathLike[str]) -> WorkspaceAnchors:
        """These anchors with ``workspace`` as their root (a copy; this object is unchanged)."""
        bound = copy.copy(self)
        bound.paths = list(self.paths)
        bound.workspace = Path(workspace).absolute()
        return bound

    def _root(self, path: Path) -> Path:
        if self.workspace is not None:
            return self.workspace
        return path.parent if path.is_absolute() else self._cwd

    def _read(self, path: Path) -> str | None:
        """The file's text, None when it does not exist; a one-line reason when it cannot be used
        (a path or symlink leading out of the root, a FIFO, a device, over ``max_bytes``)."""
        root = self._root(path)
        target = path if path.is_absolute() else root / path
        if not os.path.lexists(target):
            return None
        got = read_text(target, self.max_bytes, root=real_root(root))
        if got.text is None:
            return f"(not re-attached: {got.problem})"
        return got.text

    def messages(self) -> list[dict[str, Any]]:
        """The anchor messages to put after a compaction's summary (OpenAI/JSONL user messages).

        The budget is shared fairly: files that fit in an equal share are attached whole, and
        what they leave is split evenly among the larger ones, which are cut to their share."""
        read: list[tuple[Path, str, str, int]] = []
        for path in self.paths:
            text = self._read(path)
            if text is None:
                continue
            header = _HEADER.format(path=path)
            need = count_tokens(header + text, encoding=self.encoding)
            read.append((path, header, text, need))
        # Water-filling over the files, smallest first.
        share: dict[int, int] = {}
        left = self.max_tokens
        order = sorted(range(len(read)), key=lambda k: read[k][3])
        for n, k in enumerate(order):
            fair = left // (len(order) - n)
            share[k] = min(read[k][3], fair)
            left -= share[k]
        out: list[dict[str, Any]] = []
        skipped: list[str] = []
        for k, (path, header, text, need) in enumerate(read):
            if share[k] >= need:
                out.append({"role": "user", "content": header + text})
                continue
            room = share[k] - count_tokens(header, encoding=self.encoding)
            if room < _MIN_TOKENS:
                skipped.append(str(path))
                continue
            try:
                body = truncate(text, room, unit="tokens", encoding=self.encoding, path=str(path)).text
            except BudgetError:
                skipped.append(str(path))
                continue
            out.append({"role": "user", "content": header + body})
        if skipped:
            used = sum(count_tokens(m["content"], encoding=self.encoding) for m in out)
            note = f"[Not re-attached (token budget spent): {', '.join(skipped)}; read them if needed]"
            if count_tokens(note, encoding=self.encoding) <= self.max_tokens - used:
                out.append({"role": "user", "content": note})
        return out

    def tokens(self) -> int:
        """Tokens of :meth:`messages` content now (at most ``max_tokens``)."""
        return sum(count_tokens(m["content"], encoding=self.encoding) for m in self.messages())
