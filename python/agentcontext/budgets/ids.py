"""Recall ids: the form of a store's ids, the longest id looked up, and the check every lookup
makes (shared by :mod:`~agentcontext.budgets.store` and :mod:`~agentcontext.budgets.recall`)."""

from __future__ import annotations

import re

from agentcontext.errors import OptionError, RecallError

__all__ = ["MAX_ID_CHARS", "RECALL_ID"]

#: The form of a store's recall id: ``r-`` and 20 lowercase hex digits of the text's SHA-256.
RECALL_ID = re.compile(r"r-[0-9a-f]{20}")

#: The longest id :class:`Recall` looks up (call ids of every provider are far shorter).
MAX_ID_CHARS = 512


def _shown(value: str) -> str:
    """``value`` as a message shows it: quoted, and cut when long."""
    if len(value) <= 80:
        return repr(value)
    return f"{value[:60]!r}... ({len(value):,} chars)"


def _check_id(recall_id: object, argument: str = "recall_id") -> str:
    if not isinstance(recall_id, str):
        raise OptionError(f"{argument} must be a string, not {type(recall_id).__name__} ({recall_id!r:.80})")
    if not recall_id or len(recall_id) > MAX_ID_CHARS or recall_id != recall_id.strip():
        why = "empty" if not recall_id else "too long" if len(recall_id) > MAX_ID_CHARS else "padded with spaces"
        raise RecallError(f"not a recall id ({why}): {argument}={_shown(recall_id)}", recall_id)
    return recall_id
