"""``_core._Fields``: the fields a copy was made from, told unchanged in one pass (what the
adapters' kept trimmer checks before it gives back a copy it made on an earlier call)."""

from __future__ import annotations

from typing import Any

import pydantic

from agentcontext._core import _Fields


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
    assert f.add(0, d, True) and f.add(1, o, False) and len(f) == 2
    assert f.current(objects)
    # An equal value that is another object is a change (the copy holds the old one).
    d["content"] = "".join(["x"] * 10)
    assert d["content"] == "x" * 10
    assert not f.current(objects)
    assert f.add(0, d, True) and f.current(objects)
    o.name = "b"
    assert not f.current(objects)
    assert f.add(1, o, False) and f.current(objects)
    o.extra = 1  # a field added
    assert not f.current(objects)
    assert f.add(1, o, False)
    del d["role"]  # and one taken away
    assert not f.current(objects)


def test_pydantic_extra_fields_are_fields() -> None:
    m = Extra(content="c", name="first")
    f = _Fields()
    assert f.add(0, m, False) and f.current([m])
    m.name = "second"  # kept in __pydantic_extra__, not __dict__
    assert not f.current([m])
    assert f.add(0, m, False) and f.current([m])
    m.content = "d"
    assert not f.current([m])


def test_what_is_no_longer_at_its_place_is_forgotten_and_the_unreadable_not_kept() -> None:
    a, b = Plain(x=1), Plain(x=2)
    f = _Fields()
    f.add(0, a, False)
    f.add(1, b, False)
    b.x = 3
    # b left its place: forgotten, not a change.
    assert f.current([a]) and len(f) == 1
    assert f.current([a, b]) and len(f) == 1
    f.discard(0)
    assert len(f) == 0
    # Nothing to read that way: a dict subclass as items, an object without __dict__, a dict as attributes.
    assert not f.add(0, type("D", (dict,), {})(), True)
    assert not f.add(0, 12, False)
    assert not f.add(0, (1, 2), True)
    assert len(f) == 0
    f.add(0, a, False)
    f.clear()
    assert len(f) == 0 and f.current([])
