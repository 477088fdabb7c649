"""Images the model reads that the library keeps as opaque JSON: a computer-use screenshot (a
``computer_call_output`` whose output is ``{"type": "computer_screenshot", "image_url": ...}``), a
Responses ``input_image`` given by ``file_id``, an Anthropic image from the Files API. Each costs
an image by the library's image rule (its size read from inline data, else the most an image
costs), not its JSON text: a 1280x800 screenshot is about 1,100 tokens to the model, not the
~100,000 its base64 would count as text (so fits and the ladder dropped it, or cut it into a
corrupt image), and an image by file id is not the ~20 tokens of its id (so it went past the
budget uncounted)."""

from __future__ import annotations

import base64
import struct

import agentcontext as ac
from tests.formats.test_h43_structured_outputs import _computer

MAX_IMAGE = 1_534  # the image rule's largest cost (tokens/image.rs)


def _png(width: int, height: int, size: int) -> str:
    """Base64 of ``size`` bytes that begin as a PNG of ``width`` x ``height`` (the header is all
    the image rule reads)."""
    head = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + struct.pack(">II", width, height) + b"\x08\x06\x00\x00\x00"
    return base64.b64encode(head + bytes(size - len(head))).decode()


def _image_rule(width: int, height: int) -> int:
    blocks = [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _png(width, height, 64)}}
    ]
    with_image = ac.Conversation(
        [{"role": "user", "content": [{"type": "text", "text": "x"}, *blocks]}], format="anthropic"
    )
    without = ac.Conversation([{"role": "user", "content": [{"type": "text", "text": "x"}]}], format="anthropic")
    return with_image.tokens - without.tokens


def test_a_screenshot_costs_an_image_not_its_base64_text() -> None:
    shot = {"type": "computer_screenshot", "image_url": "data:image/png;base64," + _png(1280, 800, 300_000)}
    conv = ac.Conversation(_computer(shot), format="responses")
    assert conv.to_responses() == _computer(shot)  # written back as it came
    no_image = ac.Conversation(_computer({"type": "text", "text": ""}), format="responses")
    added = conv.tokens - no_image.tokens
    rule = _image_rule(1280, 800)
    assert 1_000 < rule < MAX_IMAGE
    assert abs(added - rule) <= 10  # before: ~100,000 (the data URL counted as text)


def test_a_newest_screenshot_fits_a_budget_its_base64_never_would() -> None:
    shot = {"type": "computer_screenshot", "image_url": "data:image/png;base64," + _png(1024, 768, 200_000)}
    items = [*_computer(shot), {"role": "user", "content": "what does it show?"}]
    out = ac.trim_messages(items, 4_000, format="responses")
    assert out == items  # before: the screenshot left with its turn (counted ~65,000 tokens)


def test_an_image_by_file_id_costs_the_most_an_image_costs() -> None:
    items = [
        {
            "role": "user",
            "content": [{"type": "input_text", "text": "describe it"}, {"type": "input_image", "file_id": "file-abc"}],
        }
    ]
    bare = [{"role": "user", "content": [{"type": "input_text", "text": "describe it"}]}]
    conv = ac.Conversation(items, format="responses")
    assert conv.to_responses() == items
    assert conv.tokens - ac.Conversation(bare, format="responses").tokens >= MAX_IMAGE  # before: ~15


def test_an_anthropic_image_from_the_files_api_costs_the_most_an_image_costs() -> None:
    image = {"type": "image", "source": {"type": "file", "file_id": "file_011"}}
    items = [{"role": "user", "content": [{"type": "text", "text": "describe it"}, image]}]
    bare = [{"role": "user", "content": [{"type": "text", "text": "describe it"}]}]
    conv = ac.Conversation(items, format="anthropic")
    assert conv.to_format("anthropic") == items
    assert conv.tokens - ac.Conversation(bare, format="anthropic").tokens >= MAX_IMAGE


def test_other_opaque_values_still_count_as_their_json() -> None:
    doc = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "word " * 2_000}}
    items = [{"role": "user", "content": [{"type": "text", "text": "read it"}, doc]}]
    bare = [{"role": "user", "content": [{"type": "text", "text": "read it"}]}]
    added = ac.Conversation(items, format="anthropic").tokens - ac.Conversation(bare, format="anthropic").tokens
    assert added > 2_000
