"""Shared helpers for the benchmark scripts: where the shared transcript corpus is, and its texts."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path


def shared_dir() -> Path:
    """The shared folder (``AGENTCONTEXT_SHARED``, default ``../shared`` from the project root)."""
    root = Path(__file__).resolve().parent.parent
    return Path(os.environ.get("AGENTCONTEXT_SHARED", root.parent / "shared")).resolve()


def normalized_files() -> list[Path]:
    return sorted((shared_dir() / "data" / "transcripts" / "normalized").glob("*/*.jsonl"))


def message_texts(path: Path) -> Iterator[tuple[str, str]]:
    """``(kind, text)`` for every piece of text in a normalized transcript: message contents and
    tool-call arguments. ``kind`` is the role, or ``"arguments"``."""
    with path.open(encoding="utf-8") as f:
        for line in f:
            m = json.loads(line)
            if m.get("content"):
                yield m["role"], m["content"]
            for call in m.get("tool_calls") or []:
                yield "arguments", call["arguments"]
