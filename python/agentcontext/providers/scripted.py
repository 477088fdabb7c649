"""Offline providers that answer from a script: no network, no key, no SDK.

A scripted provider is a real :class:`~agentcontext.providers.Provider`: it builds the same request
body as the provider it stands in for, hands it to the script, and reads the answer back through
that provider's own response parser, from a JSON body in the provider's shape. Use it to run the
agent loop, compaction with an LLM summarizer, or your own tests, without a model::

    from agentcontext.providers import ScriptedChatProvider, scripted_call

    model = ScriptedChatProvider(
        [
            scripted_call("read_file", {"path": "app.py"}),  # the first call asks for a tool
            "app.py defines main().",  # the second answers in text
        ]
    )

The script is a sequence of replies (one per call, in order) or a function of the
:class:`ScriptedRequest` that returns one. A reply is a string (text), a :func:`scripted_call` or
a list of them (tool calls), or a :class:`Reply` (text and tool calls together, a stop reason, a
usage of your own). Usage is counted, not invented: the input tokens are the request's exact
count (system, tools and messages), the output tokens the reply's. A request larger than
``context_window`` raises :class:`~agentcontext.errors.ContextOverflowError`, as a real server
would; a script that runs out raises :class:`~agentcontext.errors.ProviderResponseError`.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, ClassVar

from agentcontext import _checks
from agentcontext._core import Conversation, count_tokens
from agentcontext.errors import ArgumentTypeError, ContextOverflowError, ProviderResponseError
from agentcontext.providers.anthropic import AnthropicProvider
from agentcontext.providers.base import ToolCall, Usage
from agentcontext.providers.openai import OpenAIChatProvider
from agentcontext.types import Encoding, Format, JsonDict

__all__ = [
    "Reply",
    "ScriptedAnthropicProvider",
    "ScriptedChatProvider",
    "ScriptedRequest",
    "scripted_call",
]

#: The default window of a scripted model (a name no model table knows).
SCRIPTED_WINDOW = 200_000


@dataclass(frozen=True)
class ScriptedRequest:
    """What a script function receives: the call's number (from 0), the request body as the real
    provider would send it, and its parts read out of it."""

    call: int
    body: JsonDict
    #: The messages in the provider's format (the system prompt is in :attr:`system`).
    messages: list[JsonDict]
    system: str | None
    tools: list[JsonDict]

    @property
    def last_text(self) -> str:
        """The text of the last message (joined text blocks; "" for a message without text)."""
        if not self.messages:
            return ""
        content = self.messages[-1].get("content")
        if isinstance(content, str):
            return content
        return "".join(b.get("text", "") for b in content or () if isinstance(b, Mapping))


@dataclass(frozen=True)
class Reply:
    """One scripted answer: text, tool calls (from :func:`scripted_call`), the stop reason (default:
    tool calls when there are any, else the end of the turn) and, optionally, the usage to report
    instead of the counted one."""

    text: str = ""
    tool_calls: Sequence[ToolCall] = ()
    stop_reason: str | None = None
    usage: Usage | None = field(default=None, repr=False)


def scripted_call(name: str, arguments: Mapping[str, Any] | str | None = None, *, id: str | None = None) -> ToolCall:
    """A tool call for a script: ``arguments`` as a mapping (sent as JSON) or JSON text; ``id``
    defaults to one numbered by the call and the position."""
    if not isinstance(name, str) or not name:
        raise ArgumentTypeError(f"name must be a non-empty str, got {name!r}")
    _checks.text("name", name)
    if arguments is None:
        text = "{}"
    elif isinstance(arguments, str):
        text = arguments
    elif isinstance(arguments, Mapping):
        text = json.dumps(dict(arguments), ensure_ascii=False)
    else:
        raise ArgumentTypeError(f"arguments must be a mapping or JSON text, got {type(arguments).__name__}")
    return ToolCall(id or "", name, text)


Script = Sequence["Reply | ToolCall | str | Sequence[ToolCall]"] | Callable[[ScriptedRequest], Any]


def _reply_of(value: Any, where: str) -> Reply:
    if isinstance(value, Reply):
        return value
    if isinstance(value, str):
        return Reply(text=value)
    if isinstance(value, ToolCall):
        return Reply(tool_calls=(value,))
    if isinstance(value, Sequence) and value and all(isinstance(c, ToolCall) for c in value):
        return Reply(tool_calls=tuple(value))
    raise ArgumentTypeError(
        f"{where} must be a str, a scripted_call(...), a list of them or a Reply, got {type(value).__name__}"
    )


class _NoClient:
    """The SDK client a scripted provider has: none (every call is answered by the script)."""

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"a scripted provider has no SDK client (asked for {name!r})")


class _Scripted(ABC):
    """What both scripted providers share: the script, the counting, the answer's JSON body."""

    name: ClassVar[str]
    format: ClassVar[Format]
    #: The real provider whose constructor, request and response parser a scripted one uses.
    _real: ClassVar[Any]
    model: str
    context_window: int

    def __init__(
        self,
        script: Script,
        *,
        model: str = "scripted",
        context_window: int = SCRIPTED_WINDOW,
        encoding: Encoding = "o200k_base",
    ) -> None:
        self._real.__init__(self, model, client=_NoClient(), context_window=context_window)
        self._start(script, encoding)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, calls={self.calls})"

    def _start(self, script: Script, encoding: Encoding) -> None:
        if callable(script):
            self._replies: list[Reply] | None = None
            self._function: Callable[[ScriptedRequest], Any] | None = script
        elif isinstance(script, Sequence) and not isinstance(script, (str, bytes)):
            self._replies = [_reply_of(r, f"script[{i}]") for i, r in enumerate(script)]
            self._function = None
        else:
            raise ArgumentTypeError(f"script must be a list of replies or a function, got {type(script).__name__}")
        if not isinstance(encoding, str):
            raise ArgumentTypeError(f"encoding must be a str, got {type(encoding).__name__}")
        count_tokens("", encoding=encoding)  # an unknown encoding fails here, not at the first call
        self.encoding: Encoding = encoding
        self._lock = threading.Lock()
        #: The number of calls answered so far.
        self.calls = 0
        #: Every request body sent, in order (what the model "saw").
        self.requests: list[JsonDict] = []

    def native_unavailable(self, conversation: Conversation) -> str | None:
        """A scripted model has no native compaction: the native rung runs the local ladder."""
        return f"{self.name} has no native compaction"

    def _send(self, body: dict[str, Any]) -> Any:
        request = self._request_of(body)
        counted = self._input_tokens(request)
        if counted > self.context_window:
            raise ContextOverflowError(
                f"prompt is too long: {counted:,} tokens > {self.context_window:,} maximum",
                provider=self.name,
                tokens=counted,
                limit=self.context_window,
                status_code=400,
            )
        reply = self._next(request)
        data = self._body_of(reply, request.call, reply.usage or Usage(counted, self._output_tokens(reply)))
        return SimpleNamespace(http_response=SimpleNamespace(content=json.dumps(data).encode()))

    def _next(self, request: ScriptedRequest) -> Reply:
        if self._function is not None:
            return _reply_of(self._function(request), f"the script's answer to call {request.call}")
        assert self._replies is not None
        if request.call >= len(self._replies):
            raise ProviderResponseError(
                f"the script has no reply for call {request.call + 1} (it holds {len(self._replies)})"
            )
        return self._replies[request.call]

    def _request_of(self, body: dict[str, Any]) -> ScriptedRequest:
        with self._lock:
            call = self.calls
            self.calls += 1
            self.requests.append(body)
        messages, system = self._split(body)
        return ScriptedRequest(call, body, messages, system, [dict(t) for t in body.get("tools") or ()])

    def _input_tokens(self, request: ScriptedRequest) -> int:
        tokens = Conversation(request.messages, format=self.format, encoding=self.encoding).tokens
        if request.system:
            tokens += count_tokens(request.system, encoding=self.encoding)
        if request.tools:
            tokens += count_tokens(json.dumps(request.tools, ensure_ascii=False), encoding=self.encoding)
        return tokens

    def _output_tokens(self, reply: Reply) -> int:
        parts = [reply.text, *(f"{c.name}{c.arguments}" for c in reply.tool_calls)]
        return sum(count_tokens(p, encoding=self.encoding) for p in parts if p)

    @abstractmethod
    def _split(self, body: Mapping[str, Any]) -> tuple[list[JsonDict], str | None]:
        """The request body's messages (in the provider's format, no system ones) and its system
        prompt."""

    @abstractmethod
    def _body_of(self, reply: Reply, call: int, usage: Usage) -> JsonDict:
        """The response body the provider's API would answer ``reply`` with, for call ``call``."""


class ScriptedChatProvider(_Scripted, OpenAIChatProvider):
    """An offline model in the OpenAI Chat Completions shape, answering from ``script`` (see the
    module). ``requests`` holds every body it was sent."""

    name: ClassVar[str] = "scripted-openai"
    _real: ClassVar[Any] = OpenAIChatProvider

    def _split(self, body: Mapping[str, Any]) -> tuple[list[JsonDict], str | None]:
        messages = [dict(m) for m in body.get("messages") or ()]
        system = [m for m in messages if m.get("role") in ("system", "developer")]
        text = "\n\n".join(str(m.get("content") or "") for m in system) or None
        return [m for m in messages if m.get("role") not in ("system", "developer")], text

    def _body_of(self, reply: Reply, call: int, usage: Usage) -> JsonDict:
        message: JsonDict = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id or f"call_{call}_{i}",
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for i, c in enumerate(reply.tool_calls)
            ]
        stop = reply.stop_reason or ("tool_calls" if reply.tool_calls else "stop")
        return {
            "id": f"chatcmpl-scripted-{call}",
            "object": "chat.completion",
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": stop}],
            "usage": {
                "prompt_tokens": usage.input_tokens,
                "completion_tokens": usage.output_tokens,
                "total_tokens": usage.input_tokens + usage.output_tokens,
                "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
            },
        }


class ScriptedAnthropicProvider(_Scripted, AnthropicProvider):
    """An offline model in the Anthropic Messages shape, answering from ``script`` (see the
    module). ``requests`` holds every body it was sent."""

    name: ClassVar[str] = "scripted-anthropic"
    _real: ClassVar[Any] = AnthropicProvider

    def _split(self, body: Mapping[str, Any]) -> tuple[list[JsonDict], str | None]:
        system = body.get("system")
        if isinstance(system, list):
            system = "\n\n".join(b.get("text", "") for b in system if isinstance(b, Mapping))
        return [dict(m) for m in body.get("messages") or ()], system or None

    def _body_of(self, reply: Reply, call: int, usage: Usage) -> JsonDict:
        content: list[JsonDict] = [{"type": "text", "text": reply.text}] if reply.text else []
        for i, c in enumerate(reply.tool_calls):
            try:
                arguments = json.loads(c.arguments)
            except ValueError:
                arguments = {"input": c.arguments}
            content.append({"type": "tool_use", "id": c.id or f"toolu_{call}_{i}", "name": c.name, "input": arguments})
        stop = reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")
        return {
            "id": f"msg_scripted_{call}",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop,
            "usage": {
                "input_tokens": usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens,
                "output_tokens": usage.output_tokens,
                "cache_read_input_tokens": usage.cache_read_tokens,
                "cache_creation_input_tokens": usage.cache_write_tokens,
            },
        }
