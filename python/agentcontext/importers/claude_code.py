"""Claude Code session JSONL (``claude-code-jsonl``)."""

from __future__ import annotations

from typing import Any, Final

from agentcontext.importers._builder import Imported, _Builder
from agentcontext.importers._reader import (
    JsonDict,
    _args,
    _base_name,
    _entries,
    _get_dict,
    _get_list,
    _get_str,
    _obj,
    _require,
    _Source,
    _text,
    _thinking_block,
    _with_thinking,
)

_CLAUDE_TYPES: Final = frozenset({"user", "assistant", "system", "summary", "file-history-snapshot"})


def _is_claude_entry(v: JsonDict) -> bool:
    t = v.get("type")
    if t == "summary" and "leafUuid" in v:
        return True
    return t in _CLAUDE_TYPES and ("uuid" in v or "sessionId" in v) and ("message" in v or t != "assistant")


def _import_claude(src: _Source) -> list[Imported]:
    entries = _entries(src)
    _require(src, any(_is_claude_entry(e) for _, e in entries), "Claude Code entries")
    # A subagent file holds only sidechain entries: keep them there.
    has_main = any(e.get("type") in ("user", "assistant") and not e.get("isSidechain") for _, e in entries)
    b = _Builder(src)
    meta: JsonDict = {}
    titles: list[str] = []
    # The assistant message that later lines of the same API response (same message.id) join:
    # only tool results may come in between.
    open_id: str | None = None
    open_msg: JsonDict | None = None
    parts: dict[int, tuple[list[JsonDict], list[str]]] = {}  # id(message) -> (thinking, texts)
    for line, e in entries:
        kind = e.get("type")
        if kind in ("user", "assistant") and e.get("isSidechain") and has_main:
            b.dropped["sidechain"] += 1
            continue
        for key, name in (
            ("sessionId", "session_id"),
            ("cwd", "cwd"),
            ("version", "version"),
            ("gitBranch", "git_branch"),
        ):
            if key in e and name not in meta:
                meta[name] = e[key]
        if kind == "user":
            if _claude_user(src, b, e, line):
                open_id = None
        elif kind == "assistant":
            message = _get_dict(src, e.get("message"), "`message`", line=line)
            mid = message.get("id")
            blocks = message.get("content")
            if isinstance(blocks, str):
                blocks = [{"type": "text", "text": blocks}]
            blocks = _get_list(src, blocks, "`message.content`", line=line)
            model = message.get("model")
            if "model" not in meta and isinstance(model, str) and model != "<synthetic>":
                meta["model"] = model
            if open_msg is None or not isinstance(mid, str) or mid != open_id:
                open_msg = b.assistant("")
                open_id = mid if isinstance(mid, str) else None
                parts[id(open_msg)] = ([], [])
            _claude_assistant_blocks(src, b, blocks, line, open_msg, parts[id(open_msg)])
        elif kind == "system" and e.get("subtype") == "compact_boundary":
            cm = _obj(e.get("compactMetadata"))
            marker = {"source": "claude-code", "trigger": cm.get("trigger"), "pre_tokens": cm.get("preTokens")}
            marker["timestamp"] = e.get("timestamp")
            marker = {k: v for k, v in marker.items() if v is not None}
            b.annotate_next("compaction", marker, str(e.get("content") or "Conversation compacted"))
            open_id = None
        elif kind == "summary" and isinstance(e.get("summary"), str):
            titles.append(e["summary"])
        else:
            b.dropped[str(kind) if kind != "system" else f"system/{e.get('subtype')}"] += 1
    b.messages = _claude_merged(b, parts)
    if titles:
        meta["titles"] = titles
    return [b.build(_base_name(src.path), "claude-code-jsonl", meta)]


def _claude_user(src: _Source, b: _Builder, e: JsonDict, line: int) -> bool:
    """Add a user entry's text and tool results to ``b``; whether it added a user message (which
    ends the open API response)."""
    message = _get_dict(src, e.get("message"), "`message`", line=line)
    content = message.get("content")
    if isinstance(content, str):
        b.user(content)
        return True
    texts: list[str] = []
    for block in _get_list(src, content, "`message.content`", line=line):
        block = _get_dict(src, block, "a content block", line=line)
        if block.get("type") == "tool_result":
            cid = _get_str(src, block.get("tool_use_id"), "`tool_use_id`", line=line)
            b.tool(cid, _text(block.get("content")), is_error=block.get("is_error") is True)
        else:
            texts.append(_text([block]))
    if texts:
        b.user("\n".join(texts))
        return True
    return False


def _claude_assistant_blocks(
    src: _Source,
    b: _Builder,
    blocks: list[Any],
    line: int,
    open_msg: JsonDict,
    parts: tuple[list[JsonDict], list[str]],
) -> None:
    """Add an assistant entry's content blocks to the open message ``open_msg`` (its calls), to its
    ``parts`` (thinking, texts: filled in by :func:`_claude_merged`) and to ``b`` (server tools'
    results)."""
    thinking, texts = parts
    for block in blocks:
        block = _get_dict(src, block, "a content block", line=line)
        t = block.get("type")
        if t in ("thinking", "redacted_thinking"):
            tb = _thinking_block(block)
            if tb is not None:
                thinking.append(tb)
            else:
                b.dropped["thinking_unsigned"] += 1
        elif t == "text":
            texts.append(_get_str(src, block.get("text"), "`text`", line=line))
        elif t in ("tool_use", "server_tool_use"):
            cid = _get_str(src, block.get("id"), "tool_use `id`", line=line)
            name = _get_str(src, block.get("name"), "tool_use `name`", line=line)
            call = {"id": cid, "name": name, "arguments": _args(block.get("input"))}
            open_msg.setdefault("tool_calls", []).append(call)
        elif isinstance(t, str) and t.endswith("_tool_result") and "tool_use_id" in block:
            b.tool(str(block["tool_use_id"]), _text(block.get("content")))  # a server tool's result
        else:
            texts.append(_text([block]))


def _claude_merged(b: _Builder, parts: dict[int, tuple[list[JsonDict], list[str]]]) -> list[JsonDict]:
    """The messages of ``b`` with the merged responses filled in from ``parts``; those with only
    thinking (or nothing at all) dropped. A marker on a dropped message moves to the next one."""
    keep: list[JsonDict] = []
    carry: JsonDict = {}
    for m in b.messages:
        pair = parts.get(id(m)) if m["role"] == "assistant" else None
        if pair is not None:
            thinking, texts = pair
            if not texts and not m.get("tool_calls"):
                b.dropped["thinking_only" if thinking else "empty_assistant"] += 1
                if "compaction" in m:
                    carry["compaction"] = m["compaction"]
                continue
            m["content"] = _with_thinking(thinking, texts, "\n\n")
        if carry:
            m.update(carry)
            carry = {}
        keep.append(m)
    if carry:
        keep.append({"role": "user", "content": "Conversation compacted", **carry})
    return keep
