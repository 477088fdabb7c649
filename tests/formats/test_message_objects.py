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


def test_subclasses_of_the_builtin_types_read_as_their_base_types() -> None:
    # The built-in types are recognised by identity first; their subclasses (str and int enums,
    # OrderedDict, defaultdict, list and float subclasses) take the slower path and read alike.
    import collections
    import enum

    class Role(str, enum.Enum):
        USER = "user"

    class Level(enum.IntEnum):
        HIGH = 3

    class Items(list):  # type: ignore[type-arg]
        pass

    class Score(float):
        pass

    class Text(str):
        pass

    odd = collections.OrderedDict(
        role=Role.USER,
        content=Items([collections.OrderedDict(type=Text("text"), text=Text("hi"))]),
        meta=collections.defaultdict(list, level=Level.HIGH, score=Score(0.5), flag=True, n=Level.HIGH + 1),
    )
    plain = {
        "role": "user",
        "content": [{"type": "text", "text": "hi"}],
        "meta": {"level": 3, "score": 0.5, "flag": True, "n": 4},
    }
    assert ac.convert([odd], to="responses") == ac.convert([plain], to="responses")
    conv = ac.Conversation([odd])
    assert conv.to_format(conv.format) == [plain]
    # True stays a bool (bool is an int subclass); a str-subclass key is a key.
    keyed = ac.Conversation([{Text("role"): "user", "content": "x", "k": True}])
    assert keyed.to_format(keyed.format) == [{"role": "user", "content": "x", "k": True}]
