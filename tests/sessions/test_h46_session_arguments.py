"""Session's conversation, log, params, calibration and store of a wrong kind are typed errors
naming the argument: a Path as ``log`` failed as ``AttributeError: 'PosixPath' object has no
attribute 'path'``, a non-iterable conversation or params as a TypeError, and a wrong calibration
or store was taken and failed at the first turn that used it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentcontext.errors import ArgumentTypeError
from agentcontext.providers import OpenAIChatProvider
from agentcontext.sessions.log import SessionLog
from agentcontext.sessions.loop import Session
from tests.llm_server import LLMServer

pytest.importorskip("openai", reason="the openai SDK is a test extra: pip install -e '.[test]'")

WRONG: dict[str, list[Any]] = {
    "conversation": [1, 1.5, True, object(), Path("history.jsonl"), "hello", {"role": "user"}],
    "log": ["session.jsonl", Path("session.jsonl"), 1, {"path": "x"}],
    "params": [1, "temperature", [("temperature", 0)], object()],
    "calibration": [1, "x", {"ratio": 1.2}, object()],
    "store": ["results/", Path("results"), 1, object()],
}


@pytest.mark.parametrize(("name", "value"), [(n, v) for n, vs in WRONG.items() for v in vs])
def test_a_wrong_kind_is_a_typed_error_naming_the_argument(name: str, value: Any) -> None:
    with LLMServer() as server:
        provider = OpenAIChatProvider(
            "gpt-test", base_url=server.url + "/v1", api_key="test-key", max_retries=0, context_window=100_000
        )
        with pytest.raises(ArgumentTypeError, match=f"^{name} of Session must be"):
            Session(provider, **{name: value})


def test_the_right_kinds_are_taken(tmp_path: Path) -> None:
    with LLMServer() as server:
        provider = OpenAIChatProvider(
            "gpt-test", base_url=server.url + "/v1", api_key="test-key", max_retries=0, context_window=100_000
        )
        log = SessionLog(tmp_path / "s.jsonl")
        session = Session(provider, conversation=iter([{"role": "user", "content": "hi"}]), log=log, params={})
    assert session.log is log and len(session.conversation) == 1
