"""``_core._Held`` and ``_core._Fields``: the fields a copy was made from, told unchanged later,
for many copies in one pass (what the adapters' kept trimmer checks before it gives back a copy
it made on an earlier call)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pydantic

from agentcontext._core import _Fields, _Held


def add(f: _Fields, index: int, obj: Any, own: Any, group: str | None = None) -> bool:
    """Keep in ``f`` what ``obj``'s fields are (``_Held.of``); False when they cannot be read so."""
    held = _Held.of(obj, own, group)
    if held is None:
        f.discard(index)
        return False
    f.add(index, held)
    return True


class Plain:
    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


class Extra(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")
    content: str = ""


def test_a_dicts_items_and_an_objects_attributes_by_identity() -> None:
    d = {"role": "tool", "content": "x" * 10}
    o = Plain(name="a", content="y")
    objects: list[Any] = [d, o]
    f = _Fields()
    assert add(f, 0, d, "items") and add(f, 1, o, "attrs") and len(f) == 2
    assert f.current(objects)
    # An equal value that is another object is a change (the copy holds the old one).
    d["content"] = "".join(["x"] * 10)  # (built at run time: another object)
    assert d["content"] == "x" * 10
    assert not f.current(objects)
    assert add(f, 0, d, "items") and f.current(objects)
    o.name = "b"
    assert not f.current(objects)
    assert add(f, 1, o, "attrs") and f.current(objects)
    o.extra = 1  # a field added
    assert not f.current(objects)
    assert add(f, 1, o, "attrs")
    del d["role"]  # and one taken away
    assert not f.current(objects)


def test_pydantic_extra_fields_are_fields() -> None:
    m = Extra(content="c", name="first")
    f = _Fields()
    assert add(f, 0, m, "attrs") and f.current([m])
    m.name = "second"  # kept in __pydantic_extra__, not __dict__
    assert not f.current([m])
    assert add(f, 0, m, "attrs") and f.current([m])
    m.content = "d"
    assert not f.current([m])


def test_what_is_no_longer_at_its_place_is_forgotten_and_the_unreadable_not_kept() -> None:
    a, b = Plain(x=1), Plain(x=2)
    f = _Fields()
    add(f, 0, a, "attrs")
    add(f, 1, b, "attrs")
    b.x = 3
    # b left its place: forgotten, not a change.
    assert f.current([a]) and len(f) == 1
    assert f.current([a, b]) and len(f) == 1
    f.discard(0)
    assert len(f) == 0
    # Nothing to read that way: a dict subclass as items, an object without __dict__, a dict as attributes.
    assert not add(f, 0, type("D", (dict,), {})(), "items")
    assert not add(f, 0, 12, "attrs")
    assert not add(f, 0, (1, 2), "items")
    assert not add(f, 0, a, "neither")
    assert not add(f, 0, a, None, "no_such_group")
    assert len(f) == 0
    add(f, 0, a, "attrs")
    f.clear()
    assert len(f) == 0 and f.current([])


def test_a_groups_members_each_by_identity_and_the_group_itself() -> None:
    items = ({"type": "message", "content": "a"}, Plain(output="b"))
    turn = Plain(items=items)
    request = Plain(parts=[Plain(content="p")], run_id="r")
    f = _Fields()
    assert add(f, 0, turn, None, "items") and add(f, 1, request, "attrs", "parts")
    objects: list[Any] = [turn, request]
    assert f.current(objects)
    items[0]["content"] = str(len(items))  # a member's field
    assert not f.current(objects)
    assert add(f, 0, turn, None, "items") and f.current(objects)
    turn.other = 1  # the turn's own fields are not kept
    assert f.current(objects)
    request.parts.append(Plain(content="q"))  # a member added to the list in place
    assert not f.current(objects)
    assert add(f, 1, request, "attrs", "parts") and f.current(objects)
    request.parts[1].content = "r"
    assert not f.current(objects)
    assert add(f, 1, request, "attrs", "parts")
    request.parts = list(request.parts)  # the group set anew, equal
    assert not f.current(objects)
    assert add(f, 1, request, "attrs", "parts")
    request.run_id = "s"  # its own field
    assert not f.current(objects)
    # A group that is not a list or tuple, or a member with no fields to read, is not kept.
    assert not add(f, 2, Plain(items={"a": 1}), None, "items")
    assert not add(f, 2, Plain(items=(1,)), None, "items")


def test_one_objects_fields_held_and_told_unchanged_later() -> None:
    request = Plain(parts=[Plain(content="p")], run_id="r")
    held = _Held.of(request, "attrs", "parts")
    assert held is not None and held.same()
    request.parts[0].content = str(len(request.parts))
    assert not held.same()
    d = {"role": "tool", "content": "x"}
    held = _Held.of(d, "items")
    assert held is not None and held.same()
    d["name"] = "n"
    assert not held.same()
    assert _Held.of(12, "attrs") is None and _Held.of(d, "attrs", "parts") is None


class Slotted:
    __slots__ = ("content", "name")

    def __init__(self, content: str, name: str) -> None:
        self.content = content
        self.name = name


class Items(Mapping[str, Any]):
    """A Mapping that is not a dict, with a ``__dict__`` of its own (read as items, not attributes)."""

    def __init__(self, **items: Any) -> None:
        self.data = dict(items)

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


def test_the_memos_copies_follow_fields_the_core_cannot_read() -> None:
    """Objects the core does not read (no ``__dict__``; a Mapping that is not a dict, whose own
    ``__dict__`` holds the same dict throughout) are checked in Python, with the same outcome: a
    copy made again once a field was set anew."""
    from agentcontext.integrations._converted import Converted

    made: list[Any] = []

    def rebuild(obj: Any, changes: Any) -> Any:
        made.append(obj)
        return ("copy", len(made))

    # (Of an object with no ``__dict__``, the fields its key reads, as held_fields reads them.)
    memo = Converted(lambda o: (getattr(o, "content", None), getattr(o, "name", None)))
    slotted, mapping = Slotted("c", "a"), Items(content="c", name="a")
    for obj in (slotted, mapping):
        first = memo.rebuilt(obj, [(0, {"content": "cleared"})], rebuild)
        assert memo.rebuilt(obj, [(0, {"content": "cleared"})], rebuild) is first
        if isinstance(obj, Items):
            obj.data["name"] = "b".upper()
        else:
            obj.name = "b".upper()
        again = memo.rebuilt(obj, [(0, {"content": "cleared"})], rebuild)
        assert again is not first and again == ("copy", len(made))
    assert len(made) == 4
