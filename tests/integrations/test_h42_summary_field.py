"""The compacting middleware reads its summary field from the agent's state on every call. A value
it did not write (by hand, by another version: a key missing, a count that is not an int) is read
as no summary, as a field whose message is gone: the call starts from the whole history (which the
state keeps) rather than failing on every call of that thread."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")

from langchain.agents.middleware.types import ModelRequest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from agentcontext.integrations.langchain import STATE_KEY, AgentContextMiddleware

GOOD = {"summary": "S", "through": "a0", "messages": 2, "tokens": 5}


def sent(stored: Any) -> list[str]:
    messages = [HumanMessage("hi", id="h0"), AIMessage("ok", id="a0"), HumanMessage("next", id="h1")]
    state = {"messages": messages, STATE_KEY: stored}
    model = GenericFakeChatModel(messages=iter([]))
    request = ModelRequest(model=model, messages=messages, system_message=None, tools=[], state=state)  # type: ignore[arg-type]
    fitted, _ = AgentContextMiddleware(2000, compaction=True).compile_request(request)
    return [str(m.content) for m in fitted.messages]


@pytest.mark.parametrize(
    "stored",
    [
        {"through": "a0"},
        {"through": "a0", "summary": "S"},
        {**GOOD, "messages": "2"},
        {**GOOD, "messages": 2.5},
        {**GOOD, "messages": 0},
        {**GOOD, "tokens": "x"},
        {**GOOD, "summary": None},
        {**GOOD, "through": ["a0"]},
        "a summary",
    ],
    ids=repr,
)
def test_a_summary_field_it_did_not_write_is_read_as_none(stored: Any) -> None:
    assert sent(stored) == ["hi", "ok", "next"]


def test_its_own_summary_field_stands_for_what_it_covers() -> None:
    out = sent(GOOD)
    assert out[0].endswith("\n\nS") and out[1:] == ["next"]
