"""``fit_items`` on the Responses path (a list with no Chat form: an unanswered call mid-list)
sees an item's field set anew in place, even to a string of the same length: its memo of
conversions was keyed by the item alone, so the old conversion's count was kept (472 tokens
where a fresh copy of the same list needs 471)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

pytest.importorskip("agents")

from agentcontext.integrations.openai_agents import _Fitter
from tests.integration_support import fit_items_outcome as _run
from tests.integration_support import responses_call as _call
from tests.integration_support import responses_output as _out
from tests.integration_support import responses_unanswered_mid_list as _items


def _change(items: list[dict[str, Any]], where: int, field: str) -> None:
    old = items[where][field]
    if isinstance(old, str):
        items[where][field] = "".join("Z" if ch in "ox" else ch for ch in old)
    else:
        items[where][field] = [{**p, "text": p["text"].replace("said", "SAID")} for p in old]


@pytest.mark.parametrize(
    ("where", "field"), [(11, "output"), (5, "output"), (10, "arguments"), (4, "arguments"), (8, "content")]
)
@pytest.mark.parametrize("budget", [300, 500, 2_000])
def test_a_field_set_anew_in_place_is_counted_again(where: int, field: str, budget: int) -> None:
    fitter = _Fitter()
    items = _items()
    _run(fitter, items, budget)
    _change(items, where, field)
    items += [_call("c12", 45), _out("c12", "o " * 183)]
    assert _run(fitter, items, budget) == _run(_Fitter(), copy.deepcopy(items), budget)
