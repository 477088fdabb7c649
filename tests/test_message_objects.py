"""Message objects other than dicts: any Mapping and pydantic models (LiteLLM's and the OpenAI
SDK's messages) are read wherever dicts are; what cannot be read is refused naming its type and
what to use instead."""

from __future__ import annotations

import types
from typing import Any

import pytest
from pydantic import BaseModel

import agentcontext as ac


class ToolCall(BaseModel):
    id: str
    type: str = "function"
    function: dict[str, str]


class ChatMessage(BaseModel):
    role: str
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    refusal: str | None = None


DICTS: list[dict[str, Any]] = [
    {"role": "user", "content": "Read a.py please."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "print('a')"},
]


def test_mappings_and_pydantic_models_read_like_dicts() -> None:
    objects: list[Any] = [
        types.MappingProxyType(DICTS[0]),
        ChatMessage(role="assistant", tool_calls=[ToolCall(id="c1", function={"name": "read", "arguments": "{}"})]),
        types.MappingProxyType(DICTS[2]),
    ]
    assert ac.Conversation(objects).message_tokens() == ac.Conversation(DICTS).message_tokens()
    assert ac.validate(objects) == []
    assert ac.trim_messages(objects, 10_000) == [
        DICTS[0],
        {k: v for k, v in DICTS[1].items() if v is not None},
        DICTS[2],
    ]


class Broken(BaseModel):
    role: str

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        raise RuntimeError("no dump today")


def test_what_cannot_be_read_is_named_with_what_to_use() -> None:
    with pytest.raises(ac.InvalidMessageError, match=r"message 1: object is not JSON data; a message is a dict"):
        ac.trim_messages([DICTS[0], object()], 100)
    with pytest.raises(ac.InvalidMessageError, match=r"message 0: Broken.model_dump\(\) failed: .*no dump today"):
        ac.Conversation([Broken(role="user")])
    # Inside a message only the place is named.
    with pytest.raises(ac.InvalidMessageError, match=r"^message 0: object is not JSON data \(at content\[0\]\)$"):
        ac.Conversation([{"role": "user", "content": [object()]}])
