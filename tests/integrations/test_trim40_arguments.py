"""The LangChain adapter writes a tool call's arguments as ``json.dumps(args, ensure_ascii=False)``
does; a dict goes through the C encoder directly (without ``JSONEncoder.encode``'s set-up in
Python on every new call), and must write the same text and fail the same way."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")

from langchain_core.messages import AIMessage

from agentcontext import _json
from agentcontext.integrations import langchain

ARGS: list[Any] = [
    {},
    {"path": "src/app.py"},
    {"text": 'résumé ✓ \u2028 "quoted" \\ back\nslash\t', "emoji": "\U0001f600"},
    {"n": [1, -2, 2.5, 1e300, float("inf"), float("nan"), True, False, None], "nested": {"a": {"b": [{}]}}},
    {"b": 1, "a": 2},
]


@pytest.mark.parametrize("args", ARGS)
def test_the_arguments_are_what_json_dumps_writes(args: dict[str, Any]) -> None:
    assert _json.dumps_text(args) == json.dumps(args, ensure_ascii=False)
    message = AIMessage("", tool_calls=[{"id": "c1", "name": "f", "args": args}])
    call = langchain.to_openai(message)["tool_calls"][0]
    assert call["function"]["arguments"] == json.dumps(message.tool_calls[0]["args"], ensure_ascii=False)


def test_other_keys_and_values_are_encoded_as_json_dumps_does() -> None:
    for value in ({1: "int key", 2.5: "float key", False: "bool key", None: "none key"}, ["a", 1], "text", 3, None):
        assert _json.dumps_text(value) == json.dumps(value, ensure_ascii=False)


def test_unencodable_and_circular_arguments_fail_as_json_dumps_does() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        _json.dumps_text({"when": object()})
    circular: dict[str, Any] = {}
    circular["self"] = circular
    with pytest.raises(ValueError, match="Circular reference"):
        _json.dumps_text(circular)
    # A failed call leaves nothing behind: the next one encodes as before.
    assert _json.dumps_text({"a": [1]}) == '{"a": [1]}'


def test_the_fast_encoder_is_on_in_cpython() -> None:
    assert _json._ENCODE_DICT is not None
