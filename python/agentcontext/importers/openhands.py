"""OpenHands event streams (``openhands-events`` and ``openhands-events-legacy``)."""

from __future__ import annotations

from typing import Any, Final

from agentcontext.importers._builder import Imported, _Builder
from agentcontext.importers._reader import (
    _IMAGE,
    JsonDict,
    _args,
    _base_name,
    _entries,
    _get_dict,
    _get_list,
    _obj,
    _Source,
    _text,
)


def _is_openhands_history(history: Any) -> bool:
    """An OpenHands event list: actions and observations, no chat roles (an empty one too)."""
    if not isinstance(history, list) or not all(isinstance(e, dict) for e in history):
        return False
    return not any("role" in e for e in history) and (
        not history or any("action" in e or "observation" in e for e in history)
    )


def _openhands_kind(history: list[Any]) -> str:
    events = [e for e in history if isinstance(e, dict)]
    if events and not any("source" in e or "id" in e for e in events):
        return "openhands-events-legacy"
    return "openhands-events"


_OH_SKIP_ACTIONS: Final = frozenset({"recall", "change_agent_state", "null", "condensation", "condensation_request"})
_OH_SKIP_OBSERVATIONS: Final = frozenset({"recall", "agent_state_changed", "null", "condensation"})
_OH_LEGACY_ARGS: Final = ("command", "code", "path", "content", "url", "start", "end", "task", "agent", "inputs")


def _import_openhands(src: _Source) -> list[Imported]:
    base = _base_name(src.path)
    doc = src.doc
    if doc is None and src.entries is None:
        raise src.fail("not JSON (an OpenHands event list, output row or JSON Lines of rows)")
    if isinstance(doc, list):  # a bare event list
        return [_openhands_conversation(src, doc, base, {})]
    if isinstance(doc, dict):  # one object with `history` (a .json file, or JSON Lines of one row)
        rows: list[tuple[int | None, JsonDict]] = [(src.entries[0][0] if src.entries else None, doc)]
    else:
        rows = [(line, row) for line, row in _entries(src)]
    out = []
    for k, (line, row) in enumerate(rows):
        history = _get_list(src, row.get("history"), "`history`", line=line)
        key = _openhands_key(row, k if len(rows) > 1 else None)
        name = f"{base}--{key}" if key is not None else base
        out.append(_openhands_conversation(src, history, name, _openhands_meta(row), line=line))
    return out


def _openhands_key(row: JsonDict, k: int | None) -> str | None:
    """The session part of an output row's name: its instance id or issue number, else its 1-based
    position when the file has several rows."""
    if isinstance(row.get("instance_id"), (str, int)):
        return str(row["instance_id"])
    issue = row.get("issue")
    if isinstance(issue, dict) and isinstance(issue.get("number"), (str, int)):
        return str(issue["number"])
    return None if k is None else str(k + 1)


def _openhands_meta(row: JsonDict) -> JsonDict:
    meta: JsonDict = {}
    if "instance_id" in row:
        meta["instance_id"] = row["instance_id"]
    md = row.get("metadata")
    if isinstance(md, dict):
        llm = md.get("llm_config")
        if isinstance(llm, dict) and isinstance(llm.get("model"), str):
            meta["model"] = llm["model"]
        if isinstance(md.get("agent_class"), str):
            meta["agent"] = md["agent_class"]
    issue = row.get("issue")
    if isinstance(issue, dict):
        meta["issue"] = {k: issue[k] for k in ("owner", "repo", "number", "title") if k in issue}
    return meta


def _openhands_conversation(
    src: _Source, history: list[Any], name: str, meta: JsonDict, *, line: int | None = None
) -> Imported:
    kind = _openhands_kind(history)
    b = _Builder(src)
    if kind == "openhands-events-legacy":
        _oh_legacy_events(src, b, history, line)
    else:
        _oh_events(src, b, history, meta, line)
    return b.build(name, kind, meta)


def _oh_legacy_events(src: _Source, b: _Builder, history: list[Any], line: int | None) -> None:
    """Add a legacy event list (no ``source`` nor ``id``: an observation answers the action before
    it) to ``b``."""
    n = 0
    pending: str | None = None
    for i, e in enumerate(history):
        e = _get_dict(src, e, "an event", line=line, index=i)
        action = e.get("action")
        if action is not None:
            pending = None
            if action == "message":
                text = _text(e.get("content", _obj(e.get("args")).get("content")))
                if e.get("wait_for_response"):  # the agent asking the user
                    b.assistant(text)
                else:
                    b.user(text)
            elif action == "finish":
                b.assistant(_text(e.get("thought")))
            elif action in _OH_SKIP_ACTIONS:
                b.dropped[f"action/{action}"] += 1
            else:
                n += 1
                pending = f"oh-{n}"
                legacy_args = {k: e[k] for k in _OH_LEGACY_ARGS if k in e}
                call = {"id": pending, "name": str(action), "arguments": _args(legacy_args)}
                b.assistant(_text(e.get("thought")), [call])
        elif "observation" in e:
            obs = e["observation"]
            if obs in _OH_SKIP_OBSERVATIONS:
                b.dropped[f"observation/{obs}"] += 1
            elif pending is not None:
                b.tool(pending, _text(e.get("content")))
            else:
                b.user(_text(e.get("content")))
            pending = None
        else:
            raise src.fail("an event with neither `action` nor `observation`", line=line, index=i)


def _oh_events(src: _Source, b: _Builder, history: list[Any], meta: JsonDict, line: int | None) -> None:
    """Add an event list to ``b`` (the model of its first native call to ``meta``): native calls by
    their ids, actions parsed from the reply text as synthesized calls that observations answer
    by their ``cause``."""
    responses: set[str] = set()
    n = 0
    by_event: dict[Any, str] = {}  # event id -> synthesized call id, for actions without a tool call
    waiting: str | None = None  # the synthesized call of the last action
    for i, e in enumerate(history):
        e = _get_dict(src, e, "an event", line=line, index=i)
        action = e.get("action")
        tcm = e.get("tool_call_metadata") if isinstance(e.get("tool_call_metadata"), dict) else None
        args = _obj(e.get("args"))
        if action is not None:
            if action in _OH_SKIP_ACTIONS:
                b.dropped[f"action/{action}"] += 1
            elif tcm is not None:
                if not _oh_native_call(b, action, tcm, args, responses, meta):
                    continue  # its calls are in the message built from the first event of the response
            elif action == "system":
                b.system(_text(args.get("content", e.get("message"))))
            elif action == "message":
                text = _text(args.get("content", e.get("message")))
                if args.get("image_urls"):
                    text = "\n".join([text, *([_IMAGE] * len(args["image_urls"]))])
                if e.get("source") == "user":
                    b.user(text)
                else:
                    b.assistant(text)
            elif action == "finish":
                b.assistant(_text(args.get("thought") or args.get("final_thought") or e.get("message")))
            else:  # an action parsed from the reply text (no native call): a synthesized call
                n += 1
                waiting = f"oh-{n}"
                if "id" in e:
                    by_event[e["id"]] = waiting
                fargs = {k: v for k, v in args.items() if k != "thought"}
                b.assistant(
                    _text(args.get("thought", "")), [{"id": waiting, "name": str(action), "arguments": _args(fargs)}]
                )
                continue
            waiting = None
        elif "observation" in e:
            obs = e["observation"]
            cause = by_event.pop(e.get("cause"), None) if e.get("cause") is not None else None
            if obs in _OH_SKIP_OBSERVATIONS:
                b.dropped[f"observation/{obs}"] += 1
            elif tcm is not None and isinstance(tcm.get("tool_call_id"), str):
                b.tool(tcm["tool_call_id"], _text(e.get("content")))
            elif cause is not None or waiting is not None:
                b.tool(cause or str(waiting), _text(e.get("content")))
            elif obs in ("error", "user_rejected"):
                b.user(_text(e.get("content")))
            else:
                b.dropped[f"observation/{obs} (answers no call)"] += 1
            waiting = None
        else:
            raise src.fail("an event with neither `action` nor `observation`", line=line, index=i)


def _oh_native_call(
    b: _Builder, action: Any, tcm: JsonDict, args: JsonDict, responses: set[str], meta: JsonDict
) -> bool:
    """Add the assistant message of an action with a native tool call (``tcm``, its
    ``tool_call_metadata``): the model response's message, built once from the first event of the
    response (``responses`` holds the ids of those built), or the action's own call. False when the
    response's message was built already."""
    response = tcm.get("model_response") if isinstance(tcm.get("model_response"), dict) else None
    rid = response.get("id") if response is not None else None
    if isinstance(rid, str) and rid in responses:
        return False
    message = _oh_response_message(response)
    cid = tcm.get("tool_call_id")
    if message is None or (isinstance(cid, str) and cid not in {c["id"] for c in message[1]}):
        thought = args.get("thought", "")
        fargs = {k: v for k, v in args.items() if k != "thought"}
        call = {"id": str(cid), "name": str(tcm.get("function_name", action)), "arguments": _args(fargs)}
        message = (_text(thought), [call])
    if isinstance(rid, str):
        responses.add(rid)
    b.assistant(*message)
    if "model" not in meta and response is not None and isinstance(response.get("model"), str):
        meta["model"] = response["model"]
    return True


def _oh_response_message(response: JsonDict | None) -> tuple[str, list[JsonDict]] | None:
    if response is None:
        return None
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return None
    calls = []
    for call in message.get("tool_calls") or []:
        if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
            continue
        fn = call["function"]
        calls.append({"id": str(call.get("id")), "name": str(fn.get("name")), "arguments": _args(fn.get("arguments"))})
    return _text(message.get("content")), calls
