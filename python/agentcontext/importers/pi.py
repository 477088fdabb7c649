"""pi coding-agent session JSONL (``pi-session-jsonl``)."""

from __future__ import annotations

from agentcontext.importers._builder import Imported, _Builder
from agentcontext.importers._reader import (
    JsonDict,
    _args,
    _base_name,
    _entries,
    _get_dict,
    _get_list,
    _get_str,
    _require,
    _Source,
    _text,
    _thinking_block,
    _with_thinking,
)

_PI_COMPACTION = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"


def _pi_bash_text(m: JsonDict) -> str:
    """pi's own rendering of a user shell command for the model (``bashExecutionToText``)."""
    text = f"Ran `{m.get('command', '')}`\n"
    output = m.get("output")
    text += f"```\n{output}\n```" if output else "(no output)"
    if m.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif m.get("exitCode") not in (None, 0):
        text += f"\n\nCommand exited with code {m['exitCode']}"
    if m.get("truncated") and m.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {m['fullOutputPath']}]"
    return text


def _import_pi(src: _Source) -> list[Imported]:
    entries = _entries(src)
    _require(src, any(e.get("type") in ("session", "message") for _, e in entries), "pi session entries")
    b = _Builder(src)
    meta: JsonDict = {}
    for line, e in entries:
        kind = e.get("type")
        if kind == "session":
            for key, name in (("id", "session_id"), ("cwd", "cwd"), ("provider", "provider"), ("modelId", "model")):
                if key in e:
                    meta.setdefault(name, e[key])
            continue
        if kind == "compaction":
            summary = _get_str(src, e.get("summary"), "`summary`", line=line, default="")
            b.annotate_next("compaction", {"source": "pi", "tokens_before": e.get("tokensBefore")})
            b.user(_PI_COMPACTION + summary + "\n</summary>")
            continue
        if kind != "message":
            b.dropped[str(kind)] += 1
            continue
        m = _get_dict(src, e.get("message"), "`message`", line=line)
        role = m.get("role")
        if role == "user":
            b.user(_text(m.get("content")))
        elif role == "assistant":
            blocks = m.get("content")
            if isinstance(blocks, str):
                blocks = [{"type": "text", "text": blocks}]
            blocks = _get_list(src, blocks, "`content`", line=line)
            thinking: list[JsonDict] = []
            texts: list[str] = []
            calls: list[JsonDict] = []
            anthropic = m.get("api") == "anthropic-messages"
            for block in blocks:
                block = _get_dict(src, block, "a content block", line=line)
                t = block.get("type")
                if t == "text":
                    texts.append(_get_str(src, block.get("text"), "`text`", line=line))
                elif t == "thinking":
                    tb = _thinking_block(block) if anthropic else None
                    if tb is not None:
                        thinking.append(tb)
                    else:
                        b.dropped["thinking_unsigned"] += 1
                elif t == "toolCall":
                    cid = _get_str(src, block.get("id"), "toolCall `id`", line=line)
                    name = _get_str(src, block.get("name"), "toolCall `name`", line=line)
                    calls.append({"id": cid, "name": name, "arguments": _args(block.get("arguments"))})
                else:
                    texts.append(_text([block]))
            texts = [t for t in texts if t]
            if not texts and not calls:
                b.dropped[f"empty_assistant/{m.get('stopReason')}" if not thinking else "thinking_only"] += 1
                continue
            b.assistant(_with_thinking(thinking, texts, "\n\n"), calls)
            if "model" in m:
                meta.setdefault("models", [])
                if m["model"] not in meta["models"]:
                    meta["models"].append(m["model"])
        elif role == "toolResult":
            cid = _get_str(src, m.get("toolCallId"), "`toolCallId`", line=line)
            b.tool(cid, _text(m.get("content")), is_error=m.get("isError") is True)
        elif role == "bashExecution":
            if m.get("excludeFromContext"):
                b.dropped["bash_excluded_from_context"] += 1
            else:
                b.user(_pi_bash_text(m))
        elif role == "compactionSummary":
            b.annotate_next("compaction", {"source": "pi"})
            b.user(_PI_COMPACTION + str(m.get("summary", "")) + "\n</summary>")
        elif role in ("custom", "branchSummary"):
            b.user(_text(m.get("content", m.get("summary"))))
        else:
            raise src.fail(f"unknown message role {role!r}", line=line)
    return [b.build(_base_name(src.path), "pi-session-jsonl", meta)]
