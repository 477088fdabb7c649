"""LiteLLM with agentcontext.integrations.litellm.fit_messages, end to end with mock_response: a
multi-turn, tool-using loop whose history (LiteLLM's own Message objects mixed with dicts)
exceeds the budget. Every call fits, is valid and keeps the latest user request; the history the
caller keeps is untouched; the library's functions read LiteLLM's objects directly."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import
litellm = pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install 'agentcontext[litellm]')")

import agentcontext as ac
from agentcontext.integrations.litellm import afit_messages, fit_messages, to_dict
from tests.integration_support import BIG_RESULT, BUDGET, check_call

# LiteLLM's own types trip Pydantic warnings when they are first built (LiteLLM 1.110).
pytestmark = [
    pytest.mark.filterwarnings("ignore:.*ReadOnly.*:UserWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


@pytest.fixture(autouse=True)
def _collect_here() -> Iterator[None]:
    """What LiteLLM leaves open is collected in its own tests, under the filters above."""
    yield
    gc.collect()


REQUESTS = ["Please review the session handlers for leaks.", "Now check the request loaders as well."]


def run(asynchronous: bool) -> tuple[list[Any], list[list[Any]]]:
    """The loop, with fit_messages + completion, or (one event loop) afit_messages + acompletion."""

    async def loop() -> tuple[list[Any], list[list[Any]]]:
        history: list[Any] = [{"role": "system", "content": "You are a careful reviewer."}]
        sent: list[list[Any]] = []
        n = 0
        for request in REQUESTS:
            history.append({"role": "user", "content": request})
            for step in range(4):
                if asynchronous:
                    messages = await afit_messages(history, ac.Budget(BUDGET, recent_tools=1, recent_messages=2))
                else:
                    messages = fit_messages(history, ac.Budget(BUDGET, recent_tools=1, recent_messages=2))
                sent.append(messages)
                kwargs: dict[str, Any] = {"model": "gpt-4o", "messages": messages}
                if step < 3:
                    kwargs["mock_tool_calls"] = [
                        {
                            "id": f"call_{n}",
                            "type": "function",
                            "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/mod_{n}.py"})},
                        }
                    ]
                    kwargs["mock_response"] = ""
                else:
                    kwargs["mock_response"] = "Done."
                response = await litellm.acompletion(**kwargs) if asynchronous else litellm.completion(**kwargs)
                message = response.choices[0].message
                history.append(message)
                for call in message.tool_calls or []:
                    history.append({"role": "tool", "tool_call_id": call.id, "content": f"# {n}\n{BIG_RESULT}"})
                    n += 1
        return history, sent

    return asyncio.run(loop())


@pytest.mark.parametrize("asynchronous", [False, True], ids=["completion", "acompletion"])
def test_fit_messages_fits_every_call_with_litellm_objects(asynchronous: bool) -> None:
    history, sent = run(asynchronous)
    assert len(sent) == 8
    assert any(isinstance(m, litellm.Message) for m in history)
    ids = {id(m) for m in history}
    for k, messages in enumerate(sent):
        check_call([to_dict(m) for m in messages], REQUESTS[0] if k < 4 else REQUESTS[1])
        for m in messages:
            # The caller's own objects, or copies of tool results with the content cleared.
            assert id(m) in ids or (m["role"] == "tool" and m["content"].startswith("[cleared: result of read_file"))
    # The caller's history is untouched.
    assert sum(isinstance(m, dict) and m.get("role") == "tool" and BIG_RESULT in m["content"] for m in history) == 6


def test_the_library_reads_litellm_objects_directly() -> None:
    response = litellm.completion(
        model="gpt-4o", messages=[{"role": "user", "content": "hi"}], mock_response="Hello there."
    )
    message = response.choices[0].message
    messages = [{"role": "user", "content": "hi"}, message]
    assert (
        ac.Conversation(messages).tokens
        == ac.Conversation([messages[0], {"role": "assistant", "content": "Hello there."}]).tokens
    )
    assert ac.trim_messages(messages, 1_000) == [messages[0], {"role": "assistant", "content": "Hello there."}]
    assert ac.validate(messages) == []


class SpyMapping(Mapping[str, Any]):
    """A message as a Mapping that records the threads it is read from."""

    def __init__(self, data: dict[str, Any], seen: set[int]) -> None:
        self.data, self.seen = data, seen

    def __getitem__(self, key: str) -> Any:
        self.seen.add(threading.get_ident())
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


@pytest.mark.parametrize("size", [10, 400])
def test_afit_messages_fits_large_lists_off_the_event_loop(size: int) -> None:
    seen: set[int] = set()
    messages = [SpyMapping({"role": "user", "content": f"request {i}"}, seen) for i in range(size)]

    async def call() -> tuple[int, list[Any]]:
        return threading.get_ident(), await afit_messages(messages, BUDGET)

    loop_thread, fitted = asyncio.run(call())
    assert fitted and fitted[-1] is messages[-1]
    # Small lists are fitted right on the loop; large ones in a worker thread.
    assert (loop_thread in seen) == (size < 256)
