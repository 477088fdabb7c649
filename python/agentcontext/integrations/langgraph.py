"""LangGraph: ``pre_model_hook`` nodes that fit the model input into a budget.

    from langgraph.prebuilt import create_react_agent
    from agentcontext.integrations.langgraph import fit_hook, compact_hook

    agent = create_react_agent(model, tools, prompt=PROMPT,
                               pre_model_hook=fit_hook(100_000, prompt=PROMPT, tools=tools))

The model receives the agent's ``prompt`` and the tool schemas beside the messages the hook
returns: give them to the hook too (``prompt`` in any form the agent takes: a str, a
``SystemMessage``, a callable or a ``Runnable``), and they are counted in. Each message is
converted once across calls (a memo per hook).

:func:`fit_hook` returns ``llm_input_messages``: the model sees the fitted messages, the graph's
state keeps the whole history (view-only). :func:`compact_hook` rewrites the state instead
(``RemoveMessage(REMOVE_ALL_MESSAGES)`` then the fitted messages): what was dropped or cleared is
gone from the history, so later calls start from the compacted one. Either way the messages are
the graph's own ``BaseMessage`` objects where nothing changed and copies with the new content
where a result was cleared or the request cut. Both work as sync and async nodes (``invoke`` and
``ainvoke``). ``on_event=`` is called with each fit's events (:mod:`agentcontext.observe`: a
compaction of kind ``fit``, policy ``langgraph``). Tested with langgraph 1.2 and langchain-core 1.8 (``pip install
'agentcontext[langgraph]'``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentcontext.errors import ArgumentTypeError, BudgetError, MissingExtraError, OptionError
from agentcontext.integrations._converted import Converted
from agentcontext.integrations._fit import Budget, RecallIds, factory_budget, off_loop
from agentcontext.observe.compaction import reporting_fits
from agentcontext.observe.emit import EventCallback, check_callback

try:
    from langchain_core.messages import BaseMessage, HumanMessage, RemoveMessage, SystemMessage, convert_to_messages
    from langchain_core.prompt_values import PromptValue
    from langchain_core.runnables import Runnable, RunnableLambda
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise MissingExtraError(
        "agentcontext.integrations.langgraph needs LangGraph: pip install 'agentcontext[langgraph]'"
    ) from exc

from agentcontext.integrations._langchain_parts import tool_tokens
from agentcontext.integrations.langchain import _convert, converted, fit_messages

__all__ = ["compact_hook", "fit_hook"]

#: How many times a callable prompt's output is measured and the messages fitted again.
PROMPT_ROUNDS = 4


def _messages(state: Any) -> list[BaseMessage]:
    """The graph state's ``messages`` (a dict's key or an object's attribute), as a list.

    Raises:
        ArgumentTypeError: a state without ``messages``, or whose ``messages`` is not a list.
    """
    messages = state.get("messages") if isinstance(state, Mapping) else getattr(state, "messages", None)
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise ArgumentTypeError(
            f"the hook reads the graph state's 'messages' (a list of LangChain messages, as "
            f"create_react_agent's state holds it), got a {type(state).__name__} whose messages are "
            f"{type(messages).__name__}"
        )
    return list(messages)


def _node(update: Callable[[Any, list[BaseMessage]], dict[str, Any]]) -> RunnableLambda[Any, dict[str, Any]]:
    def sync(state: Any) -> dict[str, Any]:
        return update(state, _messages(state))

    async def async_(state: Any) -> dict[str, Any]:
        messages = _messages(state)
        return await off_loop(len(messages), lambda: update(state, messages))

    return RunnableLambda(sync, afunc=async_, name="agentcontext")


def _state(value: object) -> bool:
    """Whether ``value`` is the graph's state (what a hook is called with)."""
    return (isinstance(value, Mapping) and "messages" in value) or hasattr(value, "messages")


class _Fitter:
    """Fits a state's messages for a hook: the prompt the agent adds (``prompt=`` of
    ``create_react_agent``) and the tool schemas counted in, conversions memoized across calls."""

    def __init__(
        self,
        factory: str,
        budget: object,
        prompt: object,
        tools: Sequence[Any] | None,
        recall: RecallIds,
        on_event: EventCallback | None,
    ) -> None:
        self.on_event = check_callback(on_event, f"langgraph.{factory}")
        # (The graph's state in the budget's place: the factory itself was given as the hook.)
        self.budget = factory_budget(factory, budget, _state, f"pre_model_hook={factory}(budget)")
        self.cache = converted()
        self.recall: RecallIds = recall
        if tools is not None and (isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence)):
            raise ArgumentTypeError(
                f"tools must be a list of the agent's tools (as given to create_react_agent), got {type(tools).__name__}"
            )
        self.beside = tool_tokens(tools or [], self.budget.encoding)
        self.prompt: Callable[[Any], Any] | None = None
        if isinstance(prompt, str):
            prompt = SystemMessage(prompt)
        if isinstance(prompt, SystemMessage):
            self.beside += _tokens([prompt], self.budget)
        elif isinstance(prompt, Runnable):
            self.prompt = prompt.invoke
        elif inspect.iscoroutinefunction(prompt):
            raise OptionError(
                f"{factory} cannot run an async prompt to count it: give the hook the prompt's text "
                "(prompt=...) or a sync callable"
            )
        elif callable(prompt):
            self.prompt = prompt
        elif prompt is not None:
            raise ArgumentTypeError(
                f"prompt must be a str, a SystemMessage, a callable or a Runnable (as for create_react_agent), "
                f"got {type(prompt).__name__}"
            )

    def __call__(self, state: Any, messages: list[BaseMessage]) -> list[BaseMessage]:
        return reporting_fits(self.on_event, "langgraph", lambda: self._fit(state, messages))

    def _fit(self, state: Any, messages: list[BaseMessage]) -> list[BaseMessage]:
        """The messages fitted; with a callable prompt, fitted again with the room its output
        takes beside them until the whole fits.

        Raises:
            BudgetError: what the prompt makes of the fitted messages is still over the budget
                after :data:`PROMPT_ROUNDS` fits (the prompt alone over it, or growing with them).
        """
        beside = self.beside
        sent = 0
        rounds = 0
        for rounds in range(1, PROMPT_ROUNDS + 1):
            try:
                fitted = fit_messages(messages, self.budget, beside=beside, cache=self.cache, recall=self.recall)
            except BudgetError:
                if sent == 0:
                    raise
                rounds -= 1
                break  # (the room the prompt takes leaves too little for the messages)
            if self.prompt is None:
                return fitted
            sent = _tokens(_prompted(self.prompt, state, fitted), self.budget, self.cache) + self.beside
            over = sent - self.budget.limit
            if over <= 0:
                return fitted
            # The room for the next fit: what the prompt adds to these messages (a fit that left
            # room to spare can be over by less than that: adding only the excess could leave the
            # next fit the same), at least the excess more than this fit had.
            added = sent - _tokens(fitted, self.budget, self.cache)
            beside = max(beside + over, added)
        raise BudgetError(
            f"a budget of {self.budget.limit} tokens cannot hold what the prompt makes of the fitted messages "
            f"({sent} tokens with the tools after {rounds} fits, each with the room the prompt took "
            "beside them): give the hook a larger budget, or a prompt that adds less",
            sent,
        )


def _tokens(messages: Sequence[BaseMessage], budget: Budget, cache: Converted | None = None) -> int:
    from agentcontext._core import Conversation

    convert = _convert
    dicts = [d for i, m in enumerate(messages) for d in (cache.entry(m, i, convert)[1] if cache else convert(m, i))]
    return Conversation(dicts, format="openai", encoding=budget.encoding).tokens if dicts else 0


def _prompted(prompt: Callable[[Any], Any], state: Any, messages: list[BaseMessage]) -> list[BaseMessage]:
    """What the agent's ``prompt`` makes of the state with ``messages`` (what the model receives)."""
    if isinstance(state, dict):
        shown: Any = {**state, "messages": messages}
    else:
        shown = state.model_copy(update={"messages": messages}) if hasattr(state, "model_copy") else state
    out = prompt(shown)
    if isinstance(out, PromptValue):
        return list(out.to_messages())
    if isinstance(out, str):
        return [HumanMessage(out)]
    return list(convert_to_messages(out))


def fit_hook(
    budget: int | Budget,
    *,
    prompt: object = None,
    tools: Sequence[Any] | None = None,
    on_event: EventCallback | None = None,
) -> RunnableLambda[Any, dict[str, Any]]:
    """A ``pre_model_hook`` returning ``{"llm_input_messages": fitted}`` (fitted into ``budget``:
    an int is the input budget, a :class:`~agentcontext.Budget` sets the options too); the state
    is unchanged. Give it the agent's ``prompt`` (a str, a ``SystemMessage``, a callable or a
    ``Runnable``, as ``create_react_agent`` takes it) and ``tools``: the model receives them
    beside the messages, so they are counted in. A newest tool result over the budget by itself
    is cut (the marker names its tool call id, under which the state keeps it whole).
    ``on_event``: called with each fit's events (one per fit: a callable ``prompt`` the fitted
    messages are over the budget with fits them again); a callback that raises is logged.

    Raises:
        ArgumentTypeError: ``budget`` of the wrong type (the factory itself given as the hook:
            call it), a ``prompt`` of no form the agent takes, or ``on_event`` not callable.
        OptionError: an unknown encoding, or an async ``prompt``.
        BudgetError: (when the hook runs) the messages do not fit, or what a callable ``prompt``
            makes of them is still over the budget after :data:`PROMPT_ROUNDS` fits.
    """
    fitter = _Fitter("fit_hook", budget, prompt, tools, "call_id", on_event)
    return _node(lambda state, messages: {"llm_input_messages": fitter(state, messages)})


def compact_hook(
    budget: int | Budget,
    *,
    prompt: object = None,
    tools: Sequence[Any] | None = None,
    on_event: EventCallback | None = None,
) -> RunnableLambda[Any, dict[str, Any]]:
    """A ``pre_model_hook`` that replaces the state's messages with the ones fitted into
    ``budget`` (as for :func:`fit_hook`, ``prompt`` and ``tools`` counted in, each fit's events
    to ``on_event``); nothing is written
    when they already fit unchanged. A cut result's marker says the original is not stored (the
    state no longer holds it)."""
    fitter = _Fitter("compact_hook", budget, prompt, tools, "none", on_event)

    def update(state: Any, messages: list[BaseMessage]) -> dict[str, Any]:
        fitted = fitter(state, messages)
        if len(fitted) == len(messages) and all(a is b for a, b in zip(fitted, messages, strict=True)):
            return {}
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *fitted]}

    return _node(update)
