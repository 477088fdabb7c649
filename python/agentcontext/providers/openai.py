"""OpenAI Chat Completions and Responses through the ``openai`` SDK (and OpenAI-compatible
servers through ``base_url``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from agentcontext._core import Conversation
from agentcontext.providers.base import Completion, Provider, ToolCall, Usage, _raw_json
from agentcontext.providers.overflow import classify_overflow
from agentcontext.types import Format, JsonDict

__all__ = ["OpenAIChatProvider", "OpenAIResponsesProvider"]


class OpenAIChatProvider(Provider):
    """OpenAI Chat Completions through the ``openai`` SDK; also any OpenAI-compatible server
    (vLLM, llama.cpp, Ollama, OpenRouter...) through ``base_url``.

    ``max_output_tokens_param`` names the request field of the output limit: ``max_completion_tokens`` (OpenAI) or
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
        max_output_tokens_param: str = "max_completion_tokens",
        **client_options: Any,
    ) -> None:
        super().__init__(model, context_window=context_window)
        self._adopt_client(client, "openai", "OpenAI", client_options)
        self.max_output_tokens_param = max_output_tokens_param

    def _request(self, conversation: Conversation, max_output_tokens: int, system: str | None) -> dict[str, Any]:
        messages = conversation.to_openai(request=True)
        if system is not None:
            messages = [{"role": "system", "content": system}, *messages]
        return {"model": self.model, "messages": messages, self.max_output_tokens_param: max_output_tokens}

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
    :func:`agentcontext.providers.server_side.openai_context_management`) turns on the server's automatic
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

    def _request(self, conversation: Conversation, max_output_tokens: int, system: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "input": conversation.to_responses(request=True),
            "max_output_tokens": max_output_tokens,
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
