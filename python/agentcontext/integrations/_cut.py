"""The cut the adapters fall back on when the newest round alone is over the budget: its long
tool results and the long strings of its calls' arguments cut head + marker + tail (the ladder's
cut, :func:`agentcontext.compaction.fill.cut_texts`), for a list of OpenAI Chat dicts
(:func:`cut_oversized`) or of Responses items
(:func:`agentcontext.integrations._responses.cut_items`) alike."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal, cast

from agentcontext.budgets.recall import ARGUMENTS
from agentcontext.types import Encoding

if TYPE_CHECKING:
    from agentcontext._core import Conversation
    from agentcontext.compaction.state import LadderState
    from agentcontext.integrations._fit import Budget, RecallIds


@dataclass(frozen=True)
class _Run:
    """What :func:`agentcontext.compaction.fill.cut_texts` reads of a ladder run."""

    store: Any
    policy: Any
    #: The call ids more than one call of the conversation uses.
    reused: frozenset[str] = frozenset()

    def reused_ids(self) -> frozenset[str]:
        return self.reused

    def argument_alias(self, message: dict[str, Any], where: tuple[int, Any]) -> str | None:
        """The recall id of a cut argument of ``message``'s call ``where[0]``: where the framework's
        own history holds the call's arguments, ``<call id>#arguments`` (None when calls reuse
        the id, or with no store: the marker then says the original is not stored)."""
        call = (message.get("tool_calls") or [])[where[0]]
        call_id = call.get("id") if isinstance(call, dict) else None
        if self.store is None or not isinstance(call_id, str) or not call_id or call_id in self.reused:
            return None
        return f"{call_id}{ARGUMENTS}"


class _CallIds:
    """A "store" that keeps nothing: a cut result's recall id is its tool call id, under which the
    framework's own history holds the original (none when calls reuse the id: it would name more
    than one result)."""

    def put(self, text: str, *, alias: str | None = None) -> str:
        return alias or ""


def cut_newest(
    conv: Conversation,
    msgs: list[dict[str, Any]],
    items: list[dict[str, Any]],
    encoding: Encoding,
    limit: int,
    *,
    format: Literal["openai", "jsonl"],
    by_call_id: bool,
    calls: Callable[[dict[str, Any]], bool],
    cuttable: Callable[[int], bool],
    written: Callable[[int, dict[str, Any]], list[tuple[int, dict[str, Any]]]],
    arguments: Callable[[int], bool] = lambda k: False,
    request: Callable[[int], bool] = lambda k: False,
) -> list[dict[str, Any]] | None:
    """``items`` (read as ``conv``, whose messages are ``msgs`` in ``format``: ``items`` themselves
    for Chat, one message a run of items for Responses) with the long texts of the newest round
    cut head + marker + tail (:func:`agentcontext.compaction.fill.cut_texts`) so that the system
    messages, the latest request and that round fit ``limit`` tokens (counted with ``encoding``);
    None when there is nothing to cut or even the cut round does not fit. The round starts at
    the last message that ``calls`` tools; the texts cut are the contents of its messages
    ``cuttable`` (by position) and the long string values of the arguments of the tool calls
    of its messages ``arguments`` (a call the model made with a whole file in it: arguments that
    are JSON stay valid JSON; a text that is not JSON is cut as it is); the message at ``k`` cut as ``new`` is written back as
    ``written(k, new)``: each position in ``items`` and the item put there (the caller's own
    items elsewhere). ``by_call_id``: the marker names the tool call id to get the original
    back by (else it says the original is not stored). The latest request, when ``request`` (by
    position) says its content may be cut, is one of the texts cut (its text, or its text parts'
    texts, its other parts kept): a user who pasted a long text and a round whose results are
    long share the room (the core's trim cuts a request alone so); a text under its share stays whole."""
    from agentcontext._core import Conversation
    from agentcontext.compaction.fill import cut_texts

    found = conv._latest_request(conv.preamble)
    start = found[0] if found is not None else conv.preamble
    last = max((k for k in range(start, len(msgs)) if calls(msgs[k])), default=start)
    # Written back cut, every call of such a message has its arguments as read here.
    read = [_unescaped(msgs[k]) if k >= last and arguments(k) else msgs[k] for k in range(len(msgs))]
    unescaped = [k for k in range(len(msgs)) if read[k] is not msgs[k]]
    msgs = read
    keep = [*range(conv.preamble), *([start] if start < last else []), *range(last, len(msgs))]
    units = _texts(
        msgs, keep, last, lambda k: cuttable(k) or (found is not None and k == start and request(k)), arguments
    )
    units, sizes = _sized(units, encoding)
    more, more_sizes = _sized(_whole_arguments(msgs, keep, last, arguments, units), encoding)
    units, sizes = units + more, sizes + more_sizes
    whole = Conversation([msgs[k] for k in keep], format=format, encoding=encoding)
    if whole.tokens <= limit and unescaped:
        # Their characters unescaped, the calls fit whole.
        return _written_back(items, [(k, msgs[k]) for k in unescaped], written)
    if not units or whole.tokens <= limit:
        return None
    room = sum(sizes) - (whole.tokens - limit)
    reused = (
        frozenset(v["id"] for v in conv.validate() if v["kind"] == "duplicate_id" and v["id"])
        if by_call_id
        else frozenset()
    )
    run = _Run(_CallIds() if by_call_id else None, SimpleNamespace(encoding=encoding), reused)
    built: list[list[list[dict[str, Any]]]] = []

    def build(out: list[list[dict[str, Any]]]) -> Any:
        built.append(out)
        return Conversation([m for ms in out for m in ms], format=format, encoding=encoding)

    # Counted in another format than the one fitted (JSON Lines for Responses items): no
    # spending the room left to the last token.
    spend = format == conv.format
    done = cut_texts(
        cast("LadderState", run), [[dict(msgs[k])] for k in keep], units, sizes, room, build, limit, spend=spend
    )
    if done is None:
        return None
    changed = [
        (k, new)
        for k, (new,) in zip(keep, built[-1], strict=True)
        if new.get("content") != msgs[k].get("content") or new.get("tool_calls") != msgs[k].get("tool_calls")
    ]
    return _written_back(items, changed, written)


def _texts(
    msgs: list[dict[str, Any]],
    keep: list[int],
    last: int,
    cuttable: Callable[[int], bool],
    arguments: Callable[[int], bool],
) -> list[tuple[int, int, Any, str]]:
    """The texts :func:`cut_newest` may cut, as ``cut_texts`` units (``n``: the place in ``keep``):
    the contents of the messages ``cuttable`` (of a content list, each text part's text), then
    the string values of the arguments (nested ones too) of the calls of the newest round's
    messages ``arguments``."""
    from agentcontext.compaction.fill import _units

    units: list[tuple[int, int, Any, str]] = [
        unit
        for n, k in enumerate(keep)
        if cuttable(k)
        for unit in (
            [(n, 0, "content", msgs[k]["content"])]
            if isinstance(msgs[k]["content"], str)
            else [(n, 0, ("content", i), p["text"]) for i, p in enumerate(msgs[k]["content"]) if _is_text(p)]
        )
    ]
    units += [
        (n, 0, where, text)
        for n, k in enumerate(keep)
        if k >= last and arguments(k)
        for where, text in _units(msgs[k], nested=True, any_json=True)
        if where != "content"
    ]
    return units


def _sized(
    units: list[tuple[int, int, Any, str]], encoding: Encoding
) -> tuple[list[tuple[int, int, Any, str]], list[int]]:
    """The ``units`` long enough to cut (:data:`~agentcontext.compaction.fill.MIN_CUT_TEXT` tokens
    or more), with their tokens."""
    from agentcontext._core import count_tokens_batch
    from agentcontext.compaction.fill import MIN_CUT_TEXT

    sizes = count_tokens_batch([text for *_, text in units], encoding=encoding)
    return [u for u, size in zip(units, sizes, strict=True) if size >= MIN_CUT_TEXT], [
        size for size in sizes if size >= MIN_CUT_TEXT
    ]


def _whole_arguments(
    msgs: list[dict[str, Any]],
    keep: list[int],
    last: int,
    arguments: Callable[[int], bool],
    units: list[tuple[int, int, Any, str]],
) -> list[tuple[int, int, Any, str]]:
    """The JSON arguments of the newest round's calls that are not an object (a number, ``null``,
    ``true``/``false``, a list) and hold no string long enough to cut (none of ``units``, the
    texts :func:`cut_newest` cuts, is of the call): each cut as one text, written back as a JSON
    string holding the cut (``(call, ())``): JSON stays JSON, of another type, with the marker
    naming the original."""
    from agentcontext.compaction.fill import _arguments_of, _json_beyond_ints

    cut = {(n, where[0]) for n, _, where, _ in units if isinstance(where, tuple)}
    out: list[tuple[int, int, Any, str]] = []
    for n, k in enumerate(keep):
        if k < last or not arguments(k):
            continue
        for c, call in enumerate(msgs[k].get("tool_calls") or ()):
            text = _arguments_of(call).get("arguments") if isinstance(call, dict) else None
            if not isinstance(text, str) or (n, c) in cut:
                continue
            try:
                parsed = json.loads(text)
            except ValueError:
                if _json_beyond_ints(text):  # an integer longer than Python reads
                    out.append((n, 0, (c, ()), text))
                continue
            if not isinstance(parsed, dict | str):
                out.append((n, 0, (c, ()), text))
    return out


def _written_back(
    items: list[dict[str, Any]],
    changed: list[tuple[int, dict[str, Any]]],
    written: Callable[[int, dict[str, Any]], list[tuple[int, dict[str, Any]]]],
) -> list[dict[str, Any]]:
    """A copy of ``items`` with each message ``k`` of ``changed`` written back as ``written(k, new)``."""
    out = list(items)
    for k, new in changed:
        for at, item in written(k, new):
            out[at] = item
    return out


def cut_oversized(
    dicts: list[dict[str, Any]], budget: Budget, *, beside: int = 0, recall: RecallIds = "call_id"
) -> list[dict[str, Any]] | None:
    """``dicts`` (OpenAI Chat) with the long tool results of the newest round cut head + marker +
    tail (the ladder's cut, :func:`agentcontext.compaction.fill.cut_texts`) so that the system
    messages, the latest request and that round fit ``budget`` beside ``beside`` tokens; None
    when there is nothing to cut or even the cut round does not fit."""
    from agentcontext._core import Conversation

    # A tool result of text parts (as MCP tools and many LangChain tools return) is read as its
    # texts joined: cut, it is sent as one text, followed by its other parts (images) as they
    # are. Those parts of the newest round's results are not in what is cut: their tokens are
    # kept apart from the room.
    msgs = [_joined(d, text_only=False) for d in dicts]
    try:
        conv = Conversation(msgs, format="openai", encoding=budget.encoding)
    except Exception:  # noqa: BLE001 - not Chat dicts: nothing this cut knows how to shorten
        return None
    if len(conv) != len(msgs):
        return None
    last = max((k for k, m in enumerate(msgs) if m.get("tool_calls")), default=0)
    rest = {k: _rest(d) for k, d in enumerate(dicts) if k > last and msgs[k] is not d and _rest(d)}
    if rest:
        beside += Conversation([dicts[k] for k in rest], format="openai", encoding=budget.encoding).tokens
        beside -= Conversation([msgs[k] for k in rest], format="openai", encoding=budget.encoding).tokens

    def written(k: int, new: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
        if k not in rest or not isinstance(new.get("content"), str):
            return [(k, new)]
        return [(k, {**new, "content": [{"type": "text", "text": new["content"]}, *rest[k]]})]

    return cut_newest(
        conv,
        msgs,
        dicts,
        budget.encoding,
        budget.limit - beside,
        format="openai",
        by_call_id=recall == "call_id",
        calls=lambda m: bool(m.get("tool_calls")),
        cuttable=lambda k: msgs[k].get("role") == "tool" and isinstance(msgs[k].get("content"), str),
        arguments=lambda k: msgs[k].get("role") == "assistant",
        request=lambda k: msgs[k].get("role") == "user" and _texts_of(msgs[k].get("content")) is not None,
        written=written,
    )


def _unescaped(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with the JSON arguments (an object, a list, a string) of its calls that escape non-ASCII characters
    (``\\u00e9``, as ``json.dumps`` writes them by default) written with those characters as they
    are: a cut value is written back so, and the room is counted on the text sent (an escaped
    character takes several tokens, the character itself one). ``message`` itself when none does."""
    from agentcontext.compaction.fill import _arguments_of

    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return message
    out = list(calls)
    for c, call in enumerate(calls):
        holder = _arguments_of(call) if isinstance(call, dict) else {}
        text = holder.get("arguments")
        if not isinstance(text, str) or "\\u" not in text:
            continue
        try:
            parsed = json.loads(text)
        except ValueError:
            continue
        plain = json.dumps(parsed, ensure_ascii=False) if isinstance(parsed, dict | list | str) else text
        if plain == text:
            continue
        try:
            plain.encode()
        except UnicodeEncodeError:
            continue  # a lone surrogate escaped: not a text the core reads
        new = {**call}
        if holder is not call:
            new["function"] = {**holder, "arguments": plain}
        else:
            new["arguments"] = plain
        out[c] = new
    return message if out == calls else {**message, "tool_calls": out}


def _is_text(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)


def _texts_of(content: Any) -> list[str] | None:
    """The texts of a message's ``content`` that a cut may shorten: the text itself, or of a
    content list the texts of its text parts (its other parts, images, stay as they are); None
    for content with no text to cut."""
    if isinstance(content, str):
        return [content]
    texts = [p["text"] for p in content if _is_text(p)] if type(content) is list else []
    return texts or None


def _rest(message: dict[str, Any]) -> list[Any]:
    """The parts of ``message``'s content list that are not text (a tool result's images)."""
    content = message.get("content")
    return [p for p in content if not _is_text(p)] if type(content) is list else []


def _joined(message: dict[str, Any], *, text_only: bool = True) -> dict[str, Any]:
    """``message``, a tool result whose content is a list of text parts only given its texts
    joined by newlines (other messages as they are). Not ``text_only``: a list holding text
    parts and others (images) too, which are left out (see :func:`_rest`)."""
    content = message.get("content")
    if message.get("role") != "tool" or type(content) is not list or not content:
        return message
    texts = [p["text"] for p in content if _is_text(p)]
    if not texts or (text_only and len(texts) != len(content)):
        return message
    return {**message, "content": "\n".join(texts)}
