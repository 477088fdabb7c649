"""LangChain's own image blocks (``{"type": "image", "base64": ...}`` and the older
``"source_type": "base64"`` with ``"data"``) cost an image, as OpenAI ``image_url`` parts do:
their base64 data was counted as text (a 150 KB image as about 26,000 tokens), so a prompt
with one small picture did not fit a 1,000-token budget and older messages were dropped for
tokens the model never receives."""

from __future__ import annotations

import base64
import struct

import pytest

pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")

from langchain_core.messages import AIMessage, HumanMessage

import agentcontext as ac
from agentcontext.integrations.langchain import fit_messages, to_openai

# A 64x64 PNG's header, then 150 KB of data: 6 tokens as an image, about 26,000 as text.
PNG = base64.b64encode(
    b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", 64, 64) + bytes(150_000)
).decode()
BLOCKS = {
    "v1": {"type": "image", "base64": PNG, "mime_type": "image/png"},
    "v0": {"type": "image", "source_type": "base64", "data": PNG, "mime_type": "image/png"},
}


@pytest.mark.parametrize("form", sorted(BLOCKS))
def test_an_image_block_costs_an_image(form: str) -> None:
    as_openai = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    ask = HumanMessage([{"type": "text", "text": "What is this?"}, BLOCKS[form]])
    same = {"role": "user", "content": [{"type": "text", "text": "What is this?"}, as_openai]}
    assert ac.Conversation([to_openai(ask)]).tokens == ac.Conversation([same]).tokens < 50
    history = [HumanMessage("Hello"), AIMessage("Hi! Send me a picture."), ask]
    assert fit_messages(history, 1_000) == history


def test_an_image_by_url_costs_an_image() -> None:
    ask = HumanMessage(["What is this?", {"type": "image", "url": "https://example.com/cat.png"}])
    assert (
        ac.Conversation([to_openai(ask)]).tokens
        == ac.Conversation(
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is this?"},
                        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
                    ],
                }
            ]
        ).tokens
    )


def test_a_cut_result_keeps_its_own_image_block() -> None:
    from langchain_core.messages import ToolMessage

    big = "line of output\n" * 20_000
    history = [
        HumanMessage("Take a screenshot."),
        AIMessage("", tool_calls=[{"id": "c0", "name": "shot", "args": {}}]),
        ToolMessage([{"type": "text", "text": big}, BLOCKS["v1"]], tool_call_id="c0"),
    ]
    out = fit_messages(history, 4_000)
    text, image = out[-1].content
    assert image is history[-1].content[1] and text["text"].startswith("line of output") and "c0" in text["text"]
    assert ac.Conversation([to_openai(m) for m in out]).tokens <= 4_000
