"""The offline scripted providers: the agent loop, usage, overflow, exhaustion, bad scripts, and no
SDK or network touched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import agentcontext as ac
from agentcontext.errors import ArgumentTypeError, ContextOverflowError, OptionError, ProviderResponseError
from agentcontext.providers import (
    Reply,
    ScriptedAnthropicProvider,
    ScriptedChatProvider,
    ScriptedRequest,
    Usage,
    scripted_call,
)

PROVIDERS = [ScriptedChatProvider, ScriptedAnthropicProvider]
READ_OPENAI = {
    "type": "function",
    "function": {"name": "read_file", "description": "Read a file.", "parameters": {"type": "object"}},
}
READ_ANTHROPIC = {"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}}


def _tools(cls: type) -> list[dict[str, object]]:
    return [READ_OPENAI] if cls is ScriptedChatProvider else [READ_ANTHROPIC]


@pytest.mark.parametrize("cls", PROVIDERS)
def test_the_loop_runs_a_tool_call_then_answers(cls: type) -> None:
    model = cls([scripted_call("read_file", {"path": "app.py"}), "app.py defines main()."])
    read: list[str] = []

    def read_file(arguments: dict[str, str]) -> str:
        read.append(arguments["path"])
        return "def main(): pass\n"

    session = ac.Session(model, system="Be terse.", tools=_tools(cls), functions={"read_file": read_file})
    completion = session.run("What does app.py define?")
    assert completion.text == "app.py defines main()."
    assert read == ["app.py"]
    assert model.calls == 2
    # The second request carries the call and its result: the model saw what the tool returned.
    assert "def main(): pass" in json.dumps(model.requests[1])
    roles = [m["role"] for m in session.conversation.to_openai()]
    assert roles[-3:] == ["assistant", "tool", "assistant"]


@pytest.mark.parametrize("cls", PROVIDERS)
def test_usage_is_the_request_and_reply_counted(cls: type) -> None:
    model = cls(["four words of reply", "ok"])
    small = model.complete(ac.Conversation([{"role": "user", "content": "hi"}]), system="s")
    big_text = "word " * 500
    big = model.complete(ac.Conversation([{"role": "user", "content": big_text}]), system="s")
    assert small.usage.output_tokens == ac.count_tokens("four words of reply")
    # The 500 extra words are counted in the second request's input, not invented.
    grown = big.usage.input_tokens - small.usage.input_tokens
    assert grown == ac.count_tokens(big_text) - ac.count_tokens("hi")
    assert small.usage.input_tokens > 0 and small.stop_reason in ("stop", "end_turn")


@pytest.mark.parametrize("cls", PROVIDERS)
def test_a_reply_with_its_own_usage_and_stop_reason(cls: type) -> None:
    reply = Reply("cut", stop_reason="length" if cls is ScriptedChatProvider else "max_tokens", usage=Usage(900, 7))
    done = cls([reply]).complete(ac.Conversation([{"role": "user", "content": "go"}]))
    assert (done.usage.input_tokens, done.usage.output_tokens) == (900, 7)
    assert done.stop_reason == reply.stop_reason and done.text == "cut"


@pytest.mark.parametrize("cls", PROVIDERS)
def test_a_function_script_sees_the_request(cls: type) -> None:
    seen: list[ScriptedRequest] = []

    def echo(request: ScriptedRequest) -> str:
        seen.append(request)
        return f"you said: {request.last_text}"

    model = cls(echo)
    done = model.complete(ac.Conversation([{"role": "user", "content": "ping"}]), system="sys", tools=_tools(cls))
    assert done.text == "you said: ping"
    assert seen[0].call == 0 and seen[0].system == "sys" and len(seen[0].tools) == 1


@pytest.mark.parametrize("cls", PROVIDERS)
def test_a_request_over_the_window_overflows_like_a_server(cls: type) -> None:
    model = cls(["never sent"], context_window=50)
    with pytest.raises(ContextOverflowError) as info:
        model.complete(ac.Conversation([{"role": "user", "content": "many words " * 40}]))
    assert info.value.limit == 50 and info.value.tokens is not None and info.value.tokens > 50


@pytest.mark.parametrize("cls", PROVIDERS)
def test_a_script_that_runs_out_says_so(cls: type) -> None:
    model = cls(["one"])
    model.complete(ac.Conversation([{"role": "user", "content": "a"}]))
    with pytest.raises(ProviderResponseError, match="no reply for call 2"):
        model.complete(ac.Conversation([{"role": "user", "content": "b"}]))


@pytest.mark.parametrize(
    ("script", "error"),
    [
        ("a string is not a script", ArgumentTypeError),
        (42, ArgumentTypeError),
        ([None], ArgumentTypeError),
        ([{"text": "dicts are not replies"}], ArgumentTypeError),
    ],
)
def test_bad_scripts_are_typed_errors(script: object, error: type) -> None:
    with pytest.raises(error):
        ScriptedChatProvider(script)  # type: ignore[arg-type]


def test_bad_calls_and_encodings_are_typed_errors() -> None:
    with pytest.raises(ArgumentTypeError):
        scripted_call("")
    with pytest.raises(ArgumentTypeError):
        scripted_call("read", 3)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError):
        ScriptedChatProvider([], encoding=5)  # type: ignore[arg-type]
    with pytest.raises(OptionError):
        ScriptedChatProvider([], encoding="no_such_encoding")
    with pytest.raises(OptionError):
        ScriptedChatProvider([], context_window=0)
    bad = ScriptedChatProvider(lambda request: 7)
    with pytest.raises(ArgumentTypeError, match="answer to call 0"):
        bad.complete(ac.Conversation([{"role": "user", "content": "a"}]))


def test_it_summarizes_for_the_ladder() -> None:
    model = ScriptedChatProvider(lambda request: "## Task\nFix src/app.py so main() returns 0.")
    history = [{"role": "user", "content": "Fix src/app.py so main() returns 0."}]
    for i in range(30):
        history += [
            {"role": "assistant", "content": f"step {i} " + "detail " * 60},
            {"role": "user", "content": "go on"},
        ]
    result = ac.Compactor("openharness", summarizer=ac.LLMSummarizer(model)).compact(
        ac.Conversation(history), budget=1500
    )
    assert model.calls >= 1
    assert "src/app.py" in json.dumps(result.conversation.to_openai())


def test_no_sdk_no_key_no_network() -> None:
    code = textwrap.dedent(
        """
        import socket, sys
        def refuse(*a, **k):
            raise OSError("network used")
        socket.socket.connect = refuse
        import agentcontext as ac
        from agentcontext.providers import ScriptedAnthropicProvider, scripted_call
        model = ScriptedAnthropicProvider([scripted_call("read_file", {"path": "a.py"}), "done"])
        session = ac.Session(model, functions={"read_file": lambda arguments: "x = 1"})
        print(session.run("read a.py").text)
        print(sorted(m for m in ("openai", "anthropic", "httpx") if m in sys.modules))
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:2] == ["done", "[]"]
