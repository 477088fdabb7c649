"""The :class:`Harness` protocol: the named hooks through which a harness (the agent whose
compaction a preset reproduces, :mod:`agentcontext.compaction.harnesses`) changes a rung of the
generic ladder. A harness is a frozen dataclass whose fields are its own options; the policy
holds one (:attr:`~agentcontext.compaction.CompactionPolicy.harness`). Every hook has the
generic ladder's behaviour here, so that this base class is the harness of every preset that
changes nothing (``openharness``, ``goose``), and a harness overrides only the hooks it needs.

The hooks that receive the ladder's run read and change its public state
(:class:`~agentcontext.compaction.state.LadderState`: ``work``, ``original``, ``provenance``,
``events``, ``store``) and call its public operations (``write_summary``, ``finish``, ...).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from agentcontext import _checks
from agentcontext.compaction.summarize import shrink_summary
from agentcontext.errors import ArgumentTypeError
from agentcontext.types import Encoding

if TYPE_CHECKING:
    from agentcontext._core import Conversation
    from agentcontext.compaction.ladder import LadderRun
    from agentcontext.compaction.policy import CompactionPolicy
    from agentcontext.compaction.results import CompactionResult
    from agentcontext.compaction.state import LadderState
    from agentcontext.compaction.summarize import Summarizer, SummaryRequest

__all__ = ["Harness", "HasDetail"]


class HasDetail(Protocol):
    """A summarizer a harness gives for one request (:meth:`Harness.summarizer`), with the event
    detail it adds to the summarize stage."""

    detail: dict[str, Any]
    window_bound: bool

    def summarize(self, request: SummaryRequest) -> str: ...


@dataclass(frozen=True)
class Harness:
    """The generic ladder's behaviour at every hook; a harness subclasses it, its options as
    dataclass fields (checked by type: ``int`` a count, ``float | None`` an optional share,
    ``int | None`` an optional count, ``tuple[str, ...]`` names; each settable through
    ``AGENTCONTEXT_COMPACT__<FIELD>`` as a policy field is)."""

    #: How an overflowing summary request is handled, as the events name it.
    summarizer_overflow: ClassVar[str] = "stage"

    def __post_init__(self) -> None:
        for f in fields(self):
            check_option(f, getattr(self, f.name))

    # -- the policy's numbers ----------------------------------------------------------------

    def trigger_limit(self, available: int) -> int:
        """The most the auto trigger may be, given what the conversation may take."""
        return available

    def scaled(self, factor: float) -> Harness:
        """These options in local tokens when one local token is ``factor`` provider tokens."""
        return self

    def for_budget(self) -> Harness:
        """These options under a hard token budget (:meth:`CompactionPolicy.for_budget`)."""
        return self

    def replaces_trigger(self) -> bool:
        """Whether :meth:`over_trigger` decides auto compaction instead of the policy's trigger."""
        return False

    def over_trigger(self, conv: Conversation, policy: CompactionPolicy) -> bool | None:
        """Whether ``conv`` is over this harness's own trigger (None: the policy's applies)."""
        return None

    # -- rungs (a) and (b) -------------------------------------------------------------------

    def budgets(self, run: LadderState) -> bool | None:
        """Stage (a) of this harness, run before the char budgets: None when it has none, else
        whether it replaces them (True) or they run after it (False)."""
        return None

    def clear_gate(self, run: LadderState) -> str | None:
        """Why old tool results may not be trimmed or cleared now (None: they may)."""
        return None

    def before_clear(self, run: LadderState) -> bool:
        """A gentler step before clearing; whether it changed the working conversation."""
        return False

    # -- rung (c) ----------------------------------------------------------------------------

    def rebuilds(self) -> bool:
        """Whether :meth:`rebuild` replaces the summarize rung."""
        return False

    def rebuild(self, run: LadderRun) -> CompactionResult | None:
        """The summarize rung of a harness that rebuilds history its own way."""
        return None

    def raw_start(self, run: LadderState, start: int) -> int:
        """Where the raw recent part starts in auto mode, given the policy's own ``start``."""
        return start

    def summarizer(self, run: LadderState, request: SummaryRequest) -> HasDetail | None:
        """A summarizer of this harness for ``request`` (None: the compactor's)."""
        return None

    def summary_request(
        self, write: Callable[[SummaryRequest], str], request: SummaryRequest, notes: dict[str, Any]
    ) -> str:
        """The summary of ``request``, each part written by ``write``; ``notes`` receives what was done."""
        return write(request)

    def summary_overflow(
        self,
        summarizer: Summarizer,
        request: SummaryRequest,
        room: int | None,
        notes: dict[str, Any],
        staged: Callable[[SummaryRequest], str],
    ) -> str:
        """The summary of ``request`` by ``summarizer`` within ``room`` tokens (None: no window to
        respect); ``staged`` writes it in parts of equal token share and a merge when over."""
        return staged(request)

    def shrink_summary(
        self,
        text: str,
        max_tokens: int,
        *,
        encoding: Encoding,
        request_room: int = 0,
        counts: dict[str, int] | None = None,
    ) -> str:
        """A summary this harness wrote (``text``), fitted within ``max_tokens`` when the ladder must
        make it smaller (:func:`~agentcontext.compaction.summarize.shrink_summary`: the latest
        request first; ``counts``: the tokens of texts counted already)."""
        return shrink_summary(text, max_tokens, encoding=encoding, request_room=request_room, counts=counts)

    def checkpoint(self, run: LadderState) -> str | None:
        """The instruction of a forced memory flush turn due now (None: none is due)."""
        return None


def check_option(f: dataclasses.Field[Any], value: Any) -> None:
    """Check harness option ``f`` by its declared type."""
    kind = str(f.type)
    if kind == "float | None":
        if value is not None:
            _checks.number(f.name, value, high=1.0, low_open=True)
    elif kind == "int | None":
        _checks.optional_count(f.name, value, minimum=f.metadata.get("minimum", 0))
    elif kind == "int":
        _checks.count(f.name, value)
    elif kind == "tuple[str, ...]" and (not isinstance(value, tuple) or not all(isinstance(x, str) for x in value)):
        raise ArgumentTypeError(f"{f.name} must be a tuple of tool names, got {value!r}")


def parse_option(f: dataclasses.Field[Any], raw: str) -> Any:
    """The value of harness option ``f`` written as ``raw`` (an environment variable).

    Raises:
        ValueError: not a value of its type.
    """
    kind = str(f.type)
    if kind in ("float | None", "int | None"):
        if raw.lower() in ("", "none"):
            return None
        return float(raw) if kind.startswith("float") else int(raw)
    if kind == "tuple[str, ...]":
        return tuple(x.strip() for x in raw.split(",") if x.strip())
    return int(raw)
