"""The memo the adapters keep across calls (:class:`Converted`): each object's conversion, marked
with where it came from, and the last call's work over its list, so that an agent's next call
(the same objects plus a few new ones) converts and checks only what is new."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping, Sequence
from operator import is_
from typing import Any, Protocol, TypeVar, cast

from agentcontext.types import Encoding

T = TypeVar("T")

#: The key each dict carries back to its source (the library keeps keys it does not know): the
#: object's serial alone when it stands for one dict (an int is the cheapest for the core to carry
#: through), else ``[serial, k]`` for its ``k``-th dict (see :func:`marks` and :func:`source`).
MARK = "_agentcontext_source"


def marks(serial: int, dicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``dicts`` (an object's, with serial ``serial``), each marked with where it came from."""
    if len(dicts) == 1:
        return [{**dicts[0], MARK: serial}]
    return [{**d, MARK: [serial, k]} for k, d in enumerate(dicts)]


def source(mark: Any) -> tuple[int, int]:
    """The serial and the place among its object's dicts that a mark names."""
    return (mark, 0) if type(mark) is int else (mark[0], mark[1])


def _from_scratch() -> tuple[int, list[dict[str, Any]], list[list[int]], dict[int, int], list[tuple[Any, ...]]]:
    """Where a fit with nothing to resume from starts: at 0, no dicts, owners, marks or keys."""
    return 0, [], [], {}, []


def held_fields(obj: Any, otherwise: Callable[[Any], tuple[Any, ...]]) -> tuple[Any, ...]:
    """``obj`` and every field it holds, keys and values (compared by identity with
    :func:`same_objects`: a field set anew in place differs): of a Mapping its items, of another
    object with a ``__dict__`` (a pydantic model) its fields and its extra fields
    (``__pydantic_extra__``: LiteLLM keeps a message's ``name`` and ``tool_call_id`` there), else
    the fields ``otherwise(obj)`` reads."""
    if isinstance(obj, Mapping):
        return (obj, *obj.keys(), *obj.values())
    fields = getattr(obj, "__dict__", None)
    if isinstance(fields, dict):
        extra = getattr(obj, "__pydantic_extra__", None)
        if isinstance(extra, dict) and extra:
            return (obj, *fields.keys(), *fields.values(), *extra.keys(), *extra.values())
        return (obj, *fields.keys(), *fields.values())
    return (obj, *otherwise(obj))


def same_objects(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Whether two keys hold the same objects, one for one (by identity: a field set anew differs)."""
    return len(a) == len(b) and all(map(is_, a, b))


class Prints(Protocol):
    """An adapter's fingerprints of the last call's objects: what its conversion reads, kept so
    that "none changed" is told by a few passes over the list rather than a key per object."""

    def same(self, objects: list[Any]) -> bool:
        """Whether ``objects`` begins with the kept objects (by identity), each read as when kept."""

    def keep(self, objects: list[Any], keys: list[tuple[Any, ...]], start: int) -> None:
        """Keep the prints of ``objects`` (their keys ``keys``); those before ``start`` are kept already."""


class CorePrints:
    """:class:`Prints` kept by the core (``_core._Prints``): each object by identity and class and,
    with ``attrs``, the attributes ``attrs(cls)`` names for its class (each the same object or an
    equal one; a list: of the same length), told unchanged in one pass."""

    def __init__(self, attrs: Callable[[type], tuple[str, ...]] | None = None) -> None:
        from agentcontext._core import _Prints

        self._held = _Prints()
        self._attrs = attrs
        #: Per class seen, the attributes kept (none without ``attrs``).
        self._names: dict[type, tuple[str, ...]] = {}

    def same(self, objects: list[Any]) -> bool:
        return self._held.same(objects)

    def keep(self, objects: list[Any], keys: list[tuple[Any, ...]], start: int) -> None:
        attrs = self._attrs
        if attrs is not None:
            for cls in {type(o) for o in objects[start:]} - self._names.keys():
                self._names[cls] = attrs(cls)
        self._held.keep(objects, start, self._names)


class Converted:
    """An adapter's memo of its conversions across calls: the dicts each object stands for, marked,
    so that a message seen by an earlier call is not converted again (an agent's next call sees the
    same objects plus a few new ones). Keyed by the object's identity, held with the object (so
    the identity is not reused) and checked by ``key(obj)``, a cheap tuple compared by identity
    first (the fields the conversion reads: a field set anew misses). At most ``capacity``
    objects (or twice the longest list seen) are held: past that, only the last call's stay."""

    def __init__(
        self, key: Callable[[Any], tuple[Any, ...]], capacity: int = 4096, prints: Callable[[], Prints] | None = None
    ) -> None:
        self.key = key
        #: With ``prints``: the last call's objects told unchanged by their :class:`Prints` (not
        #: by each key), and one-dict objects fitted by a kept :class:`~agentcontext._core._Trimmer`.
        self.prints = prints() if prints is not None else None
        self._trimmer: Any = None
        self._lock = threading.Lock()
        self.capacity = capacity
        self._entries: dict[int, tuple[Any, tuple[Any, ...], int, list[dict[str, Any]]]] = {}
        self._serials = itertools.count()
        # The object each changed one was rebuilt as, with the changes it was rebuilt from.
        self._rebuilt: dict[int, tuple[Any, Any, Any]] = {}
        # The last call's objects, their keys, dicts, owners and marks (see resume), and how many
        # calls began from it.
        self._last: tuple[list[Any], list[Any], list[dict[str, Any]], list[list[int]], dict[int, int]] | None = None
        self.resumed = 0
        # Per object, the dict it last came back changed as and what it was rebuilt as (one-dict objects).
        self._rebuilt_from: dict[int, tuple[Any, dict[str, Any], Any]] = {}
        # The last call's output (one-dict objects) and what each of its dicts was mapped to.
        self._last_out: tuple[list[dict[str, Any]], list[Any]] | None = None

    def entry(
        self, obj: T, i: int, to_dicts: Callable[[T, int], list[dict[str, Any]]]
    ) -> tuple[int, list[dict[str, Any]]]:
        """The serial and marked dicts of ``obj`` (at ``i``), converted only when not held."""
        held = self._entries.get(id(obj))
        key = self.key(obj)
        if held is not None and held[0] is obj and held[1] == key:
            return held[2], held[3]
        return self._convert(obj, i, key, to_dicts)

    def _convert(
        self, obj: T, i: int, key: tuple[Any, ...], to_dicts: Callable[[T, int], list[dict[str, Any]]]
    ) -> tuple[int, list[dict[str, Any]]]:
        serial = next(self._serials)
        marked = marks(serial, to_dicts(obj, i))
        self._entries[id(obj)] = (obj, key, serial, marked)
        return serial, marked

    def rebuilt(
        self, obj: T, parts: list[tuple[int, dict[str, Any] | None]], rebuild: Callable[[T, Any], T | None]
    ) -> T | None:
        """``rebuild(obj, parts)``, the object made the last time for the same changes when there is one
        (a result cleared on one call is cleared the same way on the next)."""
        held = self._rebuilt.get(id(obj))
        if held is not None and held[0] is obj and held[1] == parts:
            return cast("T | None", held[2])
        new = rebuild(obj, parts)
        self._rebuilt[id(obj)] = (obj, parts, new)
        return new

    def resume(
        self, objects: Sequence[Any]
    ) -> tuple[int, list[dict[str, Any]], list[list[int]], dict[int, int], list[tuple[Any, ...]]]:
        """Where the last call's work over ``objects`` ends, and copies of its dicts, owners, marks
        and keys: all of it when that call's objects begin ``objects`` (the same objects by
        identity, each key unchanged), else nothing (0 and empty)."""
        last = self._last
        if last is not None:
            prev, keys, dicts, owners, where = last
            n = len(prev)
            if 0 < n <= len(objects) and (
                self.prints.same(objects if type(objects) is list else list(objects))
                if self.prints is not None
                else all(map(is_, prev, objects)) and list(map(self.key, prev)) == keys
            ):
                self.resumed += 1
                if self.prints is None:
                    return n, list(dicts), list(owners), dict(where), list(keys)
                # Grown in place (the trimmer reads a list given again only from where it was):
                # taken, so that no other thread grows the same lists meanwhile.
                with self._lock:
                    if self._last is not last:
                        return _from_scratch()
                    self._last = None
                return n, dicts, owners, where, keys
        return _from_scratch()

    def remember(
        self,
        objects: Sequence[Any],
        keys: list[tuple[Any, ...]],
        dicts: list[dict[str, Any]],
        owners: list[list[int]],
        where: dict[int, int],
        start: int = 0,
    ) -> None:
        """Keep this call's work over ``objects`` for the next call (see :meth:`resume`); ``start``:
        where this call's new objects begin (the ones before are the last call's)."""
        if self.prints is not None:
            kept = list(objects)
            with self._lock:  # (the prints and the last call's work describe the same list)
                self.prints.keep(kept, keys, start)
                self._last = (kept, keys, dicts, owners, where)
            return
        self._last = (list(objects), keys, dicts, owners, where)

    def trimmer(self, encoding: Encoding) -> Any:
        """The trimmer kept for ``encoding`` (a new one for another encoding)."""
        from agentcontext._core import _Trimmer

        held = self._trimmer
        if held is None or held[0] != encoding:
            held = self._trimmer = (encoding, _Trimmer(encoding=encoding))
        return held[1]

    def settle(self, objects: Sequence[Any]) -> None:
        """Bound the memo after a call over ``objects``."""
        bound = max(self.capacity, 2 * len(objects))
        if len(self._entries) > bound:
            entries = self._entries
            self._entries = {id(o): entries[id(o)] for o in objects if id(o) in entries}
        if len(self._rebuilt) > bound:
            rebuilt = self._rebuilt
            self._rebuilt = {id(o): rebuilt[id(o)] for o in objects if id(o) in rebuilt}
        if len(self._rebuilt_from) > bound:
            held = self._rebuilt_from
            self._rebuilt_from = {id(o): held[id(o)] for o in objects if id(o) in held}

    def __len__(self) -> int:
        return len(self._entries)
