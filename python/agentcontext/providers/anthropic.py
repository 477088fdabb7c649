"""Anthropic Messages through the ``anthropic`` SDK."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from agentcontext._core import Conversation
from agentcontext.errors import ArgumentTypeError, ProviderResponseError
from agentcontext.providers._body import Body
from agentcontext.providers.base import Completion, Provider, ToolCall, Usage, _names, _raw_json
from agentcontext.providers.overflow import classify_overflow
from agentcontext.providers.server_side import COMPACT, COMPACT_BETA
from agentcontext.types import Format, JsonDict

__all__ = ["COMPACT_MIN_TOKENS", "AnthropicProvider"]

#: The smallest trigger Anthropic's ``compact_20260112`` edit accepts (input tokens).
COMPACT_MIN_TOKENS = 50_000


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
        if context_management is not None and not isinstance(context_management, Mapping):
            raise ArgumentTypeError(
                f"context_management of AnthropicProvider must be a mapping or None, got {type(context_management).__name__}"
            )
        self.context_management = dict(context_management) if context_management else None
        self.betas = _names(betas, "betas of AnthropicProvider")
        #: The output limit of a native compaction request (:meth:`compact_natively`).
        self.compaction_max_output_tokens = 8_192
        #: Replace Anthropic's summary prompt in a native compaction (None: its own).
        self.compaction_instructions: str | None = None

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

    def native_unavailable(self, conversation: Conversation) -> str | None:
        """None when ``conversation`` reaches the least trigger of Anthropic's compaction
        (:data:`COMPACT_MIN_TOKENS`, counted locally), else why not."""
        if conversation.tokens < COMPACT_MIN_TOKENS:
            return f"{conversation.tokens:,} tokens, under the {COMPACT_MIN_TOKENS:,} Anthropic's compaction needs"
        return None

    def compact_natively(self, conversation: Conversation, *, system: str | None = None) -> Conversation:
        """Anthropic's compaction of ``conversation`` now: one request with the ``compact_20260112``
        edit at its least trigger, paused after the compaction block (``compaction_instructions``,
        when set, replace Anthropic's summary prompt). The reply's content (the ``compaction``
        block, byte for byte) as one assistant message: the API ignores everything before it.

        Raises:
            ProviderResponseError: the reply holds no compaction block.
        """
        body = self._request(conversation, self.compaction_max_output_tokens, system)
        body["context_management"] = _compact_edit(self.compaction_instructions)
        body["betas"] = [COMPACT_BETA]
        try:
            data = _raw_json(self._send(body))
        except Exception as exc:
            overflow = classify_overflow(exc, provider=self.name)
            if overflow is None:
                raise
            raise overflow from exc
        content = data.get("content") or []
        if not any(isinstance(b, dict) and b.get("type") == "compaction" for b in content):
            raise ProviderResponseError(
                f"anthropic answered the compaction request without a compaction block (stop_reason {data.get('stop_reason')!r})"
            )
        return Conversation(
            [{"role": "assistant", "content": content}], format="anthropic", encoding=conversation.encoding
        )

    def _completion(self, data: JsonDict) -> Completion:
        body = Body(self.name, data)
        content = body.objects(data.get("content"), "content")
        usage = body.object(data.get("usage"), "usage")
        cache_read = body.tokens(usage, "cache_read_input_tokens", "usage")
        cache_write = body.tokens(usage, "cache_creation_input_tokens", "usage")
        calls = [
            ToolCall(
                body.text(b.get("id"), f"content[{i}].id"),
                body.name(b.get("name"), f"content[{i}].name"),
                json.dumps(body.object(b.get("input"), f"content[{i}].input"), ensure_ascii=False),
            )
            for i, b in enumerate(content)
            if b.get("type") in ("tool_use", "server_tool_use")
        ]
        return Completion(
            format="anthropic",
            model=body.model(self.model),
            messages=[{"role": "assistant", "content": content}],
            text="".join(
                body.text(b.get("text"), f"content[{i}].text") for i, b in enumerate(content) if b.get("type") == "text"
            ),
            tool_calls=[c for c in calls if c.id],
            usage=Usage(
                input_tokens=body.tokens(usage, "input_tokens", "usage") + cache_read + cache_write,
                output_tokens=body.tokens(usage, "output_tokens", "usage"),
                cache_read_tokens=cache_read,
                cache_write_tokens=cache_write,
            ),
            stop_reason=body.optional_text(data.get("stop_reason"), "stop_reason"),
            raw=data,
        )


def _compact_edit(instructions: str | None) -> JsonDict:
    """The ``context_management`` of a request that compacts now and pauses after the compaction block."""
    edit: JsonDict = {
        "type": COMPACT,
        "trigger": {"type": "input_tokens", "value": COMPACT_MIN_TOKENS},
        "pause_after_compaction": True,
    }
    if instructions:
        edit["instructions"] = instructions
    return {"edits": [edit]}


def _join_system(own: Any, extra: str) -> Any:
    if isinstance(own, str):
        return f"{own}\n\n{extra}"
    return [*own, {"type": "text", "text": extra}]
