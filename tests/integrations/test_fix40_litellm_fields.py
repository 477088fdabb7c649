"""LiteLLM's ``fit_messages`` over message objects: a ``role`` set anew in place is read again
(the memo was keyed by ``content`` and ``tool_calls`` alone, so the fit was chosen with the old
role), and the copy an object was rebuilt as (its content cleared) is made again when any of its
fields was set anew (it was kept by its content alone, so it went out with the old ``name``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import BaseModel

from agentcontext.integrations.litellm import fit_messages
from tests.integration_support import Function, ToolCall


class Msg(BaseModel):
    role: str
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None


def result(i: int, lines: int = 40) -> str:
    return "\n".join(f"{k:4d}  def handler_{i}_{k}(request): return load(request, {k})" for k in range(lines))


def history(turns: int) -> list[Any]:
    out: list[Any] = [{"role": "system", "content": "You review code."}]
    for i in range(turns):
        call = ToolCall(id=f"c{i}", function=Function(name="read", arguments=f'{{"p": "{i}"}}'))
        out += [
            {"role": "user", "content": f"Review module {i}."},
            Msg(role="assistant", content=f"Reading {i}.", tool_calls=[call]),
            Msg(role="tool", tool_call_id=f"c{i}", content=result(i)),
            Msg(role="assistant", content=f"Module {i} is fine."),
        ]
    return out


def sent(messages: list[Any]) -> list[dict[str, Any]]:
    return [m if isinstance(m, dict) else m.model_dump(mode="json", exclude_none=True) for m in messages]


def change(message: Msg, how: str) -> None:
    if how == "name":
        message.name = "reviewer_with_a_rather_long_name"
    elif how == "role":
        message.role = "user"
    elif how == "tool_call_id":
        message.tool_call_id = "c_renamed"
    else:
        raise AssertionError(how)


@pytest.mark.parametrize(
    ("where", "how"),
    [(-1, "name"), (-3, "name"), (-5, "name"), (-1, "role"), (-5, "role"), (-2, "name")],
)
@pytest.mark.parametrize("budget", [1_500, 3_000, 100_000])
def test_a_field_set_anew_in_place_is_sent_as_it_is_now(where: int, how: str, budget: int) -> None:
    messages = history(10)
    fit_messages(messages, budget)
    fit_messages(messages, budget)  # (the memo and the kept prints both hold the objects now)
    change(messages[where], how)
    assert sent(fit_messages(messages, budget)) == sent(fit_messages(copy.deepcopy(messages), budget))


@pytest.mark.parametrize("budget", [1_500, 3_000])
def test_a_cleared_objects_copy_follows_its_other_fields(budget: int) -> None:
    """An old tool result's object comes back as a copy with its content cleared; a name set on
    the object since is in the next call's copy too."""
    messages = history(12)
    first = sent(fit_messages(messages, budget))
    messages[3].name = "read_tool"
    again = sent(fit_messages(messages, budget))
    assert again == sent(fit_messages(copy.deepcopy(messages), budget))
    assert again != first or all("name" not in m for m in again)


# (pydantic warns, building LiteLLM's models, of a TypedDict item it cannot keep read-only.)
@pytest.mark.filterwarnings("ignore:Item .* is using the .ReadOnly. qualifier:UserWarning")
@pytest.mark.parametrize("how", ["name", "tool_call_id", "role"])
@pytest.mark.parametrize("where", [-3, -5, -7])
@pytest.mark.parametrize("budget", [1_500, 3_000])
def test_litellm_messages_fields_set_anew_are_sent_as_they_are_now(how: str, where: int, budget: int) -> None:
    """LiteLLM's own ``Message`` (it keeps ``name`` and ``tool_call_id`` as extra fields, and drops
    its unset optional fields from the object). A ``role`` set anew is read again (the case at -5
    and 1,500 tokens failed before); a ``name`` or ``tool_call_id`` is not part of the memo's key
    (the docs say so), but an unchanged object is sent as the caller's own, so it goes out as it
    is now."""
    pytest.importorskip("litellm")
    from litellm.types.utils import Message as LiteLLMMessage

    messages: list[Any] = [
        LiteLLMMessage(**m.model_dump(exclude_none=True)) if isinstance(m, Msg) else m for m in history(10)
    ]
    fit_messages(messages, budget)
    fit_messages(messages, budget)
    target = messages[where]
    if how == "name":
        target.name = "reader_" * 60  # (some hundred tokens more)
    elif how == "tool_call_id":
        target.tool_call_id = "c_renamed_" * 30
    else:
        target.role = "user"
    assert sent(fit_messages(messages, budget)) == sent(fit_messages(copy.deepcopy(messages), budget))
