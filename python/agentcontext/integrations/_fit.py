"""The part every adapter shares: fit a framework's own message objects into a budget.

An adapter turns each of its objects into one or more OpenAI Chat (or Responses) dicts, each
marked with where it came from; :func:`agentcontext.trim_messages` fits the dicts (clearing old
tool results, keeping the system messages, the latest user request and the longest recent suffix,
never splitting a tool call from its result); each dict that comes back is mapped to the object it
came from. A dict that is unchanged gives back the caller's own object (ids, metadata, usage
kept); a changed one (a cleared result, a cut request) is rebuilt by the adapter from the original
with the new content only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypeVar, cast

from agentcontext import _checks
from agentcontext.errors import ArgumentTypeError, BudgetError, OptionError, UnknownModelError
from agentcontext.integrations._converted import Converted, _from_scratch, marks, source
from agentcontext.integrations._cut import cut_oversized
from agentcontext.integrations._mapped import Made, _Maker, _map_back
from agentcontext.observe.compaction import fits_observed, observed_fit
from agentcontext.types import Encoding

#: The formats the adapters fit their dicts in (never Anthropic: its system is apart).
ListFormat: TypeAlias = Literal["openai", "responses", "jsonl", "auto"]

T = TypeVar("T")


#: From this many messages on, the async adapters fit off the event loop (in a worker thread; the
#: token counting there releases the GIL), so other tasks keep running meanwhile.
OFF_LOOP_MESSAGES = 256

#: How the marker of a cut oversized result says to get the original back: by its tool call id
#: (view-only adapters: the framework's history keeps it whole under that id), or that it is not
#: stored (adapters that rewrite the history).
RecallIds: TypeAlias = Literal["call_id", "none"]


@dataclass(frozen=True)
class Budget:
    """What every adapter fits the model input into: ``max_tokens`` in all, ``reserved_output``
    and ``safety_margin`` kept free; old tool results are cleared first (``clear``) except in the
    last ``recent_messages`` messages and the last ``recent_tools`` tool calls (the arguments of
    :func:`agentcontext.trim_messages`). Counts are exact for ``o200k_base``/``cl100k_base`` and
    memoized across calls (a list that grew by one message costs one count).

    Every adapter takes ``budget: int | Budget`` first: an int ``n`` is ``Budget(n)``, the input
    budget with the default options and no room reserved. :meth:`for_model` makes one from a
    model's context window (``Budget.for_model("gpt-4.1")``), with that model's counter;
    ``clear_tool_inputs`` also clears the arguments of old tool calls."""

    max_tokens: int
    encoding: Encoding = "o200k_base"
    clear: bool = True
    recent_messages: int = 12
    recent_tools: int = 3
    clear_at_least: int = 0
    reserved_output: int = 0
    safety_margin: int = 0
    model: str | None = None
    """The model the budget was made for (:meth:`for_model`), for the record."""
    clear_tool_inputs: bool = False

    @classmethod
    def for_model(
        cls,
        model: str,
        *,
        fraction: float = 0.75,
        windows: Mapping[str, Any] | None = None,
        encoding: Encoding | None = None,
        **options: Any,
    ) -> Budget:
        """A budget of ``fraction`` of ``model``'s context window, or of its input limit where
        the API has one apart (GPT-5: 272,000 of 400,000) (LiteLLM's ``trim_ratio``,
        0.75 by default, leaving room for the answer and the tools), counted with the model's
        encoding (:func:`agentcontext.budgets.encoding_for_model`: exact for OpenAI models, the
        heuristic for Claude and Gemini) unless ``encoding`` is given. ``windows`` maps names or
        prefixes to windows (ints or :class:`~agentcontext.budgets.ModelWindow`) ahead of the
        table; ``options`` are the other fields (``reserved_output``, ``recent_tools``, ...).

        Raises:
            UnknownModelError: the model is neither in ``windows`` nor in the table; the message
                names the closest known models.
            OptionError: ``fraction`` outside (0, 1] or a share of the window under one token,
                or a field out of range.
            ArgumentTypeError: an option that is not a field (``recent_tool=``), naming the
                closest.
        """
        from agentcontext.budgets.windows import model_window  # (lazy: keeps the adapters light)

        share = _checks.number("fraction", fraction, high=1.0, low_open=True)
        _check_options(options)
        try:
            entry = model_window(model, windows=windows)
        except UnknownModelError as exc:
            # (The table's hint names the providers' context_window=, which this method has not.)
            close = f" (closest known: {', '.join(exc.close_matches)})" if exc.close_matches else ""
            raise UnknownModelError(
                f"unknown model {model!r}{close}: pass its window, Budget.for_model({model!r}, "
                f"windows={{{model!r}: tokens}}), or a budget, Budget(tokens), or add it with "
                "agentcontext.budgets.register_model",
                exc.model,
                exc.close_matches,
            ) from None
        # (LiteLLM's trim takes its share of the model's input limit: the window, or less where
        # the API limits the input apart, as for GPT-5.)
        window = entry.max_input_tokens or entry.context_window
        max_tokens = int(window * share)
        if max_tokens == 0:
            raise OptionError(f"fraction {fraction!r} of the window of {model!r} ({window} tokens) is 0 tokens")
        return cls(
            max_tokens=max_tokens,
            encoding=entry.encoding if encoding is None else encoding,
            model=model,
            **options,
        )

    def __post_init__(self) -> None:
        # (No input fits in 0 tokens: refused here, not in the first model call.)
        _checks.count("max_tokens", self.max_tokens, minimum=1)
        for name in ("recent_messages", "recent_tools", "clear_at_least", "reserved_output", "safety_margin"):
            _checks.count(name, getattr(self, name))
        for name in ("clear", "clear_tool_inputs"):
            _checks.flag(name, getattr(self, name))
        kept_free = self.reserved_output + self.safety_margin
        if kept_free and kept_free >= self.max_tokens:
            # (Every call would fail: refused here, not in the first model call.)
            raise OptionError(
                f"reserved_output ({self.reserved_output}) and safety_margin ({self.safety_margin}) leave "
                f"no room for the input in max_tokens ({self.max_tokens}): raise max_tokens or lower them"
            )
        if self.model is not None and not isinstance(self.model, str):
            raise ArgumentTypeError(f"model must be a model name (str) or None, got {type(self.model).__name__}")
        from agentcontext._core import count_tokens

        # An unknown encoding is an OptionError here, not inside the first model call.
        count_tokens("", encoding=self.encoding)

    @property
    def limit(self) -> int:
        """The most tokens the model input may take: ``max_tokens`` less the room kept free."""
        return max(0, self.max_tokens - self.reserved_output - self.safety_margin)

    def fit_dicts(
        self, dicts: list[dict[str, Any]], format: ListFormat = "auto", *, beside: int = 0, recall_ids: bool = True
    ) -> list[dict[str, Any]]:
        """``dicts`` fitted by :func:`agentcontext.trim_messages` with these options, ``beside``
        more tokens kept free (what the model receives apart from the messages); with
        ``recall_ids=False`` the placeholders of cleared results and arguments say that the
        original is not stored (for a caller whose fitted list replaces the one it was given).

        Raises:
            OptionError: ``beside`` negative or over the 64-bit range (and what
                :func:`agentcontext.trim_messages` raises).
        """
        from agentcontext._core import trim_messages

        _checks.count("beside", beside)

        options = self._trim_options(beside, recall_ids)
        fitted: list[dict[str, Any]] = trim_messages(
            dicts, self.max_tokens, format=format, encoding=self.encoding, **options
        )
        return fitted

    def _trim_options(self, beside: int = 0, recall_ids: bool = True) -> dict[str, Any]:
        """The keyword options of a trim with this budget (``trim_messages`` and the adapters'
        kept trimmer take the same), ``beside`` more tokens kept free, ``recall_ids`` as
        ``trim_messages`` takes it."""
        return {
            "clear": self.clear,
            "recent_messages": self.recent_messages,
            "recent_tools": self.recent_tools,
            "clear_at_least": self.clear_at_least,
            # (A sum over the core's range is refused as what it is: over the budget.)
            "reserved_output": min(self.reserved_output + beside, _checks.MAX_COUNT),
            "safety_margin": self.safety_margin,
            "clear_tool_inputs": self.clear_tool_inputs,
            "recall_ids": recall_ids,
        }


def _typed_init(init: Callable[..., None]) -> Callable[..., None]:
    """The dataclass's ``__init__`` of :class:`Budget` with its wrong calls (a misspelt keyword,
    ``max_tokens`` missing or given twice, too many positional arguments) refused as
    :class:`ArgumentTypeError` naming the closest field, not Python's bare ``TypeError``."""
    import functools

    fields = list(Budget.__dataclass_fields__)
    known = frozenset(fields)

    @functools.wraps(init)
    def __init__(self: Budget, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(fields) or not known.issuperset(kwargs) or ("max_tokens" in kwargs) == bool(args):
            _refuse_call(fields, args, kwargs)
        init(self, *args, **kwargs)

    return __init__


def _refuse_call(fields: list[str], args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    """Raise :class:`ArgumentTypeError` for a call ``Budget(*args, **kwargs)`` that the
    dataclass's ``__init__`` refuses."""
    import difflib

    if len(args) > len(fields):
        raise ArgumentTypeError(f"Budget takes at most {len(fields)} positional arguments, got {len(args)}")
    for name in kwargs:
        if name not in fields:
            close = difflib.get_close_matches(name, fields, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ArgumentTypeError(f"Budget got an unknown option {name!r}{hint}: it takes {', '.join(fields)}")
    for name in fields[: len(args)]:
        if name in kwargs:
            raise ArgumentTypeError(f"Budget got {name} twice: as a positional argument and as {name}=")
    raise ArgumentTypeError("Budget needs max_tokens: the input budget in tokens (Budget(8000))")


Budget.__init__ = _typed_init(Budget.__init__)  # type: ignore[method-assign]


def _check_options(options: Mapping[str, Any]) -> None:
    """Raise :class:`ArgumentTypeError` for a name in ``options`` that is not a field
    :meth:`Budget.for_model` passes on (a misspelt one: the closest named)."""
    import difflib

    known = [f for f in Budget.__dataclass_fields__ if f not in ("max_tokens", "encoding", "model")]
    for name in options:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            if name == "max_tokens":
                hint = " (a share of the window is fraction=; a number of tokens is Budget(max_tokens, ...))"
            raise ArgumentTypeError(
                f"Budget.for_model got an unknown option {name!r}{hint}: it takes {', '.join(known)}"
            )


def as_budget(budget: int | Budget) -> Budget:
    """``budget`` as a :class:`Budget`: an int is ``Budget(budget)``.

    Raises:
        ArgumentTypeError: ``budget`` is neither an int nor a :class:`Budget` (a model name is told
            to use :meth:`Budget.for_model`).
        OptionError: an int under 1 (no input fits in 0 tokens), or one over the 64-bit range.
    """
    if isinstance(budget, Budget):
        return budget
    held = _INT_BUDGETS.get(budget) if type(budget) is int else None
    if held is not None:
        return held
    if isinstance(budget, str) and not budget.strip().isdigit():
        raise ArgumentTypeError(
            f"budget must be a positive integer or a Budget, got str {budget!r}: for a model's window "
            f"pass agentcontext.Budget.for_model({budget!r})"
        )
    if isinstance(budget, type) and issubclass(budget, Budget):
        raise ArgumentTypeError(
            "budget must be a positive integer or a Budget, got the class Budget: call it, Budget(...)"
        )
    made = Budget(_checks.count("budget", budget, minimum=1))
    if len(_INT_BUDGETS) >= 64:
        _INT_BUDGETS.clear()
    _INT_BUDGETS[made.max_tokens] = made
    return made


def factory_budget(factory: str, budget: object, given: Callable[[object], bool], wiring: str) -> Budget:
    """``budget``, given to the adapter factory ``factory``, as a :class:`Budget`; when ``given(budget)``
    says it is what the framework passes the hook itself (the factory was given uncalled in the
    hook's place), an :class:`ArgumentTypeError` naming the fix, ``wiring`` (how to call it)."""
    if not isinstance(budget, int | Budget) and given(budget):
        raise ArgumentTypeError(f"{factory} makes the hook: call it, {wiring}, not the factory itself")
    return as_budget(budget)  # type: ignore[arg-type]


#: The budgets made for ints (a Budget is frozen: one per int serves every call given that int).
_INT_BUDGETS: dict[int, Budget] = {}


def fit(
    objects: Sequence[T],
    budget: Budget,
    to_dicts: Callable[[T, int], list[dict[str, Any]]],
    rebuild: Callable[[T, list[tuple[int, dict[str, Any] | None]]], T | None],
    *,
    format: ListFormat = "auto",
    beside: int = 0,
    cache: Converted | None = None,
    recall: RecallIds = "call_id",
    made: Made[T] | None = None,
) -> list[T]:
    """Fit ``objects`` into ``budget``, ``beside`` tokens of it taken by what the model receives
    apart from them (a system prompt or tool schemas the framework adds).

    ``to_dicts(obj, i)`` gives the dicts ``obj`` (at ``i``) stands for (most objects: one); with a
    ``cache`` an object converted by an earlier call is not converted again. ``rebuild(obj,
    parts)`` is called for an object some of whose dicts were changed or dropped; ``parts`` lists
    its dicts that were kept, by position, each with the changed dict (or None when unchanged);
    it returns the object to send, or None to leave it out. Objects whose dicts all come back
    unchanged are returned as they are, and so are objects that stand for no dict. When the
    newest round alone is over the budget its long tool results are cut head + marker + tail
    (:func:`cut_oversized`, ``recall`` naming how the marker says to get the original back)
    rather than the call failing. A list no provider accepts is repaired by the fit
    (:func:`agentcontext.trim_messages`): a dict that came from no object (the result given to a
    call whose result is missing) or that changed role (a result whose call is missing, sent as a
    user message) is made into an object by ``made(dict, names)`` (``names``: each call id's tool
    name in the fitted list); without ``made`` it is sent as the dict.

    Raises:
        OptionError: ``beside`` not a non-negative int, ``recall`` neither ``"call_id"`` nor
            ``"none"``.
        ArgumentTypeError: ``cache`` not a :class:`Converted`.
    """
    _checks.count("beside", beside)
    if recall not in ("call_id", "none"):
        raise OptionError(f'recall must be "call_id" or "none", got {recall!r}')
    if cache is not None and not isinstance(cache, Converted):
        raise ArgumentTypeError(
            f"cache must be a memo made by the adapter's converted() (e.g. "
            f"agentcontext.integrations.langchain.converted()), got {type(cache).__name__}"
        )
    dicts, owners, where = _marked(objects, to_dicts, cache)
    if cache is not None and cache.prints is not None and cache.trims and format == "openai" and not fits_observed():
        kept = _trimmed(objects, dicts, budget, beside, rebuild, cache, recall == "call_id")
        if kept is not None:
            return kept
    out = fit_or_cut(dicts, budget, format, beside=beside, recall=recall)
    maker = _Maker(made, out, lambda mark: dicts[owners[where[source(mark)[0]]][source(mark)[1]]])
    return _map_back(objects, dicts, owners, out, rebuild, where, cache, maker)


def _trimmed(
    objects: Sequence[T],
    dicts: list[dict[str, Any]],
    budget: Budget,
    beside: int,
    rebuild: Callable[[T, list[tuple[int, dict[str, Any] | None]]], T | None],
    cache: Converted,
    recall_ids: bool,
) -> list[T] | None:
    """:func:`fit` of one-dict ``objects`` through the cache's :class:`~agentcontext._core._Trimmer`
    (what the last call read is not read again; the kept objects come back mapped); None when it
    does not apply (the general path then fits, cuts an oversized last round or raises)."""
    trimmer = cache.trimmer(budget.encoding, objects)
    try:
        got = trimmer.trim(
            dicts,
            objects if type(objects) is list else list(objects),
            budget.max_tokens,
            **budget._trim_options(beside, recall_ids),
        )
    except BudgetError:
        return None
    if got is None:
        return None
    out, todo = got
    cache._last_out = None
    if not todo:
        return cast("list[T]", out)
    # Changed copies seen for the first time (a result cleared, the request cut): mapped as
    # :func:`~agentcontext.integrations._mapped._map_back_one` maps them, and what each became told to the trimmer.
    dropped = False
    for pos, i in todo:
        d = out[pos]
        obj = objects[i]
        new = obj if d == dicts[i] else cache.rebuilt_one(obj, d, rebuild)
        if new is None:
            dropped = True
        else:
            trimmer.remember(i, d, new)
            if new is not obj:
                cache.given(i, obj)
        out[pos] = new
    return [o for o in out if o is not None] if dropped else cast("list[T]", out)


def _marked(
    objects: Sequence[T], to_dicts: Callable[[T, int], list[dict[str, Any]]], cache: Converted | None
) -> tuple[list[dict[str, Any]], list[list[int]], dict[int, int]]:
    """The marked dicts ``objects`` stand for, which dicts each object owns (by position), and
    each mark's object. With a ``cache`` whose last call's objects begin this list (the same
    objects, their keys unchanged: an agent's history that grew), that call's dicts are taken as
    they are and only the new objects are looked at."""
    start, dicts, owners, where, keys = cache.resume(objects) if cache is not None else _from_scratch()
    held_by = cache._entries if cache is not None else {}
    key_of = cache.key if cache is not None else None
    for i in range(start, len(objects)):
        obj = objects[i]
        if key_of is None:
            serial, marked = i, None
        else:
            # Converted.entry, inlined: this loop runs once per new message and call.
            key = key_of(obj)
            keys.append(key)
            held = held_by.get(id(obj))
            if held is not None and held[0] is obj and held[1] == key:
                serial, marked = held[2], held[3]
            else:
                serial, marked = cache._convert(obj, i, key, to_dicts)  # type: ignore[union-attr]
        if marked is None or serial in where:
            # Not cached, or the same object twice in the list: fresh dicts, marked by position.
            serial = -1 - i
            marked = marks(serial, to_dicts(obj, i))
        where[serial] = i
        if len(marked) == 1:
            owners.append([len(dicts)])
            dicts.append(marked[0])
        else:
            owners.append(list(range(len(dicts), len(dicts) + len(marked))))
            dicts += marked
    if cache is not None:
        cache.settle(objects)
        cache.remember(objects, keys, dicts, owners, where, start)
    return dicts, owners, where


def fit_or_cut(
    dicts: list[dict[str, Any]],
    budget: Budget,
    format: ListFormat = "auto",
    *,
    beside: int = 0,
    recall: RecallIds = "call_id",
) -> list[dict[str, Any]]:
    """:meth:`Budget.fit_dicts`, and when the newest round alone is over the budget, the same fit
    of ``dicts`` with its long tool results cut (:func:`cut_oversized`); the
    :class:`~agentcontext.errors.BudgetError` again when nothing can be cut."""
    return observed_fit(
        dicts,
        format,
        budget.encoding,
        budget.limit - beside,
        lambda: _fit_or_cut(dicts, budget, format, beside, recall),
    )


def _fit_or_cut(
    dicts: list[dict[str, Any]], budget: Budget, format: ListFormat, beside: int, recall: RecallIds
) -> list[dict[str, Any]]:
    recall_ids = recall == "call_id"
    try:
        return budget.fit_dicts(dicts, format, beside=beside, recall_ids=recall_ids)
    except BudgetError:
        cut = cut_oversized(dicts, budget, beside=beside, recall=recall)
        if cut is None:
            raise
    try:
        return budget.fit_dicts(cut, format, beside=beside, recall_ids=recall_ids)
    except BudgetError as error:
        # The cut counts the newest round as the list has it; the fit's repair may send it longer
        # (a result whose call is missing becomes a user message under a note): cut once more,
        # the note's tokens set aside.
        over = error.needed - budget.max_tokens
        again = cut_oversized(dicts, budget, beside=beside + over, recall=recall) if over > 0 else None
        if again is None:
            raise
        return budget.fit_dicts(again, format, beside=beside, recall_ids=recall_ids)


async def off_loop(size: int, work: Callable[[], T]) -> T:
    """``work()``, in a worker thread when there are ``size`` >= :data:`OFF_LOOP_MESSAGES`
    messages (so the event loop is not held up), else right here."""
    if size >= OFF_LOOP_MESSAGES:
        return await asyncio.to_thread(work)
    return work()
