"""A newest tool result over the budget by itself is cut head + marker + tail rather than the call
failing. A result whose content is a list of text parts (as MCP tools, through
``langchain-mcp-adapters``, and many LangChain tools return it) is cut too: read as its texts
joined, sent as the cut text; a result with parts that are not text (images) has its texts cut
and keeps those parts (their tokens kept apart from the room the cut shares out); images over the
budget by themselves are still a ``BudgetError``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")

from langchain.agents.middleware.types import ModelRequest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

import agentcontext as ac
from agentcontext.errors import BudgetError
from agentcontext.integrations.langchain import AgentContextMiddleware, converted, fit_messages, to_openai
from agentcontext.integrations.langgraph import fit_hook

BIG = "line of output\n" * 20_000


def middleware(compaction: bool) -> Callable[[list[BaseMessage]], list[BaseMessage]]:
    mw = AgentContextMiddleware(4000, compaction=compaction)
    model = GenericFakeChatModel(messages=iter([]))

    def call(messages: list[BaseMessage]) -> list[BaseMessage]:
        request = ModelRequest(
            model=model, messages=messages, system_message=None, tools=[], state={"messages": messages}
        )  # type: ignore[arg-type]
        return list(mw.fit_request(request).messages)

    return call


PATHS: dict[str, Callable[[], Callable[[list[BaseMessage]], list[BaseMessage]]]] = {
    "fit_messages": lambda: lambda ms: fit_messages(ms, 4000),
    "fit_messages cache": lambda: lambda ms: fit_messages(ms, 4000, cache=converted()),
    "middleware": lambda: middleware(False),
    "middleware compaction": lambda: middleware(True),
    "fit_hook": lambda: lambda ms: fit_hook(4000).invoke({"messages": ms})["llm_input_messages"],
}


def history(content: Any) -> list[BaseMessage]:
    call = {"id": "c0", "name": "read", "args": {}}
    return [
        HumanMessage("Read it.", id="h0"),
        AIMessage("", id="a0", tool_calls=[call]),
        ToolMessage(content, tool_call_id="c0", id="t0"),
    ]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    "content",
    [[{"type": "text", "text": BIG}], [{"type": "text", "text": "Found:"}, {"type": "text", "text": BIG}]],
    ids=["one part", "two parts"],
)
def test_a_result_of_text_parts_over_the_budget_is_cut(path: str, content: Any) -> None:
    messages = history(content)
    sent = PATHS[path]()(messages)
    assert [m.id for m in sent] == ["h0", "a0", "t0"]
    assert ac.Conversation([to_openai(m) for m in sent]).tokens <= 4000
    result = sent[-1]
    assert isinstance(result.content, str) and "c0" in result.content  # the marker names the call id
    assert result.content.startswith(content[0]["text"][:6]) and result.content.endswith("line of output\n")
    assert messages[-1].content == content  # the history keeps it whole


IMAGE = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}  # 1,534 tokens


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_result_with_an_image_part_has_its_text_cut_and_keeps_the_image(path: str) -> None:
    # (It was a BudgetError until h45: the issue asks an oversized newest result to be cut.)
    content = [{"type": "text", "text": BIG}, IMAGE]
    messages = history(content)
    sent = PATHS[path]()(messages)
    assert [m.id for m in sent] == ["h0", "a0", "t0"]
    assert ac.Conversation([to_openai(m) for m in sent]).tokens <= 4000
    text, image = sent[-1].content
    assert image == IMAGE and "c0" in text["text"] and text["text"].startswith("line of output")
    assert messages[-1].content == content


def test_images_over_the_budget_by_themselves_are_still_a_budget_error() -> None:
    with pytest.raises(BudgetError):
        fit_messages(history([{"type": "text", "text": BIG}, IMAGE, IMAGE, IMAGE]), 4000)
