"""Project instruction files (AGENTS.md and the like) fitted into the system prompt."""

from __future__ import annotations

from collections.abc import Mapping

from agentcontext import _checks
from agentcontext._core import truncate

__all__ = ["fit_project_files"]


def fit_project_files(
    files: Mapping[str, str],
    *,
    per_file_chars: int = 12_000,
    total_chars: int = 60_000,
    head_share: float = 0.75,
) -> dict[str, str]:
    """Fit project instruction files (AGENTS.md and the like) into the system prompt: each file
    at most ``per_file_chars`` (keeping ``head_share`` head and the rest tail), all together at
    most ``total_chars``, in the order given. A file that no longer fits at all is replaced by a
    one-line note, so the model knows it exists."""
    _checks.count("per_file_chars", per_file_chars)
    _checks.count("total_chars", total_chars)
    _checks.number("head_share", head_share, high=1.0)

    def note(name: str, text: str) -> str:
        return f"[{name} omitted: {len(text):,} chars, over the {total_chars:,}-char total for project files]"

    names = list(files)
    # Room is kept for a note on every later file, so the total holds even when files are dropped.
    notes = [len(note(n, files[n])) for n in names]
    out: dict[str, str] = {}
    left = total_chars
    for i, name in enumerate(names):
        text = files[name]
        budget = min(per_file_chars, left - sum(notes[i + 1 :]))
        if len(text) <= budget:
            out[name] = text
        elif budget >= 200:
            out[name] = truncate(
                text, budget, unit="chars", strategy="head_tail", head_share=head_share, path=name
            ).text
        else:
            out[name] = note(name, text)
        left -= len(out[name])
    return out
