"""What a call of the compacting LangChain middleware starts from: the summary kept in the agent
state (:data:`STATE_KEY`, :class:`KeptSummary`, read back by :func:`locate`), the view of the
state's messages after what it covers (:class:`View`), and whether what it would send as it is
has every tool call paired with its result (:func:`unpaired`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict, cast

from langchain.agents.middleware import AgentState
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from typing_extensions import NotRequired  # langchain-core's dependency (typing's from Python 3.11)

from agentcontext.compaction.summarize import SUMMARY_MARKER

#: The agent-state field that keeps the summary (see :class:`AgentContextState`).
STATE_KEY = "agentcontext_summary"


class KeptSummary(TypedDict):
    """The summary :class:`~agentcontext.integrations.langchain.AgentContextMiddleware` keeps in
    the agent state (:data:`STATE_KEY`)."""

    summary: str
    through: str
    """The id of the last state message it covers."""
    messages: int
    """How many of the state's messages it covers."""
    tokens: int
    """Their tokens."""


class AgentContextState(AgentState[Any]):
    """The agent state with the field
    :class:`~agentcontext.integrations.langchain.AgentContextMiddleware` keeps its summary in: a
    dict with ``summary`` (the text), ``through`` (the id of the last message it covers),
    ``messages`` and ``tokens`` (how many of the state's messages it covers, and their tokens).
    Private to the middleware (not part of the agent's input or output schema); saved by the
    checkpointer."""

    agentcontext_summary: NotRequired[Annotated[dict[str, Any] | None, PrivateStateAttr]]


def summary_content(kept: KeptSummary) -> str:
    """The text of the message that carries a kept summary (what it covers in its header)."""
    return (
        f"{SUMMARY_MARKER}: {kept['messages']:,} earlier messages ({kept['tokens']:,} tokens) are summarized "
        f"below; the agent's state keeps the originals.]\n\n{kept['summary']}"
    )


@dataclass(slots=True)
class View:
    """What one call starts from: the system message, the kept summary (as a message) and the
    state's messages after what it covers (from ``start``)."""

    system: BaseMessage | None
    messages: list[BaseMessage]
    kept: KeptSummary | None
    start: int
    summary: BaseMessage | None
    #: The tokens of the tool schemas sent beside the messages (None: not yet counted).
    beside: int | None = None
    #: The carried working set plus the new messages, when the last call's holds (else None).
    body: list[BaseMessage] | None = None
    #: The tokens of :attr:`objects`, when known.
    tokens: int | None = None
    #: The state's summary field as it was read (see :func:`locate`).
    stored: Any = None
    #: The messages the carried working set holds before the history's, and where the history's
    #: after them begin (see :class:`~agentcontext.integrations._ladder.Carry`).
    carried: tuple[tuple[BaseMessage, ...], int] | None = None
    #: The tokens of :attr:`system`, when counted.
    system_tokens: int | None = None
    #: How many of the history's messages come after the carried ones (the last call's), when
    #: the view starts from the carry.
    new: int = 0
    #: The carried messages' holder (``_ladder._Sources``) when this call's resume told them
    #: unchanged and held the history's new messages too.
    extended: Any = None

    @property
    def objects(self) -> list[BaseMessage]:
        if self.body is not None:
            return [self.system, *self.body] if self.system is not None else list(self.body)
        head = [m for m in (self.system, self.summary) if m is not None]
        return [*head, *self.messages[self.start :]]

    def sent(self) -> list[BaseMessage]:
        """What a call that fits as it is sends: :attr:`objects` without the system message (a
        list of the view's own: the body, made for this call, or a new one)."""
        if self.body is not None:
            return self.body
        return [*(() if self.summary is None else (self.summary,)), *self.messages[self.start :]]


def well_formed(kept: Any) -> bool:
    """Whether ``kept`` is a summary field as :class:`KeptSummary` writes it (another value, one
    written by hand or by another version, is read as no summary: the state keeps the history
    whole, and the next compaction writes the field anew)."""
    return (
        isinstance(kept, dict)
        and isinstance(kept.get("summary"), str)
        and isinstance(kept.get("through"), str)
        and type(kept.get("messages")) is int
        and kept["messages"] > 0
        and type(kept.get("tokens")) is int
        and kept["tokens"] >= 0
    )


def locate(view: View) -> None:
    """Set ``view``'s kept summary, where the messages after it start and the message carrying
    it, from the state's summary field (a field whose message is gone from the state, or not
    one :class:`KeptSummary` writes: none).
    The message it ends at is looked for no later than where it was (``messages``, how many it
    covered: a history edited by ``add_messages`` only loses messages before it), so that a later
    message given the same id is not taken for it."""
    kept = view.stored
    if not well_formed(kept):
        return
    through = kept["through"]
    messages = view.messages
    top = min(kept["messages"], len(messages))
    at = next((i for i in range(top - 1, -1, -1) if getattr(messages[i], "id", None) == through), None)
    if at is None:
        # The state's messages no longer hold what the summary ends at (rewritten, or the
        # message removed and given again later): start again from the whole history.
        return
    view.kept, view.start = cast("KeptSummary", kept), at + 1
    view.summary = HumanMessage(summary_content(view.kept), id=f"agentcontext-summary-{through}")


def whole(message: BaseMessage, state: dict[str, BaseMessage | None]) -> BaseMessage:
    """The state's message ``message`` stands for (its id's one message, of its class), else itself."""
    found = state.get(message.id) if message.id else None
    return found if found is not None and type(found) is type(message) else message


def without(system: BaseMessage | None, fitted: list[BaseMessage]) -> list[BaseMessage]:
    """``fitted`` without the system message (sent apart by the agent)."""
    if system is None:
        return fitted
    if fitted and fitted[0] is system:
        return fitted[1:]
    return [m for m in fitted if m is not system]


def unpaired(messages: Sequence[BaseMessage], start: int = 0) -> bool:
    """Whether a tool call in ``messages`` lacks its result in the tool messages right after it,
    or a tool message answers no call before it (the calls of the last message may still be
    waiting for their results). The first ``start`` messages are known to be paired (a carried
    working set, sent as such): only the ones after are read, from the calls still open where
    those end (the last non-tool message's calls not answered by the tool messages after it)."""
    waiting: set[str | None] = set()
    if start:
        k = start - 1
        while k >= 0 and isinstance(messages[k], ToolMessage):
            k -= 1
        last = messages[k] if k >= 0 else None
        if isinstance(last, AIMessage) and last.tool_calls:
            answered = {m.tool_call_id for m in messages[k + 1 : start]}  # type: ignore[attr-defined]
            waiting = {c["id"] for c in last.tool_calls} - answered
    for m in messages[start:]:
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in waiting:
                return True
            waiting.discard(m.tool_call_id)
            continue
        if waiting:
            return True
        if isinstance(m, AIMessage) and m.tool_calls:
            waiting = {c["id"] for c in m.tool_calls}
    return False
