"""Model providers over the official SDKs: Anthropic Messages, OpenAI Chat Completions and OpenAI
Responses, each an optional extra imported only when a provider is built
(``pip install 'agentcontext[anthropic]'``, ``'agentcontext[openai]'``).

A provider sends a :class:`~agentcontext.Conversation` as its API expects it and returns a
:class:`Completion` holding the provider's own response body (so blocks and items the library
does not interpret, such as Anthropic compaction blocks and OpenAI compaction items, go back into
history unchanged), the text, the tool calls and the reported usage.

A prompt-too-long error from any of them, or from an OpenAI-compatible server, is raised as one
:class:`~agentcontext.errors.ContextOverflowError` (see :func:`classify_overflow`); every other
SDK error propagates unchanged.

- :mod:`.base`: the :class:`Provider` interface and its results; :mod:`.anthropic`,
  :mod:`.openai`: the providers; :mod:`.overflow`: prompt-too-long errors. Models' context
  windows come from :mod:`agentcontext.budgets.windows` (re-exported here).
- :mod:`.scripted`: offline models that answer from a script (no network, no key), for examples,
  notebooks and tests.
- :mod:`.server_side`: the servers' own context management, built from a compaction policy
  (import it by its module).
"""

from agentcontext.budgets.windows import (
    MODEL_WINDOWS,
    ModelWindow,
    context_window,
    encoding_for_model,
    model_window,
    register_model,
)
from agentcontext.providers.anthropic import AnthropicProvider
from agentcontext.providers.base import Completion, Provider, ToolCall, Usage
from agentcontext.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider
from agentcontext.providers.overflow import classify_overflow
from agentcontext.providers.scripted import (
    Reply,
    ScriptedAnthropicProvider,
    ScriptedChatProvider,
    ScriptedRequest,
    scripted_call,
)

__all__ = [
    "MODEL_WINDOWS",
    "AnthropicProvider",
    "Completion",
    "ModelWindow",
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "Provider",
    "Reply",
    "ScriptedAnthropicProvider",
    "ScriptedChatProvider",
    "ScriptedRequest",
    "ToolCall",
    "Usage",
    "classify_overflow",
    "context_window",
    "encoding_for_model",
    "model_window",
    "register_model",
    "scripted_call",
]
