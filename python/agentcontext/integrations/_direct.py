"""The shared fit path for lists whose every object stands for one OpenAI Chat dict (LiteLLM's
messages, the Agents SDK's items grouped into turns), with less per-object work than
:func:`~agentcontext.integrations._fit.fit`: a plain dict is fitted as it is (the core gives back
the same dict where unchanged, a copy with every key kept where it cleared or cut it), an object's
marked dict comes from the adapter's memo, and the dicts come back in order. The same steps as
``fit``: :meth:`Budget.fit_dicts` with ``beside`` tokens kept free, and on a :class:`BudgetError`
the oversized newest results cut (:func:`~agentcontext.integrations._fit.fit_or_cut`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from agentcontext.integrations._converted import MARK
from agentcontext.integrations._fit import Budget, RecallIds, fit_or_cut

T = TypeVar("T")


def fit_each(
    objects: Sequence[T],
    budget: Budget,
    dict_of: Callable[[T, int], dict[str, Any] | None],
    rebuild: Callable[[T, dict[str, Any]], T | None],
    *,
    beside: int = 0,
    recall: RecallIds = "call_id",
) -> list[T]:
    """``objects`` fitted into ``budget``: ``dict_of(obj, i)`` is ``obj``'s marked Chat dict (held
    across calls), or None for a plain dict fitted as it is; ``rebuild(obj, changed)`` the object
    to send for a changed dict (None: leave it out). Unchanged objects come back as they are."""
    dicts: list[dict[str, Any]] = []
    owner: dict[int, tuple[T, dict[str, Any]]] = {}
    for i, obj in enumerate(objects):
        d = dict_of(obj, i)
        if d is None:
            dicts.append(obj)  # type: ignore[arg-type]  # a plain dict, read as it is
            continue
        serial = d[MARK][0]
        if serial in owner:
            # The same object twice in the list: its second place gets its own mark.
            serial = -1 - i
            d = {**d, MARK: [serial, 0]}
        owner[serial] = (obj, d)
        dicts.append(d)
    out = fit_or_cut(dicts, budget, "openai", beside=beside, recall=recall)
    result: list[Any] = []
    for d in out:
        mark = d.get(MARK)
        if mark is None:
            result.append(d)
            continue
        obj, original = owner[mark[0]]
        if d is original or d == original:
            result.append(obj)
        else:
            new = rebuild(obj, d)
            if new is not None:
                result.append(new)
    return result
