"""A loopback HTTP server that speaks enough of the Anthropic Messages API, OpenAI Chat Completions
and the OpenAI Responses API for the real ``anthropic`` and ``openai`` SDK clients to run against it.

Standard library only. Tests script the replies (FIFO), read back every request the SDK sent, and
get each provider's real error bodies: prompt-too-long (``Overflow``, with the wordings of
OpenAI-compatible servers selectable by ``style``) and any other status (``HTTPError``)::

    with LLMServer() as server:
        server.enqueue(Reply("a summary", input_tokens=1200), Overflow(tokens=210_000, limit=200_000))
        client = anthropic.Anthropic(base_url=server.url, api_key="test-key", max_retries=0)
        client.messages.create(model="claude-x", max_tokens=100, messages=[...])  # -> "a summary"
        client.messages.create(...)  # -> anthropic.BadRequestError, "prompt is too long: ..."
        server.requests[0].body  # the JSON the SDK sent

A request to ``/v1/messages`` with a ``compact_20260112`` edit whose input reaches the edit's
trigger is compacted as the API does it: the reply opens with a ``compaction`` block (and holds
only it, ``stop_reason: "compaction"``, with ``pause_after_compaction``), unless the scripted reply
gives its own ``content``. ``/v1/responses/compact`` answers with the input's user messages and one
opaque ``compaction`` item.

Endpoints: ``POST /v1/messages``, ``POST /v1/messages/count_tokens`` (Anthropic),
``POST /v1/chat/completions``, ``POST /v1/responses``, ``POST /v1/responses/compact`` (OpenAI).
Streaming is not served (``"stream": true`` gets a 400). Unknown paths get a 404 in the shape of the
provider whose SDK sent the request (told apart by the ``anthropic-version`` header every Anthropic
SDK request carries).

Where each error wording comes from is noted next to it in ``_overflow``.
"""

from __future__ import annotations

import base64
import collections
import itertools
import json
import socket
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "ANTHROPIC_STYLES",
    "CHAT_STYLES",
    "HTTPError",
    "LLMServer",
    "Overflow",
    "Recorded",
    "Reply",
    "default_token_count",
]

#: ``Overflow.style`` values served on ``/v1/messages``.
ANTHROPIC_STYLES = frozenset({"max_tokens"})
#: ``Overflow.style`` values served on ``/v1/chat/completions``: OpenAI-compatible servers' wordings.
CHAT_STYLES = frozenset(
    {
        "vllm",
        "vllm_input_tokens",
        "llamacpp",
        "llamacpp_legacy",
        "llamacpp_context_shift",
        "ollama",
        "openrouter",
        "groq",
        "deepseek",
        "gemini",
    }
)

#: The ``limit`` an ``Overflow`` reports when neither it nor the server's ``context_window`` gives one.
DEFAULT_LIMITS = {"anthropic": 200_000, "chat": 128_000, "responses": 272_000}


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it."""

    method: str
    #: The path without the query string, e.g. ``/v1/messages``.
    path: str
    #: The query string (e.g. ``{"beta": "true"}``, which some Anthropic SDK versions add to beta calls).
    query: dict[str, str]
    #: Header names lowercased (a repeated header keeps its last value).
    headers: dict[str, str]
    #: The decoded JSON body (``None`` when there was none).
    body: Any

    @property
    def endpoint(self) -> str:
        """``"anthropic"``, ``"count_tokens"``, ``"chat"``, ``"responses"``, ``"compact"`` or ``"unknown"``."""
        return _ENDPOINTS.get((self.method, self.path), "unknown")


_ENDPOINTS = {
    ("POST", "/v1/messages"): "anthropic",
    ("POST", "/v1/messages/count_tokens"): "count_tokens",
    ("POST", "/v1/chat/completions"): "chat",
    ("POST", "/v1/responses"): "responses",
    ("POST", "/v1/responses/compact"): "compact",
}


@dataclass
class Reply:
    """A successful completion, rendered in the shape of whichever endpoint it is served on.

    ``input_tokens`` is the value of the provider's input-token field. ``None`` derives it from
    ``LLMServer.count_input_tokens`` (the whole prompt): OpenAI's ``prompt_tokens``/``input_tokens``
    is that count, which includes ``cached_tokens``; Anthropic's ``input_tokens`` is that count
    minus ``cached_tokens`` (reported as ``cache_read_input_tokens``), as the real APIs split it.
    """

    text: str = "ok"
    input_tokens: int | None = None
    output_tokens: int = 5
    #: Anthropic ``stop_reason`` / Chat ``finish_reason`` verbatim. On Responses a given value makes
    #: the response ``status: "incomplete"`` with ``incomplete_details.reason`` set to it. ``None``:
    #: ``end_turn``/``tool_use``, ``stop``/``tool_calls``, ``completed``.
    stop_reason: str | None = None
    #: Raw Anthropic content blocks (e.g. ``{"type": "compaction", ...}``) or raw Responses output
    #: items (e.g. ``{"type": "compaction", "id": ..., "encrypted_content": ...}``), placed before the
    #: text and the tool calls. Not used on Chat Completions. On ``/v1/responses/compact`` it is the
    #: whole ``output``.
    content: list[dict[str, Any]] | None = None
    #: Provider-neutral tool calls ``{"name": str, "arguments": dict | str, "id": str (optional)}``,
    #: rendered as Anthropic ``tool_use`` blocks, Chat ``tool_calls`` or Responses ``function_call`` items.
    tool_calls: list[dict[str, Any]] | None = None
    #: Merged into the top level of the response body (e.g. Anthropic ``context_management``).
    extra: dict[str, Any] | None = None
    #: Prompt tokens read from the cache (Anthropic ``cache_read_input_tokens``, OpenAI ``cached_tokens``).
    cached_tokens: int = 0
    #: Prompt tokens written to the cache (Anthropic ``cache_creation_input_tokens``, OpenAI
    #: ``cache_write_tokens`` where it bills them).
    cache_write_tokens: int = 0


@dataclass
class Overflow:
    """The provider's real prompt-too-long error, chosen by the endpoint it is served on.

    ``tokens`` is the prompt size the error reports (``None``: the server's count of the request) and
    ``limit`` the context window (``None``: the server's ``context_window``, else ``DEFAULT_LIMITS``).
    ``style`` picks another server's wording: ``ANTHROPIC_STYLES`` on ``/v1/messages``,
    ``CHAT_STYLES`` on ``/v1/chat/completions``; ``None`` is the provider's own.
    """

    tokens: int | None = None
    limit: int | None = None
    style: str | None = None

    def __post_init__(self) -> None:
        if self.style is not None and self.style not in ANTHROPIC_STYLES | CHAT_STYLES:
            known = ", ".join(sorted(ANTHROPIC_STYLES | CHAT_STYLES))
            raise ValueError(f"unknown Overflow style {self.style!r} (known: {known})")


@dataclass
class HTTPError:
    """Any other error response: ``status`` with ``body`` as JSON and extra ``headers``."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


Scripted = Reply | Overflow | HTTPError


def default_token_count(request: Recorded) -> int:
    """A deterministic stand-in for a tokenizer: the compact, key-sorted JSON of the prompt fields
    (``system``, ``messages``, ``tools``, ``input``, ``instructions``) divided by 4, at least 1.

    Only the prompt fields count, so ``/v1/messages/count_tokens`` agrees with ``/v1/messages`` for
    the same prompt whatever ``max_tokens`` or ``temperature`` the request also carries.
    """
    body = request.body if isinstance(request.body, dict) else {}
    prompt = {k: body[k] for k in ("system", "messages", "tools", "input", "instructions") if k in body}
    text = json.dumps(prompt, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return max(1, len(text) // 4)


class LLMServer:
    """The server; a context manager that starts it on enter and shuts it down on exit.

    Every model endpoint (everything but ``count_tokens``) serves the next scripted entry, or
    ``default(request)`` when the queue is empty. When ``context_window`` is set, a request whose
    counted input exceeds it gets an ``Overflow(style=overflow_style)`` instead and leaves the queue
    alone, as a real server rejects before generating.

    A failure inside the server (a bad script, a bug) answers 500 and is kept in ``failures``; exiting
    the ``with`` block raises the first one, so it cannot pass unnoticed.
    """

    url: str
    requests: list[Recorded]
    default: Callable[[Recorded], Scripted] | None
    count_input_tokens: Callable[[Recorded], int]
    context_window: int | None
    overflow_style: str | None
    model: str | None
    failures: list[BaseException]

    def __init__(
        self,
        *,
        default: Callable[[Recorded], Scripted] | None = None,
        count_input_tokens: Callable[[Recorded], int] | None = None,
        context_window: int | None = None,
        overflow_style: str | None = None,
        model: str | None = None,
    ) -> None:
        self.url = ""
        self.requests = []
        #: What to serve when the queue is empty (``None``: ``Reply()``, the text "ok").
        self.default = default
        self.count_input_tokens = count_input_tokens or default_token_count
        self.context_window = context_window
        self.overflow_style = overflow_style
        #: The ``model`` the responses report (``None``: echo the request's).
        self.model = model
        self.failures = []
        #: Clients to close (``close()``) before the server stops: ``tests.support.provider`` adds
        #: the providers it makes here, so a test needs no bookkeeping of its own.
        self.clients: list[Any] = []
        self._queue: collections.deque[Scripted] = collections.deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting -------------------------------------------------------------------------------

    def enqueue(self, *replies: Scripted) -> None:
        """Append replies to the FIFO queue that every model endpoint serves from."""
        for reply in replies:
            if not isinstance(reply, Reply | Overflow | HTTPError):
                raise TypeError(f"expected Reply, Overflow or HTTPError, got {type(reply).__name__}")
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """How many scripted replies have not been served yet."""
        with self._lock:
            return len(self._queue)

    @property
    def last(self) -> Recorded:
        """The most recent request."""
        with self._lock:
            if not self.requests:
                raise LookupError("no request has been received")
            return self.requests[-1]

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> Self:
        if self._httpd is not None:
            raise RuntimeError("LLMServer already started")
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.llm = self
        host, port = httpd.server_address[:2]
        self.url = f"http://{host!s}:{port}"
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, name=f"LLMServer:{port}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Close the clients made for this server, stop serving, cut open keep-alive connections
        and join every thread."""
        while self.clients:
            self.clients.pop().close()
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        httpd.shutdown()
        thread.join()
        httpd.close_connections()
        httpd.server_close()  # joins the handler threads
        self._httpd = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        if exc is None and self.failures:
            raise AssertionError(f"LLMServer failed serving a request: {self.failures[0]!r}") from self.failures[0]

    # -- serving ---------------------------------------------------------------------------------

    def _record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def _next(self, request: Recorded) -> Scripted:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return Reply() if self.default is None else self.default(request)

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}test{next(self._ids):06d}"

    def _respond(self, request: Recorded) -> tuple[int, dict[str, Any], dict[str, str]]:
        """``(status, body, headers)`` for one request."""
        endpoint = request.endpoint
        anthropic = endpoint in ("anthropic", "count_tokens") or (
            endpoint == "unknown" and "anthropic-version" in request.headers
        )
        if endpoint == "unknown":
            if anthropic:
                return 404, _anthropic_error("not_found_error", "Not found", self._new_id("req_")), {}
            message = f"Invalid URL ({request.method} {request.path})"
            return (
                404,
                {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}},
                {},
            )
        body = request.body
        if not isinstance(body, dict):
            message = "the request body must be a JSON object"
            if anthropic:
                return 400, _anthropic_error("invalid_request_error", message, self._new_id("req_")), {}
            return 400, _openai_error(message, param=None, code=None), {}
        if body.get("stream"):
            message = "stream: true is not supported by the test LLMServer (it serves non-streaming responses only)"
            if anthropic:
                return 400, _anthropic_error("invalid_request_error", message, self._new_id("req_")), {}
            return 400, _openai_error(message, param="stream", code=None), {}
        if endpoint == "count_tokens":
            count = self.count_input_tokens(request)
            counted: dict[str, Any] = {"input_tokens": count}
            if "context_management" in body:
                counted["context_management"] = {"original_input_tokens": count}
            return 200, counted, {}

        kind = "anthropic" if endpoint == "anthropic" else "chat" if endpoint == "chat" else "responses"
        if self.context_window is not None:
            tokens = self.count_input_tokens(request)
            if tokens > self.context_window:
                return self._overflow(kind, Overflow(tokens, self.context_window, self.overflow_style), request)
        scripted = self._next(request)
        if isinstance(scripted, HTTPError):
            return scripted.status, scripted.body, dict(scripted.headers)
        if isinstance(scripted, Overflow):
            return self._overflow(kind, scripted, request)
        if not isinstance(scripted, Reply):
            raise TypeError(f"default() must return Reply, Overflow or HTTPError, got {type(scripted).__name__}")
        if endpoint == "anthropic":
            return 200, self._anthropic_message(scripted, request), {}
        if endpoint == "chat":
            return 200, self._chat_completion(scripted, request), {}
        if endpoint == "responses":
            return 200, self._response(scripted, request), {}
        return 200, self._compacted(scripted, request), {}

    def _input_tokens(self, reply: Reply, request: Recorded, *, anthropic: bool) -> int:
        if reply.input_tokens is not None:
            return reply.input_tokens
        count = self.count_input_tokens(request)
        return max(0, count - reply.cached_tokens - reply.cache_write_tokens) if anthropic else count

    def _model(self, request: Recorded) -> str:
        if self.model is not None:
            return self.model
        model = request.body.get("model") if isinstance(request.body, dict) else None
        return model if isinstance(model, str) else "test-model"

    # -- Anthropic -------------------------------------------------------------------------------

    def _anthropic_compaction(self, request: Recorded) -> tuple[dict[str, Any], bool] | None:
        """The ``compaction`` block a ``compact_20260112`` edit makes when the request's input
        reaches its trigger (default 150,000), and whether the edit pauses after it; None when no
        such edit applies. The block's ``content`` is readable: ``"Summary of N messages; the
        latest request: ..."``."""
        edits = (request.body.get("context_management") or {}).get("edits") or []
        edit = next((e for e in edits if isinstance(e, dict) and e.get("type") == "compact_20260112"), None)
        if edit is None:
            return None
        trigger = (edit.get("trigger") or {}).get("value", 150_000)
        if self.count_input_tokens(request) < trigger:
            return None
        messages = request.body.get("messages") or []
        users = [m for m in messages if m.get("role") == "user" and isinstance(m.get("content"), str)]
        latest = users[-1]["content"][:200] if users else ""
        text = f"Summary of {len(messages)} messages; the latest request: {latest}"
        return {"type": "compaction", "content": text}, bool(edit.get("pause_after_compaction"))

    def _anthropic_message(self, reply: Reply, request: Recorded) -> dict[str, Any]:
        compaction = self._anthropic_compaction(request) if reply.content is None else None
        if compaction is not None and compaction[1]:
            # Paused after the compaction block: the reply holds only it.
            reply = Reply("", input_tokens=reply.input_tokens, output_tokens=reply.output_tokens, stop_reason="compaction",
                          cached_tokens=reply.cached_tokens, cache_write_tokens=reply.cache_write_tokens)  # fmt: skip
        content: list[dict[str, Any]] = [compaction[0]] if compaction is not None else []
        content += list(reply.content or [])
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        for call in reply.tool_calls or []:
            arguments = call.get("arguments", {})
            content.append(
                {
                    "type": "tool_use",
                    "id": call.get("id") or self._new_id("toolu_"),
                    "name": call["name"],
                    "input": json.loads(arguments) if isinstance(arguments, str) else arguments,
                }
            )
        message: dict[str, Any] = {
            "id": self._new_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": self._model(request),
            "content": content,
            "stop_reason": reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn"),
            "stop_sequence": None,
            "usage": {
                "input_tokens": self._input_tokens(reply, request, anthropic=True),
                "output_tokens": reply.output_tokens,
                "cache_creation_input_tokens": reply.cache_write_tokens,
                "cache_read_input_tokens": reply.cached_tokens,
            },
        }
        message.update(reply.extra or {})
        return message

    # -- OpenAI Chat Completions -----------------------------------------------------------------

    def _chat_completion(self, reply: Reply, request: Recorded) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None, "refusal": None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.get("id") or self._new_id("call_"),
                    "type": "function",
                    "function": {"name": call["name"], "arguments": _arguments_json(call)},
                }
                for call in reply.tool_calls
            ]
        prompt = self._input_tokens(reply, request, anthropic=False)
        completion: dict[str, Any] = {
            "id": self._new_id("chatcmpl-"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self._model(request),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": reply.stop_reason or ("tool_calls" if reply.tool_calls else "stop"),
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": reply.output_tokens,
                "total_tokens": prompt + reply.output_tokens,
                "prompt_tokens_details": {
                    "cached_tokens": reply.cached_tokens,
                    "audio_tokens": 0,
                    **({"cache_write_tokens": reply.cache_write_tokens} if reply.cache_write_tokens else {}),
                },
                "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
            },
            "system_fingerprint": None,
        }
        completion.update(reply.extra or {})
        return completion

    # -- OpenAI Responses ------------------------------------------------------------------------

    def _responses_usage(self, reply: Reply, request: Recorded) -> dict[str, Any]:
        prompt = self._input_tokens(reply, request, anthropic=False)
        return {
            "input_tokens": prompt,
            "input_tokens_details": {
                "cached_tokens": reply.cached_tokens,
                "cache_write_tokens": reply.cache_write_tokens,
            },
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + reply.output_tokens,
        }

    def _response(self, reply: Reply, request: Recorded) -> dict[str, Any]:
        body: dict[str, Any] = request.body
        output: list[dict[str, Any]] = list(reply.content or [])
        if reply.text:
            output.append(
                {
                    "type": "message",
                    "id": self._new_id("msg_"),
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}],
                }
            )
        for call in reply.tool_calls or []:
            output.append(
                {
                    "type": "function_call",
                    "id": self._new_id("fc_"),
                    "call_id": call.get("id") or self._new_id("call_"),
                    "name": call["name"],
                    "arguments": _arguments_json(call),
                    "status": "completed",
                }
            )
        now = int(time.time())
        response: dict[str, Any] = {
            "id": self._new_id("resp_"),
            "object": "response",
            "created_at": now,
            "status": "incomplete" if reply.stop_reason else "completed",
            "completed_at": None if reply.stop_reason else now,
            "error": None,
            "incomplete_details": {"reason": reply.stop_reason} if reply.stop_reason else None,
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "metadata": body.get("metadata") or {},
            "model": self._model(request),
            "output": output,
            "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "previous_response_id": body.get("previous_response_id"),
            "store": body.get("store", True),
            "temperature": body.get("temperature", 1.0),
            "text": body.get("text") or {"format": {"type": "text"}},
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": [_response_tool(tool) for tool in body.get("tools") or []],
            "top_p": body.get("top_p", 1.0),
            "truncation": body.get("truncation", "disabled"),
            "usage": self._responses_usage(reply, request),
            "user": None,
        }
        response.update(reply.extra or {})
        return response

    def _compacted(self, reply: Reply, request: Recorded) -> dict[str, Any]:
        """A ``CompactedResponse``: the input's user messages followed by one compaction item that
        stands for everything else (earlier compaction items included). ``encrypted_content`` is
        ``"enc:"`` + base64 of the JSON of the items it replaced, so a test can see what went in."""
        if reply.content is not None:
            output = list(reply.content)
        else:
            raw = request.body.get("input")
            items: list[Any] = [{"role": "user", "content": raw}] if isinstance(raw, str) else list(raw or [])
            output, replaced = [], []
            for item in items:
                if isinstance(item, dict) and item.get("role") == "user" and item.get("type", "message") == "message":
                    output.append(self._user_message(item))
                else:
                    replaced.append(item)
            packed = json.dumps(replaced, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            output.append(
                {
                    "type": "compaction",
                    "id": self._new_id("cmp_"),
                    "encrypted_content": "enc:" + base64.b64encode(packed.encode()).decode(),
                }
            )
        return {
            "id": self._new_id("resp_"),
            "object": "response.compaction",
            "created_at": int(time.time()),
            "output": output,
            "usage": self._responses_usage(reply, request),
            **(reply.extra or {}),
        }

    def _user_message(self, item: dict[str, Any]) -> dict[str, Any]:
        content = item.get("content")
        parts = [{"type": "input_text", "text": content}] if isinstance(content, str) else content
        return {"type": "message", "id": self._new_id("msg_"), "status": "completed", "role": "user", "content": parts}

    # -- prompt too long -------------------------------------------------------------------------

    def _overflow(self, kind: str, overflow: Overflow, request: Recorded) -> tuple[int, dict[str, Any], dict[str, str]]:
        body: dict[str, Any] = request.body
        tokens = overflow.tokens if overflow.tokens is not None else self.count_input_tokens(request)
        limit = overflow.limit if overflow.limit is not None else (self.context_window or DEFAULT_LIMITS[kind])
        completion = _max_tokens(body)
        style = overflow.style
        if kind == "anthropic":
            request_id = self._new_id("req_")
            if style is None:
                # Anthropic's own wording (brief; claude-code and LangChain issue reports).
                message = f"prompt is too long: {tokens} tokens > {limit} maximum"
            elif style == "max_tokens":
                # When input + max_tokens overflow (anthropics/claude-code#228, #408; continuedev/continue#8454).
                message = (
                    f"input length and `max_tokens` exceed context limit: {tokens} + {completion} > {limit}, "
                    "decrease input length or `max_tokens` and try again"
                )
            else:
                raise ValueError(f"Overflow style {style!r} is not served on /v1/messages ({sorted(ANTHROPIC_STYLES)})")
            return 400, _anthropic_error("invalid_request_error", message, request_id), {}
        if kind == "responses":
            if style is not None:
                raise ValueError(f"Overflow style {style!r} is not served on /v1/responses (only the default)")
            # dyad-sh/dyad#1672, james-6-23/codex2api#415: the Responses API's wording, param "input".
            message = "Your input exceeds the context window of this model. Please adjust your input and try again."
            return 400, _openai_error(message, param="input", code="context_length_exceeded"), {}
        if style is None:
            # OpenAI Chat Completions (chathub-dev/chathub#126, crewAIInc/crewAI-examples#121).
            message = (
                f"This model's maximum context length is {limit} tokens. However, your messages resulted in "
                f"{tokens} tokens. Please reduce the length of the messages."
            )
            return 400, _openai_error(message, param="messages", code="context_length_exceeded"), {}
        if style == "vllm":
            # vLLM <= 0.10 serving_engine.py: a top-level error object, no "error" wrapper
            # (vllm-project/vllm#20409, ogx-ai/ogx#4534; the no-max_tokens form in #4667-era reports).
            if completion:
                message = (
                    f"This model's maximum context length is {limit} tokens. However, you requested "
                    f"{tokens + completion} tokens ({tokens} in the messages, {completion} in the completion). "
                    "Please reduce the length of the messages or completion."
                )
            else:
                message = (
                    f"This model's maximum context length is {limit} tokens. However, you requested {tokens} "
                    "tokens in the messages, Please reduce the length of the messages."
                )
            return (
                400,
                {"object": "error", "message": message, "type": "BadRequestError", "param": None, "code": 400},
                {},
            )
        if style == "vllm_input_tokens":
            # vLLM >= 0.11 renderer, wrapped in "error" (vllm-project/vllm#33418 / PR #33425).
            message = (
                f"This model's maximum context length is {limit} tokens. However, your request has {tokens} input "
                f"tokens. Please reduce the length of the input messages. (parameter=input_tokens, value={tokens})"
            )
            error = {"message": message, "type": "BadRequestError", "param": "input_tokens", "code": 400}
            return 400, {"error": error}, {}
        if style == "llamacpp":
            # llama-server (tools/server/server-context.cpp): microsoft/vscode#320558, langchain-ai/openwiki#648.
            return 400, {"error": _llamacpp_error(tokens, limit)}, {}
        if style in ("llamacpp_legacy", "llamacpp_context_shift"):
            # Earlier llama-server wordings, same body: ", try increasing it" (ggml-org/llama.cpp#17284,
            # continuedev/continue#9797) and, from llama.cpp PR #15780, the context-shift hint
            # (oobabooga/textgen#7257).
            hint = (
                ", try increasing it"
                if style == "llamacpp_legacy"
                else ". try increasing the context size or enable context shift"
            )
            error = {
                **_llamacpp_error(tokens, limit),
                "message": "the request exceeds the available context size" + hint,
            }
            return 400, {"error": error}, {}
        if style == "ollama":
            # Ollama's /v1 wraps its runner's (llama-server's) error body as a string in an OpenAI error
            # (microsoft/vscode#320558, Ollama 0.30.7).
            inner = json.dumps({"error": _llamacpp_error(tokens, limit)}, separators=(",", ":"))
            return 400, _openai_error(inner, param=None, code=None), {}
        if style == "openrouter":
            # Aider-AI/aider#3721 (with output), refly-ai/refly#1177 (input only); "code" is the status.
            requested = (
                f"{tokens} of text input, {completion} in the output" if completion else f"{tokens} of text input"
            )
            message = (
                f"This endpoint's maximum context length is {limit} tokens. However, you requested about "
                f"{tokens + completion} tokens ({requested}). Please reduce the length of either one, or use the "
                '"middle-out" transform to compress your prompt automatically.'
            )
            return 400, {"error": {"message": message, "code": 400, "metadata": {"provider_name": "TestProvider"}}}, {}
        if style == "groq":
            # Groq gives no numbers (letta-ai/letta#1963, OpenHands/OpenHands#1902).
            message = "Please reduce the length of the messages or completion."
            return 400, _openai_error(message, param="messages", code="context_length_exceeded"), {}
        if style == "deepseek":
            # evalstate/fast-agent#621, FoundationAgents/OpenManus#62: code is "invalid_request_error".
            message = (
                f"This model's maximum context length is {limit} tokens. However, you requested "
                f"{tokens + completion} tokens ({tokens} in the messages, {completion} in the completion). "
                "Please reduce the length of the messages or completion."
            )
            return 400, _openai_error(message, param=None, code="invalid_request_error"), {}
        if style == "gemini":
            # Google's Gemini API (google-gemini/gemini-cli#4118, #6678): status in the body, no "type".
            message = f"The input token count ({tokens}) exceeds the maximum number of tokens allowed ({limit})."
            return 400, {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}, {}
        raise ValueError(f"Overflow style {style!r} is not served on /v1/chat/completions ({sorted(CHAT_STYLES)})")


def _anthropic_error(kind: str, message: str, request_id: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}


def _openai_error(message: str, *, param: str | None, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def _llamacpp_error(tokens: int, limit: int) -> dict[str, Any]:
    return {
        "code": 400,
        "message": f"request ({tokens} tokens) exceeds the available context size ({limit} tokens), try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": tokens,
        "n_ctx": limit,
    }


def _max_tokens(body: dict[str, Any]) -> int:
    for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        value = body.get(key)
        if isinstance(value, int):
            return value
    return 0


def _arguments_json(call: dict[str, Any]) -> str:
    arguments = call.get("arguments", {})
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _response_tool(tool: Any) -> Any:
    """A request tool as the Responses API echoes it (function tools gain ``strict``/``parameters``)."""
    if isinstance(tool, dict) and tool.get("type") == "function":
        return {"strict": True, "parameters": None, "description": None, **tool}
    return tool


class _HTTPServer(ThreadingHTTPServer):
    """A thread per connection, each tracked so that ``stop()`` can cut its connection and join it
    (``ThreadingMixIn`` does not join daemon threads, and non-daemon ones would hang the interpreter
    if a test forgot to stop the server)."""

    llm: LLMServer

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        self._open: set[socket.socket] = set()
        self._threads_alive: list[threading.Thread] = []
        self._open_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name=f"LLMServer handler {client_address[1]}",
            daemon=True,
        )
        with self._open_lock:
            self._open.add(request)
            self._threads_alive = [t for t in self._threads_alive if t.is_alive()]
            self._threads_alive.append(thread)
        thread.start()

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client hanging up (or stop() cutting a connection) is not a test failure

    def close_connections(self) -> None:
        """Wake handler threads blocked reading the next request on a keep-alive connection."""
        with self._open_lock:
            sockets = list(self._open)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def server_close(self) -> None:
        super().server_close()
        with self._open_lock:
            threads, self._threads_alive = self._threads_alive, []
        for thread in threads:
            thread.join(timeout=10)
            if thread.is_alive():
                raise RuntimeError(f"LLMServer: {thread.name} did not finish within 10 s of stop()")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet test output

    def do_POST(self) -> None:
        self._handle()

    def do_GET(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def _handle(self) -> None:
        llm = self.server.llm
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        headers = {name.lower(): value for name, value in self.headers.items()}
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        request = Recorded(self.command, parts.path, dict(parse_qsl(parts.query)), headers, body)
        llm._record(request)
        try:
            status, payload, extra_headers = llm._respond(request)
        except Exception as exc:  # noqa: BLE001 - answered as a 500 and raised again on exit
            with llm._lock:
                llm.failures.append(exc)
            message = f"LLMServer failure: {exc!r}\n{traceback.format_exc()}"
            status, payload, extra_headers = 500, {"error": {"message": message, "type": "server_error"}}, {}
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        request_id = payload.get("request_id")
        if not isinstance(request_id, str):
            request_id = llm._new_id("req_")
        self.send_header("request-id", request_id)  # read by anthropic.APIStatusError.request_id
        self.send_header("x-request-id", request_id)  # read by openai.APIStatusError.request_id
        for name, value in extra_headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
