"""``agentcontext compact``'s progress on a terminal: one line redrawn in place through the steps
of the command (read, check, compact, write), the compaction's own events (summarizer calls,
the memory flush, the stages it finished with) shown as they come. Quiet unless the stream is a
terminal and the input is large (:data:`LARGE_INPUT_BYTES`), and with ``--json``."""

from __future__ import annotations

import os
import time
from typing import IO, Any

from agentcontext.observe.events import CompactionFinished, CompactionStarted, FlushDone, SummarizerCall

__all__ = ["LARGE_INPUT_BYTES", "CompactProgress", "compact_progress"]

#: From this input size on, ``compact`` shows its progress (smaller inputs finish at once).
LARGE_INPUT_BYTES = 1 << 20

STEPS = ("read", "check", "compact", "write")


class CompactProgress:
    """The progress line of one ``compact`` run on ``stream`` (None: quiet, every call does
    nothing); called with each compaction event (:attr:`on_event`)."""

    def __init__(self, stream: IO[str] | None, steps: tuple[str, ...] = STEPS) -> None:
        self.stream, self.steps = stream, steps
        self.started = time.perf_counter()
        self.at = 0
        self.note = ""

    @property
    def on_event(self) -> CompactProgress | None:
        """What a compactor reports to: this line, or None when quiet."""
        return self if self.stream is not None else None

    def step(self, name: str) -> None:
        """Step ``name`` starts."""
        self.at = self.steps.index(name)
        self.note = ""
        self._draw()

    def __call__(self, event: Any) -> None:
        if isinstance(event, CompactionStarted):
            self.note = f"{event.tokens:,} tokens in {event.messages:,} messages, target {event.target:,}"
        elif isinstance(event, SummarizerCall):
            by = " by the fallback" if event.fallback is not None else ""
            # A refusal says why; what follows (a fallback's summary, a drop) is the next event's.
            self.note = f"summary written{by} ({event.summary_tokens or 0:,} tokens)" if event.failure is None else (
                f"summary refused: {event.failure}"
            )  # fmt: skip
        elif isinstance(event, FlushDone):
            self.note = "memory flush done"
        elif isinstance(event, CompactionFinished):
            self.note = f"{' > '.join(s.stage for s in event.stages)}: {event.tokens_after:,} tokens"
        self._draw()

    def close(self) -> None:
        """The last line, ended."""
        if self.stream is None:
            return
        self.at = len(self.steps)
        self.note = "done"
        self._draw()
        self.stream.write("\n")
        self.stream.flush()

    def _draw(self) -> None:
        if self.stream is None:
            return
        width = 4 * len(self.steps)
        filled = width * self.at // len(self.steps)
        name = self.steps[self.at] if self.at < len(self.steps) else "done"
        elapsed = time.perf_counter() - self.started
        line = f"compact [{'#' * filled}{'.' * (width - filled)}] {name}: {self.note}"[:100]
        self.stream.write(f"\r\x1b[2K{line} {elapsed:.1f}s")
        self.stream.flush()


def compact_progress(path: str, as_json: bool, stream: IO[str]) -> CompactProgress:
    """The progress line for ``compact`` of ``path``: quiet when ``stream`` is not a terminal,
    with ``--json``, or for an input under :data:`LARGE_INPUT_BYTES` (or standard input)."""
    if as_json or not stream.isatty() or path == "-":
        return CompactProgress(None)
    try:
        large = os.path.getsize(path) >= LARGE_INPUT_BYTES
    except OSError:
        large = False
    return CompactProgress(stream if large else None)
