"""Codex CLI rollout JSONL (``codex-rollout-jsonl``)."""

from __future__ import annotations

import json
from typing import Final

from agentcontext.importers._builder import Imported, _Builder
from agentcontext.importers._reader import (
    _IMAGE,
    JsonDict,
    _args,
    _base_name,
    _entries,
    _get_dict,
    _get_str,
    _require,
    _Source,
    _text,
)

_CODEX_TYPES: Final = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})


_WEB_SEARCH_RESULT = "[web_search_call status={status}; hosted tool, result not recorded in rollout]"


def _import_codex(src: _Source) -> list[Imported]:
    entries = _entries(src)
    _require(src, any(e.get("type") in _CODEX_TYPES for _, e in entries), "Codex rollout entries")
    has_user_items = any(
        e.get("type") == "response_item"
        and isinstance(e.get("payload"), dict)
        and e["payload"].get("type") == "message"
        and e["payload"].get("role") == "user"
        for _, e in entries
    )
    b = _Builder(src)
    meta: JsonDict = {}
    web_searches = 0
    sessions = 0
    for line, e in entries:
        kind = e.get("type")
        p = _get_dict(src, e.get("payload", {}), "`payload`", line=line)
        if kind == "session_meta":
            sessions += 1
            if sessions > 1:
                b.dropped["session_meta"] += 1
                continue
            for key in ("id", "cwd", "originator", "cli_version", "model_provider"):
                if key in p:
                    meta[key if key != "id" else "session_id"] = p[key]
            instructions = p.get("base_instructions", p.get("instructions"))
            if isinstance(instructions, dict):
                instructions = instructions.get("text")
            if isinstance(instructions, str) and instructions:
                b.system(instructions)
        elif kind == "turn_context":
            if isinstance(p.get("model"), str):
                meta.setdefault("model", p["model"])
        elif kind == "event_msg":
            if p.get("type") == "user_message" and not has_user_items:
                text = _get_str(src, p.get("message"), "`message`", line=line, default="")
                images = len(p.get("images") or []) + len(p.get("local_images") or [])
                b.user("\n".join([text, *([_IMAGE] * images)]) if images else text)
            else:
                b.dropped[f"event_msg/{p.get('type')}"] += 1
        elif kind == "compacted":
            text = _get_str(src, p.get("message"), "`message`", line=line, default="")
            b.annotate_next("compaction", {"source": "codex", "timestamp": e.get("timestamp")})
            b.user(text)
        elif kind == "response_item":
            web_searches = _codex_response_item(src, b, p, line, web_searches)
        else:
            b.dropped[str(kind)] += 1
    return [b.build(_base_name(src.path), "codex-rollout-jsonl", meta)]


def _codex_response_item(src: _Source, b: _Builder, p: JsonDict, line: int | None, web_searches: int) -> int:
    """Add a ``response_item`` (its ``payload`` ``p``) to ``b``; the count of web searches after it."""
    t = p.get("type")
    if t == "message":
        role = p.get("role")
        text = _text(p.get("content"))
        if role == "assistant":
            b.assistant(text)
        elif role in ("developer", "system"):
            b.system(text)
        elif role == "user":
            b.user(text)
        else:
            raise src.fail(f"unknown message role {role!r}", line=line)
    elif t in ("function_call", "custom_tool_call", "local_shell_call"):
        cid = p.get("call_id") or p.get("id")
        cid = _get_str(src, cid, "`call_id`", line=line)
        if t == "function_call":
            args = _args(p.get("arguments"))
        elif t == "custom_tool_call":
            args = json.dumps({"input": p.get("input", "")}, ensure_ascii=False)
        else:
            args = _args(p.get("action"))
        b.call(cid, _get_str(src, p.get("name", "local_shell"), "`name`", line=line), args)
    elif t in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
        cid = _get_str(src, p.get("call_id"), "`call_id`", line=line)
        output = p.get("output")
        if isinstance(output, dict) and "content" in output:
            output = output["content"]
        b.tool(cid, _text(output))
    elif t == "web_search_call":
        web_searches += 1
        cid = p.get("call_id") or p.get("id") or f"codex-{web_searches}"
        b.call(str(cid), "web_search", _args(p.get("action", {})))
        b.tool(str(cid), _WEB_SEARCH_RESULT.format(status=p.get("status", "unknown")))
    elif t == "reasoning":
        b.dropped["reasoning"] += 1
    else:
        b.dropped[f"response_item/{t}"] += 1
    return web_searches
