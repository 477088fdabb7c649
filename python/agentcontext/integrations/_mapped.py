"""How the dicts a fit gives back are mapped to the framework objects they came from
(:func:`agentcontext.integrations._fit.fit`): each kept object itself, or rebuilt from its changed
dicts; the dicts the fit's repair made, made into objects at their places."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from operator import eq, is_not, not_
from typing import Any, Generic, TypeAlias, TypeVar, cast

from agentcontext.integrations._converted import MARK, Converted, source

T = TypeVar("T")


def _map_back(
    objects: Sequence[T],
    dicts: list[dict[str, Any]],
    owners: list[list[int]],
    out: list[dict[str, Any]],
    rebuild: Callable[[T, list[tuple[int, dict[str, Any] | None]]], T | None],
    where: dict[int, int],
    cache: Converted | None,
    maker: _Maker[T],
) -> list[T]:
    """Each dict that came back mapped to the object it came from (see :func:`fit`)."""
    # (Every object owns one dict: as many dicts as objects, and none owning nothing.)
    if len(dicts) == len(objects) and [] not in owners:
        return _map_back_one(objects, dicts, out, rebuild, where, cache, maker)
    # Per object: its kept dicts, with the new content where changed, in runs; the dicts the
    # repair made, after the run of the dict before them ((-1, 0): first). A made dict between two
    # dicts of one object (the result given to a call, before a user prompt of the same request)
    # ends a run: the object is sent as two, the made one between them.
    kept: dict[int, list[list[tuple[int, dict[str, Any] | None]]]] = {}
    new_after: dict[tuple[int, int], list[T]] = {}
    last = (-1, 0)
    for d in out:
        mark = d.get(MARK)
        original = None if mark is None else dicts[owners[where[source(mark)[0]]][source(mark)[1]]]
        if original is None or _made_anew(d, original):
            new_after.setdefault(last, []).append(maker.make(d))
            continue
        serial, k = source(mark)
        i = where[serial]
        runs = kept.setdefault(i, [[]])
        if last[0] == i and last in new_after:
            runs.append([])
        changed = None if d is original or d == original else {key: v for key, v in d.items() if key != MARK}
        runs[-1].append((k, changed))
        last = (i, len(runs) - 1)
    if (
        not new_after
        and len(out) == len(dicts)
        and all(changed is None for runs in kept.values() for parts in runs for _, changed in parts)
    ):
        return list(objects)
    result: list[T] = list(new_after.get((-1, 0), ()))
    for i, obj in enumerate(objects):
        if not owners[i]:
            # Nothing the model reads (metadata parts): it goes with the list.
            result.append(obj)
            continue
        for r, parts in enumerate(kept.get(i, ())):
            result += _kept_object(obj, parts, owners[i], rebuild, cache)
            result += new_after.get((i, r), ())
    return result


def _kept_object(
    obj: T,
    parts: list[tuple[int, dict[str, Any] | None]],
    owned: list[int],
    rebuild: Callable[[T, list[tuple[int, dict[str, Any] | None]]], T | None],
    cache: Converted | None,
) -> list[T]:
    """``obj`` as sent when ``parts`` of its dicts are kept: itself, rebuilt, or nothing."""
    if len(parts) == len(owned) and all(changed is None for _, changed in parts):
        return [obj]
    new = rebuild(obj, parts) if cache is None else cache.rebuilt(obj, parts, rebuild)
    return [] if new is None else [new]


def _made_anew(d: dict[str, Any], original: dict[str, Any]) -> bool:
    """Whether the fit's ``d``, marked as ``original``'s, is another kind of message (a result
    whose call is missing, sent as a user message): it is made anew, not rebuilt."""
    return d is not original and (d.get("role") != original.get("role") or d.get("type") != original.get("type"))


#: Makes an object of a dict the fit made (see :func:`fit`): the dict, and each call id's tool name.
Made: TypeAlias = Callable[[dict[str, Any], Mapping[str, str]], T]


class _Maker(Generic[T]):
    """The ``made`` of a :func:`fit`, given the tool names of the fitted list once it needs them.

    The fit's repair renames a reused call id (``call_0`` again: ``call_0#2``) in the dicts it
    gives back, while the objects kept are sent with their own ids: a result it made for such a
    call gets the call's own id back (``original(mark)``: the dict a mark names), so that it
    answers the call the model receives."""

    def __init__(
        self,
        made: Made[T] | None,
        out: list[dict[str, Any]],
        original: Callable[[Any], dict[str, Any]] | None = None,
    ) -> None:
        self.made = made
        self.out = out
        self.original = original
        self._names: dict[str, str] | None = None
        self._renamed: dict[str, str] | None = None

    def make(self, d: dict[str, Any]) -> T:
        plain = {k: v for k, v in d.items() if k != MARK}
        key = "tool_call_id" if "tool_call_id" in plain else "call_id" if "call_id" in plain else None
        was = own = None
        if key is not None and self.original is not None:
            if self._renamed is None:
                self._renamed = _renamed_ids(self.out, self.original)
            was = str(plain[key])
            own = self._renamed.get(was)
            if own is not None:
                plain[key] = own
        if self.made is None:
            return cast("T", plain)
        if self._names is None:
            self._names = _call_names(self.out)
        names = self._names if own is None else {**self._names, own: self._names.get(cast("str", was), "")}
        return self.made(plain, names)


def _renamed_ids(out: list[dict[str, Any]], original: Callable[[Any], dict[str, Any]]) -> dict[str, str]:
    """Each call id the fit renamed in ``out`` (a reused id), mapped to the id the caller's call
    has (``original(mark)``: the dict the mark names)."""
    renamed: dict[str, str] = {}
    for d in out:
        mark = d.get(MARK)
        if mark is not None:
            renamed_calls(d, original(mark), renamed)
    return renamed


def renamed_calls(now: dict[str, Any], was: dict[str, Any], renamed: dict[str, str]) -> None:
    """Adds to ``renamed`` each call id of the fitted dict ``now`` that differs from the id of the
    same call in ``was``, the dict it came from (a reused id the repair renamed: the calls of
    both are in the same order), mapped to the caller's id."""
    if now is was:
        return
    if now.get("tool_calls"):
        for call, before in zip(now["tool_calls"], was.get("tool_calls") or (), strict=False):
            if isinstance(call, Mapping) and isinstance(before, Mapping) and call.get("id") != before.get("id"):
                renamed[str(call.get("id"))] = str(before.get("id"))
    elif now.get("type") == "function_call" and now.get("call_id") != was.get("call_id"):
        renamed[str(now.get("call_id"))] = str(was.get("call_id"))


def _call_names(out: list[dict[str, Any]]) -> dict[str, str]:
    """Each call id's tool name in Chat or Responses dicts."""
    names: dict[str, str] = {}
    for d in out:
        for call in d.get("tool_calls") or ():
            function = call.get("function") or {}
            names[str(call.get("id"))] = str(function.get("name", ""))
        if d.get("type") == "function_call":
            names[str(d.get("call_id"))] = str(d.get("name", ""))
    return names


def _map_back_one(
    objects: Sequence[T],
    dicts: list[dict[str, Any]],
    out: list[dict[str, Any]],
    rebuild: Callable[[T, list[tuple[int, dict[str, Any] | None]]], T | None],
    where: dict[int, int],
    cache: Converted | None,
    maker: _Maker[T],
) -> list[T]:
    """:func:`_map_back` where every object stands for one dict (``dicts[i]`` is object ``i``'s):
    the dicts come back in order, each the caller's own or a changed copy. With a ``cache``, a
    dict equal to the one at its position in the last call's output (its mark naming the same
    conversion, so the same object) maps to what that one did: only the others are looked at."""
    same: list[bool] = []
    per: list[T | None] = []
    copies: list[tuple[int, Any]] = []
    # (Read once: another thread's fit may set it anew or clear it meanwhile.)
    last = cache._last_out if cache is not None else None
    if cache is not None and last is not None and min(where, default=0) >= 0:
        last_out, last_per, last_copies = last
        same = list(map(eq, out, last_out))
        per = last_per[: len(same)]
        # A copy is taken again only while its object's fields are those it was made from.
        for j, obj in last_copies:
            if j < len(same) and same[j]:
                if cache.current(obj, per[j]):
                    copies.append((j, obj))
                else:
                    same[j] = False
    per += [None] * (len(out) - len(per))
    changed = itertools.chain(itertools.compress(range(len(same)), map(not_, same)), range(len(same), len(out)))
    for j in changed:
        d = out[j]
        mark = d.get(MARK)
        if mark is None:
            per[j] = maker.make(d)  # (made by the repair: no object of its own)
            continue
        i = where[source(mark)[0]]
        obj = objects[i]
        original = dicts[i]
        if d is original or d == original:
            per[j] = obj
            continue
        if _made_anew(d, original):
            per[j] = maker.make(d)
            continue
        if cache is None:
            per[j] = rebuild(obj, [(0, {key: v for key, v in d.items() if key != MARK})])
            continue
        per[j] = new = cache.rebuilt_one(obj, d, rebuild)
        if new is not obj:
            copies.append((j, obj))
    if cache is not None:
        cache._last_out = (out, per, copies)
    return list(itertools.compress(per, map(is_not, per, itertools.repeat(None))))  # type: ignore[arg-type]
