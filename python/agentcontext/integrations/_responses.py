"""Responses items fitted on the OpenAI Chat path (the Agents SDK adapter's fast path).

The core fits OpenAI Chat dicts without parsing them (it reads them as a skeleton); Responses
items go through the general path, which parses every item on every call. So the items the
SDK writes (messages with a string or one text part, function calls, their string outputs) are
grouped here as the core groups them, one Chat message per turn (an assistant message and the
calls after it are one turn), each turn converted once and held across calls, and fitted as
Chat: the same counts, the oversized-result cut of the shared path, and the caller's own items
back where unchanged. A list holding anything else (reasoning, built-in tool calls, multi-part
messages) is fitted as Responses items instead, its oversized newest outputs cut by
:func:`cut_items` (the reasoning and built-in items kept as they are).
"""

from __future__ import annotations

import itertools
import operator
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentcontext._core import _Prints
from agentcontext.integrations._converted import (
    Converted,
    CorePrints,
    InCore,
    held_fields,
    members_in_core,
    same_objects,
)
from agentcontext.integrations._cut import _is_text, _joined, _rest, cut_newest
from agentcontext.integrations._fit import Budget, RecallIds, fit
from agentcontext.integrations._given import as_dict

#: Held conversions beyond the list in use before the memo is cut back to it.
_SLACK = 4096


class Turn:
    """The items one Chat message stands for, and that message."""

    __slots__ = ("chat", "items")

    def __init__(self, items: tuple[Any, ...], chat: dict[str, Any]) -> None:
        self.items = items
        self.chat = chat


def _text(content: Any) -> str | None:
    """``content`` as one text: a string, or a list of exactly one text part; else None."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and len(content) == 1:
        part = content[0]
        if isinstance(part, dict) and part.get("type") in ("input_text", "output_text"):
            text = part.get("text")
            if isinstance(text, str):
                return text
    return None


def piece(d: dict[str, Any]) -> tuple[str, Any] | None:
    """What the Responses item ``d`` is on the Chat path: ``("call", tool_call)``, ``("said",
    text)`` (an assistant message), ``("own", chat message)`` (a message or output on its own), or
    None when it has no Chat form here."""
    kind = d.get("type")
    if kind == "function_call":
        call_id, name, arguments = d.get("call_id"), d.get("name"), d.get("arguments")
        if isinstance(call_id, str) and isinstance(name, str) and isinstance(arguments, str):
            return "call", {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        return None
    if kind == "function_call_output":
        call_id, output = d.get("call_id"), d.get("output")
        if isinstance(call_id, str) and isinstance(output, str):
            return "own", {"role": "tool", "tool_call_id": call_id, "content": output}
        return None
    if kind not in (None, "message"):
        return None
    role, text = d.get("role"), _text(d.get("content"))
    if text is None:
        return None
    if role == "assistant":
        return "said", text
    if role in ("user", "system", "developer"):
        return "own", {"role": role, "content": text}
    return None


def _rebuild(turn: Turn, parts: list[tuple[int, dict[str, Any] | None]]) -> Turn | None:
    """``turn`` with the content its Chat message came back with (an output cleared or cut, a
    request cut): a copy of its item with only ``output`` or ``content`` replaced; of a turn of
    calls, copies of the ``function_call`` items whose arguments came back changed (cleared by
    ``clear_tool_inputs``) with only ``arguments`` replaced."""
    if not parts:
        return None
    changed = parts[0][1]
    if changed is None:
        return turn
    if "tool_calls" in turn.chat:
        return _with_arguments(turn, changed)
    if len(turn.items) != 1:
        return turn
    return _changed(turn, changed, changed.get("content"))


#: What ``as_dict`` would say of a turn's item it cannot read (not met: the adapter read each
#: item of a turn before).
_NOT_AN_ITEM = "is not a Responses input item (dicts, Mappings and pydantic items are read)"


def _with_arguments(turn: Turn, changed: dict[str, Any]) -> Turn:
    """The turn of calls ``turn`` (an assistant message's item, if any, then one
    ``function_call`` item per call, in order) with each call's arguments as ``changed`` (its
    Chat message as fitted) has them: a copy of each item whose arguments differ, the other
    items as they are; ``turn`` itself when none differ."""
    was, now = turn.chat["tool_calls"], changed.get("tool_calls")
    if not isinstance(now, list) or len(now) != len(was):
        return turn
    at = len(turn.items) - len(was)  # (the assistant message's item comes first)
    items = list(turn.items)
    for k, (before, after) in enumerate(zip(was, now, strict=True)):
        text = after.get("function", {}).get("arguments")
        # (By place, not by id: the fit renames a reused call id, ``call_0#2``.)
        if isinstance(text, str) and text != before["function"]["arguments"]:
            items[at + k] = {**as_dict(items[at + k], at + k, _NOT_AN_ITEM), "arguments": text}
    if all(map(operator.is_, items, turn.items)):
        return turn
    return Turn(tuple(items), changed)


def _changed(turn: Turn, changed: dict[str, Any], new: Any) -> Turn:
    d = as_dict(turn.items[0], 0, _NOT_AN_ITEM)
    if d.get("type") == "function_call_output":
        return Turn(({**d, "output": new},), changed)
    content = d.get("content")
    if isinstance(content, list):
        return Turn(({**d, "content": [{**content[0], "text": new}]},), changed)
    return Turn(({**d, "content": new},), changed)


_ITEMS = operator.attrgetter("items")


def _key(turn: Turn) -> tuple[Any, ...]:
    return turn.items


def _turn_fields(turn: Turn) -> tuple[Any, ...]:
    """What a turn's copy is made from: the turn and every field of its items (:func:`whole_key`;
    a turn stays the same object while what its Chat message reads of its items is unchanged)."""
    return (turn, *itertools.chain.from_iterable(map(whole_key, turn.items)))


def _turn_in_core(turn: Turn) -> InCore | None:
    """How ``_core._Held`` reads what :func:`_turn_fields` reads (the turn, each of its items'
    fields), None where it cannot."""
    return (None, "items") if members_in_core(turn.items) else None


#: The fields :func:`piece` reads of an item, by its ``type`` (any other type: all of them).
_FIELDS = ("type", "role", "content", "call_id", "name", "arguments", "output")
_READ: dict[Any, tuple[str, ...]] = {
    "function_call": ("type", "call_id", "name", "arguments"),
    "function_call_output": ("type", "call_id", "output"),
    "message": ("type", "role", "content"),
    None: ("type", "role", "content"),
}


def read_fields(item: Any) -> tuple[str, ...]:
    """The names of the fields :func:`piece` reads of the dict ``item`` (by its ``type``)."""
    kind = item.get("type")
    return _READ.get(kind, _FIELDS) if type(kind) is str or kind is None else _FIELDS


def item_fields(item: Any) -> tuple[Any, ...]:
    """What :func:`piece` reads of ``item`` that could be set anew in place (compared by identity):
    of a dict or Mapping its :func:`read_fields` (and its ``type`` first), else all those fields."""
    if isinstance(item, Mapping):
        get = item.get
        return tuple(map(get, read_fields(item)))
    return tuple(getattr(item, k, None) for k in _FIELDS)


def whole_key(item: Any) -> tuple[Any, ...]:
    """What converting ``item`` as it is (a Responses item: all of it) reads that could be set
    anew in place: :func:`~agentcontext.integrations._converted.held_fields`, of an object with no
    ``__dict__`` its :func:`item_fields`."""
    return held_fields(item, item_fields)


#: The last call's fields when ``_Prints`` holds them.
_IN_CORE: Any = object()


def _made(message: dict[str, Any], names: Mapping[str, str]) -> Turn:
    """The turn of a Chat dict the fit's repair made (the result given to a call whose result is
    missing, a result whose call is missing sent as a user message): its Responses items."""
    from agentcontext._core import Conversation

    return Turn(tuple(Conversation([message], format="openai").to_format("responses")), message)


def _chat(turn: Turn, index: int) -> list[dict[str, Any]]:
    return [turn.chat]


class Turns:
    """A memo of the items' Chat forms and turns across calls (by identity, bounded by the list
    in use); :meth:`fit` fits a list on the Chat path, or says it cannot."""

    def __init__(self, as_dict: Callable[[Any, int], dict[str, Any]]) -> None:
        self._as_dict = as_dict
        self._pieces: dict[int, tuple[Any, tuple[Any, ...], tuple[str, Any] | None]] = {}
        self._turns: dict[tuple[int, ...], Turn] = {}
        # A Turn is never changed (an item changed in place makes another turn): told unchanged by
        # identity and class alone.
        self._converted = Converted(_key, prints=CorePrints, fields=_turn_fields, in_core=_turn_in_core)
        self._lock = threading.Lock()
        #: The last call's list, the fields each item's Chat form read, its turns and where each
        #: starts (reused by the next call).
        self._last: tuple[tuple[Any, ...], Any, list[Turn], list[int]] = ((), None, [], [])
        #: The last call's items and their :func:`item_fields` when all are dicts (its fields then
        #: ``_IN_CORE``).
        self._dict_prints = _Prints()
        #: How many calls have kept ``_dict_prints`` (a call resuming from it keeps on from its
        #: own items only while no other call kept it meanwhile).
        self._kept = 0

    def _piece(self, item: Any, index: int) -> tuple[str, Any] | None:
        held = self._pieces.get(id(item))
        fields = item_fields(item)
        if held is not None and held[0] is item and same_objects(held[1], fields):
            return held[2]
        found = piece(self._as_dict(item, index))
        self._pieces[id(item)] = (item, fields, found)
        return found

    def _turn(self, items: list[Any], chat: dict[str, Any]) -> Turn:
        key = tuple(map(id, items))
        held = self._turns.get(key)
        if held is not None and all(a is b for a, b in zip(held.items, items, strict=True)) and held.chat == chat:
            return held
        turn = self._turns[key] = Turn(tuple(items), chat)
        return turn

    def turns(self, items: Sequence[Any]) -> list[Turn] | None:
        """``items`` as Chat turns (each held across calls), or None when one has no Chat form.
        A list that starts with the last call's list (the same objects) is grouped from the
        start of that list's last turn on: an agent's next call costs its new items only. A list
        of dicts is told unchanged by the core (``_Prints``: each item and its :func:`item_fields`,
        in one pass); a list holding other items by each one's :func:`item_fields`."""
        objects = items if type(items) is list else list(items)
        reused: list[Turn] = []
        start = 0
        prints: Any = _IN_CORE
        taken = -1
        with self._lock:
            last = self._last
            last_items, last_fields, last_turns, last_starts = last
            n = len(last_items)
            if (
                last_fields is _IN_CORE
                and 1 < len(last_turns)
                and n <= len(objects)
                and self._dict_prints.same(objects)
            ):
                # (taken: no other thread resumes from the same work meanwhile)
                self._last = ((), None, [], [])
                reused = last_turns[:-1]
                start = last_starts[-1]
                taken = self._kept
        if not reused and not set(map(type, objects)) <= {dict}:
            prints = list(map(item_fields, objects))
            if (
                1 < len(last_turns)
                and n <= len(objects)
                and all(map(operator.is_, objects[:n], last_items))
                and prints[:n] == last_fields  # (none changed in place)
            ):
                reused = last_turns[:-1]
                start = last_starts[-1]
        elif reused and not set(map(type, objects[n:])) <= {dict}:
            prints = list(map(item_fields, objects))
        grouped = self._group(objects, start, len(reused))
        if grouped is None:
            self._last = ((), None, [], [])
            return None
        turns, starts = grouped
        out = [*reused, *turns]
        with self._lock:
            if prints is _IN_CORE:
                # Each dict's own fields (those its type makes the Chat form read), one per new dict;
                # every dict's when another thread's call kept the prints since this one took them.
                at = n if reused and taken == self._kept else 0
                self._dict_prints.keep(objects, at, list(map(read_fields, objects[at:])))
                self._kept += 1
            self._last = (tuple(objects), prints, out, [*last_starts[: len(reused)], *starts])
        self._settle(out, len(objects))
        return out

    def _group(self, items: Sequence[Any], start: int, before: int) -> tuple[list[Turn], list[int]] | None:
        """The turns of ``items[start:]`` and where each starts, or None (see :meth:`turns`)."""
        out: list[Turn] = []
        starts: list[int] = []
        group: list[Any] = []
        said: str | None = None
        calls: list[dict[str, Any]] = []

        def close(at: int) -> None:
            if group:
                chat: dict[str, Any] = {"role": "assistant", "content": said}
                if calls:
                    chat["tool_calls"] = list(calls)
                out.append(self._turn(group, chat))
                starts.append(at - len(group))

        for i in range(start, len(items)):
            item = items[i]
            found = self._piece(item, i)
            if found is None:
                return None
            kind, value = found
            if kind == "call":
                group.append(item)
                calls.append(value)
                continue
            if kind == "said" and group and calls:
                return None  # a message after calls joins their turn: no single Chat message
            close(i)
            group, calls, said = [], [], None
            if kind == "said":
                group, said = [item], value
            else:
                out.append(self._turn([item], value))
                starts.append(i)
        close(len(items))
        return out, starts

    def _settle(self, turns: list[Turn], size: int) -> None:
        if len(self._pieces) > 2 * size + _SLACK:
            with self._lock:
                held = self._pieces
                self._pieces = {id(x): held[id(x)] for t in turns for x in t.items if id(x) in held}
        if len(self._turns) > 2 * len(turns) + _SLACK:
            with self._lock:
                self._turns = {tuple(map(id, t.items)): t for t in turns}

    def fit(self, items: Sequence[Any], budget: Budget, beside: int, recall: RecallIds) -> list[Any] | None:
        """``items`` fitted on the Chat path (the caller's own items where unchanged), or None
        when a list holds an item with no Chat form here."""
        turns = self.turns(items)
        if turns is None:
            return None
        fitted = fit(
            turns,
            budget,
            _chat,
            _rebuild,
            format="openai",
            beside=beside,
            cache=self._converted,
            recall=recall,
            made=_made,
        )
        return list(itertools.chain.from_iterable(map(_ITEMS, fitted)))  # (each turn's items, at C speed)


def _calls(message: dict[str, Any]) -> bool:
    """Whether a message in the library's format makes tool calls (its ``tool_calls``, or an
    assistant's ``tool_use`` blocks)."""
    if message.get("tool_calls"):
        return True
    content = message.get("content")
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content)


def cut_items(
    items: list[dict[str, Any]], budget: Budget, *, beside: int = 0, recall: RecallIds = "call_id"
) -> list[dict[str, Any]] | None:
    """Responses ``items`` with the long function outputs of the newest round cut head + marker +
    tail, as :func:`~agentcontext.integrations._cut.cut_oversized` cuts Chat tool results, for the
    lists the Chat path cannot take (reasoning, built-in tool calls, multi-part messages): each
    cut output is a copy of its ``function_call_output`` with only ``output`` replaced, every
    other item the caller's own. None when there is nothing to cut or even the cut round does not
    fit ``budget`` beside ``beside`` tokens."""
    from agentcontext._core import Conversation

    try:
        conv = Conversation(items, format="responses", encoding=budget.encoding)
    except Exception:  # noqa: BLE001 - items the core cannot read: nothing this cut knows how to shorten
        return None
    # Each message of the conversation stands for a run of items, one for one in order.
    starts = list(itertools.accumulate((len(e) for e in conv._export_each()), initial=0))
    if starts[-1] != len(items):
        return None
    # An output of text parts (a tool returning ToolOutputText, an MCP tool) is read as its texts
    # joined: cut, it is sent as one text, followed by its other parts (images) as they are, whose
    # tokens in the newest round are kept apart from the room.
    whole = conv.to_jsonl()
    msgs = [_joined(m, text_only=False) for m in whole]
    last = max((k for k, m in enumerate(msgs) if _calls(m)), default=0)
    mixed = [k for k in range(last + 1, len(msgs)) if msgs[k] is not whole[k] and _rest(whole[k])]
    if mixed:
        beside += Conversation([whole[k] for k in mixed], format="jsonl", encoding=budget.encoding).tokens
        beside -= Conversation([msgs[k] for k in mixed], format="jsonl", encoding=budget.encoding).tokens

    def output(k: int) -> bool:
        # A tool message that is one function_call_output whose output is its text (or its parts').
        item = items[starts[k]]
        return (
            msgs[k].get("role") == "tool"
            and starts[k + 1] - starts[k] == 1
            and item.get("type") == "function_call_output"
            and isinstance(item.get("output"), str | list)
            and isinstance(msgs[k].get("content"), str)
            and (item["output"] == msgs[k]["content"] or not isinstance(item["output"], str))
        )

    def written(k: int, new: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
        if new.get("role") == "user":
            return [(starts[k], {**items[starts[k]], "content": _content_as(items[starts[k]], new["content"])})]
        if new.get("role") != "assistant":
            return [(starts[k], {**items[starts[k]], "output": _output_as(items[starts[k]], new["content"])})]
        # A call whose arguments were cut: its function_call item, the other items its own.
        cut = {c.get("id"): c.get("arguments") for c in new.get("tool_calls") or ()}
        return [
            (at, {**items[at], "arguments": cut[items[at].get("call_id")]})
            for at in range(starts[k], starts[k + 1])
            if items[at].get("type") == "function_call"
            and items[at].get("call_id") in cut
            and cut[items[at].get("call_id")] != items[at].get("arguments")
        ]

    return cut_newest(
        conv,
        msgs,
        items,
        budget.encoding,
        budget.limit - beside,
        format="jsonl",
        by_call_id=recall == "call_id",
        calls=_calls,
        cuttable=output,
        arguments=lambda k: msgs[k].get("role") == "assistant",
        request=lambda k: _text_request(items[starts[k] : starts[k + 1]], msgs[k]),
        written=written,
    )


def _text_request(run: list[dict[str, Any]], message: dict[str, Any]) -> bool:
    """Whether ``run``, the items the user message ``message`` stands for, is one message item
    whose content is the message's text, or a list of parts whose text parts are the message's,
    part for part (a request :func:`cut_items` may cut)."""
    if len(run) != 1 or message.get("role") != "user":
        return False
    content, read = run[0].get("content"), message.get("content")
    if isinstance(content, str):
        return content == read
    return (
        isinstance(content, list)
        and isinstance(read, list)
        and len(content) == len(read)
        and any(_is_text(p) for p in read)
        and all(
            (isinstance(p, Mapping) and p.get("type") in _TEXT_PARTS and p.get("text") == q["text"])
            if _is_text(q)
            else not (isinstance(p, Mapping) and p.get("type") in _TEXT_PARTS)
            for p, q in zip(content, read, strict=True)
        )
    )


def _content_as(item: dict[str, Any], content: Any) -> Any:
    """The content of a copy of the request ``item`` cut to ``content`` (as :func:`cut_items`
    reads it): the text, or the item's parts with the texts of its text parts replaced."""
    was = item.get("content")
    if not isinstance(was, list) or not isinstance(content, list):
        return content
    return [
        {**p, "text": q["text"]} if _is_text(q) and q["text"] != p.get("text") else p
        for p, q in zip(was, content, strict=True)
    ]


#: The types of the text parts of a function output.
_TEXT_PARTS = ("input_text", "output_text", "text")


def _output_as(item: dict[str, Any], text: Any) -> Any:
    """The output of a copy of the function output ``item`` cut to ``text``: the text, followed
    by the item's parts that are not text (images, files) when it has some."""
    output = item.get("output")
    rest = (
        [p for p in output if not (isinstance(p, Mapping) and p.get("type") in _TEXT_PARTS)]
        if isinstance(output, list)
        else []
    )
    return [{"type": "input_text", "text": text}, *rest] if rest and isinstance(text, str) else text
