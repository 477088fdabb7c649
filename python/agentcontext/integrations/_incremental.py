"""Incremental fitting for the adapters called once per model call (Pydantic AI, the OpenAI Agents
SDK, LiteLLM): each object is converted to its dicts once and reused across calls (cached by
identity, the cache bounded by the list in use), an object changed the same way as in the last
call is rebuilt once, and what the model receives beside the list (instructions, tool
definitions) is counted in as a leading system dict. The fitting itself is the shared
:meth:`~agentcontext.integrations._fit.Budget.fit_dicts`, as for every adapter.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from agentcontext.errors import OptionError
from agentcontext.integrations._fit import MARK, Budget, ListFormat

T = TypeVar("T")

#: The source mark of the dicts that stand for what is sent beside the list (never returned).
_FIXED = -1

#: Entries kept beyond the list in use before the cache is pruned to it.
_SLACK = 256


def tool_text(name: str, description: str | None, parameters: Any) -> str:
    """The text a tool definition is counted as: its compact JSON (name, description, parameters)."""
    spec = {"name": name, "description": description or "", "parameters": parameters}
    return json.dumps(spec, ensure_ascii=False, separators=(",", ":"), default=str)


def fixed_dicts(texts: Iterable[str | None], format: ListFormat) -> list[dict[str, Any]]:
    """What the model receives beside the list (instructions, system prompt, tool definitions),
    as one system dict to count in, or none when all of it is empty."""
    text = "\n\n".join(t for t in texts if t)
    if not text:
        return []
    d: dict[str, Any] = {"role": "system", "content": text, MARK: [_FIXED, 0]}
    if format == "responses":
        d["type"] = "message"
    return [d]


def check_encoding(budget: Budget) -> Budget:
    """``budget``, once its encoding is known to count (so a bad ``encoding=`` fails when the
    adapter is made, not inside the first model call).

    Raises:
        OptionError: an unknown encoding, naming the ones there are.
    """
    from agentcontext._core import count_tokens

    try:
        count_tokens("", encoding=budget.encoding)
    except OptionError as exc:
        raise OptionError(f"Budget(encoding={budget.encoding!r}): {exc}") from None
    return budget


@dataclass(eq=False)
class _Entry(Generic[T]):
    obj: T
    dicts: list[dict[str, Any]]
    serial: int
    content: Any = None
    #: The parts the last rebuild was made for, and what it gave.
    rebuilt: tuple[list[tuple[int, Any]], Any] | None = field(default=None)


class Fitter(Generic[T]):
    """Fits lists of one framework's objects into a budget, converting each object once.

    ``to_dicts(obj, i)`` and ``rebuild(obj, parts)`` are as for
    :func:`~agentcontext.integrations._fit.fit` (``parts`` holds the changed dicts with the source
    mark still in them). An object is recognised by identity; a dict whose ``content`` was
    replaced in place since is converted again. With ``passthrough`` a plain ``dict`` is fitted as
    it is (not copied): the core gives back the same dict where unchanged, else a copy with every
    key kept. Safe to share between threads."""

    def __init__(
        self,
        budget: Budget,
        to_dicts: Callable[[T, int], list[dict[str, Any]]],
        rebuild: Callable[[T, list[tuple[int, dict[str, Any] | None]]], T | None],
        format: ListFormat = "openai",
        slack: int = _SLACK,
        passthrough: bool = False,
    ) -> None:
        self._passthrough = passthrough
        self.budget = budget
        self._slack = slack
        self._to_dicts = to_dicts
        self._rebuild = rebuild
        self._format = format
        self._entries: dict[int, _Entry[T]] = {}
        self._serial = 0

    def _new(self, obj: T, index: int) -> _Entry[T]:
        self._serial += 1
        serial = self._serial
        dicts = [{**d, MARK: [serial, k]} for k, d in enumerate(self._to_dicts(obj, index))]
        content = obj.get("content") if isinstance(obj, dict) else None
        return _Entry(obj, dicts, serial, content)

    def _entries_and_dicts(
        self, objects: Sequence[T], fixed: Sequence[dict[str, Any]]
    ) -> tuple[list[_Entry[T]], list[dict[str, Any]]]:
        """The entry of each object (cached, or converted now; a repeated object gets its own;
        none for a dict read as it is) and the dicts to fit."""
        cache = self._entries
        passthrough = self._passthrough
        entries: list[_Entry[T]] = []
        flat = list(fixed)
        used: set[int] = set()
        for i, obj in enumerate(objects):
            if passthrough and type(obj) is dict:
                flat.append(cast(dict[str, Any], obj))
                continue
            e = cache.get(id(obj))
            if (
                e is None
                or e.obj is not obj
                or e.serial in used
                or (isinstance(obj, dict) and obj.get("content") is not e.content)
            ):
                e = self._new(obj, i)
                old = cache.get(id(obj))
                if old is None or old.obj is not obj or old.serial not in used:
                    cache[id(obj)] = e
            used.add(e.serial)
            entries.append(e)
            flat.extend(e.dicts)
        if len(cache) > 2 * len(entries) + self._slack:
            self._entries = {id(e.obj): e for e in entries}
        return entries, flat

    def fit(self, objects: Sequence[T], fixed: Sequence[dict[str, Any]] = ()) -> list[T]:
        """``objects`` fitted into the budget, ``fixed`` (from :func:`fixed_dicts`) counted in."""
        entries, flat = self._entries_and_dicts(objects, fixed)
        at = {e.serial: n for n, e in enumerate(entries)}
        out = self.budget.fit_dicts(flat, self._format)
        result: list[Any] = []
        done = 0  # the entries before this one are placed (or dropped)
        i, size = 0, len(out)
        while i < size:
            d = out[i]
            i += 1
            mark = d.get(MARK)
            if mark is None:
                result.append(d)  # a caller's dict read as it is (or its changed copy)
                continue
            serial = mark[0]
            if serial == _FIXED:
                continue
            n = at[serial]
            for skipped in entries[done:n]:
                if not skipped.dicts:
                    result.append(skipped.obj)  # nothing the model reads (metadata parts): it stays
            done = n + 1
            parts: list[tuple[int, dict[str, Any]]] = [(mark[1], d)]
            while i < size and (more := out[i].get(MARK)) is not None and more[0] == serial:
                parts.append((more[1], out[i]))
                i += 1
            new = self._placed(entries[n], parts)
            if new is not None:
                result.append(new)
        result.extend(e.obj for e in entries[done:] if not e.dicts)
        return result

    def _placed(self, e: _Entry[T], parts: list[tuple[int, dict[str, Any]]]) -> T | None:
        """What to send for ``e``, whose dicts ``parts`` came back: itself when they are all there
        and unchanged, else its rebuild (made once for the same change)."""
        dicts = e.dicts
        marked = [(k, None if d is dicts[k] or d == dicts[k] else d) for k, d in parts]
        if len(marked) == len(dicts) and all(changed is None for _, changed in marked):
            return e.obj
        if e.rebuilt is not None and e.rebuilt[0] == marked:
            return cast(T, e.rebuilt[1])
        new = self._rebuild(e.obj, [(k, _unmarked(c)) for k, c in marked])
        e.rebuilt = (marked, new)
        return new


def _unmarked(d: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if d is None else {k: v for k, v in d.items() if k != MARK}
