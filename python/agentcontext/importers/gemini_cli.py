"""Gemini CLI session JSON (``gemini-cli-json``)."""

from __future__ import annotations

from typing import Any

from agentcontext.importers._builder import Imported, _Builder
from agentcontext.importers._reader import (
    JsonDict,
    _args,
    _base_name,
    _document,
    _get_dict,
    _get_list,
    _get_str,
    _Source,
    _text,
)


def _import_gemini(src: _Source) -> list[Imported]:
    doc = _get_dict(src, _document(src, "a Gemini CLI session"), "a Gemini CLI session")
    messages = _get_list(src, doc.get("messages"), "`messages`")
    b = _Builder(src)
    meta: JsonDict = {"session_id": doc.get("sessionId"), "project_hash": doc.get("projectHash")}
    meta["start_time"] = doc.get("startTime")
    for i, m in enumerate(messages):
        m = _get_dict(src, m, "a message", index=i)
        kind = m.get("type")
        if kind == "user":
            b.user(_text(m.get("content")))
        elif kind == "gemini":
            if isinstance(m.get("model"), str):
                meta.setdefault("model", m["model"])
            text = _text(m.get("content"))
            calls = _get_list(src, m.get("toolCalls") or [], "`toolCalls`", index=i)
            out: list[JsonDict] = []
            results: list[tuple[str, str, bool]] = []
            for call in calls:
                call = _get_dict(src, call, "a tool call", index=i)
                cid = _get_str(src, call.get("id"), "tool call `id`", index=i)
                name = _get_str(src, call.get("name"), "tool call `name`", index=i)
                out.append({"id": cid, "name": name, "arguments": _args(call.get("args", {}))})
                result = call.get("result")
                if isinstance(result, list) and result:
                    results.append((cid, _gemini_result(result), call.get("status") == "error"))
            if not text and not out:
                b.dropped["empty_or_thoughts_only"] += 1
                continue
            b.assistant(text, out)
            for cid, content, is_error in results:
                b.tool(cid, content, is_error=is_error)
        else:
            b.dropped[str(kind)] += 1
    return [b.build(_base_name(src.path), "gemini-cli-json", meta)]


def _gemini_result(result: list[Any]) -> str:
    parts = []
    for part in result:
        if not isinstance(part, dict):
            parts.append(_text(part))
            continue
        fr = part.get("functionResponse")
        if isinstance(fr, dict):
            response = fr.get("response")
            if isinstance(response, dict) and ("output" in response or "error" in response):
                parts.append(_text(response.get("output", response.get("error"))))
            else:
                parts.append(_args(response))
        else:
            parts.append(_text([part]))
    return "\n".join(parts)
