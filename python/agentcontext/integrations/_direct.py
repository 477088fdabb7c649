"""The shared fit path for lists whose every object stands for one OpenAI Chat dict (LiteLLM's
messages, the Agents SDK's items grouped into turns), with less per-object work than
:func:`~agentcontext.integrations._fit.fit`: a plain dict is fitted as it is (the core gives back
the same dict where unchanged, a copy with every key kept where it cleared or cut it), an object's
marked dict comes from the adapter's memo, and the dicts come back in order. The same steps as
``fit``: :meth:`Budget.fit_dicts` with ``beside`` tokens kept free, and on a :class:`BudgetError`
the oversized newest results cut (:func:`~agentcontext.integrations._fit.fit_or_cut`)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from operator import is_, is_not
from typing import Any, TypeVar, cast

from agentcontext import _checks
from agentcontext.errors import BudgetError
from agentcontext.integrations._converted import MARK, source
from agentcontext.integrations._fit import Budget, RecallIds, fit_or_cut
from agentcontext.integrations._mapped import renamed_calls
from agentcontext.observe.compaction import fits_observed
from agentcontext.types import Encoding

T = TypeVar("T")


class Kept:
    """The last call's dicts over its list, so that a call over the same objects plus new ones
    looks at the new ones only: ``keys(objects)`` fingerprints the objects that are not plain
    dicts (what their conversion reads; a plain dict is read by the core itself on every call;
    the keys of a list are each one's key). With ``attrs``, the attributes of a class that hold
    what ``keys`` reads of its objects (None when they do not say it all): while every object's
    class has them, the core's ``_Prints`` tells the objects unchanged in one pass instead."""

    def __init__(
        self,
        keys: Callable[[list[Any]], list[Any]],
        attrs: Callable[[type], tuple[str, ...] | None] | None = None,
    ) -> None:
        self.keys = keys
        self.attrs = attrs
        #: The last call's objects, dicts, owners, converted objects, and their keys or the
        #: ``_Prints`` of the objects (each state its own, taken by the call that resumes from it).
        self.last: tuple[list[Any], list[dict[str, Any]], dict[int, Any], list[Any], Any] | None = None
        #: How many calls began from the last one's work.
        self.resumed = 0
        self._trimmer: tuple[Encoding, Any] | None = None
        #: Per class seen, its attributes (None: not told by them); those that have them.
        self._names: dict[type, tuple[str, ...] | None] = {dict: ()}
        self._usable: dict[type, tuple[str, ...]] = {dict: ()}
        self._lock = threading.Lock()

    def trimmer(self, encoding: Encoding) -> Any:
        """The core's trimmer kept for ``encoding`` (a new one for another encoding): used with
        ``fresh`` (the caller's plain dicts are read on every call), it gives each dict that comes
        back unchanged as its object, at C speed."""
        from agentcontext._core import _Trimmer

        held = self._trimmer
        if held is None or held[0] != encoding:
            held = self._trimmer = (encoding, _Trimmer(encoding=encoding))
        return held[1]

    def resume(self, objects: list[Any]) -> tuple[int, list[dict[str, Any]], dict[int, Any], list[Any], Any]:
        """Where the last call's work ends in ``objects`` and copies of its dicts, owners,
        converted objects and their keys (or its prints): all of it when its objects begin
        ``objects`` (by identity), the converted ones read as then; else nothing."""
        last = self.last
        if last is not None:
            prev, dicts, owner, converted, keys = last
            n = len(prev)
            if 0 < n <= len(objects):
                if type(keys) is list:
                    if all(map(is_, prev, objects)) and self.keys(converted) == keys:
                        self.resumed += 1
                        return n, list(dicts), dict(owner), list(converted), list(keys)
                else:
                    with self._lock:
                        # Taken, prints and all: no other call grows the same prints meanwhile.
                        if self.last is not last or not keys.same(objects):
                            return 0, [], {}, [], None
                        self.last = None
                    self.resumed += 1
                    return n, dicts, owner, converted, keys
        return 0, [], {}, [], None

    def keep(
        self,
        objects: list[Any],
        dicts: list[dict[str, Any]],
        owner: dict[int, Any],
        converted: list[Any],
        keys: Any,
        start: int,
        held: int,
    ) -> None:
        """Keep this call's work for the next call: ``keys`` as :meth:`resume` gave them, the
        objects from ``start`` and the converted ones from ``held`` new."""
        if self.attrs is not None:
            for cls in set(map(type, converted[held:])) - self._names.keys():
                names = self._names[cls] = self.attrs(cls)
                if names is not None:
                    self._usable[cls] = names
            if all(self._names.get(type(o)) is not None for o in converted[held:]) and (
                type(keys) is not list or all(self._names.get(type(o)) is not None for o in converted[:held])
            ):
                from agentcontext._core import _Prints

                prints = keys if keys is not None and type(keys) is not list else _Prints()
                prints.keep(objects, start if prints is keys else 0, self._usable)
                self.last = (list(objects), dicts, owner, converted, prints)
                return
        if type(keys) is list:
            keys += self.keys(converted[held:])
        else:
            keys = self.keys(converted)
        self.last = (list(objects), dicts, owner, converted, keys)


def fit_each(
    objects: Sequence[T],
    budget: Budget,
    dict_of: Callable[[T, int], dict[str, Any] | None],
    rebuild: Callable[[T, dict[str, Any]], T | None],
    *,
    beside: int = 0,
    recall: RecallIds = "call_id",
    kept: Kept | None = None,
) -> list[T]:
    """``objects`` fitted into ``budget``: ``dict_of(obj, i)`` is ``obj``'s marked Chat dict (held
    across calls), or None for a plain dict fitted as it is; ``rebuild(obj, changed)`` the object
    to send for a changed dict (None: leave it out). Unchanged objects come back as they are.
    With ``kept``, the last call's dicts are taken for the objects it ended with (see :class:`Kept`)."""
    start = 0
    dicts: list[dict[str, Any]] = []
    owner: dict[int, Any] = {}
    converted: list[Any] = []
    keys: Any = None
    if kept is not None:
        objects = objects if type(objects) is list else list(objects)
        start, dicts, owner, converted, keys = kept.resume(objects)
    held = len(converted)
    for i in range(start, len(objects)):
        obj = objects[i]
        d = dict_of(obj, i)
        if d is None:
            dicts.append(obj)  # type: ignore[arg-type]  # a plain dict, read as it is
            continue
        serial = source(d[MARK])[0]
        if serial in owner:
            # The same object twice in the list: its second place gets its own mark.
            serial = -1 - i
            d = {**d, MARK: serial}
        owner[serial] = (obj, d)
        converted.append(obj)
        dicts.append(d)
    if kept is not None:
        kept.keep(objects, dicts, owner, converted, keys, start, held)  # type: ignore[arg-type]
        dicts = list(dicts)  # (the kept list stays as it is)
    if kept is not None and not fits_observed():
        fitted = _trimmed(objects, dicts, budget, beside, rebuild, kept, recall == "call_id")  # type: ignore[arg-type]
        if fitted is not None:
            return fitted
    out = fit_or_cut(dicts, budget, "openai", beside=beside, recall=recall)
    # Plain dicts come back as they are; only the marked ones are mapped (found at C speed).
    marks = list(map(dict.get, out, itertools.repeat(MARK)))
    result: list[Any] = list(out)
    dropped = False
    renamed: dict[str, str] = {}
    for j in itertools.compress(range(len(out)), map(is_not, marks, itertools.repeat(None))):
        d = out[j]
        obj, original = owner[source(marks[j])[0]]
        if d is original or d == original:
            result[j] = obj
        else:
            renamed_calls(d, original, renamed)
            result[j] = new = rebuild(obj, d)
            dropped = dropped or new is None
    if renamed:
        _own_ids(out, marks, result, renamed)
    return [x for x in result if x is not None] if dropped else result


def _own_ids(out: list[dict[str, Any]], marks: list[Any], result: list[Any], renamed: dict[str, str]) -> None:
    """The results in ``out`` not from an object (plain dicts, results the repair made) that
    answer a call of an object whose reused id the fit renamed: in ``result``, copies with the
    object's own id (the object is sent with its own ids)."""
    for j, d in enumerate(out):
        own = renamed.get(str(d.get("tool_call_id"))) if marks[j] is None else None
        if own is not None:
            result[j] = {**d, "tool_call_id": own}


def _trimmed(
    objects: list[T],
    dicts: list[dict[str, Any]],
    budget: Budget,
    beside: int,
    rebuild: Callable[[T, dict[str, Any]], T | None],
    kept: Kept,
    recall_ids: bool,
) -> list[T] | None:
    """:func:`fit_each` through the kept trimmer (every dict read again, as
    :func:`agentcontext.trim_messages` reads them), each dict that comes back unchanged given as
    its object by the core; None when the fast path does not apply (the general path then fits,
    cuts an oversized last round or raises)."""
    _checks.count("beside", beside)
    try:
        got = kept.trimmer(budget.encoding).trim(
            dicts, objects, budget.max_tokens, fresh=True, **budget._trim_options(beside, recall_ids)
        )
    except BudgetError:
        return None
    if got is None:
        return None
    out, todo = got
    dropped = False
    for pos, i in todo:
        obj = objects[i]
        original = dicts[i]
        if obj is original:
            continue  # a plain dict: the core's changed copy is what goes
        d = out[pos]
        if d == original:
            out[pos] = obj
        else:
            out[pos] = new = rebuild(obj, d)
            dropped = dropped or new is None
    return [x for x in out if x is not None] if dropped else cast("list[T]", out)
