"""Exact counts equal Python tiktoken's; the heuristic is close; message accounting is documented
and incremental totals equal a full recount."""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentcontext as ac
from tests import support


def corpus_texts() -> list[str]:
    return [t for p in support.normalized_files() for _, t in support.message_texts(p)]


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_exact_counts_equal_tiktoken_on_the_corpus(
    encoding: str, tiktoken_encodings: dict[str, Any], transcripts: Path
) -> None:
    enc = tiktoken_encodings[encoding]
    texts = corpus_texts()
    assert len(texts) > (5000 if support.full_corpus() else 1900)
    expected = [len(enc.encode_ordinary(t)) for t in texts]
    assert ac.count_tokens_batch(texts, encoding=encoding) == expected
    # One by one, through the single-text entry point, on a sample.
    for t, n in list(zip(texts, expected, strict=True))[::97]:
        assert ac.count_tokens(t, encoding=encoding) == n


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=300))
def test_exact_counts_equal_tiktoken_on_any_text(tiktoken_encodings: dict[str, Any], text: str) -> None:
    for name, enc in tiktoken_encodings.items():
        assert ac.count_tokens(text, encoding=name) == len(enc.encode_ordinary(text))


def test_special_token_text_counts_as_text(tiktoken_encodings: dict[str, Any]) -> None:
    text = "before <|endoftext|> after <|im_start|>"
    assert ac.count_tokens(text) == len(tiktoken_encodings["o200k_base"].encode_ordinary(text))


def test_heuristic_is_close_on_the_corpus(transcripts: Path) -> None:
    texts = [t for t in corpus_texts() if len(t) > 40]
    exact = ac.count_tokens_batch(texts)
    errors = sorted(abs(ac.estimate_tokens(t) - n) / n for t, n in zip(texts, exact, strict=True))
    median = errors[len(errors) // 2]
    quarter = sorted(abs(len(t) / 4 - n) / n for t, n in zip(texts, exact, strict=True))[len(errors) // 2]
    assert median <= 0.08, median
    assert median < quarter, (median, quarter)


def test_heuristic_knows_cjk_is_dense() -> None:
    text = "模型是个能力超强、但只能看桌面、而且记性只到桌面的专家。桌子就这么大。" * 5
    exact = ac.count_tokens(text)
    assert abs(ac.estimate_tokens(text) - exact) / exact <= 0.2
    assert len(text) / 4 < exact / 2, "len/4 would be far too low here"


def test_heuristic_conversation_counts() -> None:
    conv = ac.Conversation([{"role": "user", "content": "hello there, general"}], encoding="heuristic")
    assert conv.encoding == "heuristic"
    assert conv.tokens == ac.MESSAGE_OVERHEAD + ac.estimate_tokens("hello there, general")


def test_message_accounting_rule() -> None:
    args = '{"path": "src/app.py"}'
    conv = ac.Conversation(
        [
            {"role": "user", "content": "read it"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "read_file", "arguments": args}}],
            },
            {"role": "tool", "tool_call_id": "c", "content": "print('hi')"},
        ]
    )
    n = ac.count_tokens
    assert conv.message_tokens() == [
        ac.MESSAGE_OVERHEAD + n("read it"),
        ac.MESSAGE_OVERHEAD + ac.TOOL_BLOCK_OVERHEAD + n("read_file") + n(args),
        ac.MESSAGE_OVERHEAD + ac.TOOL_BLOCK_OVERHEAD + n("print('hi')"),
    ]
    by_tool = conv.tokens_by_tool()
    assert by_tool == {
        "read_file": {"calls": 1, "results": 1, "tokens": sum(conv.message_tokens()[1:]) - 2 * ac.MESSAGE_OVERHEAD}
    }
    assert conv.tokens_by_role()["tool"] == conv.message_tokens()[2]


def test_tool_results_count_as_tool_in_anthropic_too() -> None:
    msgs = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "bash", "input": {"c": "ls"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "a.txt"}]},
    ]
    anthropic = ac.Conversation(msgs, format="anthropic")
    chat = ac.Conversation(ac.convert(msgs, source="anthropic", to="openai"), format="openai")
    assert anthropic.tokens_by_role()["tool"] == chat.tokens_by_role()["tool"] - ac.MESSAGE_OVERHEAD
    assert anthropic.tokens_by_tool()["bash"]["results"] == 1


def png(width: int, height: int) -> str:
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    chunk = b"IHDR" + header
    data = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(header)) + chunk + struct.pack(">I", zlib.crc32(chunk))
    return base64.b64encode(data).decode()


def test_images_are_counted_by_the_documented_rule() -> None:
    def image_tokens(block: dict[str, Any]) -> int:
        conv = ac.Conversation([{"role": "user", "content": [block]}], format="anthropic")
        return conv.tokens - ac.MESSAGE_OVERHEAD

    small = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png(200, 200)}}
    assert image_tokens(small) == 54  # ceil(200 * 200 / 750)
    huge = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png(8000, 6000)}}
    assert 1500 < image_tokens(huge) <= ac.MAX_IMAGE_TOKENS
    url = {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}}
    assert image_tokens(url) == ac.MAX_IMAGE_TOKENS
    chat = ac.Conversation(
        [
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png(200, 200)}"}}],
            }
        ]
    )
    assert chat.tokens - ac.MESSAGE_OVERHEAD == 54


def test_synthetic_session_totals(tiktoken_encodings: dict[str, Any]) -> None:
    session = support.synthetic_session(300, seed=1)
    conv = ac.Conversation(session)
    stats = conv.stats()
    assert sum(stats["by_role"].values()) == conv.tokens == sum(conv.message_tokens())
    assert stats["tool_calls"] == sum(len(m.get("tool_calls") or []) for m in session)
    heuristic = conv.stats(encoding="heuristic")
    assert abs(heuristic["tokens"] - conv.tokens) / conv.tokens < 0.15
    enc = tiktoken_encodings["o200k_base"]
    contents = sum(len(enc.encode_ordinary(m["content"])) for m in session if m.get("content"))
    assert conv.tokens > contents
