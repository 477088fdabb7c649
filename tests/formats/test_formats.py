"""Reading and writing every format: lossless round trips on the shared corpus, on real Claude
Code sessions and on generated conversations."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentcontext as ac
from tests import support


def canonical_arguments(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic carries tool input as a JSON object, so the spelling of an OpenAI ``arguments``
    string (spaces, escapes) does not survive a trip through it; its value does."""
    out = []
    for m in messages:
        m = dict(m)
        if m.get("tool_calls"):
            m["tool_calls"] = [
                {**c, "arguments": json.loads(c["arguments"])}
                if "arguments" in c
                else {**c, "function": {**c["function"], "arguments": json.loads(c["function"]["arguments"])}}
                for c in m["tool_calls"]
            ]
        out.append(m)
    return out


def normalized_ids() -> list[Path]:
    return support.normalized_files()


@pytest.mark.parametrize("path", normalized_ids(), ids=lambda p: f"{p.parent.name}/{p.stem[:40]}")
def test_corpus_round_trips_through_every_format(path: Path, transcripts: Path) -> None:
    original = support.read_jsonl(path)
    conv = ac.Conversation.from_file(path)
    assert conv.format == "jsonl"
    assert len(conv) == len(original)
    assert conv.to_jsonl() == original

    request = conv.to_anthropic_params()
    back = ac.Conversation(request["messages"], format="anthropic", system=request.get("system"))
    assert canonical_arguments(back.to_jsonl()) == canonical_arguments(original)

    items = conv.to_responses()
    assert ac.Conversation(items, format="responses").to_jsonl() == original

    chat = conv.to_openai()
    assert ac.Conversation(chat, format="openai").to_jsonl() == original
    # Tool pairings survive every format: same ids, same number of calls.
    assert ac.Conversation(items, format="responses").tool_calls == conv.tool_calls
    assert back.tool_calls == conv.tool_calls


def claude_code_messages(root: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted((root / "raw" / "codemie").rglob("session-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            message = entry.get("message")
            if isinstance(message, dict) and "role" in message:
                out.append(message)
    return out


def test_claude_code_messages_round_trip_dict_equal(transcripts: Path) -> None:
    messages = claude_code_messages(transcripts)
    assert len(messages) > (600 if support.full_corpus() else 15)
    kinds = {b["type"] for m in messages if isinstance(m["content"], list) for b in m["content"]}
    assert {"thinking", "tool_use", "tool_result", "text"} <= kinds
    for i, m in enumerate(messages):
        conv = ac.Conversation([m], format="anthropic")
        assert conv.to_anthropic_params()["messages"] == [m], f"message {i}"
        assert conv.to_format("anthropic") == [m]
    # The whole list at once, too (one conversation).
    assert ac.convert(messages, source="anthropic", to="anthropic")["messages"] == messages


def test_unknown_fields_survive_in_their_own_format() -> None:
    anthropic = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "rules", "cache_control": {"type": "ephemeral"}},
                {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x"}},
            ],
        },
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "redacted_thinking", "data": "abc"},
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "read",
                    "input": {"path": "a"},
                    "cache_control": {"type": "ephemeral"},
                },
            ],
            "usage": {"input_tokens": 3},
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "ok"}],
                    "is_error": False,
                }
            ],
        },
        {"role": "assistant", "content": [{"type": "compaction", "content": "summary so far"}]},
    ]
    assert ac.Conversation(anthropic, format="anthropic").to_anthropic_params()["messages"] == anthropic

    chat = [
        {"role": "developer", "content": "be brief", "name": "policy"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "refusal": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "done", "name": "f"},
        {"role": "assistant", "content": "ok", "tool_calls": []},
    ]
    assert ac.Conversation(chat, format="openai").to_openai() == chat

    items = [
        {"role": "user", "content": "hi"},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "look"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
            ],
        },
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "plan"}],
            "encrypted_content": "gAAA",
        },
        {
            "type": "message",
            "id": "msg_1",
            "status": "completed",
            "role": "assistant",
            "content": [
                {"type": "output_text", "text": "a", "annotations": []},
                {"type": "output_text", "text": "b", "annotations": []},
            ],
        },
        {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": "{}", "status": "completed"},
        {"type": "custom_tool_call", "id": "ctc_1", "call_id": "c2", "name": "apply_patch", "input": "*** Begin Patch"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q"}},
        {"type": "function_call_output", "call_id": "c1", "output": "42"},
        {"type": "custom_tool_call_output", "call_id": "c2", "output": "patched"},
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "zzz"},
        {"role": "assistant", "content": "done"},
    ]
    conv = ac.Conversation(items, format="responses")
    assert conv.to_responses() == items
    assert conv.tool_calls == 2


def test_cross_format_conversion_keeps_text_and_pairs() -> None:
    chat = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "do it"},
        {
            "role": "assistant",
            "content": "on it",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
                {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "tool", "tool_call_id": "b", "content": "2"},
        {"role": "user", "content": "thanks"},
    ]
    request = ac.convert(chat, to="anthropic")
    assert request["system"] == "sys"
    assert request["messages"][2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "1"},
            {"type": "tool_result", "tool_use_id": "b", "content": "2"},
        ],
    }
    assert request["messages"][3] == {"role": "user", "content": "thanks"}
    assert canonical_arguments(
        ac.convert(request["messages"], source="anthropic", system="sys", to="openai")
    ) == canonical_arguments(chat)
    items = ac.convert(chat, to="responses")
    assert [i.get("type") for i in items[2:5]] == ["message", "function_call", "function_call"]
    assert ac.convert(items, to="openai") == chat


def test_mid_conversation_system_message_cannot_go_to_anthropic() -> None:
    chat = [{"role": "user", "content": "a"}, {"role": "system", "content": "late"}]
    with pytest.raises(ac.ConversionError) as info:
        ac.convert(chat, to="anthropic")
    assert info.value.index == 1
    assert info.value.format == "anthropic"
    assert "message 1" in str(info.value)


def test_detect_format() -> None:
    assert ac.detect_format([{"role": "tool", "tool_call_id": "x", "content": "y"}]) is None
    assert ac.detect_format([{"type": "function_call_output", "call_id": "x", "output": "y"}]) == "responses"
    assert ac.detect_format([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x"}]}]) == "anthropic"


# ---------------------------------------------------------------------------------------------
# Generated conversations.

text = st.text(st.characters(codec="utf-8"), min_size=1, max_size=40)
ident = st.text("abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=12)
json_args = st.dictionaries(ident, st.one_of(st.integers(-1000, 1000), text, st.booleans(), st.none()), max_size=4)


@st.composite
def chat_conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(text)})
    n_turns = draw(st.integers(1, 5))
    call = 0
    for _ in range(n_turns):
        messages.append({"role": "user", "content": draw(text)})
        for _ in range(draw(st.integers(0, 3))):
            n_calls = draw(st.integers(0, 3))
            content = draw(st.one_of(st.none(), text)) if n_calls else draw(text)
            msg: dict[str, Any] = {"role": "assistant", "content": content}
            ids = []
            if n_calls:
                msg["tool_calls"] = []
                for _ in range(n_calls):
                    call += 1
                    ids.append(f"call_{call}")
                    msg["tool_calls"].append(
                        {
                            "id": ids[-1],
                            "type": "function",
                            "function": {"name": draw(ident), "arguments": json.dumps(draw(json_args))},
                        }
                    )
            messages.append(msg)
            for cid in ids:
                messages.append({"role": "tool", "tool_call_id": cid, "content": draw(text)})
    return messages


def has_adjacent_assistant_turns(chat: list[dict[str, Any]]) -> bool:
    """Responses items have no boundary between a text-only assistant message and an assistant
    message with tool calls right after it: read back, the two are one turn (text, then calls),
    which is how the Responses API itself would produce them."""
    return any(
        a["role"] == "assistant" and not a.get("tool_calls") and b["role"] == "assistant" and b.get("tool_calls")
        for a, b in itertools.pairwise(chat)
    )


@settings(max_examples=200, deadline=None)
@given(chat_conversations())
def test_generated_conversations_round_trip(chat: list[dict[str, Any]]) -> None:
    conv = ac.Conversation(chat, format="openai")
    assert conv.to_openai() == chat
    items = conv.to_responses()
    assert ac.Conversation(items, format="responses").to_responses() == items
    if not has_adjacent_assistant_turns(chat):
        assert ac.Conversation(items, format="responses").to_openai() == chat
    request = conv.to_anthropic_params()
    back = ac.Conversation(request["messages"], format="anthropic", system=request.get("system"))
    assert canonical_arguments(back.to_openai()) == canonical_arguments(chat)
    assert back.to_anthropic_params() == request
    native = conv.to_jsonl()
    assert ac.Conversation(native, format="jsonl").to_openai() == chat


@settings(max_examples=100, deadline=None)
@given(chat_conversations())
def test_appending_one_by_one_equals_building_at_once(chat: list[dict[str, Any]]) -> None:
    whole = ac.Conversation(chat, format="openai")
    grown = ac.Conversation(format="openai")
    for m in chat:
        grown.append(m)
    assert grown.to_openai() == whole.to_openai()
    assert grown.message_tokens() == whole.message_tokens()
    assert grown.stats() == whole.stats()
    items = whole.to_responses()
    grown_items = ac.Conversation(format="responses")
    for item in items:
        grown_items.append(item)
    assert grown_items.to_responses() == items
    assert len(grown_items) == len(ac.Conversation(items, format="responses"))


def test_input_is_never_mutated() -> None:
    chat = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        }
    ]
    snapshot = json.loads(json.dumps(chat))
    conv = ac.Conversation(chat)
    conv.to_anthropic_params()
    conv.to_responses()
    assert chat == snapshot


# ---------------------------------------------------------------------------------------------
# Unknown keys across formats.

EPHEMERAL = {"type": "ephemeral"}


def unknown_key_sources() -> dict[str, tuple[str, Any, list[tuple[str, str, Any]]]]:
    """Per source: (file name, file content, [(anchor, key, value)]): each unknown key, its value
    and a text of the message or block that holds it (the anchor)."""
    plain_chat = [
        {"role": "system", "content": "plain-sys", "id": "p0", "cache_control": EPHEMERAL, "metadata": {"m": "p0"}},
        {"role": "user", "content": "plain-user", "id": "p1", "metadata": {"m": "p1"}},
        {"role": "assistant", "content": "plain-reply", "id": "p2", "cache_control": EPHEMERAL},
    ]
    chat = [
        {"role": "system", "content": "chat-sys", "id": "o0", "metadata": {"m": "o0"}},
        {
            "role": "user",
            "content": [{"type": "text", "text": "chat-user", "cache_control": EPHEMERAL, "custom": "o1-part"}],
            "id": "o1",
            "metadata": {"m": "o1"},
        },
        {
            "role": "assistant",
            "content": "chat-calling",
            "id": "o2",
            "tool_calls": [
                {"id": "oc1", "type": "function", "function": {"name": "ls", "arguments": "{}"}, "custom": "o2-call"}
            ],
        },
        {"role": "tool", "tool_call_id": "oc1", "content": "chat-out", "id": "o3", "cache_control": EPHEMERAL},
        {"role": "assistant", "content": "chat-done", "id": "o4", "metadata": {"m": "o4"}},
    ]
    native = [
        {"role": "system", "content": "jl-sys", "id": "j0", "cache_control": EPHEMERAL},
        {
            "role": "user",
            "content": [{"type": "text", "text": "jl-user", "cache_control": EPHEMERAL, "custom": "j1-part"}],
            "id": "j1",
        },
        {
            "role": "assistant",
            "content": "jl-calling",
            "tool_calls": [{"id": "jc1", "name": "ls", "arguments": "{}", "custom": "j2-call"}],
            "id": "j2",
            "metadata": {"m": "j2"},
        },
        {"role": "tool", "tool_call_id": "jc1", "content": "jl-out", "id": "j3", "metadata": {"m": "j3"}},
    ]
    anthropic = {
        "system": [{"type": "text", "text": "an-sys", "cache_control": EPHEMERAL, "custom": "a0-part"}],
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "an-user", "cache_control": EPHEMERAL, "custom": "a1-part"}],
                "metadata": {"m": "a1"},
            },
            {
                "id": "msg_a2",
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "an-calling", "custom": "a2-part"},
                    {"type": "tool_use", "id": "ac1", "name": "ls", "input": {}, "cache_control": EPHEMERAL},
                ],
                "usage": {"input_tokens": 3},
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "ac1", "content": "an-out", "custom": "a3-result"},
                ],
            },
        ],
    }
    responses = [
        {"type": "message", "role": "developer", "content": "rs-dev", "id": "r0", "metadata": {"m": "r0"}},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "rs-user", "custom": "r1-part"}],
            "id": "r1",
        },
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_r2",
            "status": "completed",
            "content": [{"type": "output_text", "text": "rs-calling", "annotations": [], "custom": "r2-part"}],
        },
        {
            "type": "function_call",
            "id": "fc_r3",
            "call_id": "rc1",
            "name": "ls",
            "arguments": "{}",
            "custom": "r3-call",
        },
        {"type": "function_call_output", "call_id": "rc1", "output": "rs-out", "id": "r4", "custom": "r4-out"},
    ]

    def lines(messages: list[dict[str, Any]]) -> str:
        return "".join(json.dumps(m) + "\n" for m in messages)

    return {
        "openai-plain": ("plain.jsonl", lines(plain_chat), [
            ("plain-sys", "id", "p0"), ("plain-sys", "cache_control", EPHEMERAL), ("plain-sys", "metadata", {"m": "p0"}),
            ("plain-user", "id", "p1"), ("plain-user", "metadata", {"m": "p1"}),
            ("plain-reply", "id", "p2"), ("plain-reply", "cache_control", EPHEMERAL),
        ]),
        "openai": ("chat.jsonl", lines(chat), [
            ("chat-sys", "id", "o0"), ("chat-sys", "metadata", {"m": "o0"}),
            ("chat-user", "id", "o1"), ("chat-user", "metadata", {"m": "o1"}),
            ("chat-user", "cache_control", EPHEMERAL), ("chat-user", "custom", "o1-part"),
            ("chat-calling", "id", "o2"), ("oc1", "custom", "o2-call"),
            ("chat-out", "id", "o3"), ("chat-out", "cache_control", EPHEMERAL),
            ("chat-done", "id", "o4"), ("chat-done", "metadata", {"m": "o4"}),
        ]),
        "jsonl": ("native.jsonl", lines(native), [
            ("jl-sys", "id", "j0"), ("jl-sys", "cache_control", EPHEMERAL),
            ("jl-user", "id", "j1"), ("jl-user", "cache_control", EPHEMERAL), ("jl-user", "custom", "j1-part"),
            ("jl-calling", "id", "j2"), ("jl-calling", "metadata", {"m": "j2"}), ("jc1", "custom", "j2-call"),
            ("jl-out", "id", "j3"), ("jl-out", "metadata", {"m": "j3"}),
        ]),
        "anthropic": ("request.json", json.dumps(anthropic), [
            ("an-sys", "cache_control", EPHEMERAL), ("an-sys", "custom", "a0-part"),
            ("an-user", "cache_control", EPHEMERAL), ("an-user", "custom", "a1-part"), ("an-user", "metadata", {"m": "a1"}),
            ("an-calling", "id", "msg_a2"), ("an-calling", "usage", {"input_tokens": 3}),
            ("an-calling", "custom", "a2-part"), ("ac1", "cache_control", EPHEMERAL),
            ("an-out", "custom", "a3-result"),
        ]),
        "responses": ("items.json", json.dumps(responses), [
            ("rs-dev", "id", "r0"), ("rs-dev", "metadata", {"m": "r0"}),
            ("rs-user", "id", "r1"), ("rs-user", "custom", "r1-part"),
            ("rs-calling", "id", "msg_r2"), ("rs-calling", "status", "completed"),
            ("rs-calling", "annotations", []), ("rs-calling", "custom", "r2-part"),
            ("rc1", "custom", "r3-call"), ("rc1", "id", "fc_r3"),
            ("rs-out", "id", "r4"), ("rs-out", "custom", "r4-out"),
        ]),
    }  # fmt: skip


DETECTED = {
    "openai-plain": "jsonl",
    "openai": "openai",
    "jsonl": "jsonl",
    "anthropic": "anthropic",
    "responses": "responses",
}


def objects(value: Any) -> list[dict[str, Any]]:
    """Every JSON object in ``value``, nested ones included."""
    if isinstance(value, dict):
        return [value, *(o for v in value.values() for o in objects(v))]
    if isinstance(value, list):
        return [o for v in value for o in objects(v)]
    return []


def holds(obj: dict[str, Any], anchor: str) -> bool:
    """Whether ``obj`` is the message, block or call that ``anchor`` names: its text, content or id."""
    return anchor in json.dumps({k: v for k, v in obj.items() if k in ("text", "content", "id", "call_id", "tool_use_id", "output", "tool_calls", "tool_call_id")})  # fmt: skip


@pytest.mark.parametrize("source", sorted(unknown_key_sources()))
@pytest.mark.parametrize("target", ["openai", "responses", "anthropic", "jsonl"])
def test_unknown_keys_survive_every_conversion(
    source: str, target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Messages and blocks with unknown keys, read from a file in every format (detected), written
    with ``agentcontext compact --to`` in every format: each key is in the output, on the message,
    block or call it was on (or, where the target has no such level, on the one that holds it)."""
    from agentcontext.cli import main

    name, text, keys = unknown_key_sources()[source]
    src = tmp_path / name
    src.write_text(text, encoding="utf-8")
    assert ac.Conversation.from_file(src).format == DETECTED[source]
    out_file = tmp_path / f"out-{target}.jsonl"
    assert main(["compact", str(src), "--budget", "100%", "-o", str(out_file), "--to", target]) == 0
    capsys.readouterr()
    written = [json.loads(line) for line in out_file.read_text(encoding="utf-8").splitlines()]
    found = objects(written)
    for anchor, key, value in keys:
        if (anchor, key) == ("rc1", "id") and target != "responses":
            continue  # a call's `id` is its call id outside Responses: the item id has no place (documented)
        assert any(o.get(key) == value and holds(o, anchor) for o in found), (anchor, key, value, written)
    # The same through the library, and the keys come back when read again in the target format.
    back = ac.Conversation(written, format=target).to_format(target)
    assert back == written


def test_a_provider_request_carries_only_the_fields_of_its_own_format() -> None:
    """Conversions carry unknown fields everywhere, but a request to a provider carries only the
    fields of messages read from that provider's format: Anthropic rejects `refusal` or `audio`
    from an OpenAI SDK dump, and another format's fields are not its own."""
    openai_dump = [
        {"role": "user", "content": "hi", "name": "u1", "metadata": {"m": 1}},
        {"role": "assistant", "content": "hello", "refusal": None, "annotations": [], "audio": None},
    ]
    conv = ac.Conversation(openai_dump, format="openai")
    carried = conv.to_anthropic_params()["messages"]
    assert carried[1].get("refusal", "absent") is None and carried[0]["metadata"] == {"m": 1}
    request = conv.to_anthropic_params(request=True)["messages"]
    assert request == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert conv.to_openai(request=True) == conv.to_openai() == openai_dump  # its own format: all kept
    for fmt in ("responses", "anthropic"):
        assert "refusal" not in json.dumps(conv.to_format(fmt, request=True))
    anthropic = [
        {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]},
    ]
    kept = ac.Conversation(anthropic, format="anthropic").to_anthropic_params(request=True)["messages"]
    assert kept == anthropic
    assert "cache_control" not in json.dumps(ac.Conversation(anthropic, format="anthropic").to_openai(request=True))
