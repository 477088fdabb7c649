"""LangChain v1: a middleware for ``create_agent`` that fits every model call into a budget.

    from langchain.agents import create_agent
    from agentcontext.integrations.langchain import AgentContextMiddleware

    agent = create_agent(model, tools, middleware=[AgentContextMiddleware(100_000)])
    # or with the compaction ladder, its summary kept in the agent state (a checkpointer keeps it):
    agent = create_agent(model, tools, middleware=[AgentContextMiddleware(100_000, compaction=True)],
                         checkpointer=InMemorySaver())

Each call the model receives the agent's messages fitted into the budget (the system message
counted in): old tool results cleared, then the latest user request and the longest recent suffix
kept, never a tool call without its result. The agent's state is not changed: the history stays
whole and the next call is fitted again from it (fast: token counts are memoized across calls).
The messages sent are the agent's own ``BaseMessage`` objects where nothing changed (ids,
``additional_kwargs``, ``usage_metadata``, ``response_metadata`` kept) and copies with the new
content where a result was cleared or the request cut. Tested with langchain 1.5 and
langchain-core 1.8 (``pip install 'agentcontext[langchain]'``).

With ``compaction=True`` (or a :class:`~agentcontext.Compactor`, or a ``summarizer``) a call whose
input is over the budget runs the compaction ladder instead (cut oversized results, clear old
ones, summarize older history, drop or cut as a last resort) down to ``compact_to`` of the
budget. The summary is kept in the agent's state (``agentcontext_summary``, with the id of the
last message it covers), not re-made each call: later calls send the summary and the messages
after what it covers, and the ladder runs again only when that is over the budget again (the
previous summary is then updated, not nested). The messages stay whole in the state.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, TypedDict, cast

from agentcontext._checks import number
from agentcontext.compaction.summarize import SUMMARY_MARKER, Summarizer
from agentcontext.errors import InvalidMessageError, MissingExtraError
from agentcontext.integrations._fit import Budget, as_budget, fit, off_loop
from agentcontext.integrations._ladder import make_compactor

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
    from langchain.agents.middleware.types import ExtendedModelResponse, PrivateStateAttr
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ChatMessage,
        FunctionMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
    )
    from langgraph.types import Command
    from typing_extensions import NotRequired  # langchain-core's dependency (typing's from Python 3.11)
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise MissingExtraError(
        "agentcontext.integrations.langchain needs LangChain v1: pip install 'agentcontext[langchain]'"
    ) from exc

if TYPE_CHECKING:
    from langchain.agents.middleware.types import ModelCallResult

    from agentcontext.compaction import CompactionResult, Compactor

__all__ = ["STATE_KEY", "AgentContextMiddleware", "AgentContextState", "KeptSummary", "fit_messages", "to_openai"]

#: The agent-state field that keeps the summary (see :class:`AgentContextState`).
STATE_KEY = "agentcontext_summary"


class KeptSummary(TypedDict):
    """The summary :class:`AgentContextMiddleware` keeps in the agent state (:data:`STATE_KEY`)."""

    summary: str
    through: str
    """The id of the last state message it covers."""
    messages: int
    """How many of the state's messages it covers."""
    tokens: int
    """Their tokens."""


class AgentContextState(AgentState[Any]):
    """The agent state with the field :class:`AgentContextMiddleware` keeps its summary in: a dict
    with ``summary`` (the text), ``through`` (the id of the last message it covers), ``messages``
    and ``tokens`` (how many of the state's messages it covers, and their tokens). Private to the
    middleware (not part of the agent's input or output schema); saved by the checkpointer."""

    agentcontext_summary: NotRequired[Annotated[dict[str, Any] | None, PrivateStateAttr]]


def to_openai(message: BaseMessage, index: int = 0) -> dict[str, Any]:
    """The OpenAI Chat dict the library reads for ``message`` (what it counts and fits)."""
    content: Any = message.content
    if isinstance(message, HumanMessage):
        return {"role": "user", "content": content}
    if isinstance(message, ToolMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}
    if isinstance(message, AIMessage):
        out: dict[str, Any] = {"role": "assistant", "content": content if content else None}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["args"], ensure_ascii=False)},
                }
                for call in message.tool_calls
            ]
        elif out["content"] is None:
            out["content"] = ""
        return out
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": content}
    if isinstance(message, ChatMessage) and message.role in ("user", "assistant", "system", "developer"):
        return {"role": message.role, "content": content}
    if isinstance(message, FunctionMessage):
        # The legacy function-calling answer: a tool result named after its function.
        return {"role": "tool", "tool_call_id": message.name, "content": content}
    raise InvalidMessageError(
        f"message {index}: {type(message).__module__}.{type(message).__qualname__} has no OpenAI Chat form "
        "(agentcontext.integrations.langchain reads SystemMessage, HumanMessage, AIMessage, ToolMessage and "
        "ChatMessage with a user, assistant, system or developer role)",
        index,
    )


def _rebuild(message: BaseMessage, parts: list[tuple[int, dict[str, Any] | None]]) -> BaseMessage:
    changed = parts[0][1]
    if changed is None or changed.get("content") == message.content:
        return message
    return message.model_copy(update={"content": changed["content"]})


def fit_messages(messages: Sequence[BaseMessage], budget: int | Budget) -> list[BaseMessage]:
    """``messages`` fitted into ``budget`` (an int is the input budget, a :class:`~agentcontext.Budget`
    sets the options too): the caller's own objects where unchanged."""
    return fit(messages, as_budget(budget), lambda m, i: [to_openai(m, i)], _rebuild, format="openai")


def summary_content(kept: KeptSummary) -> str:
    """The text of the message that carries a kept summary (what it covers in its header)."""
    return (
        f"{SUMMARY_MARKER}: {kept['messages']:,} earlier messages ({kept['tokens']:,} tokens) are summarized "
        f"below; the agent's state keeps the originals.]\n\n{kept['summary']}"
    )


@dataclass
class _View:
    """What one call starts from: the system message, the kept summary (as a message) and the
    state's messages after what it covers (from ``start``)."""

    system: BaseMessage | None
    messages: list[BaseMessage]
    kept: KeptSummary | None
    start: int
    summary: BaseMessage | None

    @property
    def objects(self) -> list[BaseMessage]:
        head = [m for m in (self.system, self.summary) if m is not None]
        return [*head, *self.messages[self.start :]]


class AgentContextMiddleware(AgentMiddleware[AgentContextState, Any, Any]):
    """Fits the model input of every call into ``budget`` (see the module docs): an int is the
    input budget, a :class:`~agentcontext.Budget` sets the options too. The agent's messages are
    not changed.

    ``compaction``: True (the ``openharness`` ladder with the budget's ``encoding``,
    ``clear``, ``recent_messages``, ``recent_tools`` and ``clear_at_least``, and the offline
    summarizer, or ``summarizer`` when given) or a :class:`~agentcontext.Compactor` (its policy,
    summarizer, fallback and store). A compaction aims at ``compact_to`` of the budget (a share in
    (0, 1]), so that one summary serves several calls. The counters :attr:`compactions` and
    :attr:`summaries` say how many times the ladder ran and how many of those runs wrote a summary
    (across every agent and thread this middleware serves)."""

    state_schema = AgentContextState

    def __init__(
        self,
        budget: int | Budget,
        *,
        compaction: bool | Compactor = False,
        summarizer: Summarizer | None = None,
        compact_to: float = 0.6,
    ) -> None:
        super().__init__()
        self.budget = as_budget(budget)
        self.compactor = make_compactor(compaction, summarizer, self.budget)
        self.compact_to = number("compact_to", compact_to, high=1.0, low_open=True)
        #: How many times the ladder ran, and how many of those runs kept a new summary.
        self.compactions = 0
        self.summaries = 0
        self._count = threading.Lock()

    @property
    def limit(self) -> int:
        """The most tokens a call's input may take (the budget's ``max_tokens`` less the room kept free)."""
        b = self.budget
        return max(1, b.max_tokens - b.reserved_output - b.safety_margin)

    def fit_request(self, request: ModelRequest) -> ModelRequest:
        """``request`` with its messages fitted (the system message counted in, and kept); with
        compaction, the summary kept in the state stands for what it covers (the state is not
        updated here: see :meth:`compile_request`)."""
        return self.compile_request(request)[0]

    def compile_request(self, request: ModelRequest) -> tuple[ModelRequest, KeptSummary | None]:
        """``request`` fitted, and the new value of the state's summary field when a compaction
        wrote a summary (else None: the field stays as it is)."""
        view = self._view(request)
        return self._compile(request, view, self.compactor is not None and self._over(view.objects))

    def _compile(self, request: ModelRequest, view: _View, over: bool) -> tuple[ModelRequest, KeptSummary | None]:
        update = None
        objects = view.objects
        if over:
            objects, update = self._compact(view)
        # With compaction, a view that is not over the budget is sent as it is (it fits).
        fitted = fit_messages(objects, self.budget) if self.compactor is None or over else objects
        if view.system is not None:
            fitted = [m for m in fitted if m is not view.system]
        return request.override(messages=fitted), update  # type: ignore[arg-type,unused-ignore]

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> ModelCallResult:
        fitted, update = self.compile_request(request)
        return _with_update(handler(fitted), update)

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelCallResult:
        size = len(request.messages)
        if self.compactor is None:
            fitted, update = await off_loop(size, lambda: self.compile_request(request))
            return _with_update(await handler(fitted), update)
        view = await off_loop(size, lambda: self._view(request))
        over = await off_loop(size, lambda: self._over(view.objects))
        # A summarizer may call a model (blocking): a compaction always runs in a worker thread.
        if over:
            fitted, update = await asyncio.to_thread(self._compile, request, view, over)
        else:
            fitted, update = self._compile(request, view, over)
        return _with_update(await handler(fitted), update)

    # -- compaction ------------------------------------------------------------------------

    def _view(self, request: ModelRequest) -> _View:
        messages: list[BaseMessage] = list(request.messages)
        kept: Any = request.state.get(STATE_KEY) if self.compactor is not None and request.state else None
        start, summary = 0, None
        if isinstance(kept, dict):
            through = kept.get("through")
            at = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].id == through), None)
            if at is None:
                # The state's messages no longer hold what the summary ends at (rewritten):
                # start again from the whole history.
                kept = None
            else:
                start = at + 1
                summary = HumanMessage(summary_content(cast("KeptSummary", kept)), id=f"agentcontext-summary-{through}")
        else:
            kept = None
        return _View(request.system_message, messages, kept, start, summary)

    def _over(self, objects: list[BaseMessage]) -> bool:
        from agentcontext._core import Conversation

        dicts = [to_openai(m, i) for i, m in enumerate(objects)]
        return Conversation(dicts, format="openai", encoding=self.budget.encoding).tokens > self.limit

    def _compact(self, view: _View) -> tuple[list[BaseMessage], KeptSummary | None]:
        """The ladder over the view, down to ``compact_to`` of the limit: the messages to send
        and the new summary field (None when no summary was written)."""
        from agentcontext._core import Conversation

        assert self.compactor is not None
        objects = view.objects
        dicts = [to_openai(m, i) for i, m in enumerate(objects)]
        conv = Conversation(dicts, format="openai", encoding=self.budget.encoding)
        result = self.compactor.compact(conv, budget=max(1, int(self.limit * self.compact_to)))
        with self._count:
            self.compactions += 1
        update = self._kept_summary(view, result)
        out: list[BaseMessage] = []
        for i, items in enumerate(result.conversation._export_each()):
            content = items[0].get("content") if items else ""
            source = result.provenance[i]
            origin = (result.origins or [])[i]
            if source is not None:
                out.append(objects[source])
            elif origin is not None:
                out.append(objects[origin].model_copy(update={"content": content}))
            elif update is not None and str(content).startswith(SUMMARY_MARKER):
                out.append(HumanMessage(summary_content(update), id=f"agentcontext-summary-{update['through']}"))
            else:
                out.append(HumanMessage(content if isinstance(content, str | list) else str(content)))
        return out, update

    def _kept_summary(self, view: _View, result: CompactionResult) -> KeptSummary | None:
        """The summary field after ``result``: what its summary covers, in the state's messages."""
        if result.summary is None or result.first_kept is None or not result.summary_in_output():
            return None
        head = (view.system is not None) + (view.summary is not None)
        covered = view.start + result.first_kept - head  # state messages covered: [0, covered)
        if covered <= view.start or covered > len(view.messages):
            return None
        through = view.messages[covered - 1].id
        if not through:
            return None  # without an id, the next call could not find where the summary ends
        from agentcontext._core import Conversation

        tokens = Conversation(
            [to_openai(m, i) for i, m in enumerate(view.messages[:covered])],
            format="openai",
            encoding=self.budget.encoding,
        ).tokens
        with self._count:
            self.summaries += 1
        return {"summary": result.summary, "through": through, "messages": covered, "tokens": tokens}


def _with_update(response: ModelResponse, update: KeptSummary | None) -> ModelCallResult:
    if update is None:
        return response
    return ExtendedModelResponse(model_response=response, command=Command(update={STATE_KEY: update}))
