"""``fit_items`` sees every field its conversion reads set anew in place, on both of its paths:
the Chat path's memo and the core's prints read only an item's ``content``, ``output`` and
``arguments`` (a function call renamed, a message given another role kept its old Chat form),
and the Responses path's memo of whole-item conversions was keyed by the same three fields (a
renamed call kept its old name and count). Each case compares with a fresh copy of the list."""

from __future__ import annotations

import copy
from typing import Any

import pytest

pytest.importorskip("agents")

from agentcontext import _core
from agentcontext.integrations.openai_agents import _Fitter
from tests.integration_support import fit_items_outcome as _run
from tests.integration_support import responses_call as _call
from tests.integration_support import responses_output as _out
from tests.integration_support import responses_unanswered_mid_list as _responses_items


def _chat_items() -> list[dict[str, Any]]:
    """A list every item of which has a Chat form: the Chat path."""
    return [
        {"role": "user", "content": "task " * 30},
        _call("c5", 46),
        _out("c5", "o " * 94),
        {"role": "user", "content": "more " * 18},
        _call("c10", 8),
        _out("c10", "o " * 180),
    ]


def _set(item: dict[str, Any], how: str) -> None:
    if how == "name":
        item["name"] = "write_file_with_a_much_longer_name"
    elif how == "long name":
        item["name"] = "write_file_" * 60  # (counted: some hundred tokens more)
    elif how == "call_id":
        item["call_id"] += "_renamed_longer_id"
    elif how == "role":
        item["role"] = "developer"
    elif how == "type":
        item["type"] = "message"  # (a message with no type: the same item, written out)
    else:
        raise AssertionError(how)


_RESPONSES_SETS = [(10, "name"), (4, "name"), (11, "call_id"), (3, "role"), (0, "role"), (0, "type")]
_CHAT_SETS = [(4, "name"), (4, "long name"), (1, "long name"), (3, "role"), (0, "role"), (0, "type")]


@pytest.mark.parametrize(
    ("path", "where", "how"),
    [("responses", w, h) for w, h in _RESPONSES_SETS] + [("chat", w, h) for w, h in _CHAT_SETS],
)
@pytest.mark.parametrize("budget", [200, 300, 500, 2_000])
def test_either_path_sees_any_field_set_anew(path: str, where: int, how: str, budget: int) -> None:
    """The Responses path (a list with no Chat form) and the Chat path alike."""
    fitter = _Fitter()
    items = _responses_items() if path == "responses" else _chat_items()
    _run(fitter, items, budget)
    _set(items[where], how)
    items += [_call("c12", 45), _out("c12", "o " * 183)]
    assert _run(fitter, items, budget) == _run(_Fitter(), copy.deepcopy(items), budget)


def test_prints_take_each_objects_own_names() -> None:
    held = _core._Prints()
    items: list[Any] = [{"type": "message", "role": "user", "content": "a"}, _call("c1", 3)]
    held.keep(items, 0, [("type", "role", "content"), ("type", "call_id", "name", "arguments")])
    assert held.same(items) and held.same([*items, {"role": "user"}])
    items[1]["status"] = "completed"  # not a field named for it
    assert held.same(items)
    items[1]["name"] = "other"
    assert not held.same(items)
    # Grown: the first one kept, the next ones named from ``start`` on.
    items[1]["name"] = "read"
    grown = [*items, _out("c1", "ok")]
    held.keep(grown, 2, [("type", "call_id", "output")])
    assert held.same(grown)
    grown[2]["output"] = "other"
    assert not held.same(grown)


def test_prints_refuse_names_that_do_not_fit() -> None:
    held = _core._Prints()
    items: list[Any] = [{"content": "a"}, {"content": "b"}]
    with pytest.raises(ValueError, match="every object from start on"):
        held.keep(items, 0, [("content",)])
    with pytest.raises(TypeError, match="names must be"):
        held.keep(items, 0, ("content",))  # type: ignore[arg-type]
    held.keep(items, 0, [("content",), ("content",)])
    with pytest.raises(ValueError, match="kept already"):
        held.keep([{"content": "c"}, *items], 1, [("content",), ("content",)])
    assert held.same(items)  # (nothing changed by a refused keep)
