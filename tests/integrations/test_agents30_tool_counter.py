"""One counter of tool definitions for every adapter (``_beside.tool_tokens``): LangChain and
LangGraph give it their tools' schemas, the others the texts of ``tool_text``; the counts are
those of the schema's JSON, and a LangChain tool met before is not converted again."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("langchain", reason="LangChain v1 is not installed (pip install 'agentcontext[langchain]')")

from langchain_core.tools import tool
from langchain_core.utils import function_calling

import agentcontext as ac
from agentcontext.integrations import _beside
from agentcontext.integrations.langchain import tool_tokens


@tool
def read_file(path: str, start: int = 0) -> str:
    """Read a file of the code base from line ``start``."""
    return path


@tool
def grep(pattern: str) -> str:
    """Search the code base for a regular expression."""
    return pattern


def test_langchain_tools_count_their_schema_json_and_are_converted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    tools: list[Any] = [read_file, grep, {"type": "function", "function": {"name": "own", "parameters": {}}}]
    expected = sum(
        ac.count_tokens(json.dumps(function_calling.convert_to_openai_tool(t), ensure_ascii=False)) for t in tools
    )
    converted: list[Any] = []
    original = function_calling.convert_to_openai_tool

    def counting(t: Any, *args: Any, **kwargs: Any) -> Any:
        converted.append(t)
        return original(t, *args, **kwargs)

    monkeypatch.setattr(function_calling, "convert_to_openai_tool", counting)
    memo: dict[Any, tuple[Any, int]] = {}
    assert tool_tokens(tools, "o200k_base", memo) == expected
    assert tool_tokens(tools, "o200k_base", memo) == expected
    assert tool_tokens(tools, "o200k_base") == expected  # no memo: converted each time
    assert len(converted) == 3 + 3  # the memo's second call converted nothing


def test_every_adapter_counts_its_tools_through_the_one_counter(monkeypatch: pytest.MonkeyPatch) -> None:
    counted: list[str] = []
    original = _beside._count

    def counting(text: str, encoding: Any, system: bool) -> int:
        counted.append(text)
        return original(text, encoding, system)

    monkeypatch.setattr(_beside, "_count", counting)
    tool_tokens([read_file], "o200k_base")
    text = _beside.tool_text("read_file", "Read a file.", {"type": "object", "properties": {}})
    assert _beside.beside_tokens(None, [text], "o200k_base") == ac.count_tokens(text)
    assert counted == [json.dumps(function_calling.convert_to_openai_tool(read_file), ensure_ascii=False), text]
