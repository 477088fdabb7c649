"""LangChain v1: a middleware for ``create_agent`` that fits every model call into a budget.

    from langchain.agents import create_agent
    from agentcontext.integrations.langchain import AgentContextMiddleware

    agent = create_agent(model, tools, middleware=[AgentContextMiddleware(100_000)])
    # or with the compaction ladder, its summary kept in the agent state (a checkpointer keeps it):
    agent = create_agent(model, tools, middleware=[AgentContextMiddleware(100_000, compaction=True)],
                         checkpointer=InMemorySaver())

Put the middleware last in ``middleware=[...]``: LangChain runs the first one outermost, so a
middleware after this one (a ``dynamic_prompt``, one adding messages) changes the request after
it was fitted, and the model receives what it added on top of the budget (a 5,600-character
dynamic prompt after it: 4,603 tokens sent under 3,000; before it: 2,843).

Each call the model receives the agent's messages fitted into the budget (the system message
and the tool schemas counted in): old tool results cleared, then the latest user request and the longest recent suffix
kept, never a tool call without its result. The agent's state is not changed: the history stays
whole and the next call is fitted again from it (fast: each message is converted once and its
tokens counted once, across calls). A newest tool result larger than the budget by itself is cut
head + marker + tail (the marker names its tool call id; the state keeps it whole).
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
previous summary is then updated, not nested). The messages stay whole in the state. Between
calls the middleware carries each thread's working set (what it sent), as
:class:`agentcontext.Session` does: a call adds only its new messages to it, and the ladder runs
over the working set, not the whole history.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from agentcontext._checks import number
from agentcontext._json import dumps_text
from agentcontext.compaction.summarize import SUMMARY_MARKER, Summarizer
from agentcontext.errors import ArgumentTypeError, InvalidMessageError, MissingExtraError
from agentcontext.integrations import _beside
from agentcontext.integrations._converted import MARK, Converted, CorePrints
from agentcontext.integrations._fit import Budget, RecallIds, as_budget, fit, off_loop
from agentcontext.integrations._given import arguments_object
from agentcontext.integrations._ladder import Carry, make_compactor
from agentcontext.observe.compaction import reporting_fits
from agentcontext.observe.emit import EventCallback, check_callback

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain.agents.middleware.types import ExtendedModelResponse
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ChatMessage,
        FunctionMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
        convert_to_messages,
    )
    from langgraph.types import Command
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise MissingExtraError(
        "agentcontext.integrations.langchain needs LangChain v1: pip install 'agentcontext[langchain]'"
    ) from exc

from agentcontext.integrations._langchain_parts import format_text, own_blocks, tool_tokens
from agentcontext.integrations._langchain_parts import parts as openai_parts
from agentcontext.integrations._langchain_state import (
    STATE_KEY,
    AgentContextState,
    KeptSummary,
    View,
    locate,
    summary_content,
    unpaired,
    whole,
    without,
)

if TYPE_CHECKING:
    from langchain.agents.middleware.types import ModelCallResult

    from agentcontext.compaction import CompactionResult, Compactor

__all__ = ["STATE_KEY", "AgentContextMiddleware", "AgentContextState", "KeptSummary", "fit_messages", "to_openai"]


def _not_a_message(message: object, index: int) -> InvalidMessageError:
    kind = f"{type(message).__module__}.{type(message).__qualname__}"
    if isinstance(message, dict):
        fix = "for dicts call agentcontext.trim_messages (or agentcontext.integrations.litellm.fit_messages)"
    elif type(message).__module__.startswith("pydantic_ai"):
        fix = "for Pydantic AI messages use agentcontext.integrations.pydantic_ai"
    elif type(message).__module__.startswith("agents"):
        fix = "for OpenAI Agents SDK items use agentcontext.integrations.openai_agents"
    else:
        fix = "it reads langchain_core BaseMessage objects"
    return InvalidMessageError(
        f"message {index}: {kind} is not a LangChain message: agentcontext.integrations.langchain {fix}", index
    )


def _tool_use(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") in ("tool_use", "tool_call", "function_call")


#: Per message class, the first of the classes :func:`to_openai` tells apart that it is (the
#: classes' ``isinstance`` goes through ``ABCMeta``: asked once per class, not per message).
_KINDS: dict[type, type] = {}
_OTHER = object
_ORDER = (HumanMessage, ToolMessage, AIMessage, SystemMessage, BaseMessage)


def _kind(message: object) -> type:
    """The class of :data:`_ORDER` ``message`` is first an instance of (``object`` for none), kept
    per class when the class says it (not an object posing as another class)."""
    kind = next((k for k in _ORDER if isinstance(message, k)), _OTHER)
    if kind is not _OTHER and message.__class__ is type(message):
        _KINDS[type(message)] = kind
    return kind


def to_openai(message: BaseMessage, index: int = 0) -> dict[str, Any]:
    """The OpenAI Chat dict the library reads for ``message`` (what it counts and fits). An
    assistant message's calls are read from ``tool_calls`` once: the ``tool_use`` blocks an
    Anthropic model also leaves in the content are not counted again.

    Raises:
        InvalidMessageError: ``message`` is not a LangChain message (naming what to use for it),
            or one with no OpenAI Chat form.
    """
    kind = _KINDS.get(type(message))
    if kind is None:
        kind = _kind(message)
    if kind is _OTHER:
        raise _not_a_message(message, index)
    content: Any = openai_parts(message.content)
    if kind is HumanMessage:
        return {"role": "user", "content": content}
    if kind is ToolMessage:
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}  # type: ignore[attr-defined]
    if kind is AIMessage:
        ai = cast("AIMessage", message)
        out: dict[str, Any] = {"role": "assistant", "content": _ai_content(ai)}
        if ai.tool_calls:
            out["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": _arguments(call["args"], index)},
                }
                for call in ai.tool_calls
            ]
        elif out["content"] is None:
            out["content"] = ""
        return out
    if kind is SystemMessage:
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


def _arguments(args: Any, index: int) -> str:
    """A tool call's ``args`` as the JSON text counted; a value JSON has no form for (a
    ``datetime``, a set) as its ``str()``.

    Raises:
        InvalidMessageError: ``args`` that are not JSON even so (a dict that holds itself).
    """
    try:
        return dumps_text(args)
    except (TypeError, ValueError):
        try:
            return json.dumps(args, ensure_ascii=False, default=str)
        except (TypeError, ValueError) as exc:
            raise InvalidMessageError(
                f"message {index}: a tool call's args cannot be written as JSON ({exc}): give it JSON values", index
            ) from None


def _ai_content(ai: AIMessage) -> Any:
    """The content :func:`to_openai` gives an assistant message (None for none; with tool calls,
    a list without its ``tool_use`` blocks)."""
    content: Any = ai.content
    if ai.tool_calls and isinstance(content, list):
        content = [block for block in content if not _tool_use(block)]
    content = openai_parts(content)
    return content if content else None


def _rebuild(message: BaseMessage, parts: list[tuple[int, dict[str, Any] | None]]) -> BaseMessage:
    """``message`` as the fit changed its dict (``parts[0]``): a copy with the new content, and
    for an assistant message whose old tool calls' arguments were cleared
    (``clear_tool_inputs``), those calls with the cleared arguments; ``message`` itself when
    neither changed."""
    changed = parts[0][1]
    if changed is None:
        return message
    ai = message if isinstance(message, AIMessage) else None
    update: dict[str, Any] = {}
    now = _new_arguments(ai, changed.get("tool_calls")) if ai is not None else None
    args = None
    if ai is not None and now:
        update["tool_calls"] = [c if a is None else {**c, "args": a} for c, a in zip(ai.tool_calls, now, strict=True)]
        args = {c["id"]: a for c, a in zip(ai.tool_calls, now, strict=True) if a is not None}
    if changed.get("content") != (openai_parts(message.content) if ai is None else _ai_content(ai)):
        update["content"] = own_blocks(message.content, changed["content"])
    elif args and isinstance(message.content, list):
        update["content"] = [block for block in message.content if not _tool_use(block)]
    if "content" in update and isinstance(message, AIMessage) and isinstance(message.content, list):
        # The tool_use blocks left out of what was counted go back with the new content (their
        # input cleared with their call's arguments).
        calls = [_with_input(block, args) for block in message.content if _tool_use(block)]
        if calls:
            content = update["content"]
            update["content"] = [
                *([{"type": "text", "text": content}] if isinstance(content, str) else content or []),
                *calls,
            ]
    return message.model_copy(update=update) if update else message


def _with_input(block: Any, args: dict[Any, dict[str, Any]] | None) -> Any:
    """A ``tool_use`` block, its input those of ``args`` for its id when there."""
    new = args.get(block.get("id")) if args else None
    return block if new is None else {**block, "input": new}


def _new_arguments(ai: AIMessage, now: Any) -> list[dict[str, Any] | None] | None:
    """Per tool call of ``ai``, in order, the arguments of the same call in ``now`` (the fitted
    dict's) where they differ from those of ``ai``'s call (as :func:`to_openai` writes them),
    parsed (a text that is not a JSON object: under ``"cleared"``), else None; None when none
    differ. By place, not by id: the fit renames a reused call id (``call_0#2``)."""
    if not ai.tool_calls or not isinstance(now, list) or len(now) != len(ai.tool_calls):
        return None
    out: list[dict[str, Any] | None] = []
    for call, before in zip(now, ai.tool_calls, strict=True):
        text = call.get("function", {}).get("arguments")
        changed = isinstance(text, str) and text != _arguments(before["args"], 0)
        out.append(arguments_object(text) if changed else None)
    return out if any(a is not None for a in out) else None


#: Per message class, the fields :func:`to_openai` reads beside the content (``isinstance`` on
#: LangChain's classes goes through ``ABCMeta``: too slow to ask per message and call).
_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(cls: type) -> tuple[str, ...]:
    if issubclass(cls, AIMessage):
        return ("tool_calls",)
    if issubclass(cls, ToolMessage):
        return ("tool_call_id",)
    if issubclass(cls, ChatMessage):
        return ("role",)
    if issubclass(cls, FunctionMessage):
        return ("name",)
    return ()


def _key(message: Any) -> tuple[Any, ...]:
    """What :func:`to_openai` reads of a message (compared by identity first: a field set anew
    differs; an object without ``content``, not a message, is keyed as one whose content is
    None, and :func:`to_openai` names it)."""
    cls = type(message)
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = _FIELDS[cls] = _fields(cls)
    content = getattr(message, "content", None)
    size = len(content) if type(content) is list else -1
    if not fields:
        return (cls, content, size)
    value = getattr(message, fields[0])
    return (cls, content, size, value, len(value) if type(value) is list else -1)


def _attrs(cls: type) -> tuple[str, ...]:
    """What :func:`_key` reads of a message of class ``cls``, as the core's prints keep it: its
    content and the field read beside it (a list changed in place is told by its length only; an
    edit inside a list that keeps its length is not seen, as the docs say)."""
    return ("content", *_FIELDS.get(cls, _fields(cls)))


def converted() -> Converted:
    """A memo of :func:`to_openai` across calls (see :class:`~agentcontext.integrations._fit.Converted`),
    fitting through a kept trimmer."""
    return Converted(_key, prints=lambda: CorePrints(_attrs))


def _convert(message: BaseMessage, index: int) -> list[dict[str, Any]]:
    return [to_openai(message, index)]


def fit_messages(
    messages: Sequence[BaseMessage],
    budget: int | Budget,
    *,
    beside: int = 0,
    cache: Converted | None = None,
    recall: RecallIds = "call_id",
) -> list[BaseMessage]:
    """``messages`` fitted into ``budget`` (an int is the input budget, a :class:`~agentcontext.Budget`
    sets the options too): the caller's own objects where unchanged. ``beside``: tokens the model
    receives apart from these messages (tool schemas, a prompt added later). A newest tool result
    over the budget by itself is cut head + marker + tail (the marker names its tool call id).

    Raises:
        InvalidMessageError: an object that is not a LangChain message (naming the adapter for it).
        ArgumentTypeError: ``budget`` is neither an int nor a :class:`~agentcontext.Budget`.
        BudgetError: the system messages, the request and the cut last round do not fit.
    """
    if isinstance(messages, BaseMessage | dict) or not isinstance(messages, Sequence):
        raise ArgumentTypeError(f"messages must be a list of LangChain messages, got {type(messages).__name__}")
    fitted_into = as_budget(budget)
    return fit(
        messages,
        fitted_into,
        _convert,
        _rebuild,
        format="openai",
        beside=beside,
        cache=cache,
        recall=recall,
        made=_made,
    )


def _made(message: dict[str, Any], names: Mapping[str, str]) -> BaseMessage:
    """The LangChain message of a Chat dict the fit's repair made (a result given to a call whose
    result is missing, a result whose call is missing sent as a user message)."""
    return convert_to_messages([message])[0]


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
    (across every agent and thread this middleware serves). ``on_event``: called with each event
    of a compaction and of each fit (kind ``fit``, policy ``langchain``; :mod:`agentcontext.observe`);
    with the ``otel`` extra each is also a span."""

    state_schema = AgentContextState

    def __init__(
        self,
        budget: int | Budget,
        *,
        compaction: bool | Compactor = False,
        summarizer: Summarizer | None = None,
        compact_to: float = 0.6,
        on_event: EventCallback | None = None,
    ) -> None:
        super().__init__()
        self.budget = as_budget(budget)
        self._on_event = check_callback(on_event, "langchain.AgentContextMiddleware")
        self.compactor = make_compactor(compaction, summarizer, self.budget, on_event)
        self.compact_to = number("compact_to", compact_to, high=1.0, low_open=True)
        #: How many times the ladder ran, and how many of those runs kept a new summary.
        self.compactions = 0
        self.summaries = 0
        self._count = threading.Lock()
        # What every call reuses: the conversions of the messages seen, the tool schemas' tokens
        # and, with compaction, each thread's working set after its last call.
        self._converted = converted()
        self._tools: dict[Any, tuple[Any, int]] = {}
        self._carry = Carry(self._converted, self.budget.encoding, lambda: CorePrints(_attrs))

    @property
    def limit(self) -> int:
        """The most tokens a call's input may take (the budget's ``max_tokens`` less the room kept free)."""
        b = self.budget
        return max(1, b.max_tokens - b.reserved_output - b.safety_margin)

    def fit_request(self, request: ModelRequest) -> ModelRequest:
        """``request`` with its messages fitted (the system message and the tool schemas counted
        in, the system message kept); with compaction, the summary kept in the state stands for
        what it covers (the state is not updated here: see :meth:`compile_request`)."""
        return self.compile_request(request)[0]

    def compile_request(self, request: ModelRequest) -> tuple[ModelRequest, KeptSummary | None]:
        """``request`` fitted, and the new value of the state's summary field when a compaction
        wrote a summary (else None: the field stays as it is)."""
        view = self._view(request)
        return self._compile(request, view, self.compactor is not None and self._over(view))

    def _beside(self, request: ModelRequest) -> int:
        """The tokens of the tool schemas the model receives with the messages, and of the
        structured output's schema (``response_format=``: a tool of its own, or the provider's
        response format)."""
        if len(self._tools) > 1024:
            self._tools.clear()
        tokens = tool_tokens(request.tools or [], self.budget.encoding, self._tools)
        form = getattr(request, "response_format", None)  # (a request made by hand may lack it)
        if form is not None:
            tokens += _beside.tool_tokens([form], self.budget.encoding, format_text, memo=self._tools)
        return tokens

    def _compile(self, request: ModelRequest, view: View, over: bool) -> tuple[ModelRequest, KeptSummary | None]:
        update = None
        # With compaction, a view that is not over the budget is sent as it is (it fits), unless
        # a call in it lacks its result or a result its call: then the fit repairs it.
        as_is = None
        if self.compactor is not None and not over:
            start = 0
            if view.body is not None and view.carried is not None:
                # (What the last call sent, paired, then the history's new messages.)
                as_is, start = view.body, len(view.body) - view.new
            else:
                as_is = view.sent()
            if unpaired(as_is, start):
                as_is = None
        if as_is is None:
            objects = view.objects
            beside = view.beside if view.beside is not None else self._beside(request)
            if over:
                objects, update = self._compact(view)
            fitted = reporting_fits(
                self._on_event,
                "langchain",
                lambda: fit_messages(objects, self.budget, beside=beside, cache=self._converted),
            )
            fitted = without(view.system, fitted)
            if self.compactor is not None:
                # Counted now (its conversions are fresh), not by the next call: after a
                # compaction the next call too only adds its new messages.
                system = self._system_tokens(view)
                self._carry.keep(
                    view, fitted, len(view.messages), system + self._carry.tokens(fitted, _convert), system
                )
        else:
            # Sent as it is: a list made for this call, while the carry keeps its own tuple of
            # what comes before the history's messages (a handler, another middleware, may change
            # the list sent).
            fitted = as_is
            if view.body is not None and view.carried is not None:
                base, since = view.carried
            else:
                base, since = ((), view.start) if view.summary is None else ((view.summary,), view.start)
            self._carry.keep(view, base, since, view.tokens, self._system_tokens(view))
        return request.override(messages=fitted), update  # type: ignore[arg-type,unused-ignore]

    def _system_tokens(self, view: View) -> int:
        if view.system_tokens is None:
            view.system_tokens = self._carry.system_tokens(view.system, _convert)
        return view.system_tokens

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
        over = await off_loop(size, lambda: self._over(view))
        # A summarizer may call a model (blocking): a compaction always runs in a worker thread.
        if over:
            fitted, update = await asyncio.to_thread(self._compile, request, view, over)
        else:
            fitted, update = self._compile(request, view, over)
        return _with_update(await handler(fitted), update)

    # -- compaction ------------------------------------------------------------------------

    def _view(self, request: ModelRequest) -> View:
        messages = request.messages
        # (Only read: the request's own list, not a copy.)
        own: list[BaseMessage] = cast("list[BaseMessage]", messages) if type(messages) is list else [*messages]
        view = View(request.system_message, own, None, 0, None)
        if self.compactor is None:
            return view
        view.beside = self._beside(request)
        view.stored = request.state.get(STATE_KEY) if request.state else None
        self._carry.resume(view, _convert)
        if view.body is None:
            locate(view)
        return view

    def _over(self, view: View) -> bool:
        """Whether the view is over the budget (its tokens counted, the carried part's known)."""
        if view.tokens is None:
            view.tokens = self._carry.tokens(view.objects, _convert)
        return view.tokens > self.limit - (view.beside or 0)

    def _compact(self, view: View) -> tuple[list[BaseMessage], KeptSummary | None]:
        """The ladder over the view, down to ``compact_to`` of the limit: the messages to send
        and the new summary field (None when no summary was written)."""
        from agentcontext._core import Conversation

        assert self.compactor is not None
        if view.body is not None:
            locate(view)
            # The ladder reads the carried messages as the state holds them (a result the last
            # compaction cut or cleared is whole again: the ladder cuts it anew, to this budget):
            # each by its id where the state has one message of that id (the same kind of message).
            state: dict[str, BaseMessage | None] = {}
            for m in view.messages:
                if m.id:
                    state[m.id] = None if m.id in state else m
            view.body = [whole(m, state) for m in view.body]
        objects = view.objects
        dicts = [{**d} for i, m in enumerate(objects) for d in self._converted.entry(m, i, _convert)[1]]
        for d in dicts:
            d.pop(MARK, None)
        conv = Conversation(dicts, format="openai", encoding=self.budget.encoding)
        room = self.limit - (view.beside or 0)
        result = self.compactor.compact(conv, budget=max(1, int(room * self.compact_to)))
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
                out.append(_rebuild(objects[origin], [(0, items[0])]) if items else objects[origin])
            elif update is not None and str(content).startswith(SUMMARY_MARKER):
                out.append(HumanMessage(summary_content(update), id=f"agentcontext-summary-{update['through']}"))
            else:
                out.append(HumanMessage(content if isinstance(content, str | list) else str(content)))
        return out, update

    def _kept_summary(self, view: View, result: CompactionResult) -> KeptSummary | None:
        """The summary field after ``result``: what its summary covers, in the state's messages."""
        if result.summary is None or result.first_kept is None or not result.summary_in_output():
            return None
        # The state messages covered, [0, covered): through the last one the summary replaced (the
        # ladder ran over the view, whose messages are the state's or copies with their ids). Each
        # one's place is the first after the kept summary of that object, or of that id for a
        # copy: a message or an id the state holds twice covers no message the summary left out.
        messages = view.messages
        own: dict[int, int] = {}
        first: dict[str, int] = {}
        for k in range(len(messages) - 1, view.start - 1, -1):
            own[id(messages[k])] = k
            mid = messages[k].id
            if mid:
                first[mid] = k

        def place(m: BaseMessage) -> int | None:
            at = own.get(id(m))
            return at if at is not None else first.get(m.id) if m.id else None

        covered = next((at + 1 for m in reversed(view.objects[: result.first_kept]) if (at := place(m)) is not None), 0)
        if covered <= view.start or covered > len(view.messages):
            return None
        through = view.messages[covered - 1].id
        if not through:
            return None  # without an id, the next call could not find where the summary ends
        tokens = self._carry.tokens(view.messages[:covered], _convert)
        with self._count:
            self.summaries += 1
        return {"summary": result.summary, "through": through, "messages": covered, "tokens": tokens}


def _with_update(response: ModelResponse, update: KeptSummary | None) -> ModelCallResult:
    if update is None:
        return response
    return ExtendedModelResponse(model_response=response, command=Command(update={STATE_KEY: update}))
