"""Timing shared by the Python benches: the median of several rounds."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def timed(fn: Callable[[], Any], rounds: int = 5) -> float:
    """The median wall time of ``rounds`` calls of ``fn``, in seconds."""
    samples = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)
