"""Drop-in adapters for agent frameworks, one module each, imported only when used:

- :mod:`agentcontext.integrations.langchain`: ``AgentContextMiddleware`` for LangChain v1's
  ``create_agent``, optionally running the compaction ladder with its summary kept in the agent
  state (``pip install 'agentcontext[langchain]'``).
- :mod:`agentcontext.integrations.langgraph`: ``fit_hook`` (view-only) and ``compact_hook``
  (rewrites the state) for a ``pre_model_hook`` (``agentcontext[langgraph]``).
- :mod:`agentcontext.integrations.openai_agents`: ``input_filter`` for ``RunConfig
  (call_model_input_filter=...)`` and ``CompactingSession``, a lossless compacting session over
  any SDK session (``agentcontext[openai-agents]``).
- :mod:`agentcontext.integrations.pydantic_ai`: ``history_processor`` for ``ProcessHistory``
  (``agentcontext[pydantic-ai]``).
- :mod:`agentcontext.integrations.litellm`: ``fit_messages`` (and ``afit_messages`` for
  ``acompletion``) over LiteLLM's message objects and dicts (``agentcontext[litellm]``). LiteLLM's and the OpenAI SDK's pydantic messages (and any
  ``Mapping``) are also read directly wherever the library takes dicts.

Every adapter takes ``budget: int | Budget`` first: an int is the input token budget with the
default options and no room reserved; a :class:`Budget` (also ``agentcontext.Budget``) sets
``reserved_output``, ``safety_margin``, ``encoding`` and the clearing options.

Every adapter fits each model call into a token budget: old tool results cleared, the system
messages, the latest user request and the longest recent suffix kept, no tool call without its
result. The messages the model receives are the caller's own objects where nothing changed, new
ones only where a result was cleared or the request cut. Token counts are exact (o200k_base by
default) and memoized across calls (:func:`agentcontext.token_cache_info`).
"""

from agentcontext.integrations._fit import Budget

__all__ = ["Budget"]
