"""mini-swe-agent ``.traj.json`` (``mini-swe-agent-1`` and ``mini-swe-agent-1.1``)."""

from __future__ import annotations

import re
from typing import Final

from agentcontext.importers._builder import Imported, _Builder
from agentcontext.importers._reader import (
    JsonDict,
    _args,
    _base_name,
    _chat_calls,
    _document,
    _get_dict,
    _get_list,
    _get_str,
    _obj,
    _Source,
    _text,
)

_MINI_BLOCK: Final = re.compile(r"```mswea_bash_command\s*\n(.*?)\n?```", re.DOTALL)


def _looks_mini(messages: list[JsonDict]) -> bool:
    for m in messages:
        if m.get("role") == "exit":
            return True
        if m.get("role") == "assistant" and isinstance(m.get("content"), str) and _MINI_BLOCK.search(m["content"]):
            return True
    return False


def _import_mini(src: _Source) -> list[Imported]:
    doc = _document(src, "a mini-swe-agent trajectory")
    if isinstance(doc, dict):
        messages = _get_list(src, doc.get("messages"), "`messages`")
        tf = doc.get("trajectory_format")
        fmt = "mini-swe-agent-1.1" if isinstance(tf, str) and tf != "mini-swe-agent-1" else "mini-swe-agent-1"
        info = _obj(doc.get("info"))
        meta: JsonDict = {"instance_id": doc.get("instance_id"), "exit_status": info.get("exit_status")}
        config = _obj(info.get("config"))
        model = _obj(config.get("model"))
        meta["model"] = model.get("model_name")
        meta["mini_version"] = info.get("mini_version")
    else:
        messages = _get_list(src, doc, "a mini-swe-agent trajectory")
        fmt = "mini-swe-agent-1"
        meta = {}
    b = _Builder(src)
    n = 0
    pending: str | None = None  # a text-action call waiting for its observation
    for i, m in enumerate(messages):
        m = _get_dict(src, m, "a message", index=i)
        role = m.get("role")
        content = _text(m.get("content"))
        if role == "system":
            b.system(content)
        elif role == "assistant":
            calls = m.get("tool_calls")
            pending = None
            if calls:
                b.assistant(content, _chat_calls(src, calls, i))
                continue
            blocks = _MINI_BLOCK.findall(content)
            if len(blocks) == 1:
                n += 1
                pending = f"mini-{n}"
                b.assistant(content, [{"id": pending, "name": "bash", "arguments": _args({"command": blocks[0]})}])
            else:
                b.assistant(content)
        elif role == "tool":
            cid = _get_str(src, m.get("tool_call_id"), "`tool_call_id`", index=i)
            b.tool(cid, content)
        elif role == "user":
            if pending is not None:
                b.tool(pending, content)
            else:
                b.user(content)
            pending = None
        elif role == "exit":
            waiting = _unanswered(b.messages)
            if waiting is not None:
                b.tool(waiting, content)
            else:
                meta["submission"] = content
            pending = None
        else:
            raise src.fail(f"unknown role {role!r}", index=i)
    return [b.build(_base_name(src.path), fmt, meta)]


def _unanswered(messages: list[JsonDict]) -> str | None:
    """The first unanswered call of the last assistant message with calls, if any."""
    answered: set[str] = set()
    for m in reversed(messages):
        if m["role"] == "tool":
            answered.add(m["tool_call_id"])
        elif m["role"] == "assistant" and m.get("tool_calls"):
            for call in m["tool_calls"]:
                if call["id"] not in answered:
                    return str(call["id"])
            return None
    return None
