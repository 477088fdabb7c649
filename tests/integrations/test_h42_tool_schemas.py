"""The middleware keeps each LangChain tool's schema tokens across calls (and across the agents it
serves). Two tools of one name and description whose arguments differ (two agents' ``search``)
are counted each, so a call with the larger one stays within the budget; the same tool made anew
for a call (its arguments schema the same class) is still counted once."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")

from langchain.agents.middleware.types import ModelRequest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, tool
from langchain_core.utils import function_calling
from pydantic import BaseModel

import agentcontext as ac
from agentcontext.integrations.langchain import AgentContextMiddleware, to_openai, tool_tokens


@tool
def search(q: str) -> str:
    """Search the web."""
    return q


def wide_search() -> BaseTool:
    @tool
    def search(q: str, site: str, lang: str, page: int, safe: bool, region: str, after: str, before: str) -> str:
        """Search the web."""
        return q

    return search


def exact(tools: list[Any]) -> int:
    return sum(
        ac.count_tokens(json.dumps(function_calling.convert_to_openai_tool(t), ensure_ascii=False)) for t in tools
    )


def test_tools_of_one_name_and_description_with_other_arguments_are_counted_each() -> None:
    wide = wide_search()
    memo: dict[Any, tuple[Any, int]] = {}
    assert tool_tokens([search], "o200k_base", memo) == exact([search])
    assert tool_tokens([wide], "o200k_base", memo) == exact([wide]) > exact([search])
    dict_schema = StructuredTool.from_function(
        lambda **kw: "",
        name="search",
        description="Search the web.",
        args_schema=wide.tool_call_schema.model_json_schema(),
    )
    assert tool_tokens([dict_schema], "o200k_base", memo) == exact([dict_schema])


def test_the_same_tool_made_anew_with_its_schema_class_is_counted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    class Query(BaseModel):
        q: str

    def make() -> BaseTool:
        return StructuredTool.from_function(
            lambda q: q, name="search", description="Search the web.", args_schema=Query
        )

    made: list[Any] = []
    original = function_calling.convert_to_openai_tool
    monkeypatch.setattr(
        function_calling, "convert_to_openai_tool", lambda t, *a, **k: made.append(t) or original(t, *a, **k)
    )
    memo: dict[Any, tuple[Any, int]] = {}
    counts = {tool_tokens([make()], "o200k_base", memo) for _ in range(3)}
    assert counts == {exact([make()])}
    assert len(made) == 1 + 1  # the memo's first call, and exact() above


def test_one_middleware_serving_two_agents_counts_each_ones_tools() -> None:
    model = GenericFakeChatModel(messages=iter([]))
    wide = wide_search()

    def messages() -> list[BaseMessage]:
        out: list[BaseMessage] = [HumanMessage("start", id="h0")]
        for i in range(6):
            call = {"id": f"c{i}", "name": "search", "args": {"q": str(i)}}
            out += [
                AIMessage("", id=f"a{i}", tool_calls=[call]),
                ToolMessage("result line\n" * 40, tool_call_id=f"c{i}", id=f"t{i}"),
            ]
        return [*out, HumanMessage("and now?", id="h1")]

    mw = AgentContextMiddleware(150, compaction=True)
    for tools in ([search], [wide]):
        ms = messages()
        request = ModelRequest(model=model, messages=ms, system_message=None, tools=tools, state={"messages": ms})  # type: ignore[arg-type]
        sent = mw.fit_request(request).messages
        assert ac.Conversation([to_openai(m) for m in sent]).tokens + exact(tools) <= mw.limit
