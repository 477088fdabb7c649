"""Class tokens from the core (``Conversation.class_tokens``) against the Python rule they
replaced, kept here as the reference: over the shared corpus in every format, over generated
texts (Unicode, CJK, empty, JSON-looking, indented code, the 4,000-character sample edge), and
through the per-message cache (appends, merged Responses items, slices, other encodings)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pytest

from agentcontext import Conversation, count_tokens_batch, estimate_tokens
from agentcontext.errors import OptionError
from agentcontext.measure.calibration import CLASSES, Calibration, class_tokens
from tests import support

# -- the reference: the Python rule as it was in agentcontext.calibration ----------------------

_CODE_CHARS = frozenset("{}();=<>[]_/\\|&*#$%^~`")


def content_class(text: str) -> str:
    """``cjk``, ``json``, ``code`` or ``prose``: the class of ``text`` by its characters (only
    the first 4,000 characters are looked at)."""
    sample = text[:4000]
    if not sample:
        return "prose"
    cjk = sum(1 for c in sample if "\u3040" <= c <= "\u30ff" or "\u3400" <= c <= "\u9fff" or "\uac00" <= c <= "\ud7af")
    if cjk * 5 >= len(sample):
        return "cjk"
    stripped = sample.lstrip()
    if stripped[:1] in ("{", "[") and (stripped[1:2] in ('"', "{", "[", "\n", " ", "]", "}") or stripped[:2] == "[]"):
        return "json"
    symbols = sum(1 for c in sample if c in _CODE_CHARS)
    indented = sample.count("\n    ") + sample.count("\n\t")
    if symbols * 25 >= len(sample) or indented * 40 >= len(sample):
        return "code"
    return "prose"


def message_texts(message: Mapping[str, Any]) -> Iterator[str]:
    """The texts of one normalized (``jsonl``) message: its content (or the text, thinking and
    result content of its blocks), then each tool call's name and arguments."""
    content = message.get("content")
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, dict):
                for key in ("text", "thinking", "content"):
                    value = block.get(key)
                    if isinstance(value, str):
                        yield value
    for call in message.get("tool_calls") or []:
        yield call.get("name", "")
        yield call.get("arguments", "")


def reference(conversation: Conversation, *, encoding: str | None = None, start: int = 0) -> dict[str, int]:
    enc = encoding or conversation.encoding
    part = conversation.slice(start) if start else conversation
    texts: list[str] = []
    for message in part.to_jsonl():
        texts.extend(t for t in message_texts(message) if t)
    if enc in ("o200k_base", "cl100k_base"):
        counts = count_tokens_batch(texts, encoding=enc)  # type: ignore[arg-type]
    else:
        counts = [estimate_tokens(t) for t in texts]
    out = dict.fromkeys(CLASSES, 0)
    for text, n in zip(texts, counts, strict=True):
        out[content_class(text)] += n
    total = part.tokens if part.encoding == enc else sum(counts)
    out["overhead"] = max(0, total - sum(counts))
    return out


def reference_per_message(conversation: Conversation, *, encoding: str | None = None) -> dict[str, int]:
    """What the session loop summed: the reference of each one-message slice."""
    out = dict.fromkeys(CLASSES, 0)
    for i in range(len(conversation)):
        for name, n in reference(conversation.slice(i, i + 1), encoding=encoding).items():
            out[name] += n
    return out


# -- the corpus -------------------------------------------------------------------------------

ENCODINGS = ("o200k_base", "cl100k_base", "heuristic", "approximate")


def corpus() -> list[tuple[str, list[dict[str, Any]]]]:
    files = support.normalized_files()
    assert files, "no normalized transcripts"
    return [(f"{p.parent.name}/{p.stem}", support.read_jsonl(p)) for p in files]


@pytest.fixture(scope="module")
def transcripts() -> list[tuple[str, list[dict[str, Any]]]]:
    return corpus()


@pytest.mark.parametrize("fmt", ["jsonl", "openai", "anthropic", "responses"])
def test_the_core_classifies_the_corpus_as_the_python_rule(
    transcripts: list[tuple[str, list[dict[str, Any]]]], fmt: str
) -> None:
    for name, messages in transcripts:
        native = Conversation(messages, format="jsonl")
        conv = native if fmt == "jsonl" else Conversation(native.to_format(fmt), format=fmt)  # type: ignore[arg-type]
        want = reference(conv)
        assert conv.class_tokens() == want, name
        assert class_tokens(conv) == want, name
        assert conv.class_tokens(per_message=True) == reference_per_message(conv), name
        start = len(conv) // 2
        assert class_tokens(conv, start=start) == reference(conv, start=start), name


def test_every_encoding_over_a_sample_of_the_corpus(transcripts: list[tuple[str, list[dict[str, Any]]]]) -> None:
    sample = transcripts[:: max(1, len(transcripts) // 8)]
    for name, messages in sample:
        for own in ENCODINGS:
            conv = Conversation(messages, format="jsonl", encoding=own)  # type: ignore[arg-type]
            for enc in ENCODINGS:
                assert conv.class_tokens(encoding=enc) == reference(conv, encoding=enc), (name, own, enc)  # type: ignore[arg-type]
                assert conv.class_tokens(encoding=enc, per_message=True) == reference_per_message(  # type: ignore[arg-type]
                    conv, encoding=enc
                ), (name, own, enc)


# -- generated texts --------------------------------------------------------------------------

# Characters the rule tells apart: letters, spaces (Python's and Rust's differ on U+001C-U+001F),
# code symbols, the CJK ranges and their edges, astral characters (one code point, two UTF-16
# units), combining marks and multi-byte Latin.
POOL = (
    list("abcdefghij XYZ.,:'\"!?0123456789")
    + list(_CODE_CHARS)
    + ["\n", "\t", "\n    ", "\n\t", "    ", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0", "\u2003", "\u3000"]
    + ["\u200b", "\u180e", "\ufeff"]
    + ["\u3040", "\u30ff", "\u3400", "\u9fff", "\uac00", "\ud7af", "\u303f", "\u3100", "\ua000", "\ud7b0"]
    + list("漢字かなカナ한국어")
    + ["\U0001f600", "\U00020000", "\U0010ffff", "e\u0301", "é", "ß", "Ω", "\x00"]
)

SHAPES = (
    "",
    " ",
    "{",
    "[",
    "[]",
    "{}",
    '{"a": 1}',
    '[{"a": [1, 2]}]',
    "  \n\t[1, 2]",
    '\x1c["x"]',
    '\u200b{"x": 1}',
    "[1]",
    "{x}",
    "def f(x):\n    return x\n",
    "for i in range(3):\n\tprint(i)\n",
    "这是一个关于上下文压缩的测试句子。",
    "한국어 문장과 English words",
    "The quick brown fox jumps over the lazy dog.",
)


def generated_texts(seed: int = 26) -> Iterator[str]:
    rng = random.Random(seed)
    yield from SHAPES
    for _ in range(400):
        head = rng.choice(SHAPES)
        body = "".join(rng.choice(POOL) for _ in range(rng.choice((1, 3, 10, 40, 200))))
        yield head + body if rng.random() < 0.5 else body + head
    # Around the 4,000-character sample: what lies past it must not count, and the sample is cut
    # by code points (an astral character is one), not by bytes or UTF-16 units.
    for n in (3998, 3999, 4000, 4001):
        for filler in ("a", "é", "\U0001f600", "字"):
            yield filler * n + "{};" * 500
            yield filler * (n - 800) + "字" * 800 + "x" * 50
            yield json.dumps({"k": filler * n})


def test_generated_texts_one_message_each() -> None:
    for text in generated_texts():
        for enc in ("o200k_base", "heuristic"):
            conv = Conversation([{"role": "user", "content": text}], format="jsonl", encoding=enc)
            assert conv.class_tokens() == reference(conv), repr(text[:60])


def test_generated_texts_in_blocks_calls_and_results() -> None:
    texts = list(generated_texts(seed=7))
    rng = random.Random(7)
    messages: list[dict[str, Any]] = []
    for i in range(0, len(texts) - 4, 4):
        a, b, c, d = texts[i : i + 4]
        messages += [
            {"role": "user", "content": [{"type": "text", "text": a}, {"type": "text", "text": b}]},
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": c, "signature": "s"}, {"type": "text", "text": d}],
                "tool_calls": [
                    {"id": f"c{i}", "name": rng.choice(["bash", "读", ""]), "arguments": json.dumps({"x": a})}
                ],
            },
            {"role": "tool", "tool_call_id": f"c{i}", "content": rng.choice([b, [{"type": "text", "text": c}]])},
        ]
    for fmt in ("jsonl", "anthropic", "openai", "responses"):
        native = Conversation(messages, format="jsonl")
        conv = native if fmt == "jsonl" else Conversation(native.to_format(fmt), format=fmt)
        assert conv.class_tokens() == reference(conv), fmt
        assert conv.class_tokens(per_message=True) == reference_per_message(conv), fmt


def test_each_class_gets_its_texts_tokens() -> None:
    cases = {
        "prose": "The quick brown fox jumps over the lazy dog. " * 5,
        "json": '{"a": [1, 2, {"b": null}]}',
        "code": "def f(x):\n    return {k: v for k, v in x.items()}\n" * 5,
        "cjk": "这是一个关于上下文压缩的测试句子。" * 5,
    }
    for cls, text in cases.items():
        conv = Conversation([{"role": "user", "content": text}], format="jsonl")
        got = conv.class_tokens()
        n = count_tokens_batch([text])[0]
        assert got == {**dict.fromkeys(CLASSES, 0), cls: n, "overhead": conv.tokens - n}, cls
    empty = Conversation([], format="jsonl")
    assert empty.class_tokens() == dict.fromkeys(CLASSES, 0)


# -- the cache --------------------------------------------------------------------------------


def test_counts_kept_per_message_follow_appends_merges_and_derived_conversations(
    transcripts: list[tuple[str, list[dict[str, Any]]]],
) -> None:
    _, messages = max(transcripts, key=lambda t: len(t[1]))
    conv = Conversation(messages[:10], format="jsonl")
    assert conv.class_tokens() == reference(conv)
    for m in messages[10:60]:  # one at a time, as a session appends
        conv.append(m)
        assert conv.class_tokens(per_message=True) == reference_per_message(conv)
    assert conv.class_tokens(3) == reference(conv, start=3)
    assert conv.class_tokens(len(conv) + 5) == dict.fromkeys(CLASSES, 0)
    # Counts under another encoding replace the kept ones, and back.
    assert conv.class_tokens(encoding="cl100k_base") == reference(conv, encoding="cl100k_base")
    assert conv.class_tokens() == reference(conv)
    # Derived conversations carry the counts of their unchanged messages.
    for derived in (
        conv.slice(5, 30),
        Conversation.concat([conv.slice(0, 8), conv.slice(20)]),
        conv.replace(4, 9, [{"role": "user", "content": '{"replaced": true}'}]),
        conv.clear_tool_results(recent_messages=2, recent_tools=1)[0],
    ):
        assert derived.class_tokens() == reference(derived)


def test_a_responses_item_joining_the_last_message_is_counted_again() -> None:
    conv = Conversation([{"role": "user", "content": "hi"}], format="responses")
    items: list[dict[str, Any]] = [
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think {x}"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "A [1, 2] list"}]},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"path": "a.py"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
    ]
    for item in items:
        conv.append(item)
        assert conv.class_tokens(per_message=True) == reference_per_message(conv)
        assert conv.class_tokens() == reference(conv)
    assert len(conv) == 3


def test_calibration_classifies_a_conversation_through_the_core() -> None:
    conv = Conversation(
        [{"role": "user", "content": "Explain the design."}, {"role": "assistant", "content": '{"a": 1}'}],
        format="jsonl",
    )
    calibration = Calibration()
    assert calibration.estimate("m", conv) == sum(reference(conv).values())
    calibration.observe("m", conv, 2 * conv.tokens)
    assert calibration.estimate("m", conv) == calibration.estimate("m", reference(conv))


def test_bad_arguments() -> None:
    conv = Conversation([{"role": "user", "content": "x"}], format="jsonl")
    with pytest.raises(OptionError, match="start"):
        conv.class_tokens(-1)
    with pytest.raises(OptionError, match="nope"):
        conv.class_tokens(encoding="nope")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        conv.class_tokens(per_message="yes")  # type: ignore[arg-type]


def _totals(parts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    out = dict.fromkeys(CLASSES, 0)
    for p in parts:
        for k, v in p.items():
            out[k] += v
    return out


def test_per_message_totals_are_sums_of_one_message_slices(transcripts: list[tuple[str, list[dict[str, Any]]]]) -> None:
    _, messages = transcripts[0]
    conv = Conversation(messages, format="jsonl", encoding="approximate")
    slices = [conv.slice(i, i + 1).class_tokens() for i in range(len(conv))]
    assert conv.class_tokens(per_message=True) == _totals(slices)
