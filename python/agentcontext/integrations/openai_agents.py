"""OpenAI Agents SDK: a ``call_model_input_filter`` that fits each model call into a budget, and a
``Session`` wrapper that keeps what it stores within one.

    from agents import Runner, RunConfig, SQLiteSession
    from agentcontext.integrations.openai_agents import CompactingSession, input_filter

    config = RunConfig(call_model_input_filter=input_filter(100_000))
    result = await Runner.run(agent, "...", run_config=config)

    session = CompactingSession(SQLiteSession("user-1", "chat.db"), 200_000)
    result = await Runner.run(agent, "...", session=session)

Both work on the SDK's Responses items as they are: an item the library did not change is the
caller's own item (every field kept, ids and reasoning included); a cleared function call output
or a cut request is a copy with only ``output`` or ``content`` replaced, and a function call whose
arguments were cleared (``Budget(clear_tool_inputs=True)``) one with only ``arguments`` replaced. The instructions,
the agent's tool and handoff definitions, its MCP servers' tools (as each server last listed
them, ``cached_tools``: no request is made to count them; a server with no list counts nothing)
and its structured output's JSON schema are counted in and left as they are. Each item is
converted once and reused across calls (recognised by identity). :func:`input_filter` changes
only what the model receives this call. :class:`CompactingSession` keeps the wrapped session as a
lossless, append-only log and, after each ``add_items`` that brings the items since its last
compaction over the budget, appends the compaction ladder's output (a summary, then the items it
changed; the items it kept as they are are named, not copied): its ``get_items`` is that
compacted history. Tested with openai-agents 0.24 (``pip install 'agentcontext[openai-agents]'``).
"""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from agentcontext._checks import number
from agentcontext._core import Conversation
from agentcontext.compaction import Compactor
from agentcontext.compaction.summarize import SUMMARY_MARKER, Summarizer
from agentcontext.errors import ArgumentTypeError, BudgetError, CompactionError, MissingExtraError, OptionError
from agentcontext.integrations._agents_items import (
    content_of,
    is_note,
    is_system,
    latest,
    marked,
    paired,
    role_of,
    view_places,
    with_mark,
)
from agentcontext.integrations._agents_tools import agent_tool_texts
from agentcontext.integrations._beside import beside_tokens
from agentcontext.integrations._converted import Converted
from agentcontext.integrations._fit import Budget, RecallIds, as_budget, factory_budget, fit, off_loop
from agentcontext.integrations._given import as_dict, as_list, tool_texts
from agentcontext.integrations._ladder import make_compactor
from agentcontext.integrations._responses import Turns, cut_items, whole_key
from agentcontext.observe.compaction import reporting_fits
from agentcontext.observe.emit import EventCallback, check_callback

try:
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise MissingExtraError(
        "agentcontext.integrations.openai_agents needs the OpenAI Agents SDK: pip install 'agentcontext[openai-agents]'"
    ) from exc

__all__ = ["CompactingSession", "fit_items", "input_filter"]


def _item(item: Any, index: int) -> dict[str, Any]:
    return as_dict(
        item,
        index,
        "is not a Responses input item (agentcontext.integrations.openai_agents reads dicts and the SDK's "
        "pydantic items)",
    )


#: The fields of an item the fit or the ladder may change (a result, a request, a call's input).
_FITTED = ("output", "content", "arguments", "input")


def _rebuild(item: Any, parts: list[tuple[int, dict[str, Any] | None]]) -> Any:
    """``item`` as the fit (or the compaction ladder) changed its dict: a copy with only
    ``output``, ``content`` or (of a ``function_call``, its arguments cleared or cut)
    ``arguments`` (of a ``custom_tool_call``, its free-form ``input``) replaced where they differ;
    ``item`` itself when none does."""
    changed = parts[0][1]
    if changed is None:
        return item
    base = _item(item, 0)
    update = {k: changed[k] for k in _FITTED if k in changed and changed[k] != base.get(k)}
    return {**base, **update} if update else item


class _Fitter:
    """Fits Responses items, each converted once across calls: on the Chat path when every item
    has a Chat form (:mod:`~agentcontext.integrations._responses`), else as Responses items."""

    def __init__(self, recall: RecallIds = "call_id") -> None:
        self.turns = Turns(_item)
        # Keyed by every field an item may have set anew in place (its conversion is all of it).
        self.converted = Converted(whole_key)
        self.recall: RecallIds = recall

    def fit(
        self,
        items: Sequence[Any],
        budget: Budget,
        instructions: str | None,
        tools: Sequence[str],
        on_event: EventCallback | None = None,
    ) -> list[Any]:
        """``items`` fitted, each fit's events to ``on_event``."""
        return reporting_fits(on_event, "openai_agents", lambda: self._fit(items, budget, instructions, tools))

    def _fit(self, items: Sequence[Any], budget: Budget, instructions: str | None, tools: Sequence[str]) -> list[Any]:
        beside = beside_tokens(instructions, tools, budget.encoding)
        fitted = self.turns.fit(items, budget, beside, self.recall)
        if fitted is not None:
            return fitted
        convert: Callable[[Any, int], list[dict[str, Any]]] = lambda x, i: [_item(x, i)]
        try:
            return fit(items, budget, convert, _rebuild, format="responses", beside=beside, cache=self.converted)
        except BudgetError:
            # The newest round alone is over the budget: its long outputs cut, the rest as it is.
            dicts = [_item(x, i) for i, x in enumerate(items)]
            cut = cut_items(dicts, budget, beside=beside, recall=self.recall)
            if cut is None:
                raise
        kept = [x if new is d else new for x, d, new in zip(items, dicts, cut, strict=True)]
        return fit(kept, budget, convert, _rebuild, format="responses", beside=beside, cache=self.converted)


#: The conversions :func:`fit_items` keeps across calls.
_FIT_ITEMS = _Fitter()


def fit_items(
    items: Sequence[Any],
    budget: int | Budget,
    instructions: str | None = None,
    *,
    tools: Sequence[str] = (),
    on_event: EventCallback | None = None,
) -> list[Any]:
    """Responses ``items`` fitted into ``budget`` (an int is the input budget, a
    :class:`~agentcontext.Budget` sets the options too; ``instructions`` and ``tools``, texts of
    tool definitions, counted in): the caller's own items where unchanged. A newest function
    output over the budget by itself is cut head + marker + tail (the marker names its call id).
    ``on_event``: called with each fit's events (:mod:`agentcontext.observe`: a compaction of kind
    ``fit``, policy ``openai_agents``; a callback that raises is logged and the fit goes on).

    Raises:
        InvalidMessageError: an item that is neither a dict, a Mapping nor a pydantic item.
        ArgumentTypeError: ``items`` not a list of items, ``instructions`` neither a str nor
            None, ``tools`` not a list of str, or ``on_event`` not callable.
        BudgetError: the instructions, tools, the latest request and the newest round do not fit
            even with its long outputs cut.
    """
    on_event = check_callback(on_event, "openai_agents.fit_items")
    items = as_list(items, "fit_items(items)")
    if instructions is not None and not isinstance(instructions, str):
        raise ArgumentTypeError(f"fit_items(instructions=) must be a str or None, got {type(instructions).__name__}")
    tools = tool_texts(tools, "fit_items(tools=)")
    return _FIT_ITEMS.fit(items, as_budget(budget), instructions, tools, on_event)


def input_filter(
    budget: int | Budget, *, on_event: EventCallback | None = None
) -> Callable[[CallModelData[Any]], Awaitable[ModelInputData]]:
    """A ``call_model_input_filter`` fitting into ``budget`` (as for :func:`fit_items`, the
    agent's instructions, tools, handoffs and output schema counted in, each fit's events to
    ``on_event``; its MCP servers' tools counted from the list each server fetched for this call,
    ``MCPServer.cached_tools``, with no request to the server: a server that keeps no list, or a
    callable ``tool_filter``, is counted as nothing, or as every tool it listed;
    async: large lists are fitted off the event loop). It keeps the items it converted across
    calls.

    Raises:
        OptionError: a budget with an unknown encoding (here, not in the first model call).
        ArgumentTypeError: ``budget`` neither an int nor a :class:`~agentcontext.Budget`, or
            ``on_event`` not callable.
    """
    on_event = check_callback(on_event, "openai_agents.input_filter")
    # (Given uncalled, ``call_model_input_filter=input_filter``, it is called with the call's data.)
    fitted_into = factory_budget(
        "input_filter",
        budget,
        lambda b: hasattr(b, "model_data") and hasattr(b, "agent"),
        "call_model_input_filter=input_filter(budget)",
    )
    fitter = _Fitter()

    async def call_model_input_filter(data: CallModelData[Any]) -> ModelInputData:
        model_data = data.model_data
        items = list(model_data.input)
        tools = agent_tool_texts(data.agent)
        fitted = await off_loop(
            len(items), lambda: fitter.fit(items, fitted_into, model_data.instructions, tools, on_event)
        )
        return ModelInputData(input=fitted, instructions=model_data.instructions)

    return call_model_input_filter


class _Carried:
    """A :class:`CompactingSession`'s view of its log as last read: the items since the last
    compaction, their places in the log and their conversation; the log's length then, and each
    place the view was read from (its items' and its note's) with a copy of the item read there,
    to tell that a log read later is the same one grown."""

    __slots__ = ("conv", "length", "places", "read_at", "read_was", "view")

    def __init__(
        self,
        length: int,
        view: list[Any],
        places: list[int | None],
        read_at: list[int],
        log: list[Any],
        conv: Conversation,
    ) -> None:
        self.length, self.view, self.places, self.conv = length, view, places, conv
        self.read_at = read_at
        self.read_was = [_as_read(log[p]) for p in read_at]

    def holds(self, log: list[Any]) -> bool:
        """Whether ``log`` holds, at each place the view was read from, an item equal to the one
        read there (an item rewritten in place, or the log cleared and written again with an
        item edited, is not)."""
        return len(log) >= self.length and [log[p] for p in self.read_at] == self.read_was

    def grow(self, log: list[Any], n: int) -> None:
        """Take in the items ``log`` holds from ``n`` on (appended since the view was read)."""
        self.read_at.extend(range(n, len(log)))
        self.read_was.extend(map(_as_read, log[n:]))
        self.length = len(log)


def _as_read(item: Any) -> Any:
    """A copy of ``item`` as it is now (a dict's fields; another item as ``copy.copy`` makes it),
    to compare the item read at its place later with."""
    return dict(item) if type(item) is dict else copy.copy(item)


class CompactingSession:
    """A ``Session`` over ``session`` (any SDK session: ``SQLiteSession``, ``RedisSession``...)
    whose items stay within ``budget``, losslessly: the wrapped session is an append-only log
    of every item given to :meth:`add_items`, stored exactly as given, and never rewritten.

    When the items since the last compaction no longer fit, the compaction ladder runs over them
    (results cut or cleared, older history summarized, dropped or cut as a last resort, down to
    ``compact_to`` of the budget; ``compaction``/``summarizer`` as for LangChain's middleware:
    default the ``openharness`` ladder with the offline summarizer and this session's options).
    When it summarized or dropped messages, its output is appended to the log in one
    ``add_items`` call: a user item that opens with ``[agentcontext: earlier conversation
    compacted`` (the summary, or a note on what was dropped) and carries the key
    ``"agentcontext_note": True`` (left out of :meth:`get_items`; a user's message opening with the
    same words is a message like any other), then the items the ladder changed
    (copies with only ``output``, ``content`` or ``arguments`` replaced where it cut or cleared one). The items
    it kept as they are are not copied again: the note's last line (``[agentcontext view: ...]``,
    not shown in :meth:`get_items`) names their places in the log, so an item kept through many
    compactions is stored once. When cutting or clearing results was enough,
    nothing is appended (copying every item kept at each such run would grow the log by the
    whole history each time): :meth:`get_items` fits the items on reading instead.

    :meth:`get_items` returns the history the last such note stands for (the note, the items it
    names and those appended since; all the items before the first compaction), fitted into the budget (old results cleared, as :func:`fit_items` does) when
    they are over it; what was compacted away stays in the wrapped session (``session.get_items()``
    on it gives every item, in order) and, with a Compactor that has a store, under the recall
    ids its markers name.

    Each item is converted once: the view's conversion is carried across calls by place in the
    log, and a call converts only the items appended since (the whole view is read anew after a
    compaction, or when the log is not the one it read: shorter, or an item the view was read
    from no longer equal to a copy of it as read, as when the log is written again with an item
    edited).

    :attr:`compactions` counts the compactions appended, :attr:`summaries` those with a summary.
    Two writers sharing one session id must not use it at once (each reads, then appends).
    ``on_event``: called with each event of a compaction (:mod:`agentcontext.observe`), and of
    the fit :meth:`get_items` makes of items over the budget (kind ``fit``); with the ``otel``
    extra each is also a span."""

    def __init__(
        self,
        session: Any,
        budget: int | Budget,
        *,
        compaction: bool | Compactor = True,
        summarizer: Summarizer | None = None,
        compact_to: float = 0.6,
        on_event: EventCallback | None = None,
    ) -> None:
        _check_session(session, budget)
        self._on_event = check_callback(on_event, "openai_agents.CompactingSession")
        self.session = session
        self.session_id: str = session.session_id
        self.session_settings = getattr(session, "session_settings", None)
        self.budget = as_budget(budget)
        self._fitter = _Fitter()
        compactor = make_compactor(compaction, summarizer, self.budget, on_event)
        if compactor is None:
            raise OptionError("CompactingSession compacts: compaction must be True or a Compactor")
        self.compactor = compactor
        self.compact_to = number("compact_to", compact_to, high=1.0, low_open=True)
        #: How many compactions were appended to the log, and how many of them hold a summary.
        self.compactions = 0
        self.summaries = 0
        self._count = threading.Lock()
        #: The view as of the last read, converted once and extended by the items added since.
        self._carried: _Carried | None = None
        self._carry = threading.Lock()

    @property
    def limit(self) -> int:
        """The most tokens the items may take (the budget's ``max_tokens`` less the room kept free)."""
        b = self.budget
        return max(1, b.max_tokens - b.reserved_output - b.safety_margin)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The items since the last compaction, fitted (the latest ``limit`` of them, less a tool
        call's output whose call falls before them: a model refuses an output without its call;
        none for ``limit`` 0 or less).

        Raises:
            ArgumentTypeError: ``limit`` neither an int nor None.
        """
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise ArgumentTypeError(f"get_items(limit=) must be an int or None, got {type(limit).__name__}")
        log = await self.session.get_items()
        current, _, _, _ = _read(log)
        items = await off_loop(len(current), lambda: self._fitted(log, current))
        if limit is not None:
            return latest(items, limit)
        return items

    async def add_items(self, items: list[Any]) -> None:
        """Append ``items``; when the items since the last compaction no longer fit, append the
        ladder's output after them (a summary or note, then the items kept).

        Raises:
            ArgumentTypeError: ``items`` not a list of items (nothing is written).
            InvalidMessageError: an item that is neither a dict, a Mapping nor a pydantic item
                (nothing is written: the log would hold an item no later call could read).
        """
        items = list(as_list(items, "add_items(items)"))
        for i, x in enumerate(items):
            if not isinstance(x, Mapping) and (isinstance(x, type) or not callable(getattr(x, "model_dump", None))):
                _item(x, i)  # (raises, naming the item)
        await self.session.add_items(items)
        log = await self.session.get_items()
        compacted = await asyncio.to_thread(self._compact_log, log)
        if compacted is not None:
            await self.session.add_items(compacted)

    def _current(self, log: list[Any]) -> _Carried:
        """The view of ``log``, converted: the carried one extended by the items appended since it
        was read (each item is converted once), or read and converted whole when there is none or
        the log is not the one it was read from (popped, cleared, compacted, another writer, an
        item the view was read from no longer equal to it: rewritten in place, or the log cleared
        and written again with an item edited)."""
        c = self._carried
        n = c.length if c is not None else 0
        if c is None or not c.holds(log) or any(is_note(x) for x in log[n:]):
            view, places, _, note = _read(log)
            dicts = [_item(x, i) for i, x in enumerate(view)]
            conv = Conversation(dicts, format="responses", encoding=self.budget.encoding)
            read_at = sorted({p for p in places if p is not None} | ({note} if note is not None else set()))
            c = _Carried(len(log), list(view), places, read_at, log, conv)
        elif len(log) > n:
            new = log[n:]
            c.conv.extend([_item(x, len(c.view) + k) for k, x in enumerate(new)])
            c.view.extend(new)
            c.places.extend(range(n, len(log)))
            c.grow(log, n)
        self._carried = c
        return c

    def _compact_log(self, log: list[Any]) -> list[Any] | None:
        """:meth:`_compact` of the view of ``log`` (carried across calls; read anew after a compaction)."""
        with self._carry:
            current = self._current(log)
            compacted = self._compact(current.view, current.places, current.conv)
            if compacted is not None:
                self._carried = None  # the log's view changes with what is appended
        return compacted

    def _fitted(self, log: list[Any], items: list[Any]) -> list[Any]:
        """``items`` (the view of ``log``), or when they are over the budget, ``items`` fitted
        (results cleared): the carried items are fitted in their place (converted once across
        calls), each unchanged one given back as read from ``log`` this call."""
        held: list[Any] | None = None
        if self._carry.acquire(blocking=False):
            try:
                current = self._current(log)
                tokens = current.conv.tokens
                held = list(current.view) if len(current.view) == len(items) else None
            finally:
                self._carry.release()
        else:  # a compaction is running on the carried view: counted apart
            dicts = [_item(x, i) for i, x in enumerate(items)]
            tokens = Conversation(dicts, format="responses", encoding=self.budget.encoding).tokens
        if tokens <= self.limit:
            return items
        if held is None:
            return self._fitter.fit(items, self.budget, None, (), self._on_event)
        fresh = {id(h): x for h, x in zip(held, items, strict=True)}
        return [fresh.get(id(x), x) for x in self._fitter.fit(held, self.budget, None, (), self._on_event)]

    def _compact(self, items: list[Any], places: list[int | None], conv: Conversation) -> list[Any] | None:
        """What to append for ``items`` (the view; ``places``: where each is in the log, None
        for one that is not there as it is; ``conv``: their conversation): the ladder's output
        when they are over the budget and it summarized or dropped messages (the note, then the
        items it changed; the note naming where the items it kept are), else None."""
        if conv.tokens <= self.limit:
            return None
        result = self.compactor.compact(conv, budget=max(1, int(self.limit * self.compact_to)))
        summarized = result.summary is not None and result.summary_in_output()
        if not summarized and "dropped" not in result.fates():
            return None  # results cut or cleared only: get_items does that on reading
        # Each message of the conversation stands for a run of items (an assistant turn: its
        # reasoning and calls); the export gives them back one for one, in order.
        spans: list[tuple[int, int]] = []
        at = 0
        for exported in conv._export_each():
            spans.append((at, at + len(exported)))
            at += len(exported)
        if at != len(items):
            raise CompactionError(f"{len(items)} stored items read back as {at} Responses items: nothing was compacted")
        out: list[tuple[int | None, Any]] = []
        for i, exported in enumerate(result.conversation._export_each()):
            source = result.provenance[i]
            origin = (result.origins or [])[i]
            if source is not None:
                lo, hi = spans[source]
                out.extend((places[j], _as_note(items[j], places[j] is None)) for j in range(lo, hi))
            elif origin is not None and (pairs := paired(items[slice(*spans[origin])], exported)) is not None:
                lo, _ = spans[origin]
                for k, new in pairs:
                    item = _rebuild(items[lo + k], [(0, new)])
                    place = places[lo + k]
                    out.append((place, item) if item is items[lo + k] else (None, _as_note(item, place is None)))
            else:
                out.extend((None, _as_note(x, origin is None)) for x in exported)
        with self._count:
            self.compactions += 1
            self.summaries += summarized
        return _batch(out)

    async def pop_item(self) -> Any:
        """The last item, removed; None when none was added since the last compaction (what was
        compacted, and what its note names, stays in the log)."""
        log = await self.session.get_items()
        _, _, new_from, _ = _read(log)
        if len(log) <= new_from:
            return None
        self._carried = None
        return await self.session.pop_item()

    async def clear_session(self) -> None:
        """Clear the wrapped session: every item, the compacted ones too."""
        self._carried = None
        await self.session.clear_session()


def _check_session(session: Any, budget: Any) -> None:
    """Raise when ``session`` is not an SDK session (a bare id, the arguments swapped...)."""
    needed = ("session_id", "get_items", "add_items", "pop_item", "clear_session")
    if all(hasattr(session, name) for name in needed):
        return
    hint = ""
    if isinstance(session, str):
        hint = f"; to keep the items in SQLite: CompactingSession(SQLiteSession({session!r}, 'chat.db'), {budget!r})"
    raise ArgumentTypeError(
        "CompactingSession(session, budget): session must be an Agents SDK session (SQLiteSession, RedisSession, "
        f"... anything with session_id, get_items, add_items, pop_item, clear_session), got "
        f"{type(session).__name__}{hint}"
    )


def _as_note(item: Any, written: bool) -> Any:
    """``item`` marked as a note (:func:`~agentcontext.integrations._agents_items.with_mark`)
    when the library ``written`` it (the ladder's summary, or the view's note: the only item of
    the view with no place in the log) and it reads as one; else ``item`` as it is."""
    content = content_of(item)
    if written and role_of(item) == "user" and isinstance(content, str) and content.startswith(SUMMARY_MARKER):
        return with_mark(_item(item, 0), True)
    return item


def _batch(out: list[tuple[int | None, Any]]) -> list[Any]:
    """What a compaction appends for its output ``out`` (each item with its log place, None
    when it is not in the log as it is): its note (the summary, the earlier note kept, or one
    made here on what was dropped; each carries the mark a user's message cannot) ending with
    where the items are, then the items not in the log (unmarked: only the note is one)."""
    first = next((k for k, (_, x) in enumerate(out) if not is_system(x)), len(out))
    if first == len(out) or not marked(out[first][1]):
        dropped = (
            f"{SUMMARY_MARKER}: old messages were dropped to fit the context window; the session log keeps "
            "the originals.]"
        )
        out.insert(first, (None, with_mark({"role": "user", "content": dropped}, True)))
    out = [(place, with_mark(x, False) if k != first and marked(x) else x) for k, (place, x) in enumerate(out)]
    note_item = out[first][1]
    tokens: list[str] = []
    appended: list[Any] = []
    for k, (place, x) in enumerate(out):
        if k == first:
            tokens.append("N")
        elif place is None:
            appended.append(x)
            if tokens and tokens[-1].startswith("+"):
                tokens[-1] = f"+{int(tokens[-1][1:]) + 1}"
            else:
                tokens.append("+1")
        else:
            lo, _, hi = tokens[-1].partition("-") if tokens else ("", "", "")
            if lo.isdigit() and int(hi or lo) + 1 == place:
                tokens[-1] = f"{lo}-{place}"
            else:
                tokens.append(str(place))
    note = with_mark(
        {**note_item, "content": f"{content_of(note_item)}\n[agentcontext view: {' '.join(tokens)}]"}, True
    )
    return [note, *appended]


def _read(log: list[Any]) -> tuple[list[Any], list[int | None], int, int | None]:
    """The view of ``log``, its places, where the items added since the last compaction start,
    and the place of the note the view shows without its last line (None when there is none)."""
    for k in range(len(log) - 1, -1, -1):
        if not is_note(log[k]):
            continue
        content = content_of(log[k])
        found = view_places(content, k)
        if found is None:
            continue  # a user's message that reads as a note without the mark
        view: list[Any] = []
        places: list[int | None] = []
        at = k + 1
        for token in found[0]:
            if token == "N":
                view.append(with_mark({**_item(log[k], k), "content": content[: found[1]]}, False))
                places.append(None)
            elif token.startswith("+"):
                n = int(token[1:])
                view.extend(log[at : at + n])
                places.extend(range(at, min(at + n, len(log))))  # (those the log still holds)
                at += n
            else:
                lo, _, hi = token.partition("-")
                view.extend(log[int(lo) : int(hi or lo) + 1])
                places.extend(range(int(lo), min(int(hi or lo) + 1, len(log))))
        view.extend(log[at:])
        places.extend(range(at, len(log)))
        return view, places, at, k
    return log, list(range(len(log))), 0, None
