"""What :class:`~agentcontext.integrations.openai_agents.CompactingSession` reads of the items in
its log: any field of an item (a dict's key, a pydantic item's attribute), the note a compaction
writes and where its last line names the items of the view, how the items the ladder exports for
a changed message pair with the ones it stood for, and the latest items of a view."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from agentcontext.compaction.summarize import SUMMARY_MARKER


def paired(originals: list[Any], exported: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]] | None:
    """Each item the ladder exported for a changed message, with the place among ``originals``
    (the items that message stood for) of the item it stands for: one for one when as many, else
    a call or an output by its type and ``call_id``, another item by its type and role in order;
    an assistant message without text that no original is (the Chat form of a turn of calls
    alone has one) is left out. None when one stands for no original, or an original is left
    out."""
    if len(originals) == len(exported):
        return list(enumerate(exported))

    def key(x: Any) -> tuple[Any, ...]:
        kind = field(x, "type") or "message"
        call_id = field(x, "call_id")
        return (kind, call_id) if call_id is not None else (kind, field(x, "role"))

    keys = [key(o) for o in originals]
    pairs: list[tuple[int, dict[str, Any]]] = []
    used: set[int] = set()
    for new in exported:
        k = key(new)
        at = next((j for j, o in enumerate(keys) if o == k and j not in used), None)
        if at is None:
            if k == ("message", "assistant") and not said(new.get("content")):
                continue
            return None
        used.add(at)
        pairs.append((at, new))
    return pairs if len(used) == len(originals) else None


def said(content: Any) -> bool:
    """Whether a message's content holds any text."""
    if isinstance(content, str):
        return bool(content)
    if isinstance(content, list):
        return any(isinstance(p, Mapping) and p.get("text") for p in content) or any(
            not isinstance(p, Mapping) for p in content
        )
    return content is not None


def field(item: Any, name: str) -> Any:
    """Field ``name`` of an item (a Mapping's key, else an attribute), None when it has none."""
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


def content_of(item: Any) -> Any:
    return field(item, "content")


def role_of(item: Any) -> Any:
    return field(item, "role")


def is_system(item: Any) -> bool:
    return role_of(item) in ("system", "developer")


#: The key a compaction's note carries in the log (a mark no text typed into a message can make);
#: the view shows the note without it.
NOTE_KEY = "agentcontext_note"


def is_note(item: Any) -> bool:
    """Whether ``item`` is a note a compaction wrote: a user item that opens with the summary
    marker (a summary, or the note on what was cut, cleared or dropped) and carries
    :data:`NOTE_KEY`; or, without the key, one written before notes carried it: the whole old
    form, marker first and a places line last (:func:`view_places`)."""
    content = content_of(item)
    if role_of(item) != "user" or not isinstance(content, str) or not content.startswith(SUMMARY_MARKER):
        return False
    return field(item, NOTE_KEY) is True or PLACES.search(content) is not None


def marked(item: Any) -> bool:
    """Whether ``item`` carries the note's mark (:data:`NOTE_KEY`)."""
    return field(item, NOTE_KEY) is True


def with_mark(item: dict[str, Any], mark: bool) -> dict[str, Any]:
    """``item`` with :data:`NOTE_KEY` set (``mark``) or left out."""
    rest = {k: v for k, v in item.items() if k != NOTE_KEY}
    return {**rest, NOTE_KEY: True} if mark else rest


#: The note's last line: where the items of the view are (log places ``a-b``, ``N`` the note,
#: ``+n`` the next ``n`` items appended after it).
PLACES = re.compile(r"\n\[agentcontext view: ([0-9N+\- ]+)\]\Z")
_PLACE = re.compile(r"N|\+[0-9]+|([0-9]+)(?:-([0-9]+))?")


def view_places(content: str, at: int) -> tuple[list[str], int] | None:
    """The places the last line of a note at log place ``at`` names, and where the line starts;
    None when it has none, or names them as no compaction writes them (the note once, places
    before it): a user's message that opens with the marker may hold anything."""
    found = PLACES.search(content)
    if found is None:
        return None
    tokens = found.group(1).split()
    for token in tokens:
        place = _PLACE.fullmatch(token)
        if place is None:
            return None
        if place.group(1) is not None and not int(place.group(1)) <= int(place.group(2) or place.group(1)) < at:
            return None
    return (tokens, found.start()) if tokens.count("N") == 1 else None


def latest(items: list[Any], limit: int) -> list[Any]:
    """The latest ``limit`` of ``items`` (none for 0 or less), without a tool call's output
    (an item of a type ending ``_output`` with a ``call_id``) whose call is not among them."""
    if limit <= 0:
        return []
    tail = items[-limit:]

    calls: set[Any] = set()
    out = []
    for item in tail:
        kind, call_id = field(item, "type"), field(item, "call_id")
        if isinstance(kind, str) and call_id is not None:
            if kind.endswith("_output"):
                if call_id not in calls:
                    continue
            else:
                calls.add(call_id)
        out.append(item)
    return out
