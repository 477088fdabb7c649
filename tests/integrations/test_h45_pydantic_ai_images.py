"""Pydantic AI: a user prompt's images are counted as the images the model receives (they were
a ``[BinaryContent]`` marker of a few tokens, so a history holding images passed as fitting
while the model received thousands of tokens more), and a ``TextContent``'s text as its text."""

from __future__ import annotations

import base64
import struct

import pytest

pytest.importorskip("pydantic_ai", reason="Pydantic AI is not installed (pip install 'agentcontext[pydantic-ai]')")

from pydantic_ai.messages import (
    BinaryContent,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextContent,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

import agentcontext as ac
from agentcontext.integrations.pydantic_ai import fit_messages


def png(width: int, height: int) -> bytes:
    header = struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", width, height) + b"\x08\x02\x00\x00\x00"
    return b"\x89PNG\r\n\x1a\n" + header + bytes(4096)


def received(messages: list[ModelMessage]) -> int:
    """The tokens of the prompts and answers as the model receives them (each image whole)."""
    dicts = []
    for m in messages:
        for part in m.parts:
            if isinstance(part, TextPart):
                dicts.append({"role": "assistant", "content": part.content})
            elif isinstance(part, UserPromptPart):
                items = [part.content] if isinstance(part.content, str) else part.content
                content = []
                for item in items:
                    if isinstance(item, BinaryContent):
                        url = f"data:{item.media_type};base64,{base64.b64encode(item.data).decode()}"
                        content.append({"type": "image_url", "image_url": {"url": url}})
                    elif isinstance(item, ImageUrl):
                        content.append({"type": "image_url", "image_url": {"url": item.url}})
                    else:
                        text = item.content if isinstance(item, TextContent) else item
                        content.append({"type": "text", "text": text})
                dicts.append({"role": "user", "content": content})
    return ac.Conversation(dicts).tokens


@pytest.mark.parametrize(
    "image",
    [BinaryContent(data=png(1024, 1024), media_type="image/png"), ImageUrl(url="https://example.com/a.png")],
    ids=["binary", "url"],
)
def test_an_old_prompt_s_image_counts_as_an_image(image: object) -> None:
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart(content=["What is on this picture?", image])]),
        ModelResponse(parts=[TextPart("A cat on a mat.")]),
        ModelRequest(parts=[UserPromptPart(content="And what colour is the cat?")]),
    ]
    assert received(history) > 1_000
    out = fit_messages(history, 1_000)
    assert received(out) <= 1_000
    assert out[-1] is history[-1]


def test_a_prompt_within_the_budget_keeps_its_image() -> None:
    image = BinaryContent(data=png(200, 100), media_type="image/png")
    history: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(content=["What is this?", image])])]
    assert fit_messages(history, 1_000) == history


def test_text_content_counts_as_its_text() -> None:
    text = "Summarise this report line by line. " * 200
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart(content=[TextContent(text), "old ask"])]),
        ModelResponse(parts=[TextPart("Done.")]),
        ModelRequest(parts=[UserPromptPart(content="new ask")]),
    ]
    assert received(history) > 500
    out = fit_messages(history, 500)
    assert received(out) <= 500
    assert out[-1] is history[-1]


def sent_with_returns(messages: list[ModelMessage]) -> int:
    """The tokens the model receives of prompts, calls and tool returns, each image whole (as
    Pydantic AI sends a return's files: after it)."""
    dicts: list[dict[str, object]] = []
    for m in messages:
        for part in m.parts:
            if isinstance(part, ToolCallPart):
                call = {
                    "id": part.tool_call_id,
                    "type": "function",
                    "function": {"name": part.tool_name, "arguments": "{}"},
                }
                dicts.append({"role": "assistant", "content": None, "tool_calls": [call]})
            elif isinstance(part, ToolReturnPart):
                dicts.append({"role": "tool", "tool_call_id": part.tool_call_id, "content": part.model_response_str()})
                for item in part.files:
                    url = f"data:{item.media_type};base64,{base64.b64encode(item.data).decode()}"
                    dicts.append({"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]})
            elif isinstance(part, UserPromptPart):
                dicts.append({"role": "user", "content": part.content})
    return ac.Conversation(dicts).tokens


def screenshots(rounds: int, last_text: str = "screen") -> list[ModelMessage]:
    shot = BinaryContent(data=png(1280, 800), media_type="image/png")  # 1,366 tokens
    out: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(content="Click through the app.")])]
    for i in range(rounds):
        out.append(ModelResponse(parts=[ToolCallPart("screenshot", {}, tool_call_id=f"c{i}")]))
        text = last_text if i == rounds - 1 else "screen"
        out.append(ModelRequest(parts=[ToolReturnPart("screenshot", [text, shot], tool_call_id=f"c{i}")]))
    return out


def test_old_screenshots_returned_by_a_tool_count_as_images() -> None:
    history = screenshots(8)
    assert sent_with_returns(history) > 10_000
    out = fit_messages(history, 4_000)
    assert sent_with_returns(out) <= 4_000
    assert out[-1] is history[-1]


def test_a_newest_return_with_an_image_has_its_text_cut_and_keeps_the_image() -> None:
    history = screenshots(3, last_text="row of the table\n" * 3_000)
    out = fit_messages(history, 4_000)
    assert sent_with_returns(out) <= 4_000
    text, image = out[-1].parts[0].content
    assert text.startswith("row of the table") and image is history[-1].parts[0].content[1]
