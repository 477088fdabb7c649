"""The last step of filling a budget (issue 13): after the raw recent part has grown back by
whole groups or rounds, the next older round, which does not fit whole, is added with its
longest texts cut head + marker + tail to the room left (the originals under recall ids when the
compactor has a store). A call is never split from its result: the round comes whole, only its
texts are shortened — message texts, tool results, and the long string values of a call's JSON
arguments (a file written whole), which stay valid JSON. Used by the ladder's ``_grow``
(:mod:`agentcontext.compaction.summaries`); :func:`cut_texts` also cuts the last round of its
oversized rung (:mod:`agentcontext.compaction.resort`).
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from agentcontext._core import Conversation, _equal_shares, _give_way, count_tokens_batch, truncate
from agentcontext.errors import BudgetError

if TYPE_CHECKING:
    from agentcontext.compaction.state import LadderState
    from agentcontext.compaction.state import Summary as _Summary
    from agentcontext.compaction.summaries import SummaryRun as _Run

#: Where a string sits in a call's JSON-object arguments: its key, or (:func:`_units`'s
#: ``nested``) the keys and indexes down to it; (``any_json``) for arguments that are not an
#: object, the indexes and keys down to it from a JSON list, ``()`` for a JSON string that is the
#: whole arguments, None for arguments that are not JSON (the text itself).
Key = str | tuple[str | int, ...] | None

#: Where a text sits in a message: ``"content"``, a call's argument (``(call, key)``, see
#: :func:`_units`), or (the adapters' cut of a request of text parts) ``("content", i)``: the
#: text of part ``i`` of the content list.
Where = str | tuple[int, Key] | tuple[Literal["content"], int]

#: A text of a message that may be cut: ``(k, j, where, text)``, the text at ``where`` (see
#: :func:`_units`) of item ``j`` of message ``k``.
Unit = tuple[int, int, Where, str]

#: Texts under this many tokens are never cut.
MIN_CUT_TEXT = 64

#: A tool result cut beside a user request takes at most this many tokens when the room is short
#: (``cut_texts``'s ``yielding``): the request keeps what the output gives up.
YIELD_TOKENS = 48

#: The least unused room (tokens) a cut text is grown by, once the cut fits.
MIN_SPEND = 8

#: The least room (tokens) worth a cut round: below it a head and a tail beside the marker say
#: nothing.
MIN_CUT_ROOM = 64


@dataclass
class Filled:
    """A working set filled with a cut round: its messages, their provenance (None for a cut
    message) and origins (the original position of every message kept or cut), and the original
    positions of the messages cut."""

    conversation: Conversation
    provenance: list[int | None]
    origins: list[int | None]
    cut: list[int]


def cut_round(
    run: _Run, summary: _Summary, extras: list[dict[str, Any]], current: Conversation, fill_to: int
) -> Filled | None:
    """``current`` (the working set grown by whole rounds, its summary covering
    ``original[preamble:summary.covers]``) with the round just before ``summary.covers`` added, its
    longest texts cut so that the whole takes at most ``fill_to`` tokens. ``summary.covers`` moves
    to the start of that round when it is added. None (``summary`` unchanged) when less than
    :data:`MIN_CUT_ROOM` is left, no round is older (that the summary would still replace), or the round does not fit even with every
    text cut to a head, a marker and a tail."""
    o = run.original
    room = fill_to - current.tokens
    covers = summary.covers
    # A round that opens right after the system messages would leave the summary nothing to replace.
    cuts = run._cuts or []  # ascending
    k = bisect_left(cuts, covers) - 1
    if room < MIN_CUT_ROOM or k < 0 or cuts[k] <= run.pre:
        return None
    start = cuts[k]
    summary.covers = start
    head = Conversation(
        [*run._summary_messages(summary, store=True), *extras], format=o.format, encoding=o.encoding
    )  # fmt: skip
    whole, prov = run._assemble(head, start)
    # The round's messages sit together at the start of the raw part.
    at = [k for k, q in enumerate(prov) if q is not None and start <= q < covers and k >= run.pre + len(head)]
    filled = None
    if at and at == list(range(at[0], at[-1] + 1)):
        filled = _cut_into(run, whole, prov, (at[0], at[-1] + 1), fill_to)
    if filled is None or filled.conversation.tokens <= current.tokens:
        summary.covers = covers
        return None
    return filled


def _units(
    message: dict[str, Any], *, nested: bool = False, any_json: bool = False
) -> list[tuple[str | tuple[int, Key], str]]:
    """The texts of a message (in the library's format, or an OpenAI Chat message: a call's
    arguments under its ``function``) that may be cut: its text content (``"content"``), and the
    string values of its tool calls' JSON-object arguments (``(call, key)``: a call written whole
    keeps its arguments valid JSON, its long strings cut). ``nested``: the string values inside
    the objects and lists of those arguments too (``(call, path)``, the keys and indexes down to
    the string: a file in ``{"edits": [{"content": ...}]}``). ``any_json``: also arguments that
    are not an object: the strings inside a JSON list (``(call, path)``), a JSON string
    (``(call, ())``) and a text that is not JSON (``(call, None)``, cut as it is)."""
    out: list[tuple[str | tuple[int, Key], str]] = []
    if isinstance(message.get("content"), str):
        out.append(("content", message["content"]))
    for c, call in enumerate(message.get("tool_calls") or ()):
        arguments = _arguments_of(call).get("arguments") if isinstance(call, dict) else None
        try:
            parsed = json.loads(arguments) if isinstance(arguments, str) else None
        except ValueError:
            if any_json and isinstance(arguments, str) and not _json_beyond_ints(arguments):
                out.append(((c, None), arguments))
            continue
        found: list[tuple[str | tuple[int, Key], str]] = []
        if isinstance(parsed, dict):
            found += [((c, key), value) for key, value in parsed.items() if isinstance(value, str)]
            if nested:
                found += [((c, path), value) for path, value in _strings(parsed, ()) if len(path) > 1]
        elif any_json and isinstance(parsed, list | str):
            found += [((c, path), value) for path, value in _strings(parsed, ())]
        # A lone surrogate the arguments escape (``\ud800``) is no text to count or cut: U+FFFD in
        # its place, as the importers put one (the value is written back so only when cut).
        out += [(where, _LONE_SURROGATE.sub("\ufffd", value)) for where, value in found]
    return out


def _json_beyond_ints(text: str) -> bool:
    """Whether ``text`` is JSON that Python's ``json`` refuses only for an integer longer than
    ``int`` takes from a string (4,300 digits): JSON, which is not cut as a text that is not."""
    try:
        json.loads(text, parse_int=str)
    except ValueError:
        return False
    return True


def _strings(value: Any, path: tuple[str | int, ...]) -> list[tuple[tuple[str | int, ...], str]]:
    """The string values inside ``value`` (a parsed JSON value), each with its path of keys and
    indexes from ``value``."""
    if isinstance(value, str):
        return [(path, value)]
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return [found for key, inner in items for found in _strings(inner, (*path, key))]


def _put(message: dict[str, Any], where: Where, text: str) -> None:
    """``message``'s text at ``where`` (see :data:`Where`) replaced by ``text`` (the message and its
    calls are copies)."""
    if isinstance(where, str):
        message[where] = text
        return
    if where[0] == "content":
        parts = list(message["content"])
        parts[where[1]] = {**parts[where[1]], "text": text}
        message["content"] = parts
        return
    c, key = where
    calls = [dict(x) for x in message["tool_calls"]]
    if isinstance(calls[c].get("function"), dict):
        calls[c]["function"] = dict(calls[c]["function"])
    holder = _arguments_of(calls[c])
    message["tool_calls"] = calls
    if key is None:
        holder["arguments"] = text  # not JSON: the text itself
        return
    if key == ():
        holder["arguments"] = _arguments_text(text)  # a JSON string, the whole
        return
    arguments = json.loads(holder["arguments"])
    at: Any = arguments
    *down, last = key if isinstance(key, tuple) else (key,)
    for step in down:
        at = at[step]
    at[last] = text
    holder["arguments"] = _arguments_text(arguments)


#: A surrogate code point: in a ``str``, always a lone one (a pair read from JSON is one character).
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _arguments_text(value: Any) -> str:
    """``value`` written back as a call's JSON arguments: ``json.dumps(value, ensure_ascii=False)``
    with each lone surrogate kept escaped (``\\ud800``), as the arguments held it (JSON may
    escape one; UTF-8, and so the core, cannot hold one as a character)."""
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, ensure_ascii=False))


def _arguments_of(call: dict[str, Any]) -> dict[str, Any]:
    """The dict holding a tool call's ``arguments``: the call itself (the library's format), or
    its ``function`` (OpenAI Chat)."""
    function = call.get("function")
    return function if "arguments" not in call and isinstance(function, dict) else call


def _cut_into(
    run: _Run, whole: Conversation, prov: list[int | None], span: tuple[int, int], fill_to: int
) -> Filled | None:
    """``whole`` with its messages ``span`` (a round, from the original) cut to fit ``fill_to``."""
    o, enc = run.original, run.policy.encoding
    lo, hi = span
    keep = [q for q in prov[lo:hi] if q is not None]
    neutral = [o.slice(i, i + 1).to_jsonl() for i in keep]
    flat = [(k, j, where, text) for k, ms in enumerate(neutral) for j, m in enumerate(ms) for where, text in _units(m)]
    every = count_tokens_batch([text for *_, text in flat], encoding=enc)
    # A short text stays whole (a cut one is a head, a marker and a tail), and so does the latest
    # request when it takes at most a quarter of the budget.
    found = o._latest_request(run.pre)
    ask = keep.index(found[0]) if found is not None and found[0] in keep else None
    whole_texts = {
        n for n, size in enumerate(every)
        if size < MIN_CUT_TEXT or (flat[n][0] == ask and flat[n][2] == "content" and size <= run.request_room)
    }  # fmt: skip
    flat = [x for n, x in enumerate(flat) if n not in whole_texts]
    sizes = [size for n, size in enumerate(every) if n not in whole_texts]
    room = sum(sizes) - (whole.tokens - fill_to)
    done = cut_texts(run, neutral, flat, sizes, room, lambda out: whole.replace(lo, hi, [m for ms in out for m in ms]),
                     fill_to)  # fmt: skip
    if done is None:
        return None
    conv, cut_at = done
    n_body = len(conv) - len(whole) + hi - lo
    cut = sorted({keep[k] for k in cut_at})
    same = n_body == hi - lo
    middle: list[int | None] = [None if q in cut else q for q in keep] if same else [None] * n_body
    origins: list[int | None] = [*prov[:lo], *(keep if same else [None] * n_body), *prov[hi:]]
    return Filled(conv, [*prov[:lo], *middle, *prov[hi:]], origins, cut)


def _recall_id(run: LadderState, message: dict[str, Any], where: Where, text: str) -> str | None:
    """The recall id of ``text``, cut from ``message`` at ``where`` (see :func:`_units`), with the
    original put in the run's store: a tool result's call id, as the budgets stage's markers
    name it (the store's id when calls reuse the id: the call id would name more than one
    result); a call's argument under the name the run gives it, if any (an adapter's: the call's
    arguments in the framework's history, ``<call id>#arguments``), else the store's id. None
    without a store, or when a store that keeps nothing (an adapter's) gives no id."""
    store = run.store
    if store is None:
        return None
    call_id = message.get("tool_call_id") if where == "content" else None
    reused = isinstance(call_id, str) and call_id in run.reused_ids()
    alias = call_id if isinstance(call_id, str) and not reused else None
    if where != "content" and where[0] != "content":
        alias = getattr(run, "argument_alias", lambda m, w: None)(message, where)
    stored = store.put(text, alias=alias)
    return None if reused and not stored else alias or stored or None


def cut_texts(
    run: LadderState,
    neutral: list[list[dict[str, Any]]],
    units: Sequence[Unit],
    sizes: list[int],
    room: int,
    build: Callable[[list[list[dict[str, Any]]]], Conversation],
    limit: int,
    *,
    may_cut: bool = True,
    yielding: Sequence[int] = (),
    spend: bool = True,
) -> tuple[Conversation, set[int]] | None:
    """Messages ``neutral`` (each as its items in the library's format) with their texts ``units``
    (``(k, j, where, text)``: the text at ``where`` of item ``j`` of message ``k``, see
    :func:`_units`; ``sizes``: their tokens) cut head + marker + tail to equal shares of ``room``
    tokens, smallest first (a text under its share stays whole; the originals under recall ids
    when the run has a store, a tool result's under its call id), and made a conversation by
    ``build`` (the result is always the last conversation it made) that takes at most ``limit``
    tokens: when the parts, counted apart, come out larger
    together, the largest cut text gives way. The conversation and the messages cut (their
    ``k``); None when it does not fit, a cut text would keep no head or no tail, or a text must
    be cut and not ``may_cut``. ``yielding``: the units (tool results beside a user request) whose
    share is planned as if they were at most :data:`YIELD_TOKENS`: cut harder, the room they
    free goes to the others. ``spend``: a cut text takes the room the cuts left unused, once
    (False where ``build`` counts in another format than the caller's own count)."""
    enc = run.policy.encoding
    shares = _plan(sizes, room, yielding)
    recall: dict[int, str | None] = {}
    spent: tuple[list[list[dict[str, Any]]], set[int]] | None = None
    for _ in range(4):
        out = [[dict(m) for m in ms] for ms in neutral]
        for n, (k, j, where, text) in enumerate(units):
            if shares[n] >= sizes[n]:
                continue
            if not may_cut:
                return None
            if n not in recall:
                recall[n] = _recall_id(run, neutral[k][j], where, text)
            try:
                done = truncate(
                    text, shares[n], unit="tokens", strategy="head_tail", head_share=0.5,
                    encoding=enc, recall_id=recall[n], not_stored=recall[n] is None,
                )  # fmt: skip
            except BudgetError:
                return None
            if not (done.head_chars and done.tail_chars):
                return None  # a marker alone is not a cut message: its head and tail must fit
            _put(out[k][j], where, done.text)
        conv = build(out)
        over = conv.tokens - limit
        if over <= 0:
            # The messages cut are those a text of is cut now (a text the spent room made whole is not).
            fitted = conv, {units[n][0] for n in recall if shares[n] < sizes[n]}
            # A cut text (a user request first) takes the room the cuts left unused, once.
            grown = (
                None if spent or not spend else _spend(shares, sizes, -over, [n for n in recall if n not in yielding])
            )
            if grown is None:
                return fitted
            shares, spent = grown, (out, fitted[1])
            continue
        if spent:
            # Grown, it no longer fits: as cut before, built again (the last ``build`` is the result).
            return build(spent[0]), spent[1]
        # Counted apart, the parts came out larger together: the largest cut text gives way.
        given = _give_way(shares, sizes, over)
        if given is None:
            return None
        shares = given
    return (build(spent[0]), spent[1]) if spent else None


def _plan(sizes: list[int], room: int, yielding: Sequence[int]) -> list[int]:
    """Equal shares of ``room`` over texts of ``sizes``, smallest first: a text under its share
    stays whole (the core's fill). When another text must be cut, the ``yielding`` ones are
    planned at most :data:`YIELD_TOKENS` and get back only what the others leave."""
    shares = _equal_shares(sizes, room)
    if not yielding or all(shares[n] >= sizes[n] for n in range(len(sizes)) if n not in yielding):
        return shares
    shares = _equal_shares([min(size, YIELD_TOKENS) if n in yielding else size for n, size in enumerate(sizes)], room)
    left = room - sum(shares)
    for n in yielding:
        more = max(0, min(left, sizes[n] - shares[n]))
        shares[n] += more
        left -= more
    return shares


def _spend(shares: list[int], sizes: list[int], left: int, cut: list[int]) -> list[int] | None:
    """``shares`` with ``left`` unused tokens given to the texts ``cut`` (each up to its size), in
    order; None when there is too little to say more (under :data:`MIN_SPEND`) or none is cut."""
    if left < MIN_SPEND or not cut:
        return None
    out = list(shares)
    for n in cut:
        more = max(0, min(left, sizes[n] - out[n]))
        out[n] += more
        left -= more
    return out if out != shares else None
