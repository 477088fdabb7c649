"""OpenAI Chat Completions and Responses through the ``openai`` SDK (and OpenAI-compatible
servers through ``base_url``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from agentcontext._core import Conversation
from agentcontext.errors import ArgumentTypeError
from agentcontext.providers._body import Body
from agentcontext.providers.base import Completion, Provider, ToolCall, Usage, _objects, _raw_json
from agentcontext.providers.overflow import classify_overflow
from agentcontext.types import Format, JsonDict

__all__ = ["OpenAIChatProvider", "OpenAIResponsesProvider"]


class OpenAIChatProvider(Provider):
    """OpenAI Chat Completions through the ``openai`` SDK; also any OpenAI-compatible server
    (vLLM, llama.cpp, Ollama, OpenRouter...) through ``base_url``.

    ``max_output_tokens_param`` names the request field of the output limit: ``max_completion_tokens`` (OpenAI) or
    ``max_tokens`` (most compatible servers). ``prompt_cache_key`` goes with every request (OpenAI
    routes requests with the same key to the same prompt cache; a call's own wins).
    """

    format: ClassVar[Format] = "openai"
    name: ClassVar[str] = "openai"

    def __init__(
        self,
        model: str = "gpt-4o",
        *,
        client: Any = None,
        context_window: int | None = None,
        max_output_tokens_param: str = "max_completion_tokens",
        prompt_cache_key: str | None = None,
        **client_options: Any,
    ) -> None:
        super().__init__(model, context_window=context_window)
        self._adopt_client(client, "openai", "OpenAI", client_options)
        if not isinstance(max_output_tokens_param, str) or not max_output_tokens_param:
            raise ArgumentTypeError(
                f"max_output_tokens_param of OpenAIChatProvider must be a request field name (a non-empty str), "
                f"got {max_output_tokens_param!r}"
            )
        self.max_output_tokens_param = max_output_tokens_param
        self.prompt_cache_key = _cache_key(prompt_cache_key)

    def _request(self, conversation: Conversation, max_output_tokens: int, system: str | None) -> dict[str, Any]:
        messages = conversation.to_openai(request=True)
        if system is not None:
            messages = [{"role": "system", "content": system}, *messages]
        body = {"model": self.model, "messages": messages, self.max_output_tokens_param: max_output_tokens}
        return _with_cache_key(body, self.prompt_cache_key)

    def _send(self, body: dict[str, Any]) -> Any:
        return self.client.chat.completions.with_raw_response.create(**body)

    def _completion(self, data: JsonDict) -> Completion:
        body = Body(self.name, data)
        choices = body.objects(data.get("choices"), "choices")
        choice = choices[0] if choices else {}
        message = body.object(choice.get("message"), "choices[0].message") or {"role": "assistant", "content": ""}
        usage = body.object(data.get("usage"), "usage")
        details = body.object(usage.get("prompt_tokens_details"), "usage.prompt_tokens_details")
        calls = [
            ToolCall(
                body.name(c.get("id"), f"choices[0].message.tool_calls[{i}].id"),
                body.name(function.get("name"), f"choices[0].message.tool_calls[{i}].function.name"),
                body.arguments(function.get("arguments"), f"choices[0].message.tool_calls[{i}].function.arguments"),
            )
            for i, c in enumerate(body.objects(message.get("tool_calls"), "choices[0].message.tool_calls"))
            if c.get("type", "function") == "function"
            for function in [body.object(c.get("function"), f"choices[0].message.tool_calls[{i}].function")]
        ]
        return Completion(
            format="openai",
            model=body.model(self.model),
            messages=[message],
            text=_chat_text(body, message.get("content")),
            tool_calls=calls,
            usage=Usage(
                input_tokens=body.tokens(usage, "prompt_tokens", "usage"),
                output_tokens=body.tokens(usage, "completion_tokens", "usage"),
                cache_read_tokens=body.tokens(details, "cached_tokens", "usage.prompt_tokens_details"),
                cache_write_tokens=body.tokens(details, "cache_write_tokens", "usage.prompt_tokens_details"),
            ),
            stop_reason=body.optional_text(choice.get("finish_reason"), "choices[0].finish_reason"),
            raw=data,
        )


class OpenAIResponsesProvider(Provider):
    """OpenAI Responses through the ``openai`` SDK (stateless: the whole input is sent each call).

    ``context_management`` (e.g. ``[{"type": "compaction", "compact_threshold": 200000}]``, see
    :func:`agentcontext.providers.server_side.openai_context_management`) turns on the server's automatic
    compaction; the compaction items it returns are kept in history unchanged. :meth:`compact`
    calls ``responses.compact`` (also the native rung's compaction, :meth:`compact_natively`).
    ``prompt_cache_key`` goes with every request and compaction (a call's own wins).
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
        prompt_cache_key: str | None = None,
        **client_options: Any,
    ) -> None:
        super().__init__(model, context_window=context_window)
        self._adopt_client(client, "openai", "OpenAI", client_options)
        edits = _objects(context_management, "context_management of OpenAIResponsesProvider")
        self.context_management = [dict(x) for x in edits] if edits else None
        self.prompt_cache_key = _cache_key(prompt_cache_key)

    def _request(self, conversation: Conversation, max_output_tokens: int, system: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "input": conversation.to_responses(request=True),
            "max_output_tokens": max_output_tokens,
        }
        if system is not None:
            body["instructions"] = system
        return _with_cache_key(body, self.prompt_cache_key)

    def _send(self, body: dict[str, Any]) -> Any:
        return self.client.responses.with_raw_response.create(**body)

    def _completion(self, data: JsonDict) -> Completion:
        body = Body(self.name, data)
        output = body.objects(data.get("output"), "output")
        usage = body.object(data.get("usage"), "usage")
        details = body.object(usage.get("input_tokens_details"), "usage.input_tokens_details")
        text = "".join(
            body.text(part.get("text"), f"output[{i}].content[{k}].text")
            for i, item in enumerate(output)
            if item.get("type") == "message"
            for k, part in enumerate(body.objects(item.get("content"), f"output[{i}].content"))
            if part.get("type") == "output_text"
        )
        calls = [
            ToolCall(
                body.name(item.get("call_id"), f"output[{i}].call_id"),
                body.name(item.get("name"), f"output[{i}].name"),
                body.arguments(item.get("arguments"), f"output[{i}].arguments")
                if item.get("type") == "function_call"
                else json.dumps({"input": body.text(item.get("input"), f"output[{i}].input")}),
            )
            for i, item in enumerate(output)
            if item.get("type") in ("function_call", "custom_tool_call")
        ]
        status = body.optional_text(data.get("status"), "status")
        incomplete = body.optional_text(
            body.object(data.get("incomplete_details"), "incomplete_details").get("reason"), "incomplete_details.reason"
        )
        return Completion(
            format="responses",
            model=body.model(self.model),
            messages=output,
            text=text,
            tool_calls=calls,
            usage=Usage(
                input_tokens=body.tokens(usage, "input_tokens", "usage"),
                output_tokens=body.tokens(usage, "output_tokens", "usage"),
                cache_read_tokens=body.tokens(details, "cached_tokens", "usage.input_tokens_details"),
                cache_write_tokens=body.tokens(details, "cache_write_tokens", "usage.input_tokens_details"),
            ),
            stop_reason=incomplete or status,
            raw=data,
        )

    def native_unavailable(self, conversation: Conversation) -> str | None:
        """None: ``responses.compact`` takes any conversation."""
        return None

    def compact_natively(self, conversation: Conversation, *, system: str | None = None) -> Conversation:
        """:meth:`compact` of ``conversation`` after its system messages, with ``system`` (the
        agent's system prompt) as the instructions: the returned items, the compaction item byte
        for byte."""
        rest = conversation.slice(conversation.preamble)
        return self.compact(rest, **({"instructions": system} if system else {}))

    def compact(self, conversation: Conversation, **params: Any) -> Conversation:
        """The server's compaction of ``conversation`` (``responses.compact``): the returned items
        (the user messages and one opaque compaction item) as a new Responses conversation. The
        input is not changed. The provider's ``prompt_cache_key`` goes with it."""
        params = _with_cache_key(dict(params), self.prompt_cache_key)
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
        output = Body(self.name, data).objects(data.get("output"), "output")
        return Conversation(output, format="responses", encoding=conversation.encoding)


def _cache_key(key: str | None) -> str | None:
    """``key`` when None or a non-empty string (OpenAI's ``prompt_cache_key``)."""
    if key is not None and (not isinstance(key, str) or not key):
        raise ArgumentTypeError(f"prompt_cache_key must be a non-empty string or None, got {key!r}")
    return key


def _with_cache_key(body: dict[str, Any], key: str | None) -> dict[str, Any]:
    """``body`` with ``prompt_cache_key`` (requests with the same key are routed to the same
    prompt cache), unless it has one or there is none."""
    if key is not None:
        body.setdefault("prompt_cache_key", key)
    return body


def _chat_text(body: Body, content: Any) -> str:
    """The text of a Chat message's ``content``: a string, or (as some compatible servers answer)
    a list of parts whose ``text`` parts are joined."""
    if isinstance(content, list):
        parts = body.objects(content, "choices[0].message.content")
        return "".join(
            body.text(p.get("text"), f"choices[0].message.content[{k}].text")
            for k, p in enumerate(parts)
            if p.get("type") == "text"
        )
    return body.text(content, "choices[0].message.content")
