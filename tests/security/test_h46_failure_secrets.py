"""Credentials a failure's text carries are not written where the library reports it.

A provider or a proxy may echo the key it was sent in its error ("Incorrect API key provided:
sk-..."; LiteLLM's proxy: "Received API Key = sk-..."), and an exception may hold an
environment secret. The library wrote such texts whole into the parent model's prompt (a
subagent that failed, a tool that raised), into the session log and stage events (a summarizer's
failed model call) and into ContextOverflowError.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.compaction import Compactor
from agentcontext.compaction.llm import LLMSummarizer
from agentcontext.errors import MASK, ContextOverflowError, failure_text, mask_credentials
from agentcontext.providers import AnthropicProvider, OpenAIChatProvider
from agentcontext.sessions.log import SessionLog
from agentcontext.sessions.loop import Session
from agentcontext.sessions.subagents import SubagentPolicy
from tests import support
from tests.llm_server import HTTPError, LLMServer, Recorded, Reply

pytest.importorskip("openai", reason="the openai SDK is a test extra: pip install -e '.[test]'")
pytest.importorskip("anthropic", reason="the anthropic SDK is a test extra: pip install -e '.[test]'")

#: A key of no known shape: found only because the provider was given it.
KEY = "q7Vd93LkPz0wXyT4mNbC2hRe"


def echoing(key: str) -> HTTPError:
    return HTTPError(401, {"error": {"message": f"Incorrect API key provided: {key}", "type": "invalid_request_error"}})


def chat(server: LLMServer, key: str = KEY) -> OpenAIChatProvider:
    return OpenAIChatProvider(
        "gpt-test", base_url=server.url + "/v1", api_key=key, max_retries=0, context_window=100_000
    )


def first_user(request: Recorded) -> str:
    return next(str(m["content"]) for m in request.body["messages"] if m["role"] == "user")


def test_a_failed_subagent_does_not_put_the_echoed_key_in_the_parents_prompt(tmp_path: Path) -> None:
    def script(request: Recorded) -> Any:
        if first_user(request) == "top":
            if request.body["messages"][-1]["role"] == "user":
                call = {"name": "agent", "arguments": {"description": "d", "prompt": "child"}, "id": "c1"}
                return Reply(tool_calls=[call])
            return Reply(text="ok")
        return echoing(KEY)  # the child's model call

    with LLMServer(default=script) as server:
        log = tmp_path / "session.jsonl"
        session = Session(chat(server), subagents=SubagentPolicy(), log=SessionLog(log))
        assert session.run("top").text == "ok"
        sent = json.dumps([r.body for r in server.requests])
    (result,) = [m["content"] for m in session.conversation.to_openai() if m["role"] == "tool"]
    assert result.startswith("Error: the subagent failed: AuthenticationError")
    assert MASK in result and KEY not in result
    assert KEY not in sent  # (the parent's second request carries the result)
    assert KEY not in log.read_text()


def test_a_tool_error_holding_an_environment_secret_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "env-secret-6f1c2b9a7d"
    monkeypatch.setenv("BILLING_SERVICE_API_KEY", secret)

    def charge(args: Any) -> str:
        raise RuntimeError(f"billing refused token {secret}")

    def script(request: Recorded) -> Any:
        if request.body["messages"][-1]["role"] == "user":
            return Reply(tool_calls=[{"name": "charge", "arguments": {}, "id": "c1"}])
        return Reply(text="done")

    tool = {"type": "function", "function": {"name": "charge", "parameters": {"type": "object"}}}
    with LLMServer(default=script) as server:
        session = Session(chat(server), functions={"charge": charge}, tools=[tool])
        assert session.run("charge it").text == "done"
        sent = json.dumps(server.requests[-1].body)
    assert "Error: RuntimeError: billing refused token [redacted]" in sent
    assert secret not in sent


def test_a_summarizers_failed_call_leaves_no_key_in_the_stage_events() -> None:
    conv = ac.Conversation(support.synthetic_session(60))
    with LLMServer(default=lambda request: echoing(KEY)) as server:
        summarizer = LLMSummarizer(chat(server))
        result = Compactor("openharness", summarizer=summarizer).compact(conv, budget=conv.tokens // 3)
    summarize = next(s for s in result.stages if s.stage == "summarize")
    assert "AuthenticationError" in summarize.detail["note"]
    assert KEY not in json.dumps([s.to_dict() for s in result.stages], default=str)
    assert KEY not in json.dumps(summarizer.events, default=str)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_context_overflow_error_masks_an_echoed_key(kind: str) -> None:
    with LLMServer() as server:
        if kind == "openai":
            provider: Any = chat(server)
        else:
            provider = AnthropicProvider(
                "claude-test", base_url=server.url, api_key=KEY, max_retries=0, context_window=100_000
            )
        server.enqueue(
            HTTPError(400, {"error": {"message": f"prompt is too long: 5000 tokens > 4000 maximum ({KEY})"}})
        )
        with pytest.raises(ContextOverflowError) as got:
            provider.complete(ac.Conversation([{"role": "user", "content": "hi"}]), max_output_tokens=10)
    assert KEY not in str(got.value) and MASK in str(got.value)
    assert got.value.tokens == 5000 and got.value.limit == 4000


def test_masked_shapes_and_what_it_leaves() -> None:
    assert mask_credentials("key sk-ant-api03-abcdefghijklmnopqrstuv ok") == f"key {MASK} ok"
    assert mask_credentials("Authorization: Bearer abcdefghijklmnop1234") == f"Authorization: Bearer {MASK}"
    assert mask_credentials("GET https://bob:hunter2pass@proxy.local/v1") == f"GET https://bob:{MASK}@proxy.local/v1"
    assert mask_credentials("AKIAABCDEFGHIJKLMNOP and ghp_" + "a" * 36) == f"{MASK} and {MASK}"
    # Not credentials: short values, words, URLs without a password.
    for text in ["sk-short", "tokenizers are fast", "https://api.example.com/v1:443", "a: b@c"]:
        assert mask_credentials(text) == text
    # A value of a credential variable is masked; a short one is not taken for one.
    assert mask_credentials("x 1234", ["1234"]) == "x 1234"
    assert mask_credentials("x abcdefgh12", ["abcdefgh12"]) == f"x {MASK}"


def test_failure_text_of_an_exception_whose_str_fails() -> None:
    class Broken(Exception):
        def __str__(self) -> str:
            raise ValueError("no")

    assert failure_text(Broken()) == "Broken: (its text could not be read)"
