"""The compaction ladder for the adapters that keep a summary (LangChain's middleware, the OpenAI
Agents session): the :class:`~agentcontext.Compactor` they run, from their arguments, and the
working set they carry from one call to the next (:class:`Carry`)."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from agentcontext._core import Conversation, _chat_tokens
from agentcontext.compaction import PRESETS, Compactor
from agentcontext.compaction.summarize import Summarizer
from agentcontext.errors import ArgumentTypeError, OptionError
from agentcontext.integrations._converted import Converted, CorePrints
from agentcontext.integrations._fit import Budget
from agentcontext.observe.emit import EventCallback, check_callback
from agentcontext.types import Encoding


def make_compactor(
    compaction: object, summarizer: Summarizer | None, budget: Budget, on_event: EventCallback | None = None
) -> Compactor | None:
    """The compactor for ``compaction``: None (off: False and no ``summarizer``), the given
    :class:`Compactor`, or (True, or a ``summarizer`` given) the ``openharness`` ladder with the
    budget's encoding, clearing and recent-message options and ``summarizer`` (default: offline).
    With ``on_event``, the compactor reports its compactions to it (a given one is copied).

    Raises:
        ArgumentTypeError: ``compaction`` or ``summarizer`` of the wrong type.
        OptionError: a summarizer beside a Compactor, or a Compactor counting with another encoding.
    """
    on_event = check_callback(on_event)
    if isinstance(compaction, Compactor):
        if summarizer is not None:
            raise OptionError("give the summarizer to the Compactor, not beside it")
        if compaction.policy.encoding != budget.encoding:
            raise OptionError(
                f"the Compactor counts with {compaction.policy.encoding}, the adapter with {budget.encoding}"
            )
        if on_event is None or compaction.on_event is on_event:
            return compaction
        compaction = copy.copy(compaction)
        compaction.on_event = on_event
        return compaction
    if not isinstance(compaction, bool):
        raise ArgumentTypeError(f"compaction must be True, False or a Compactor, got {type(compaction).__name__}")
    if summarizer is not None and not isinstance(summarizer, Summarizer):
        raise ArgumentTypeError(f"summarizer must have a summarize(request) method, got {type(summarizer).__name__}")
    if not compaction and summarizer is None:
        return None
    policy = replace(
        PRESETS["openharness"].compaction,
        encoding=budget.encoding,
        clear_tool_results=budget.clear,
        recent_messages=budget.recent_messages,
        recent_tools=budget.recent_tools,
        clear_at_least=budget.clear_at_least,
        clear_tool_inputs=budget.clear_tool_inputs,
    )
    return Compactor(policy, summarizer=summarizer, on_event=on_event)


class _Sources:
    """The history's messages a carried working set stands for, ``start:count`` (the ones it holds
    by reference, the ones a compaction kept or copied, the ones it dropped): each object at its
    place, and of each one the working set sends in any form its class and the fields its
    conversion reads too, as the fit's memo keeps them
    (:class:`~agentcontext.integrations._converted.CorePrints`), told unchanged in one pass
    (:meth:`hold`). Sent in some form: from ``since`` on, the ones its carried messages hold, and
    the ones of an id a carried message has (a copy the compaction cut or cleared keeps its
    message's id; a message without an id is always read). A message replaced by id or removed
    (another object at its place), or one sent in some form edited in place (``msg.content =
    ...``: a secret taken out of a result is taken out of its cut copy too), no longer holds: the
    history is read anew. Only a message the working set no longer sends at all (dropped, or
    summarized) is not read again when edited in place: nothing sent changes (the next compaction
    reads the state as it is)."""

    __slots__ = ("prints", "start")

    def __init__(self, prints: CorePrints, start: int) -> None:
        self.prints = prints
        self.start = start

    def keep(self, messages: Sequence[Any], since: int, base: Sequence[Any], kept: int = 0) -> bool:
        """Hold ``messages[start:]``, the first ``kept`` of them held already: the ones sent in some
        form (see the class) with their fields, the others by identity. False (nothing
        changed) when the first ``kept`` are not the ones held (another call of the thread kept
        its own messages since this one resumed: the caller holds them anew)."""
        part = self._part(messages)
        first = since - self.start
        # (What ``base`` holds, only where a message before ``since`` is kept anew.)
        refs, ids = ({id(m) for m in base}, {getattr(m, "id", None) for m in base}) if kept < first else (set(), set())

        def sent(k: int, m: Any) -> bool:
            mid = getattr(m, "id", None)
            return k >= first or id(m) in refs or not mid or mid in ids

        try:
            self.prints.keep_some(part, kept, sent)
        except ValueError:
            return False
        return True

    def hold(self, messages: Sequence[Any]) -> bool:
        """Whether ``messages`` holds each of those messages at its place, unchanged; if so, the
        messages after them are held too (with their fields: they come after ``since``)."""
        return self.prints.extend(self._part(messages))

    def __len__(self) -> int:
        """How many messages are held (from ``start`` on)."""
        return len(self.prints)

    def _part(self, messages: Sequence[Any]) -> list[Any]:
        if self.start == 0 and type(messages) is list:
            return messages  # (only read: no copy of a long history)
        part = messages[self.start :]
        return part if type(part) is list else list(part)


class Carry:
    """The working set a compacting adapter carried from its last call, per thread (keyed by the
    id of the history's first message): the messages it sends (the system message aside) as the
    messages a compaction left (``base``, held as a tuple: never the list a call sent) plus the
    history's messages from ``since``; how many of the history's messages they stand for, the id
    of the last one and their tokens. A call whose history still ends that prefix starts from
    them plus the new messages, as :class:`agentcontext.Session` does: only the new part is
    converted and counted, the list sent is made once, and the ladder runs over the working set,
    not the whole history. The history's messages the working set stands for (from where the
    kept summary ends) are held as :class:`_Sources`: a history holding another object at one of
    their places (a message replaced by id, as LangGraph's ``add_messages`` edits one, or removed;
    another conversation whose first message has the same id) or one of them edited in place is
    read anew, as on a first call. ``prints`` makes the fingerprints that hold them (what the
    adapter's conversion reads). At most ``threads`` are held."""

    def __init__(
        self, converted: Converted, encoding: Encoding, prints: Callable[[], CorePrints], threads: int = 256
    ) -> None:
        self.converted = converted
        self.encoding = encoding
        self.prints = prints
        self.threads = threads
        self._held: dict[str, tuple[int, str, tuple[Any, ...], int, int | None, _Sources]] = {}
        self._system: tuple[Any, Any, int] | None = None
        self._lock = threading.Lock()

    def tokens(self, objects: Sequence[Any], convert: Callable[[Any, int], list[dict[str, Any]]]) -> int:
        """The tokens of ``objects`` (their conversions memoized; plain Chat messages counted as
        the core's fast path reads them, the same count as a ``Conversation`` of them)."""
        entry = self.converted.entry
        dicts = [d for i, m in enumerate(objects) for d in entry(m, i, convert)[1]]
        if not dicts:
            return 0
        n = _chat_tokens(dicts, encoding=self.encoding)
        return n if n is not None else Conversation(dicts, format="openai", encoding=self.encoding).tokens

    def resume(self, view: Any, convert: Callable[[Any, int], list[dict[str, Any]]]) -> None:
        """Start ``view`` (its ``messages``, ``system``) from the carried working set when it holds
        (its ``body``, a new list, the ``carried`` messages and where the history's after them
        begin, and its ``tokens`` with ``system_tokens``; the history's new messages are held with
        the carried ones from then on: its ``extended``)."""
        messages = view.messages
        key = getattr(messages[0], "id", None) if messages else None
        held = self._held.get(key) if key else None
        if held is None:
            return
        count, last, base, since, tokens, sources = held
        if count > len(messages) or messages[count - 1].id != last or not sources.hold(messages):
            with self._lock:
                self._held.pop(key, None)  # type: ignore[arg-type]
            return
        view.body = [*base, *messages[since:]]
        view.carried = (base, since)
        view.new = len(messages) - count
        view.extended = sources
        if tokens is not None:
            system = view.system_tokens = self.system_tokens(view.system, convert)
            view.tokens = tokens + system + (self.tokens(messages[count:], convert) if count < len(messages) else 0)

    def system_tokens(self, system: Any, convert: Callable[[Any, int], list[dict[str, Any]]]) -> int:
        """The tokens of the system message ``system`` (None: 0), kept for the last one counted
        with a copy of its content (a list of parts changed in place is counted again)."""
        if system is None:
            return 0
        held = self._system
        if held is not None and held[0] is system and held[1] == system.content:
            return held[2]
        n = self.tokens([system], convert)
        content = system.content
        self._system = (system, copy.deepcopy(content) if isinstance(content, list) else content, n)
        return n

    def keep(self, view: Any, base: Sequence[Any], since: int, tokens: int | None, system_tokens: int) -> None:
        """Carry what a call sent, the system message aside: ``base`` (a tuple, or copied into one)
        then the history's messages from ``since`` (``tokens``: those of the whole call when
        known), for the thread of ``view``."""
        messages = view.messages
        key = getattr(messages[0], "id", None) if messages else None
        if not key or not messages[-1].id:
            return
        held = base if type(base) is tuple else tuple(base)
        was = self._held.get(key)
        sources: _Sources | None = None
        if was is not None and was[2] is held and was[3] == since:
            # (The same carried messages, after the same place: the call resumed from them, its
            # history's messages up to the carried count told unchanged. Its resume held the ones
            # after them too (see :meth:`resume`); else they are held now.)
            was_sources = was[5]
            start = was_sources.start
            extended = getattr(view, "extended", None) is was_sources and len(was_sources) == len(messages) - start
            if extended or was_sources.keep(messages, since, held, was[0] - start):
                sources = was_sources
        if sources is None:
            sources = _Sources(self.prints(), getattr(view, "start", 0))
            sources.keep(messages, since, held)
        with self._lock:
            if key not in self._held and len(self._held) >= self.threads:
                self._held.pop(next(iter(self._held)))
            body = None if tokens is None else tokens - system_tokens
            self._held[key] = (len(messages), messages[-1].id, held, since, body, sources)
