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
"""

from __future__ import annotations

import importlib
import json
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from agentcontext import _checks
from agentcontext._core import Conversation, convert
from agentcontext.errors import (
    ContextOverflowError,
    MissingCredentialsError,
    MissingExtraError,
    OptionError,
    ProviderResponseError,
)
from agentcontext.types import Format, JsonDict

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "MODEL_WINDOWS",
    "AnthropicProvider",
    "Completion",
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "Provider",
    "ToolCall",
    "Usage",
    "classify_overflow",
    "context_window",
]

#: Context windows (input + output tokens) of common models, matched by the longest prefix of
#: the model name. Override per provider with ``context_window=``, or add entries here.
MODEL_WINDOWS: dict[str, int] = {
    # Anthropic (the 1M-token window of some Sonnet models needs a beta header; not assumed).
    "claude-opus-4": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-haiku-4": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
    "claude-3-opus": 200_000,
    "claude-3-haiku": 200_000,
    # OpenAI
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o4-mini": 200_000,
    "o3": 200_000,
    "o1": 200_000,
    "codex-mini": 200_000,
}


def context_window(model: str, override: int | None = None) -> int:
    """The context window of ``model``: ``override`` when given, else the longest prefix match in
    :data:`MODEL_WINDOWS`.

    Raises:
        OptionError: the model is not in the table and no override was given.
    """
    if override is not None:
        if override <= 0:
            raise OptionError(f"context_window must be positive, got {override}")
        return override
    best = max((p for p in MODEL_WINDOWS if model.startswith(p)), key=len, default=None)
    if best is None:
        raise OptionError(
            f"unknown context window for model {model!r}: pass context_window=... "
            "(or add it to agentcontext.providers.MODEL_WINDOWS)"
        )
    return MODEL_WINDOWS[best]


_window_of = context_window


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


# ---------------------------------------------------------------------------------------------
# Prompt too long.

_INT = r"(\d[\d,]*)"


def _num(text: str | None) -> int | None:
    return int(text.replace(",", "")) if text else None


#: (pattern, index of the tokens group or 0, index of the limit group or 0), tried in order on
#: the error message. Wordings of Anthropic, OpenAI, Azure OpenAI, vLLM, llama.cpp, Ollama,
#: Text Generation Inference, Mistral, Gemini's OpenAI-compatible endpoint, Bedrock, Groq and
#: OpenRouter.
_OVERFLOW_PATTERNS: tuple[tuple[re.Pattern[str], int, int], ...] = tuple(
    (re.compile(p, re.IGNORECASE), t, lim)
    for p, t, lim in (
        (rf"prompt is too long:\s*{_INT}\s*tokens\s*>\s*{_INT}", 1, 2),
        (rf"maximum context length is {_INT} tokens.*?\({_INT} in the messages", 2, 1),
        (rf"maximum context length is {_INT} tokens.*?(?:resulted in|requested) {_INT} tokens", 2, 1),
        (rf"maximum context length is {_INT}", 0, 1),
        (rf"input token count \({_INT}\) exceeds the maximum number of tokens allowed \({_INT}\)", 1, 2),
        (rf"prompt contains {_INT} tokens.*?too large for model with {_INT}", 1, 2),
        (rf"must be <= {_INT}\. Given: {_INT} `inputs` tokens", 2, 1),
        (rf"request \({_INT} tokens\) exceeds the available context size \({_INT} tokens\)", 1, 2),
        (rf"context length is only {_INT} tokens.*?{_INT} (?:input|requested)", 2, 1),
        (r"prompt is too long", 0, 0),
        (r"exceeds? the (?:available )?context (?:window|size|length)", 0, 0),
        (r"context[_ ]length[_ ]exceeded", 0, 0),
        (r"input (?:is|length) too long", 0, 0),
        (r"too many (?:input )?tokens", 0, 0),
        (r"reduce the length of the (?:messages|input|prompt)", 0, 0),
        (r"exceeds? (?:the )?max(?:imum)? (?:context|input|prompt) (?:length|tokens|size)", 0, 0),
    )
)

_OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error", "string_above_max_length"})


def _error_fields(error: Any) -> tuple[int | None, str, str | None, JsonDict]:
    """Status code, message, error code and body of an SDK error (anthropic or openai), an
    ``httpx``-style response error, or a plain dict body."""
    body: Any = error if isinstance(error, Mapping) else getattr(error, "body", None)
    status = getattr(error, "status_code", None)
    if status is None and isinstance(body, Mapping):
        status = body.get("status") if isinstance(body.get("status"), int) else None
    if not isinstance(body, Mapping):
        response = getattr(error, "response", None)
        try:
            body = response.json() if response is not None else {}
        except Exception:  # noqa: BLE001 - a body that is not JSON just has no fields
            body = {}
    body = dict(body) if isinstance(body, Mapping) else {}
    inner = body.get("error", body)
    if isinstance(inner, str):
        inner = {"message": inner}
    if not isinstance(inner, Mapping):
        inner = {}
    message = inner.get("message") or body.get("message") or body.get("detail") or ""
    if not isinstance(message, str):
        message = json.dumps(message)
    if not message and not isinstance(error, Mapping):
        message = str(error)
    code = inner.get("code") or inner.get("type")
    return status, message, code if isinstance(code, str) else None, body


def classify_overflow(error: BaseException | Mapping[str, Any], *, provider: str = "") -> ContextOverflowError | None:
    """A :class:`ContextOverflowError` when ``error`` (an SDK exception, or an error body as a
    dict) says the prompt is longer than the context window; None for every other error.

    Recognized: Anthropic ``prompt is too long: N tokens > M maximum``; OpenAI
    ``context_length_exceeded`` ("maximum context length is M tokens. However, your messages
    resulted in N tokens", "Your input exceeds the context window of this model"); and the
    wordings of OpenAI-compatible servers (vLLM, llama.cpp, Ollama, TGI, Mistral, Gemini, Groq,
    OpenRouter, Bedrock). A 413 status counts as an overflow too. Token numbers are taken from
    the message, or from llama.cpp's ``n_prompt_tokens``/``n_ctx`` fields.
    """
    if isinstance(error, ContextOverflowError):
        return error
    status, message, code, body = _error_fields(error)
    inner = body.get("error") if isinstance(body.get("error"), Mapping) else body
    tokens = limit = None
    matched = code in _OVERFLOW_CODES or status == 413
    for pattern, t, lim in _OVERFLOW_PATTERNS:
        found = pattern.search(message)
        if found:
            matched = True
            tokens = _num(found.group(t)) if t else None
            limit = _num(found.group(lim)) if lim else None
            break
    if not matched:
        return None
    if isinstance(inner, Mapping):
        tokens = tokens if tokens is not None else _int_or_none(inner.get("n_prompt_tokens"))
        limit = limit if limit is not None else _int_or_none(inner.get("n_ctx"))
    name = provider or type(error).__module__.split(".")[0]
    text = message or "the prompt is longer than the model's context window"
    return ContextOverflowError(
        f"{name}: {text}" if name else text, provider=name, tokens=tokens, limit=limit, status_code=status
    )


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# ---------------------------------------------------------------------------------------------
# Providers.


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
        self.model = model
        self.context_window = _window_of(model, context_window)

    def complete(
        self,
        conversation: Conversation,
        *,
        max_tokens: int = 4_096,
        system: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
        **params: Any,
    ) -> Completion:
        """One model call. ``params`` go to the SDK call unchanged (temperature, metadata, ...)."""
        _checks.count("max_tokens", max_tokens, minimum=1)
        try:
            return self._complete(
                conversation, max_tokens=max_tokens, system=system, tools=tools, tool_choice=tool_choice, **params
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
        max_tokens: int,
        system: str | None,
        tools: Sequence[Mapping[str, Any]] | None,
        tool_choice: Any,
        **params: Any,
    ) -> Completion:
        """One call: the request body of this provider with the tools, the tool choice, the
        caller's parameters and the provider's ``context_management`` (unless the call passes its
        own), sent by the SDK; the answer read as a :class:`Completion`. Errors are classified by
        :meth:`complete`."""
        body = _with_options(self._request(conversation, max_tokens, system), tools, tool_choice, params)
        if self.context_management is not None and "context_management" not in body:
            body["context_management"] = self.context_management
        return self._completion(_raw_json(self._send(body)))

    @abstractmethod
    def _request(self, conversation: Conversation, max_tokens: int, system: str | None) -> dict[str, Any]:
        """The request body: the model, the output limit, the conversation and ``system``."""

    @abstractmethod
    def _send(self, body: dict[str, Any]) -> Any:
        """The SDK's ``with_raw_response`` call with ``body``."""

    @abstractmethod
    def _completion(self, data: JsonDict) -> Completion:
        """The completion the server answered with ``data`` (its JSON body)."""

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


class AnthropicProvider(Provider):
    """Anthropic Messages through the ``anthropic`` SDK.

    ``client`` is an ``anthropic.Anthropic`` (default: one built from ``client_options``, e.g.
    ``api_key``, ``base_url``). ``context_management`` (see
    :func:`agentcontext.server_side.anthropic_context_management`) and ``betas`` are sent on
    every call; with either, the call goes through ``client.beta.messages``.
    """

    format: ClassVar[Format] = "anthropic"
    name: ClassVar[str] = "anthropic"

    def __init__(
        self,
        model: str = "claude-sonnet-4-6",
        *,
        client: Any = None,
        context_window: int | None = None,
        context_management: Mapping[str, Any] | None = None,
        betas: Sequence[str] = (),
        **client_options: Any,
    ) -> None:
        super().__init__(model, context_window=context_window)
        self._adopt_client(client, "anthropic", "Anthropic", client_options)
        self.context_management = dict(context_management) if context_management else None
        self.betas = list(betas)

    def _request(self, conversation: Conversation, max_tokens: int, system: str | None) -> dict[str, Any]:
        request = conversation.to_anthropic_params(request=True)
        body: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "messages": request.get("messages", [])}
        own_system = request.get("system")
        if system is not None:
            body["system"] = system if not own_system else _join_system(own_system, system)
        elif own_system:
            body["system"] = own_system
        return body

    def _send(self, body: dict[str, Any]) -> Any:
        if self.betas or "context_management" in body or "betas" in body:
            body["betas"] = sorted({*self.betas, *body.get("betas", ())})
            return self.client.beta.messages.with_raw_response.create(**body)
        return self.client.messages.with_raw_response.create(**body)

    def _completion(self, data: JsonDict) -> Completion:
        content = data.get("content") or []
        usage = data.get("usage") or {}
        cache_read = usage.get("cache_read_input_tokens") or 0
        cache_write = usage.get("cache_creation_input_tokens") or 0
        calls = [
            ToolCall(b["id"], b["name"], json.dumps(b.get("input", {}), ensure_ascii=False))
            for b in content
            if b.get("type") in ("tool_use", "server_tool_use")
        ]
        return Completion(
            format="anthropic",
            model=data.get("model", self.model),
            messages=[{"role": "assistant", "content": content}],
            text="".join(b.get("text", "") for b in content if b.get("type") == "text"),
            tool_calls=[c for c in calls if c.id],
            usage=Usage(
                input_tokens=(usage.get("input_tokens") or 0) + cache_read + cache_write,
                output_tokens=usage.get("output_tokens") or 0,
                cache_read_tokens=cache_read,
                cache_write_tokens=cache_write,
            ),
            stop_reason=data.get("stop_reason"),
            raw=data,
        )


def _join_system(own: Any, extra: str) -> Any:
    if isinstance(own, str):
        return f"{own}\n\n{extra}"
    return [*own, {"type": "text", "text": extra}]


class OpenAIChatProvider(Provider):
    """OpenAI Chat Completions through the ``openai`` SDK; also any OpenAI-compatible server
    (vLLM, llama.cpp, Ollama, OpenRouter...) through ``base_url``.

    ``max_tokens_param`` names the output limit field: ``max_completion_tokens`` (OpenAI) or
    ``max_tokens`` (most compatible servers).
    """

    format: ClassVar[Format] = "openai"
    name: ClassVar[str] = "openai"

    def __init__(
        self,
        model: str = "gpt-4o",
        *,
        client: Any = None,
        context_window: int | None = None,
        max_tokens_param: str = "max_completion_tokens",
        **client_options: Any,
    ) -> None:
        super().__init__(model, context_window=context_window)
        self._adopt_client(client, "openai", "OpenAI", client_options)
        self.max_tokens_param = max_tokens_param

    def _request(self, conversation: Conversation, max_tokens: int, system: str | None) -> dict[str, Any]:
        messages = conversation.to_openai(request=True)
        if system is not None:
            messages = [{"role": "system", "content": system}, *messages]
        return {"model": self.model, "messages": messages, self.max_tokens_param: max_tokens}

    def _send(self, body: dict[str, Any]) -> Any:
        return self.client.chat.completions.with_raw_response.create(**body)

    def _completion(self, data: JsonDict) -> Completion:
        choice = (data.get("choices") or [{}])[0]
        message = dict(choice.get("message") or {"role": "assistant", "content": ""})
        usage = data.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        calls = [
            ToolCall(c["id"], c["function"]["name"], c["function"].get("arguments") or "{}")
            for c in message.get("tool_calls") or []
            if c.get("type", "function") == "function"
        ]
        return Completion(
            format="openai",
            model=data.get("model", self.model),
            messages=[message],
            text=message.get("content") or "",
            tool_calls=calls,
            usage=Usage(
                input_tokens=usage.get("prompt_tokens") or 0,
                output_tokens=usage.get("completion_tokens") or 0,
                cache_read_tokens=details.get("cached_tokens") or 0,
            ),
            stop_reason=choice.get("finish_reason"),
            raw=data,
        )


class OpenAIResponsesProvider(Provider):
    """OpenAI Responses through the ``openai`` SDK (stateless: the whole input is sent each call).

    ``context_management`` (e.g. ``[{"type": "compaction", "compact_threshold": 200000}]``, see
    :func:`agentcontext.server_side.openai_context_management`) turns on the server's automatic
    compaction; the compaction items it returns are kept in history unchanged. :meth:`compact`
    calls ``responses.compact``.
    """

    format: ClassVar[Format] = "responses"
    name: ClassVar[str] = "openai-responses"

    def __init__(
        self,
        model: str = "gpt-5",
        *,
        client: Any = None,
        context_window: int | None = None,
        context_management: Sequence[Mapping[str, Any]] | None = None,
        **client_options: Any,
    ) -> None:
        super().__init__(model, context_window=context_window)
        self._adopt_client(client, "openai", "OpenAI", client_options)
        self.context_management = [dict(x) for x in context_management] if context_management else None

    def _request(self, conversation: Conversation, max_tokens: int, system: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "input": conversation.to_responses(request=True),
            "max_output_tokens": max_tokens,
        }
        if system is not None:
            body["instructions"] = system
        return body

    def _send(self, body: dict[str, Any]) -> Any:
        return self.client.responses.with_raw_response.create(**body)

    def _completion(self, data: JsonDict) -> Completion:
        output = list(data.get("output") or [])
        usage = data.get("usage") or {}
        text = "".join(
            part.get("text", "")
            for item in output
            if item.get("type") == "message"
            for part in item.get("content") or []
            if part.get("type") == "output_text"
        )
        calls = [
            ToolCall(item["call_id"], item["name"], item.get("arguments") or "{}")
            for item in output
            if item.get("type") == "function_call"
        ] + [
            ToolCall(item["call_id"], item["name"], json.dumps({"input": item.get("input", "")}))
            for item in output
            if item.get("type") == "custom_tool_call"
        ]
        status = data.get("status")
        incomplete = (data.get("incomplete_details") or {}).get("reason")
        return Completion(
            format="responses",
            model=data.get("model", self.model),
            messages=output,
            text=text,
            tool_calls=calls,
            usage=Usage(
                input_tokens=usage.get("input_tokens") or 0,
                output_tokens=usage.get("output_tokens") or 0,
                cache_read_tokens=(usage.get("input_tokens_details") or {}).get("cached_tokens") or 0,
            ),
            stop_reason=incomplete or status,
            raw=data,
        )

    def compact(self, conversation: Conversation, **params: Any) -> Conversation:
        """The server's compaction of ``conversation`` (``responses.compact``): the returned items
        (the user messages and one opaque compaction item) as a new Responses conversation. The
        input is not changed."""
        try:
            raw = self.client.responses.with_raw_response.compact(
                model=self.model, input=conversation.to_responses(request=True), **params
            )
        except Exception as exc:
            overflow = classify_overflow(exc, provider=self.name)
            if overflow is None:
                raise
            raise overflow from exc
        data = _raw_json(raw)
        return Conversation(data.get("output") or [], format="responses", encoding=conversation.encoding)
