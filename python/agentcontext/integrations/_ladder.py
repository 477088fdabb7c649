"""The compaction ladder for the adapters that keep a summary (LangChain's middleware, the OpenAI
Agents session): the :class:`~agentcontext.Compactor` they run, from their arguments."""

from __future__ import annotations

from dataclasses import replace

from agentcontext.compaction import PRESETS, Compactor
from agentcontext.compaction.summarize import Summarizer
from agentcontext.errors import ArgumentTypeError, OptionError
from agentcontext.integrations._fit import Budget


def make_compactor(compaction: object, summarizer: Summarizer | None, budget: Budget) -> Compactor | None:
    """The compactor for ``compaction``: None (off: False and no ``summarizer``), the given
    :class:`Compactor`, or (True, or a ``summarizer`` given) the ``openharness`` ladder with the
    budget's encoding, clearing and recent-message options and ``summarizer`` (default: offline).

    Raises:
        ArgumentTypeError: ``compaction`` or ``summarizer`` of the wrong type.
        OptionError: a summarizer beside a Compactor, or a Compactor counting with another encoding.
    """
    if isinstance(compaction, Compactor):
        if summarizer is not None:
            raise OptionError("give the summarizer to the Compactor, not beside it")
        if compaction.policy.encoding != budget.encoding:
            raise OptionError(
                f"the Compactor counts with {compaction.policy.encoding}, the adapter with {budget.encoding}"
            )
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
    return Compactor(policy, summarizer=summarizer)
