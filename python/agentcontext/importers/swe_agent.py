"""SWE-agent ``.traj`` files (``swe-agent-traj``)."""

from __future__ import annotations

import json

from agentcontext import _json
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


def _import_swe_agent(src: _Source) -> list[Imported]:
    doc = _get_dict(src, _document(src, "a SWE-agent trajectory"), "a SWE-agent trajectory")
    history = _get_list(src, doc.get("history"), "`history`")
    b = _Builder(src)
    n = 0
    pending: str | None = None  # the text-action call waiting for its observation
    for i, m in enumerate(history):
        m = _get_dict(src, m, "a history message", index=i)
        role = m.get("role")
        content = _text(m.get("content"))
        if role == "system":
            b.system(content)
            pending = None
        elif role == "assistant":
            calls = m.get("tool_calls")
            if calls:
                b.assistant(content, _chat_calls(src, calls, i))
                pending = None
                continue
            action = m.get("action")
            if isinstance(action, str) and action.strip():
                n += 1
                pending = f"swe-{n}"
                command = action.strip()
                call = {"id": pending, "name": command.split()[0], "arguments": _args({"command": command})}
                b.assistant(content, [call])
            else:
                b.assistant(content)
                pending = None
        elif role == "tool":
            ids = m.get("tool_call_ids") or ([m["tool_call_id"]] if "tool_call_id" in m else [])
            ids = _get_list(src, ids, "`tool_call_ids`", index=i)
            if not ids:
                raise src.fail("tool message without `tool_call_ids`", index=i)
            for cid in ids:
                b.tool(_get_str(src, cid, "a tool call id", index=i), content)
            pending = None
        elif role == "user":
            if pending is not None and not m.get("is_demo"):
                b.tool(pending, content)
            else:
                b.user(content)
            pending = None
        else:
            raise src.fail(f"unknown role {role!r}", index=i)
    info = _obj(doc.get("info"))
    meta: JsonDict = {"exit_status": info.get("exit_status"), "environment": doc.get("environment")}
    config = doc.get("replay_config")
    if isinstance(config, str):
        try:
            config = _json.loads(config)
        except json.JSONDecodeError:
            config = None
    if isinstance(config, dict):
        model = (config.get("agent") or {}).get("model") if isinstance(config.get("agent"), dict) else None
        if isinstance(model, dict) and isinstance(model.get("name"), str):
            meta["model"] = model["name"]
    return [b.build(_base_name(src.path), "swe-agent-traj", meta)]
