"""The memo the adapters keep across calls (:class:`Converted`): each object's conversion, marked
with where it came from, and the last call's work over its list, so that an agent's next call
(the same objects plus a few new ones) converts and checks only what is new."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping, Sequence
from operator import is_
from typing import Any, Literal, Protocol, TypeVar, cast

from agentcontext.types import Encoding

T = TypeVar("T")

#: How ``_core._Held`` reads an object's fields: its own (a plain dict's
#: items, an object's attributes, or not at all) and the attribute naming a group of members.
InCore = tuple[Literal["items", "attrs"] | None, str | None]

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


def in_core_default(obj: Any) -> InCore | None:
    """How ``_core._Held`` reads what :func:`held_fields` reads of ``obj``: a plain dict's items,
    another object's attributes; None for another Mapping (its items are read in Python)."""
    if type(obj) is dict:
        return ("items", None)
    return None if isinstance(obj, Mapping) else ("attrs", None)


def members_in_core(group: Any) -> bool:
    """Whether ``_core._Held`` reads each member of ``group`` (a list or tuple) as
    :func:`held_fields` does: each a plain dict or not a Mapping."""
    return type(group) in (list, tuple) and all(type(m) is dict or not isinstance(m, Mapping) for m in group)


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

    def __len__(self) -> int:
        """How many objects are kept."""
        return len(self._held)

    def same(self, objects: list[Any]) -> bool:
        return self._held.same(objects)

    def keep(self, objects: list[Any], keys: list[tuple[Any, ...]], start: int) -> None:
        self._name(objects, start)
        self._held.keep(objects, start, self._names)

    def extend(self, objects: list[Any]) -> bool:
        """As :meth:`same`, and when they are the same, the objects after the kept ones kept too
        (their classes and attributes, as :meth:`keep` keeps them)."""
        self._name(objects, len(self._held))
        return self._held.extend(objects, self._names)

    def keep_some(self, objects: list[Any], start: int, checked: Callable[[int, Any], bool]) -> None:
        """As :meth:`keep`, the objects from ``start`` on for which ``checked(place, obj)`` is false
        kept by identity alone (their class and attributes not read by :meth:`same`)."""
        self._name(objects, start)
        names = self._names
        own = [names.get(type(obj), ()) if checked(k, obj) else None for k, obj in enumerate(objects[start:], start)]
        self._held.keep(objects, start, own)

    def _name(self, objects: list[Any], start: int) -> None:
        """The attributes kept for the class of each of ``objects[start:]`` not seen before."""
        attrs = self._attrs
        if attrs is not None:
            for cls in {type(o) for o in objects[start:]} - self._names.keys():
                self._names[cls] = attrs(cls)


class Converted:
    """An adapter's memo of its conversions across calls: the dicts each object stands for, marked,
    so that a message seen by an earlier call is not converted again (an agent's next call sees the
    same objects plus a few new ones). Keyed by the object's identity, held with the object (so
    the identity is not reused) and checked by ``key(obj)``, a cheap tuple compared by identity
    first (the fields the conversion reads: a field set anew misses). It holds too the copy each
    changed object was made as (:meth:`rebuilt`), given again only while the object holds the
    same fields (``fields(obj)``, every field by default: a copy is made of all of them). At most
    ``capacity`` objects (or twice the longest list seen) are held: past that, only the last
    call's stay."""

    def __init__(
        self,
        key: Callable[[Any], tuple[Any, ...]],
        capacity: int = 4096,
        prints: Callable[[], Prints] | None = None,
        fields: Callable[[Any], tuple[Any, ...]] | None = None,
        in_core: Callable[[Any], InCore | None] | None = None,
        trims: bool = True,
    ) -> None:
        self.key = key
        #: What a copy made of an object is made from beside its changes (compared by identity:
        #: a field set anew makes the copy again): ``held_fields(obj, key)`` unless given.
        self.fields: Callable[[Any], tuple[Any, ...]] = (
            fields if fields is not None else lambda obj: held_fields(obj, key)
        )
        #: How the core reads what ``fields`` reads of an object (``_core._Held.of``'s ``own``
        #: and ``group``), None where it cannot (the Python check then): what each copy was made
        #: of is held by the core, and the copies the kept trimmer gives back by itself are
        #: checked in one pass (``_core._Fields``), not by ``fields`` per copy and call. Given
        #: with ``fields``; of the default, :func:`in_core_default`.
        self.in_core = in_core if in_core is not None else (in_core_default if fields is None else None)
        self._given_fields: Any = None
        if self.in_core is not None:
            from agentcontext._core import _Fields

            self._given_fields = _Fields()
        #: With ``prints``: the last call's objects told unchanged by their :class:`Prints` (not
        #: by each key), and, unless ``trims`` is False, one-dict objects fitted by a kept
        #: :class:`~agentcontext._core._Trimmer`.
        self.prints = prints() if prints is not None else None
        self.trims = trims
        self._trimmer: Any = None
        self._lock = threading.Lock()
        self.capacity = capacity
        self._entries: dict[int, tuple[Any, tuple[Any, ...], int, list[dict[str, Any]]]] = {}
        self._serials = itertools.count()
        # The copy each changed object was made as: the object, the changes and the fields it was
        # made from, the copy, the marked dict it was made for (see rebuilt_one), and the copy's
        # own fields then (None when there is no copy: the copy is given again only while it
        # holds them, not when whoever it was given to has set one anew in place since).
        self._rebuilt: dict[int, tuple[Any, Any, tuple[Any, ...], Any, Any, Any]] = {}
        # The copies the kept trimmer gives back by itself, by place: the object and its fields then.
        self._given: dict[int, tuple[Any, tuple[Any, ...]]] = {}
        # And by place, what each such copy held of its own when it was made: the core's (each
        # copy at its place in ``_copy_at``, told unchanged in one pass), or the copy and its
        # fields read in Python.
        self._copy_at: list[Any] = []
        self._given_copies: Any = None
        if self.in_core is not None:
            from agentcontext._core import _Fields

            self._given_copies = _Fields()
        self._given_copy_fields: dict[int, tuple[Any, tuple[Any, ...]]] = {}
        # The last call's objects (how many, where the prints hold them), their keys, dicts,
        # owners and marks (see resume), and how many calls began from it.
        self._last: tuple[list[Any] | int, list[Any], list[dict[str, Any]], list[list[int]], dict[int, int]] | None = (
            None
        )
        # The list (by identity) and length the prints were extended over by this call's resume.
        self._extended: tuple[int, int] | None = None
        self.resumed = 0
        # The last call's output (one-dict objects), what each of its dicts was mapped to, and
        # the places mapped to a copy, with the object each copy was made of.
        self._last_out: tuple[list[dict[str, Any]], list[Any], list[tuple[int, Any]]] | None = None

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

    def _made_of(self, obj: Any) -> Any:
        """What a copy of ``obj`` made now is made of (see :meth:`_still_made_of`): the core's
        ``_Held`` of its fields where :attr:`in_core` says how to read them, else ``fields(obj)``."""
        how = self.in_core(obj) if self.in_core is not None else None
        if how is not None:
            from agentcontext._core import _Held

            held = _Held.of(obj, *how)
            if held is not None:
                return held
        return self.fields(obj)

    def _still_made_of(self, was: Any, obj: Any) -> bool:
        """Whether ``obj`` holds the fields ``was`` (from :meth:`_made_of`) holds, by identity."""
        if type(was) is tuple:
            return same_objects(was, self.fields(obj))
        return cast("bool", was.same())

    def _copy_made_of(self, obj: Any, new: Any) -> Any:
        """What the copy ``new`` of ``obj`` holds now (:meth:`_made_of`), None when ``new`` is no
        copy (None, or ``obj`` itself)."""
        return None if new is None or new is obj else self._made_of(new)

    def _copy_current(self, held: tuple[Any, ...]) -> bool:
        """Whether the copy ``held`` (an entry of ``_rebuilt``) still holds its own fields as made."""
        return held[5] is None or self._still_made_of(held[5], held[3])

    def rebuilt(self, obj: T, changes: Any, rebuild: Callable[[T, Any], T | None]) -> T | None:
        """``rebuild(obj, changes)``, or the copy made the last time when it was made for equal
        ``changes`` from the same fields of ``obj`` (:attr:`fields`, by identity: a result cleared
        on one call is cleared the same way on the next, and a field set anew in place since is
        in the copy; the copy itself changed in place since by whoever it was given to is made
        again)."""
        held = self._rebuilt.get(id(obj))
        if (
            held is not None
            and held[0] is obj
            and held[1] == changes
            and self._still_made_of(held[2], obj)
            and self._copy_current(held)
        ):
            return cast("T | None", held[3])
        new = rebuild(obj, changes)
        self._rebuilt[id(obj)] = (obj, changes, self._made_of(obj), new, None, self._copy_made_of(obj, new))
        return new

    def rebuilt_one(
        self, obj: T, marked: dict[str, Any], rebuild: Callable[[T, list[tuple[int, dict[str, Any] | None]]], T | None]
    ) -> T | None:
        """:meth:`rebuilt` of a one-dict object that came back as the changed ``marked`` dict: the
        changes ``[(0, marked without its mark)]``, made only when ``marked`` is not the dict the
        held copy was made for."""
        held = self._rebuilt.get(id(obj))
        if held is not None and (
            held[0] is not obj or not self._still_made_of(held[2], obj) or not self._copy_current(held)
        ):
            held = None  # (another object's, made of fields set anew since, or the copy changed since)
        if held is not None and held[4] is not None and held[4] == marked:
            return cast("T | None", held[3])
        parts: list[tuple[int, dict[str, Any] | None]] = [(0, {k: v for k, v in marked.items() if k != MARK})]
        if held is not None and held[1] == parts:
            new, made_of, copy_made_of = held[3], held[2], held[5]
        else:
            new, made_of = rebuild(obj, parts), self._made_of(obj)
            copy_made_of = self._copy_made_of(obj, new)
        self._rebuilt[id(obj)] = (obj, parts, made_of, new, marked, copy_made_of)
        return cast("T | None", new)

    def current(self, obj: Any, copy: Any) -> bool:
        """Whether ``copy`` is the copy held for ``obj``, ``obj``'s fields are those it was made
        from and the copy's its own as made."""
        held = self._rebuilt.get(id(obj))
        return (
            held is not None
            and held[0] is obj
            and held[3] is copy
            and self._still_made_of(held[2], obj)
            and self._copy_current(held)
        )

    def resume(
        self, objects: Sequence[Any]
    ) -> tuple[int, list[dict[str, Any]], list[list[int]], dict[int, int], list[tuple[Any, ...]]]:
        """Where the last call's work over ``objects`` ends, and copies of its dicts, owners, marks
        and keys: all of it when that call's objects begin ``objects`` (the same objects by
        identity, each key unchanged), else nothing (0 and empty)."""
        self._extended = None  # (set again below only for these objects)
        last = self._last
        if last is not None:
            prev, keys, dicts, owners, where = last
            n = prev if isinstance(prev, int) else len(prev)
            if 0 < n <= len(objects) and (
                self._extend(objects)
                if self.prints is not None
                else all(map(is_, cast("list[Any]", prev), objects))
                and list(map(self.key, cast("list[Any]", prev))) == keys
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

    def _extend(self, objects: Sequence[Any]) -> bool:
        """Whether the prints hold ``objects``' first ones unchanged; if so, the others are held too
        (with :class:`CorePrints`: one pass, and :meth:`remember` then keeps nothing more)."""
        listed = objects if type(objects) is list else list(objects)
        prints = self.prints
        if not isinstance(prints, CorePrints):
            return prints is not None and prints.same(listed)
        if not prints.extend(listed):
            return False
        self._extended = (id(objects), len(listed))
        return True

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
            with self._lock:  # (the prints and the last call's work describe the same list)
                extended, self._extended = self._extended, None
                prints = self.prints
                if not (
                    isinstance(prints, CorePrints)
                    and extended == (id(objects), len(objects))
                    and len(prints) == len(objects)
                ):
                    self.prints.keep(list(objects), keys, start)
                # (How many: the prints hold the objects themselves.)
                self._last = (len(objects), keys, dicts, owners, where)
            return
        self._last = (list(objects), keys, dicts, owners, where)

    def trimmer(self, encoding: Encoding, objects: Sequence[Any] = ()) -> Any:
        """The trimmer kept for ``encoding``: a new one for another encoding, or when a copy the
        kept one gives back by itself (see :meth:`given`) was made of an object of ``objects``
        whose fields have been set anew since (the new one's copies are all mapped again)."""
        from agentcontext._core import _Trimmer

        held = self._trimmer
        if held is not None and not self._given_current(objects):
            held = None
        if held is None or held[0] != encoding:
            self._given.clear()
            self._copy_at = []
            if self._given_copies is not None:
                self._given_copies.clear()
            self._given_copy_fields.clear()
            if self._given_fields is not None:
                self._given_fields.clear()
            held = self._trimmer = (encoding, _Trimmer(encoding=encoding))
        return held[1]

    def given(self, index: int, obj: Any) -> None:
        """That the kept trimmer gives the copy held for ``obj`` (at ``index``) by itself from now on."""
        held = self._rebuilt.get(id(obj))
        if held is not None and held[0] is obj:
            self._given_copy_fields.pop(index, None)
            if self._given_copies is not None:
                self._given_copies.discard(index)
            if type(held[5]) is tuple or (held[5] is not None and self._given_copies is None):
                self._given_copy_fields[index] = (held[3], held[5])
            elif held[5] is not None:
                if len(self._copy_at) <= index:
                    self._copy_at.extend([None] * (index + 1 - len(self._copy_at)))
                self._copy_at[index] = held[3]
                self._given_copies.add(index, held[5])
            # (What the copy was made of, as :meth:`_made_of` held it: the core's, checked with
            # the others in one pass, or fields read in Python.)
            was, fast = held[2], self._given_fields
            if fast is not None and type(was) is not tuple:
                fast.add(index, was)
                self._given.pop(index, None)
                return
            if fast is not None:
                fast.discard(index)
            self._given[index] = (obj, was)

    def _given_current(self, objects: Sequence[Any]) -> bool:
        """Whether every copy the kept trimmer gives by itself for ``objects`` was made of its
        object's fields as they are and holds its own as made (those no longer at their place are
        forgotten)."""
        fast = self._given_fields
        if fast is not None and len(fast) and not fast.current(objects if type(objects) is list else list(objects)):
            return False
        # (Each copy checked wherever its object is now: one changed makes a new trimmer.)
        copies = self._given_copies
        if copies is not None and len(copies) and not copies.current(self._copy_at):
            return False
        if self._given_copy_fields and not all(
            self._still_made_of(was, c) for c, was in tuple(self._given_copy_fields.values())
        ):
            return False
        n = len(objects)
        if not self._given:
            return True
        gone = []
        for i, (obj, was) in tuple(self._given.items()):  # (a copy: another thread may add to it)
            if i >= n or objects[i] is not obj:
                gone.append(i)
            elif not self._still_made_of(was, obj):
                return False
        for i in gone:
            self._given.pop(i, None)
        return True

    def settle(self, objects: Sequence[Any]) -> None:
        """Bound the memo after a call over ``objects``."""
        bound = max(self.capacity, 2 * len(objects))
        if len(self._entries) > bound:
            entries = self._entries
            self._entries = {id(o): entries[id(o)] for o in objects if id(o) in entries}
        if len(self._rebuilt) > bound:
            rebuilt = self._rebuilt
            self._rebuilt = {id(o): rebuilt[id(o)] for o in objects if id(o) in rebuilt}

    def __len__(self) -> int:
        return len(self._entries)
