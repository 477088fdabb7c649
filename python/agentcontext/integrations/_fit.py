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
from typing import Any, Literal, TypeAlias, TypeVar

from agentcontext import _checks
from agentcontext.errors import InvalidMessageError
from agentcontext.types import Encoding

#: The formats the adapters fit their dicts in (never Anthropic: its system is apart).
ListFormat: TypeAlias = Literal["openai", "responses", "jsonl", "auto"]

T = TypeVar("T")

#: The key each dict carries back to its source (the library keeps keys it does not know).
MARK = "_agentcontext_source"

#: From this many messages on, the async adapters fit off the event loop (in a worker thread; the
#: token counting there releases the GIL), so other tasks keep running meanwhile.
OFF_LOOP_MESSAGES = 256


def as_dict(obj: Any, index: int, refusal: str) -> dict[str, Any]:
    """The JSON dict of a message or item: a dict as it is, a ``Mapping`` as a dict, a pydantic
    model (an object with ``model_dump``) as ``model_dump(mode="json", exclude_none=True)``.

    Raises:
        InvalidMessageError: anything else, naming its type, then ``refusal`` (what the adapter reads).
    """
    if isinstance(obj, dict):
        return obj
    if isinstance(obj, Mapping):
        return dict(obj)
    dump = getattr(obj, "model_dump", None)
    if callable(dump) and not isinstance(obj, type):
        out = dump(mode="json", exclude_none=True)
        if isinstance(out, dict):
            return out
    raise InvalidMessageError(
        f"message {index}: {type(obj).__module__}.{type(obj).__qualname__} {refusal}",
        index,
    )


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
        """A budget of ``fraction`` of ``model``'s context window (LiteLLM's ``trim_ratio``,
        0.75 by default, leaving room for the answer and the tools), counted with the model's
        encoding (:func:`agentcontext.budgets.encoding_for_model`: exact for OpenAI models, the
        heuristic for Claude and Gemini) unless ``encoding`` is given. ``windows`` maps names or
        prefixes to windows (ints or :class:`~agentcontext.budgets.ModelWindow`) ahead of the
        table; ``options`` are the other fields (``reserved_output``, ``recent_tools``, ...).

        Raises:
            UnknownModelError: the model is neither in ``windows`` nor in the table; the message
                names the closest known models.
            OptionError: ``fraction`` outside (0, 1], or a field out of range.
        """
        from agentcontext.budgets.windows import model_window  # (lazy: keeps the adapters light)

        share = _checks.number("fraction", fraction, high=1.0, low_open=True)
        entry = model_window(model, windows=windows)
        return cls(
            max_tokens=int(entry.context_window * share),
            encoding=entry.encoding if encoding is None else encoding,
            model=model,
            **options,
        )

    def __post_init__(self) -> None:
        _checks.count("max_tokens", self.max_tokens)
        for name in ("recent_messages", "recent_tools", "clear_at_least", "reserved_output", "safety_margin"):
            _checks.count(name, getattr(self, name))

    def fit_dicts(self, dicts: list[dict[str, Any]], format: ListFormat = "auto") -> list[dict[str, Any]]:
        from agentcontext._core import trim_messages

        return trim_messages(
            dicts,
            self.max_tokens,
            format=format,
            encoding=self.encoding,
            clear=self.clear,
            recent_messages=self.recent_messages,
            recent_tools=self.recent_tools,
            clear_at_least=self.clear_at_least,
            reserved_output=self.reserved_output,
            safety_margin=self.safety_margin,
            clear_tool_inputs=self.clear_tool_inputs,
        )


def as_budget(budget: int | Budget) -> Budget:
    """``budget`` as a :class:`Budget`: an int is ``Budget(budget)``.

    Raises:
        ArgumentTypeError: ``budget`` is neither an int nor a :class:`Budget`.
        OptionError: a negative int, or one over the 64-bit range.
    """
    if isinstance(budget, Budget):
        return budget
    return Budget(_checks.count("budget", budget))


def fit(
    objects: Sequence[T],
    budget: Budget,
    to_dicts: Callable[[T, int], list[dict[str, Any]]],
    rebuild: Callable[[T, list[tuple[int, dict[str, Any] | None]]], T | None],
    *,
    format: ListFormat = "auto",
) -> list[T]:
    """Fit ``objects`` into ``budget``.

    ``to_dicts(obj, i)`` gives the dicts ``obj`` (at ``i``) stands for (most objects: one). ``rebuild(obj,
    parts)`` is called for an object some of whose dicts were changed or dropped; ``parts`` lists
    its dicts that were kept, by position, each with the changed dict (or None when unchanged);
    it returns the object to send, or None to leave it out. Objects whose dicts all come back
    unchanged are returned as they are, and so are objects that stand for no dict.
    """
    dicts: list[dict[str, Any]] = []
    owners: list[list[int]] = []
    for i, obj in enumerate(objects):
        mine = []
        for k, d in enumerate(to_dicts(obj, i)):
            mine.append(len(dicts))
            dicts.append({**d, MARK: [i, k]})
        owners.append(mine)
    out = budget.fit_dicts(dicts, format)
    # Per object: its kept dicts, with the new content where changed.
    kept: dict[int, list[tuple[int, dict[str, Any] | None]]] = {}
    for d in out:
        i, k = d[MARK]
        original = dicts[owners[i][k]]
        changed = None if d is original or d == original else {key: v for key, v in d.items() if key != MARK}
        kept.setdefault(i, []).append((k, changed))
    result: list[T] = []
    for i, obj in enumerate(objects):
        if not owners[i]:
            # Nothing the model reads (metadata parts): it goes with the list.
            result.append(obj)
            continue
        parts = kept.get(i)
        if parts is None:
            continue
        if len(parts) == len(owners[i]) and all(changed is None for _, changed in parts):
            result.append(obj)
            continue
        new = rebuild(obj, parts)
        if new is not None:
            result.append(new)
    return result


async def off_loop(size: int, work: Callable[[], T]) -> T:
    """``work()``, in a worker thread when there are ``size`` >= :data:`OFF_LOOP_MESSAGES`
    messages (so the event loop is not held up), else right here."""
    if size >= OFF_LOOP_MESSAGES:
        return await asyncio.to_thread(work)
    return work()
