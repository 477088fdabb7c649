"""Anthropic Messages through the ``anthropic`` SDK."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from agentcontext._core import Conversation
from agentcontext.providers.base import Completion, Provider, ToolCall, Usage
from agentcontext.types import Format, JsonDict

__all__ = ["AnthropicProvider"]


class AnthropicProvider(Provider):
    """Anthropic Messages through the ``anthropic`` SDK.

    ``client`` is an ``anthropic.Anthropic`` (default: one built from ``client_options``, e.g.
    ``api_key``, ``base_url``). ``context_management`` (see
    :func:`agentcontext.providers.server_side.anthropic_context_management`) and ``betas`` are sent on
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

    def _request(self, conversation: Conversation, max_output_tokens: int, system: str | None) -> dict[str, Any]:
        request = conversation.to_anthropic_params(request=True)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_output_tokens,
            "messages": request.get("messages", []),
        }
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
