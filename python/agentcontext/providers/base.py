"""What every provider shares: the :class:`Provider` interface, its results (:class:`Completion`,
:class:`ToolCall`, :class:`Usage`), and building the SDK client (the optional extra, the
credentials)."""

from __future__ import annotations

import importlib
import json
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from agentcontext import _checks
from agentcontext._core import Conversation, convert
from agentcontext.budgets.windows import context_window as _window_of
from agentcontext.errors import (
    ArgumentTypeError,
    CompactionError,
    ContextOverflowError,
    MissingCredentialsError,
    MissingExtraError,
    OptionError,
    ProviderResponseError,
    remember_credentials,
)
from agentcontext.providers.overflow import classify_overflow
from agentcontext.types import Format, JsonDict

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["Completion", "Provider", "ToolCall", "Usage"]


def _require(module: str, extra: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"the {module!r} package is needed for this provider: pip install 'agentcontext[{extra}]'"
        ) from exc


# ---------------------------------------------------------------------------------------------
# Results.


@dataclass(frozen=True)
class Usage:
    """Tokens the provider reported for one call. ``input_tokens`` includes cached tokens (for
    Anthropic: input + cache reads + cache writes), so it is the size of the whole prompt."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model made: ``arguments`` is the JSON text the provider sent (for
    free-form tools, ``{"input": ...}``)."""

    id: str
    name: str
    arguments: str

    def parsed(self) -> Any:
        """The arguments as JSON (a string that is not JSON comes back unchanged). Arguments nested
        deeper than 128 levels raise :class:`~agentcontext.errors.OptionError` (no tool runs them)."""
        try:
            return _checks.json_arguments(self.arguments, f"the arguments of tool call {self.id!r}")
        except OptionError:
            raise
        except ValueError:
            return self.arguments


@dataclass(frozen=True)
class Completion:
    """One model response: the messages to append to history (in the provider's format, taken
    from the response body unchanged), the text, the tool calls, the usage and the stop reason."""

    format: Format
    model: str
    messages: list[JsonDict]
    text: str
    tool_calls: list[ToolCall]
    usage: Usage
    stop_reason: str | None
    #: The response body as the provider sent it.
    raw: JsonDict = field(repr=False)


#: The keyword arguments and environment variables each SDK takes its credentials from.
_CREDENTIALS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "anthropic": (("api_key", "auth_token"), ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")),
    "openai": (("api_key",), ("OPENAI_API_KEY",)),
}


def _check_credentials(provider: str, module: str, options: Mapping[str, Any]) -> None:
    """Fail at construction, the same way for every provider, when the SDK would find no key (the
    Anthropic SDK fails only at the first call, with a TypeError; the OpenAI SDK at once)."""
    keywords, variables = _CREDENTIALS[module]
    if any(options.get(k) is not None for k in keywords) or any(os.environ.get(v) for v in variables):
        return
    raise MissingCredentialsError(
        f"no API key for {provider}: set the {variables[0]} environment variable or pass api_key=...",
        variables[0],
    )


class Provider(ABC):
    """The interface every provider implements. ``complete`` sends the conversation (converted to
    :attr:`format`) and returns a :class:`Completion`; a prompt-too-long error is raised as
    :class:`~agentcontext.errors.ContextOverflowError`."""

    #: The message format of the API (conversations are converted to it).
    format: ClassVar[Format]
    #: A short name for errors and reports.
    name: ClassVar[str]
    #: The SDK client calls go through.
    client: Any
    #: Server-side context management sent on every call that does not pass its own (Anthropic,
    #: Responses); None sends nothing.
    context_management: Any = None

    def __init__(self, model: str, *, context_window: int | None = None) -> None:
        _checks.optional_count("context_window", context_window, minimum=1)
        if not isinstance(model, str):
            raise ArgumentTypeError(f"model of {type(self).__name__} must be a model name (str), got {model!r}")
        if not model:
            raise OptionError(f"model of {type(self).__name__} must be a model name, got an empty string")
        self.model = model
        self.context_window = _window_of(model, context_window)

    def complete(
        self,
        conversation: Conversation,
        *,
        max_output_tokens: int = 4_096,
        system: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
        **params: Any,
    ) -> Completion:
        """One model call. ``params`` go to the SDK call unchanged (temperature, metadata, ...)."""
        _checks.count("max_output_tokens", max_output_tokens, minimum=1)
        if not isinstance(conversation, Conversation):
            raise ArgumentTypeError(
                f"conversation of {type(self).__name__}.complete must be a Conversation, got {type(conversation).__name__}"
                " (make one: Conversation(messages, format=...))"
            )
        if system is not None and not isinstance(system, str):
            raise ArgumentTypeError(
                f"system of {type(self).__name__}.complete must be a str or None, got {type(system).__name__}"
            )
        tools = _objects(tools, f"tools of {type(self).__name__}.complete")
        try:
            return self._complete(
                conversation,
                max_output_tokens=max_output_tokens,
                system=system,
                tools=tools,
                tool_choice=tool_choice,
                **params,
            )
        except ContextOverflowError:
            raise
        except Exception as exc:
            overflow = classify_overflow(exc, provider=self.name)
            if overflow is None:
                raise
            raise overflow from exc

    def _complete(
        self,
        conversation: Conversation,
        *,
        max_output_tokens: int,
        system: str | None,
        tools: Sequence[Mapping[str, Any]] | None,
        tool_choice: Any,
        **params: Any,
    ) -> Completion:
        """One call: the request body of this provider with the tools, the tool choice, the
        caller's parameters and the provider's ``context_management`` (unless the call passes its
        own), sent by the SDK; the answer read as a :class:`Completion`. Errors are classified by
        :meth:`complete`."""
        body = _with_options(self._request(conversation, max_output_tokens, system), tools, tool_choice, params)
        if self.context_management is not None and "context_management" not in body:
            body["context_management"] = self.context_management
        return self._completion(_raw_json(self._send(body)))

    @abstractmethod
    def _request(self, conversation: Conversation, max_output_tokens: int, system: str | None) -> dict[str, Any]:
        """The request body: the model, the output limit, the conversation and ``system``."""

    @abstractmethod
    def _send(self, body: dict[str, Any]) -> Any:
        """The SDK's ``with_raw_response`` call with ``body``."""

    @abstractmethod
    def _completion(self, data: JsonDict) -> Completion:
        """The completion the server answered with ``data`` (its JSON body)."""

    def native_unavailable(self, conversation: Conversation) -> str | None:
        """Why this provider cannot compact ``conversation`` its own way now (None: it can; see
        :class:`~agentcontext.compaction.native.NativeCompaction`). This one has no native compaction."""
        return f"{self.name} has no native compaction"

    def compact_natively(self, conversation: Conversation, *, system: str | None = None) -> Conversation:
        """The provider's own compaction of ``conversation`` after its system messages (``system``:
        the agent's system prompt besides them), as the API requires it to be sent on.

        Raises:
            CompactionError: this provider has no native compaction.
        """
        raise CompactionError(self.native_unavailable(conversation) or f"{self.name} cannot compact natively")

    def messages_of(self, conversation: Conversation) -> list[JsonDict]:
        """The conversation's messages in this provider's format."""
        if self.format == "anthropic":
            return list(conversation.to_anthropic_params(request=True).get("messages", []))
        return conversation.to_format(self.format, request=True)

    def tool_results(self, results: Iterable[tuple[str, str]]) -> list[JsonDict]:
        """Messages in this provider's format that answer tool calls: ``(call id, output)`` pairs."""
        normalized = [{"role": "tool", "tool_call_id": cid, "content": out} for cid, out in results]
        if self.format == "anthropic":
            return list(convert(normalized, to="anthropic", source="jsonl").get("messages", []))
        return convert(normalized, to=self.format, source="jsonl")

    def _adopt_client(self, client: Any, module: str, factory: str, options: Mapping[str, Any]) -> None:
        """Use ``client``, or build one with ``module.factory(**options)`` (the optional extra of
        that name; a client built here is closed by :meth:`close`)."""
        self._owns_client = client is None
        if client is None:
            sdk = _require(module, module)
            _check_credentials(type(self).__name__, module, options)
            client = getattr(sdk, factory)(**options)
        self.client = client
        # Its keys are masked from every failure text the library writes (a server may echo them;
        # a client built here holds the keys of ``options``).
        remember_credentials(*(getattr(client, k, None) for k in _CREDENTIALS[module][0]))

    def close(self) -> None:
        """Close the SDK client if this provider built it (a client passed in is the caller's)."""
        if getattr(self, "_owns_client", False):
            self.client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, context_window={self.context_window:,})"


def _objects(value: Any, where: str) -> list[Mapping[str, Any]] | None:
    """``value`` (None, or a sequence of mappings: tool definitions, context management edits)
    as a list; anything else (a string, one mapping) is an error naming ``where``."""
    if value is None:
        return None
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise ArgumentTypeError(f"{where} must be a list of objects or None, got {type(value).__name__}")
    for i, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise ArgumentTypeError(f"{where}[{i}] must be an object (a mapping), got {type(item).__name__}")
    return list(value)


def _names(value: Any, where: str) -> list[str]:
    """``value`` (a sequence of non-empty strings: beta names) as a list; a string alone is an
    error (its characters are not names)."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | set | frozenset):
        raise ArgumentTypeError(f"{where} must be a list of names (str), got {type(value).__name__}")
    for item in value:
        if not isinstance(item, str) or not item:
            raise ArgumentTypeError(f"{where} must hold non-empty names (str), got {item!r}")
    return list(value)


def _with_options(
    body: dict[str, Any], tools: Sequence[Mapping[str, Any]] | None, tool_choice: Any, params: Mapping[str, Any]
) -> dict[str, Any]:
    """``body`` with the tools, the tool choice and the caller's extra parameters."""
    if tools:
        body["tools"] = list(tools)
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    body.update(params)
    return body


def _raw_json(raw: Any) -> JsonDict:
    """The response body of an SDK ``with_raw_response`` call, as the server sent it.

    Raises:
        ProviderResponseError: the body is not a JSON object.
    """
    try:
        body = json.loads(raw.http_response.content)
    except ValueError as exc:
        raise ProviderResponseError(f"the provider answered with a body that is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ProviderResponseError(f"the provider answered with a {type(body).__name__}, not a JSON object")
    return body
