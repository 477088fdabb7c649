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
