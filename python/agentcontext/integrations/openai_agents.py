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
or a cut request is a copy with only ``output`` or ``content`` replaced. The instructions are
counted in and left as they are. :func:`input_filter` changes only what the model receives this
call. :class:`CompactingSession` keeps the wrapped session as a lossless, append-only log and,
after each ``add_items`` that brings the items since its last compaction over the budget,
appends the compaction ladder's output (a summary, then the items kept): its ``get_items`` is
that compacted history. Tested with openai-agents 0.24 (``pip install
'agentcontext[openai-agents]'``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from agentcontext._checks import number
from agentcontext._core import Conversation
from agentcontext.compaction import Compactor
from agentcontext.compaction.summarize import SUMMARY_MARKER, Summarizer
from agentcontext.errors import CompactionError, MissingExtraError, OptionError
from agentcontext.integrations._fit import Budget, as_budget, as_dict, fit, off_loop
from agentcontext.integrations._ladder import make_compactor

try:
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise MissingExtraError(
        "agentcontext.integrations.openai_agents needs the OpenAI Agents SDK: pip install 'agentcontext[openai-agents]'"
    ) from exc

__all__ = ["CompactingSession", "fit_items", "input_filter"]

#: Stands for the instructions in the list that is fitted (they count, and are always kept).
_INSTRUCTIONS = object()


def _item(item: Any, index: int) -> dict[str, Any]:
    return as_dict(
        item,
        index,
        "is not a Responses input item (agentcontext.integrations.openai_agents reads dicts and the SDK's "
        "pydantic items)",
    )


def _rebuild(item: Any, parts: list[tuple[int, dict[str, Any] | None]]) -> Any:
    changed = parts[0][1]
    if changed is None:
        return item
    base = _item(item, 0)
    update = {k: changed[k] for k in ("output", "content") if k in changed and changed[k] != base.get(k)}
    return {**base, **update} if update else item


def fit_items(items: Sequence[Any], budget: int | Budget, instructions: str | None = None) -> list[Any]:
    """Responses ``items`` fitted into ``budget`` (an int is the input budget, a
    :class:`~agentcontext.Budget` sets the options too; ``instructions`` counted in): the caller's
    own items where unchanged."""
    fitted_into = as_budget(budget)
    objects: list[Any] = [*([_INSTRUCTIONS] if instructions else []), *items]

    def to_dicts(obj: Any, i: int) -> list[dict[str, Any]]:
        if obj is _INSTRUCTIONS:
            return [{"type": "message", "role": "system", "content": instructions}]
        return [_item(obj, i - (1 if instructions else 0))]

    return [o for o in fit(objects, fitted_into, to_dicts, _rebuild, format="responses") if o is not _INSTRUCTIONS]


def input_filter(budget: int | Budget) -> Callable[[CallModelData[Any]], Awaitable[ModelInputData]]:
    """A ``call_model_input_filter`` fitting into ``budget`` (as for :func:`fit_items`; async:
    large lists are fitted off the event loop)."""
    fitted_into = as_budget(budget)

    async def call_model_input_filter(data: CallModelData[Any]) -> ModelInputData:
        model_data = data.model_data
        items = list(model_data.input)
        fitted = await off_loop(len(items), lambda: fit_items(items, fitted_into, model_data.instructions))
        return ModelInputData(input=fitted, instructions=model_data.instructions)

    return call_model_input_filter


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
    compacted`` (the summary, or a note on what was dropped), then the items kept — the same
    items, all fields, where the ladder changed nothing; copies with only ``output`` or
    ``content`` replaced where it cut or cleared one. When cutting or clearing results was enough,
    nothing is appended (copying every item kept at each such run would grow the log by the
    whole history each time): :meth:`get_items` fits the items on reading instead.

    :meth:`get_items` returns the items from the last such note on (all of them before the first
    compaction), fitted into the budget (old results cleared, as :func:`fit_items` does) when
    they are over it; what was compacted away stays in the wrapped session (``session.get_items()``
    on it gives every item, in order) and, with a Compactor that has a store, under the recall
    ids its markers name.

    :attr:`compactions` counts the compactions appended, :attr:`summaries` those with a summary.
    Two writers sharing one session id must not use it at once (each reads, then appends)."""

    def __init__(
        self,
        session: Any,
        budget: int | Budget,
        *,
        compaction: bool | Compactor = True,
        summarizer: Summarizer | None = None,
        compact_to: float = 0.6,
    ) -> None:
        self.session = session
        self.session_id: str = session.session_id
        self.session_settings = getattr(session, "session_settings", None)
        self.budget = as_budget(budget)
        compactor = make_compactor(compaction, summarizer, self.budget)
        if compactor is None:
            raise OptionError("CompactingSession compacts: compaction must be True or a Compactor")
        self.compactor = compactor
        self.compact_to = number("compact_to", compact_to, high=1.0, low_open=True)
        #: How many compactions were appended to the log, and how many of them hold a summary.
        self.compactions = 0
        self.summaries = 0
        self._count = threading.Lock()

    @property
    def limit(self) -> int:
        """The most tokens the items may take (the budget's ``max_tokens`` less the room kept free)."""
        b = self.budget
        return max(1, b.max_tokens - b.reserved_output - b.safety_margin)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The items since the last compaction, fitted (the latest ``limit`` of them)."""
        current = _since_compaction(await self.session.get_items())
        items = await off_loop(len(current), lambda: self._fitted(current))
        if limit is not None:
            return items[-limit:] if limit > 0 else []
        return items

    async def add_items(self, items: list[Any]) -> None:
        """Append ``items``; when the items since the last compaction no longer fit, append the
        ladder's output after them (a summary or note, then the items kept)."""
        await self.session.add_items(items)
        current = _since_compaction(await self.session.get_items())
        compacted = await asyncio.to_thread(self._compact, current)
        if compacted is not None:
            await self.session.add_items(compacted)

    def _fitted(self, items: list[Any]) -> list[Any]:
        """``items``, or when they are over the budget, ``items`` fitted (results cleared)."""
        dicts = [_item(x, i) for i, x in enumerate(items)]
        if Conversation(dicts, format="responses", encoding=self.budget.encoding).tokens <= self.limit:
            return items
        return fit_items(items, self.budget)

    def _compact(self, items: list[Any]) -> list[Any] | None:
        """What to append for ``items``: the ladder's output when they are over the budget and it
        summarized or dropped messages, else None."""
        dicts = [_item(x, i) for i, x in enumerate(items)]
        conv = Conversation(dicts, format="responses", encoding=self.budget.encoding)
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
        out: list[Any] = []
        for i, exported in enumerate(result.conversation._export_each()):
            source = result.provenance[i]
            origin = (result.origins or [])[i]
            if source is not None:
                lo, hi = spans[source]
                out.extend(items[lo:hi])
            elif origin is not None and spans[origin][1] - spans[origin][0] == len(exported):
                lo, _ = spans[origin]
                out.extend(_rebuild(items[lo + k], [(0, new)]) for k, new in enumerate(exported))
            else:
                out.extend(exported)
        with self._count:
            self.compactions += 1
            self.summaries += summarized
        first = next((x for x in out if not _is_system(x)), None)
        if first is None or not _is_note(first):
            note = (
                f"{SUMMARY_MARKER}: old messages were dropped to fit the context window; the session log keeps "
                "the originals.]"
            )
            at = next((k for k, x in enumerate(out) if not _is_system(x)), len(out))
            out.insert(at, {"role": "user", "content": note})
        return out

    async def pop_item(self) -> Any:
        """The last item, removed; None when none is left since the last compaction but its note
        (what was compacted stays in the log)."""
        current = _since_compaction(await self.session.get_items())
        if not current or (len(current) == 1 and _is_note(current[0])):
            return None
        return await self.session.pop_item()

    async def clear_session(self) -> None:
        """Clear the wrapped session: every item, the compacted ones too."""
        await self.session.clear_session()


def _content(item: Any) -> Any:
    return item.get("content") if isinstance(item, Mapping) else getattr(item, "content", None)


def _role(item: Any) -> Any:
    return item.get("role") if isinstance(item, Mapping) else getattr(item, "role", None)


def _is_system(item: Any) -> bool:
    return _role(item) in ("system", "developer")


def _is_note(item: Any) -> bool:
    """Whether ``item`` is a note a compaction wrote: a user item that opens with the summary
    marker (a summary, or the note on what was cut, cleared or dropped)."""
    content = _content(item)
    return _role(item) == "user" and isinstance(content, str) and content.startswith(SUMMARY_MARKER)


def _since_compaction(items: list[Any]) -> list[Any]:
    """``items`` from the last compaction's note on (its system items before it), or all."""
    for k in range(len(items) - 1, -1, -1):
        if _is_note(items[k]):
            start = k
            while start > 0 and _is_system(items[start - 1]):
                start -= 1
            return items[start:]
    return items
