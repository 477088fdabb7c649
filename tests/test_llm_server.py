"""tests/llm_server.py against the real ``anthropic`` and ``openai`` SDK clients over loopback HTTP:
every endpoint parses (with the SDKs' strict response validation, so no required field is missing),
the request the SDK sent is recorded, and each scripted error surfaces as the SDK's own exception
with the provider's real body."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.llm_server import CHAT_STYLES, HTTPError, LLMServer, Overflow, Recorded, Reply, default_token_count

USER = [{"role": "user", "content": "Summarize the session so far."}]


@pytest.fixture
def anthropic_sdk() -> Any:
    return pytest.importorskip("anthropic", reason="the anthropic SDK is a test extra: pip install -e '.[test]'")


@pytest.fixture
def openai_sdk() -> Any:
    return pytest.importorskip("openai", reason="the openai SDK is a test extra: pip install -e '.[test]'")


@pytest.fixture
def anthropic_client(anthropic_sdk: Any, server: LLMServer) -> Iterator[Any]:
    # Strict validation makes the SDK check every response against its declared types.
    with anthropic_sdk.Anthropic(
        base_url=server.url, api_key="test-key", max_retries=0, timeout=10, _strict_response_validation=True
    ) as client:
        yield client


@pytest.fixture
def openai_client(openai_sdk: Any, server: LLMServer) -> Iterator[Any]:
    with openai_sdk.OpenAI(
        base_url=server.url + "/v1", api_key="test-key", max_retries=0, timeout=10, _strict_response_validation=True
    ) as client:
        yield client


# -- Anthropic -----------------------------------------------------------------------------------


def test_anthropic_message_with_tool_use(anthropic_client: Any, server: LLMServer) -> None:
    server.enqueue(
        Reply("Reading it.", input_tokens=1234, output_tokens=56, tool_calls=[{"name": "read", "arguments": {"p": 1}}])
    )
    message = anthropic_client.messages.create(model="claude-test", max_tokens=300, system="Be brief.", messages=USER)
    assert message.content[0].text == "Reading it."
    assert message.content[1].type == "tool_use"
    assert (message.content[1].name, message.content[1].input) == ("read", {"p": 1})
    assert message.stop_reason == "tool_use"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (1234, 56)
    assert message.model == "claude-test"

    request = server.last
    assert (request.method, request.path, request.endpoint) == ("POST", "/v1/messages", "anthropic")
    assert request.body == {"model": "claude-test", "max_tokens": 300, "system": "Be brief.", "messages": USER}
    # Anthropic SDK 2.x authenticates with a bearer token; older ones sent x-api-key.
    assert request.headers.get("x-api-key", request.headers.get("authorization")) in ("test-key", "Bearer test-key")
    assert "anthropic-version" in request.headers


def test_anthropic_usage_defaults_to_the_count_and_splits_out_cache_reads(
    anthropic_client: Any, server: LLMServer
) -> None:
    server.count_input_tokens = lambda request: 1000
    server.enqueue(Reply(cached_tokens=300))
    usage = anthropic_client.messages.create(model="claude-test", max_tokens=10, messages=USER).usage
    # Anthropic's input_tokens excludes cache reads; the three parts add up to the prompt.
    assert (usage.input_tokens, usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (700, 300, 0)
    assert anthropic_client.messages.create(model="claude-test", max_tokens=10, messages=USER).content[0].text == "ok"


def test_anthropic_count_tokens_agrees_with_the_message_usage(anthropic_client: Any, server: LLMServer) -> None:
    counted = anthropic_client.messages.count_tokens(model="claude-test", system="Be brief.", messages=USER)
    used = anthropic_client.messages.create(model="claude-test", max_tokens=99, system="Be brief.", messages=USER)
    assert counted.input_tokens == used.usage.input_tokens == default_token_count(server.requests[0]) > 0
    assert server.requests[0].endpoint == "count_tokens"
    assert server.pending == 0


def test_anthropic_compaction_block_and_context_management(anthropic_client: Any, server: LLMServer) -> None:
    compaction = {"type": "compaction", "content": "The user asked for X; done so far: Y.", "encrypted_content": None}
    applied = {
        "applied_edits": [{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 3, "cleared_input_tokens": 900}]
    }
    server.enqueue(Reply("Continuing.", content=[compaction], extra={"context_management": applied}))
    edits = {"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50_000}}]}
    message = anthropic_client.beta.messages.create(
        model="claude-test", max_tokens=100, messages=USER, betas=["compact-2026-01-12"], context_management=edits
    )
    assert message.content[0].type == "compaction"
    assert message.content[0].content == compaction["content"]
    assert message.content[1].text == "Continuing."
    assert message.context_management.applied_edits[0].cleared_input_tokens == 900
    dumped = message.model_dump(exclude_none=True)
    assert dumped["content"][0] == {"type": "compaction", "content": compaction["content"]}
    assert dumped["context_management"] == applied

    assert server.last.body["context_management"] == edits
    assert server.last.headers["anthropic-beta"] == "compact-2026-01-12"

    # The block goes back first in `messages` on the next turn, and is recorded as sent.
    anthropic_client.beta.messages.create(
        model="claude-test",
        max_tokens=100,
        messages=[{"role": "assistant", "content": [compaction]}, *USER],
        betas=["compact-2026-01-12"],
    )
    assert server.last.body["messages"][0]["content"][0]["type"] == "compaction"


def test_anthropic_count_tokens_reports_context_management(anthropic_client: Any, server: LLMServer) -> None:
    edits = {"edits": [{"type": "clear_tool_uses_20250919"}]}
    counted = anthropic_client.beta.messages.count_tokens(
        model="claude-test", messages=USER, betas=["context-management-2025-06-27"], context_management=edits
    )
    assert counted.context_management.original_input_tokens == counted.input_tokens


# -- OpenAI Chat Completions ---------------------------------------------------------------------


def test_chat_completion_with_tool_calls(openai_client: Any, server: LLMServer) -> None:
    server.enqueue(
        Reply(
            "",
            input_tokens=500,
            output_tokens=20,
            cached_tokens=128,
            tool_calls=[{"name": "grep", "arguments": {"q": "x"}, "id": "call_1"}],
        )
    )
    tools = [{"type": "function", "function": {"name": "grep", "parameters": {"type": "object", "properties": {}}}}]
    completion = openai_client.chat.completions.create(model="gpt-test", messages=USER, tools=tools, max_tokens=64)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    call = choice.message.tool_calls[0]
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == ("call_1", "grep", {"q": "x"})
    usage = completion.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (500, 20, 520)
    assert usage.prompt_tokens_details.cached_tokens == 128

    request = server.last
    assert (request.path, request.endpoint) == ("/v1/chat/completions", "chat")
    assert request.body == {"model": "gpt-test", "messages": USER, "tools": tools, "max_tokens": 64}
    assert request.headers["authorization"] == "Bearer test-key"


def test_chat_completion_text_and_stop_reason(openai_client: Any, server: LLMServer) -> None:
    server.enqueue(Reply("A summary.", stop_reason="length"))
    completion = openai_client.chat.completions.create(model="gpt-test", messages=USER)
    assert completion.choices[0].message.content == "A summary."
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage.prompt_tokens == default_token_count(server.last)


# -- OpenAI Responses ----------------------------------------------------------------------------


def test_response_with_text_and_function_call(openai_client: Any, server: LLMServer) -> None:
    server.enqueue(
        Reply(
            "Looking.",
            input_tokens=800,
            output_tokens=30,
            cached_tokens=512,
            tool_calls=[{"name": "ls", "arguments": "{}", "id": "call_9"}],
        )
    )
    tools = [{"type": "function", "name": "ls", "parameters": {"type": "object", "properties": {}}}]
    response = openai_client.responses.create(
        model="gpt-test", input="List files.", instructions="Be brief.", tools=tools
    )
    assert response.status == "completed"
    assert response.output_text == "Looking."
    call = response.output[1]
    assert (call.type, call.call_id, call.name, call.arguments) == ("function_call", "call_9", "ls", "{}")
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (800, 30, 830)
    assert response.usage.input_tokens_details.cached_tokens == 512
    assert response.tools[0].name == "ls"

    request = server.last
    assert (request.path, request.endpoint) == ("/v1/responses", "responses")
    assert request.body == {"model": "gpt-test", "input": "List files.", "instructions": "Be brief.", "tools": tools}


def test_response_incomplete(openai_client: Any, server: LLMServer) -> None:
    server.enqueue(Reply("Trunc", stop_reason="max_output_tokens"))
    response = openai_client.responses.create(model="gpt-test", input="x", max_output_tokens=16)
    assert (response.status, response.incomplete_details.reason) == ("incomplete", "max_output_tokens")
    assert response.max_output_tokens == 16


def test_response_compaction_item(openai_client: Any, server: LLMServer) -> None:
    item = {"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque=="}
    server.enqueue(Reply("Done.", content=[item]))
    context = [{"type": "compaction", "compact_threshold": 100_000}]
    response = openai_client.responses.create(model="gpt-test", input=USER, context_management=context)
    assert response.output[0].type == "compaction"
    assert response.output[0].encrypted_content == "opaque=="
    assert response.output_text == "Done."
    assert response.model_dump(exclude_none=True)["output"][0] == item
    assert server.last.body["context_management"] == context

    openai_client.responses.create(model="gpt-test", input=[*USER, item])
    assert server.last.body["input"][1] == item


def test_responses_compact(openai_sdk: Any, server: LLMServer) -> None:
    # CompactedResponse types `output` as output items, which have no user message, so the user
    # messages the API keeps fail the SDK's strict validation: this client is not strict.
    with openai_sdk.OpenAI(base_url=server.url + "/v1", api_key="test-key", max_retries=0, timeout=10) as client:
        assert hasattr(client.responses, "compact")
        history = [
            {"role": "user", "content": "Fix the bug."},
            {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "def f(): ..."},
            {"role": "assistant", "content": "Fixed."},
            {"role": "user", "content": "Now add a test."},
        ]
        compacted = client.responses.compact(model="gpt-test", input=history)
    assert type(compacted).__name__ == "CompactedResponse"
    assert compacted.object == "response.compaction"
    assert [item.type for item in compacted.output] == ["message", "message", "compaction"]
    assert [item.role for item in compacted.output[:2]] == ["user", "user"]
    assert compacted.output[1].content[0].text == "Now add a test."
    packed = compacted.output[2].encrypted_content
    assert json.loads(base64.b64decode(packed.removeprefix("enc:"))) == [history[1], history[2], history[3]]
    assert compacted.usage.input_tokens == default_token_count(server.last)
    assert (server.last.path, server.last.endpoint) == ("/v1/responses/compact", "compact")
    # model_dump() warns (an error here) about the user messages' shape; to_dict(warnings=False) doesn't.
    assert compacted.to_dict(warnings=False)["output"][2]["type"] == "compaction"


def test_responses_compact_scripted_output(openai_client: Any, server: LLMServer) -> None:
    item = {"type": "compaction", "id": "cmp_7", "encrypted_content": "zzz"}
    server.enqueue(Reply(content=[item], input_tokens=9000, output_tokens=700))
    compacted = openai_client.responses.compact(model="gpt-test", input=USER)
    assert compacted.model_dump(exclude_none=True)["output"] == [item]
    assert (compacted.usage.input_tokens, compacted.usage.output_tokens) == (9000, 700)


# -- prompt too long -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("style", "message"),
    [
        (None, "prompt is too long: 208310 tokens > 200000 maximum"),
        (
            "max_tokens",
            (
                "input length and `max_tokens` exceed context limit: 208310 + 300 > 200000, decrease input length or "
                "`max_tokens` and try again"
            ),
        ),
    ],
)
def test_anthropic_overflow(
    anthropic_sdk: Any, anthropic_client: Any, server: LLMServer, style: str | None, message: str
) -> None:
    server.enqueue(Overflow(208_310, 200_000, style))
    with pytest.raises(anthropic_sdk.BadRequestError) as caught:
        anthropic_client.messages.create(model="claude-test", max_tokens=300, messages=USER)
    error = caught.value
    assert error.status_code == 400
    assert error.body == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": message},
        "request_id": error.request_id,
    }
    assert error.request_id.startswith("req_")
    assert (error.type, error.api_message) == ("invalid_request_error", message)


def test_openai_chat_overflow(openai_sdk: Any, openai_client: Any, server: LLMServer) -> None:
    server.enqueue(Overflow(130_532, 128_000))
    with pytest.raises(openai_sdk.BadRequestError) as caught:
        openai_client.chat.completions.create(model="gpt-test", messages=USER)
    error = caught.value
    assert (error.status_code, error.code, error.param, error.type) == (
        400,
        "context_length_exceeded",
        "messages",
        "invalid_request_error",
    )
    assert error.body["message"] == (
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens. "
        "Please reduce the length of the messages."
    )


def test_openai_responses_overflow(openai_sdk: Any, openai_client: Any, server: LLMServer) -> None:
    server.enqueue(Overflow(), Overflow())
    for call in (openai_client.responses.create, openai_client.responses.compact):
        with pytest.raises(openai_sdk.BadRequestError) as caught:
            call(model="gpt-test", input="x")
        assert caught.value.body == {
            "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
            "type": "invalid_request_error",
            "param": "input",
            "code": "context_length_exceeded",
        }
        assert caught.value.code == "context_length_exceeded"


LLAMACPP = {
    "code": 400,
    "message": "request (5000 tokens) exceeds the available context size (4096 tokens), try increasing it",
    "type": "exceed_context_size_error",
    "n_prompt_tokens": 5000,
    "n_ctx": 4096,
}

#: What each chat style's error looks like to the openai SDK (``exc.body`` is the body's ``error``
#: when it has one, else the whole body), asked for 5000 prompt tokens against 4096, max_tokens 1000.
CHAT_OVERFLOWS: dict[str, tuple[dict[str, Any], str | None]] = {
    "vllm": (
        {
            "object": "error",
            "message": "This model's maximum context length is 4096 tokens. However, you requested 6000 tokens "
            "(5000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
        "400",
    ),
    "vllm_input_tokens": (
        {
            "message": "This model's maximum context length is 4096 tokens. However, your request has 5000 input "
            "tokens. Please reduce the length of the input messages. (parameter=input_tokens, value=5000)",
            "type": "BadRequestError",
            "param": "input_tokens",
            "code": 400,
        },
        "400",
    ),
    "llamacpp": (LLAMACPP, "400"),
    "llamacpp_legacy": (
        {**LLAMACPP, "message": "the request exceeds the available context size, try increasing it"},
        "400",
    ),
    "llamacpp_context_shift": (
        {
            **LLAMACPP,
            "message": "the request exceeds the available context size. try increasing the context size or enable "
            "context shift",
        },
        "400",
    ),
    "ollama": (
        {
            "message": json.dumps({"error": LLAMACPP}, separators=(",", ":")),
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        },
        None,
    ),
    "openrouter": (
        {
            "message": "This endpoint's maximum context length is 4096 tokens. However, you requested about 6000 "
            "tokens (5000 of text input, 1000 in the output). Please reduce the length of either one, or use the "
            '"middle-out" transform to compress your prompt automatically.',
            "code": 400,
            "metadata": {"provider_name": "TestProvider"},
        },
        "400",
    ),
    "groq": (
        {
            "message": "Please reduce the length of the messages or completion.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        },
        "context_length_exceeded",
    ),
    "deepseek": (
        {
            "message": "This model's maximum context length is 4096 tokens. However, you requested 6000 tokens "
            "(5000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_request_error",
        },
        "invalid_request_error",
    ),
    "gemini": (
        {
            "code": 400,
            "message": "The input token count (5000) exceeds the maximum number of tokens allowed (4096).",
            "status": "INVALID_ARGUMENT",
        },
        "400",
    ),
}


def test_every_chat_style_is_covered() -> None:
    assert set(CHAT_OVERFLOWS) == CHAT_STYLES


@pytest.mark.parametrize("style", sorted(CHAT_OVERFLOWS))
def test_openai_compatible_chat_overflow(openai_sdk: Any, openai_client: Any, server: LLMServer, style: str) -> None:
    body, code = CHAT_OVERFLOWS[style]
    server.enqueue(Overflow(5000, 4096, style))
    with pytest.raises(openai_sdk.BadRequestError) as caught:
        openai_client.chat.completions.create(model="local", messages=USER, max_tokens=1000)
    assert caught.value.status_code == 400
    assert caught.value.body == body
    assert caught.value.code == code


def test_vllm_overflow_without_max_tokens(openai_sdk: Any, openai_client: Any, server: LLMServer) -> None:
    server.enqueue(Overflow(5000, 4096, "vllm"), Overflow(5000, 4096, "openrouter"))
    with pytest.raises(openai_sdk.BadRequestError) as caught:
        openai_client.chat.completions.create(model="local", messages=USER)
    assert caught.value.body["message"] == (
        "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens in the messages, "
        "Please reduce the length of the messages."
    )
    with pytest.raises(openai_sdk.BadRequestError) as caught:
        openai_client.chat.completions.create(model="local", messages=USER)
    assert "about 5000 tokens (5000 of text input)." in caught.value.body["message"]


def test_style_on_the_wrong_endpoint_is_a_server_failure(anthropic_sdk: Any) -> None:
    with pytest.raises(AssertionError, match="not served on /v1/messages"), LLMServer() as srv:
        srv.enqueue(Overflow(style="vllm"))
        client = anthropic_sdk.Anthropic(base_url=srv.url, api_key="test-key", max_retries=0)
        with client, pytest.raises(anthropic_sdk.InternalServerError):
            client.messages.create(model="claude-test", max_tokens=10, messages=USER)


def test_unknown_overflow_style() -> None:
    with pytest.raises(ValueError, match="unknown Overflow style"):
        Overflow(style="nope")


def test_context_window_overflows_automatically_and_keeps_the_queue(
    anthropic_sdk: Any, openai_sdk: Any, anthropic_client: Any, openai_client: Any, server: LLMServer
) -> None:
    def count(request: Recorded) -> int:
        return sum(len(m["content"]) for m in request.body["messages"]) * 1000

    server.count_input_tokens = count
    server.context_window = 40_000
    server.enqueue(Reply("fits"), Reply("fits too"))
    long = [{"role": "user", "content": "x" * 50}]

    with pytest.raises(anthropic_sdk.BadRequestError) as caught:
        anthropic_client.messages.create(model="claude-test", max_tokens=10, messages=long)
    assert caught.value.api_message == "prompt is too long: 50000 tokens > 40000 maximum"
    with pytest.raises(openai_sdk.BadRequestError) as caught:
        openai_client.chat.completions.create(model="gpt-test", messages=long)
    assert caught.value.code == "context_length_exceeded"
    assert "resulted in 50000 tokens" in caught.value.message
    assert server.pending == 2

    short = [{"role": "user", "content": "x" * 30}]
    reply = anthropic_client.messages.create(model="claude-test", max_tokens=10, messages=short)
    assert (reply.content[0].text, reply.usage.input_tokens) == ("fits", 30_000)
    server.overflow_style = "llamacpp"
    with pytest.raises(openai_sdk.BadRequestError) as caught:
        openai_client.chat.completions.create(model="gpt-test", messages=long)
    assert caught.value.body["n_prompt_tokens"] == 50_000
    assert caught.value.body["n_ctx"] == 40_000
    assert (
        openai_client.chat.completions.create(model="gpt-test", messages=short).choices[0].message.content == "fits too"
    )
    assert len(server.requests) == 5


# -- other errors --------------------------------------------------------------------------------


def test_rate_limit_and_overload(
    anthropic_sdk: Any, openai_sdk: Any, anthropic_client: Any, openai_client: Any, server: LLMServer
) -> None:
    rate_limit = {"type": "error", "error": {"type": "rate_limit_error", "message": "Number of requests exceeded."}}
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    openai_limit = {
        "error": {"message": "Rate limit reached", "type": "requests", "param": None, "code": "rate_limit_exceeded"}
    }
    server_error = {
        "error": {"message": "The server had an error", "type": "server_error", "param": None, "code": None}
    }
    server.enqueue(
        HTTPError(429, rate_limit, {"retry-after": "7"}),
        HTTPError(529, overloaded),
        HTTPError(429, openai_limit),
        HTTPError(500, server_error),
    )
    with pytest.raises(anthropic_sdk.RateLimitError) as limited:
        anthropic_client.messages.create(model="claude-test", max_tokens=10, messages=USER)
    assert limited.value.response.headers["retry-after"] == "7"
    assert limited.value.body == rate_limit
    with pytest.raises(anthropic_sdk.InternalServerError) as overload:
        anthropic_client.messages.create(model="claude-test", max_tokens=10, messages=USER)
    assert (overload.value.status_code, overload.value.type) == (529, "overloaded_error")
    with pytest.raises(openai_sdk.RateLimitError) as caught:
        openai_client.chat.completions.create(model="gpt-test", messages=USER)
    assert caught.value.code == "rate_limit_exceeded"
    with pytest.raises(openai_sdk.InternalServerError) as failed:
        openai_client.responses.create(model="gpt-test", input="x")
    assert failed.value.status_code == 500


def test_streaming_and_unknown_paths_are_rejected(
    anthropic_sdk: Any, openai_sdk: Any, anthropic_client: Any, openai_client: Any, server: LLMServer
) -> None:
    with pytest.raises(openai_sdk.BadRequestError, match="not supported"):
        openai_client.chat.completions.create(model="gpt-test", messages=USER, stream=True)
    with pytest.raises(anthropic_sdk.BadRequestError, match="not supported"):
        anthropic_client.messages.create(model="claude-test", max_tokens=10, messages=USER, stream=True)
    with pytest.raises(openai_sdk.NotFoundError) as missing:
        openai_client.embeddings.create(model="x", input="y")
    assert missing.value.body["message"] == "Invalid URL (POST /v1/embeddings)"
    with pytest.raises(anthropic_sdk.NotFoundError) as not_found:
        anthropic_client.models.list()
    assert not_found.value.type == "not_found_error"
    assert server.pending == 0
    assert [r.endpoint for r in server.requests] == ["chat", "anthropic", "unknown", "unknown"]


def test_default_reply(openai_client: Any, server: LLMServer) -> None:
    server.default = lambda request: Reply(f"echo {request.body['messages'][-1]['content']}")
    completion = openai_client.chat.completions.create(model="gpt-test", messages=USER)
    assert completion.choices[0].message.content == "echo Summarize the session so far."
    server.default = None
    assert openai_client.chat.completions.create(model="gpt-test", messages=USER).choices[0].message.content == "ok"


def test_enqueue_rejects_other_types(server: LLMServer) -> None:
    with pytest.raises(TypeError):
        server.enqueue("ok")  # type: ignore[arg-type]


# -- lifecycle -----------------------------------------------------------------------------------


def test_concurrent_requests_share_one_fifo(openai_sdk: Any, server: LLMServer) -> None:
    server.enqueue(*(Reply(f"r{i}") for i in range(8)))
    with openai_sdk.OpenAI(base_url=server.url + "/v1", api_key="test-key", max_retries=0, timeout=10) as client:

        def ask(i: int) -> str:
            messages = [{"role": "user", "content": str(i)}]
            completion = client.chat.completions.create(model="gpt-test", messages=messages)
            return str(completion.choices[0].message.content)

        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(ask, range(8)))
    assert sorted(answers) == [f"r{i}" for i in range(8)]
    assert len(server.requests) == 8
    assert server.pending == 0


def test_stop_closes_kept_alive_connections_and_joins_every_thread(anthropic_sdk: Any) -> None:
    before = set(threading.enumerate())
    with anthropic_sdk.Anthropic(
        base_url="http://127.0.0.1:9", api_key="test-key", max_retries=0, timeout=10
    ) as client:
        with LLMServer() as srv:
            scoped = client.with_options(base_url=srv.url)
            scoped.messages.create(model="claude-test", max_tokens=10, messages=USER)  # the connection stays pooled
            assert len(set(threading.enumerate()) - before) >= 2  # serve_forever + the keep-alive handler
        assert set(threading.enumerate()) - before == set()
        with pytest.raises(anthropic_sdk.APIConnectionError):
            scoped.messages.create(model="claude-test", max_tokens=10, messages=USER)
    srv.stop()  # idempotent


def test_server_failure_is_raised_on_exit(openai_sdk: Any) -> None:
    def broken(request: Recorded) -> Reply:
        raise RuntimeError("scripted bug")

    with pytest.raises(AssertionError, match="scripted bug"), LLMServer(default=broken) as srv:
        client = openai_sdk.OpenAI(base_url=srv.url + "/v1", api_key="test-key", max_retries=0)
        with client, pytest.raises(openai_sdk.InternalServerError, match="scripted bug"):
            client.chat.completions.create(model="gpt-test", messages=USER)
