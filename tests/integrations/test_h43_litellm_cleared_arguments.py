"""LiteLLM's ``fit_messages`` with ``Budget(clear_tool_inputs=True)`` over the assistant messages
``completion`` returns (LiteLLM's ``Message`` objects, appended to the history as they came, and
any Mapping that is not a plain dict): the copy of a message whose old calls the fit cleared took
only the new content, so the arguments went out whole. Twelve write_file calls of 1,800
characters, budget 12,000: 18,329 tokens sent where the fit had counted 9,605. The copy now
carries the fitted arguments in ``tool_calls`` too; the caller's objects are not changed."""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import
litellm = pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install 'agentcontext[litellm]')")

import agentcontext as ac
from agentcontext.integrations.litellm import fit_messages, to_dict

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*ReadOnly.*:UserWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

BODY = "x = 1\n" * 300
LIMIT = 12_000


@pytest.fixture(autouse=True)
def _collect_here() -> Iterator[None]:
    yield
    gc.collect()


def budget() -> ac.Budget:
    return ac.Budget(LIMIT, clear_tool_inputs=True, recent_tools=2)


def sent_tokens(messages: list[Any]) -> int:
    return ac.Conversation([to_dict(m) for m in messages]).tokens


def arguments(messages: list[Any]) -> list[str]:
    out = []
    for m in map(to_dict, messages):
        out += [c["function"]["arguments"] for c in m.get("tool_calls") or []]
    return out


def test_a_completion_loop_sends_the_cleared_arguments_it_counted() -> None:
    history: list[Any] = [{"role": "user", "content": "Write the files."}]
    last: list[Any] = []
    for i in range(12):
        last = fit_messages(history, budget())
        assert sent_tokens(last) <= LIMIT
        response = litellm.completion(
            model="gpt-4o",
            messages=last,
            mock_response="",
            mock_tool_calls=[
                {
                    "id": f"c{i}",
                    "type": "function",
                    "function": {"name": "write_file", "arguments": json.dumps({"path": f"f{i}.py", "content": BODY})},
                }
            ],
        )
        history.append(response.choices[0].message)
        history.append({"role": "tool", "tool_call_id": f"c{i}", "content": "ok"})
    before = [m.model_dump() for m in history if not isinstance(m, dict)]
    last = fit_messages(history, budget())
    assert sent_tokens(last) <= LIMIT
    sent = arguments(last)
    assert len(sent) == 12  # nothing dropped: the old calls' arguments were cleared
    assert all(a.startswith('{"cleared":"[cleared: arguments of write_file(') for a in sent[:6])
    assert all(json.loads(a)["content"] == BODY for a in sent[-2:])
    # The copies are Message objects still; the caller's own objects are unchanged.
    assert {type(m).__name__ for m in last if not isinstance(m, dict)} == {"Message"}
    assert [m.model_dump() for m in history if not isinstance(m, dict)] == before
    assert fit_messages(history, budget())[1] is last[1]  # the same copy given again


@pytest.mark.parametrize("kind", ["openai", "mapping"])
def test_other_message_objects_send_the_cleared_arguments(kind: str) -> None:
    from openai.types.chat import ChatCompletionMessage

    history: list[Any] = [{"role": "user", "content": "Write the files."}]
    for i in range(12):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "write_file", "arguments": json.dumps({"path": f"f{i}.py", "content": BODY})},
        }
        if kind == "openai":
            history.append(ChatCompletionMessage(role="assistant", content=None, tool_calls=[call]))  # type: ignore[list-item]
        else:
            history.append(MappingProxyType({"role": "assistant", "content": None, "tool_calls": [call]}))
        history.append({"role": "tool", "tool_call_id": f"c{i}", "content": "ok"})
    last = fit_messages(history, budget())
    assert sent_tokens(last) <= LIMIT
    sent = arguments(last)
    assert len(sent) == 12
    assert sum(a.startswith('{"cleared":') for a in sent) >= 6
    assert json.loads(arguments(history)[0])["content"] == BODY  # the caller's message as it was
