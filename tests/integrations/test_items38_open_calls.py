"""The adapters' fast paths (the core's kept trimmer, issue 30) over an agent's loop: lists whose
last assistant message's calls are unanswered or partly answered (parallel calls), a newest result
too large for the budget (cut), reasoning items (the Responses path) — each call gives what the
adapter's general path (the core's parsed path, no kept trimmer) gives for the same list."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

import agentcontext as ac
from agentcontext import _core
from agentcontext.integrations import litellm
from tests import support
from tests.integration_support import Function, Message, ToolCall


class SpyTrimmer:
    """The core's ``_Trimmer``, counting the calls it fitted (not handed to the general path)."""

    fitted = 0

    def __init__(self, *, encoding: str = "o200k_base") -> None:
        self._real = REAL_TRIMMER(encoding=encoding)

    def trim(self, *args: Any, **kwargs: Any) -> Any:
        got = self._real.trim(*args, **kwargs)
        SpyTrimmer.fitted += got is not None
        return got

    def remember(self, *args: Any) -> None:
        self._real.remember(*args)


class NoTrimmer:
    """A trimmer that never applies: every fit takes the general path."""

    def __init__(self, *, encoding: str = "o200k_base") -> None:
        pass

    def trim(self, *args: Any, **kwargs: Any) -> None:
        return None

    def remember(self, *args: Any) -> None:
        pass


REAL_TRIMMER = _core._Trimmer
REAL_TRIM = _core.trim_messages


def general_trim(messages: Any, *args: Any, **kwargs: Any) -> Any:
    """``trim_messages`` on its parsed path (a tuple never takes the fast path)."""
    return REAL_TRIM(tuple(messages), *args, **kwargs)


@pytest.fixture
def general(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The adapters on their general path while the fixture is active."""
    monkeypatch.setattr(_core, "_Trimmer", NoTrimmer)
    monkeypatch.setattr(_core, "trim_messages", general_trim)
    monkeypatch.setattr(litellm._KEPT, "_trimmer", None)
    monkeypatch.setattr(litellm._KEPT, "last", None)
    yield


def session(size: int = 140) -> list[dict[str, Any]]:
    """A coding agent's Chat session with parallel calls, its last tool result oversized."""
    chat = support.synthetic_session(size, seed=9)
    last = max(i for i, m in enumerate(chat) if m["role"] == "tool")
    chat[last] = {**chat[last], "content": "line of the build log\n" * 3_000}
    return chat


def as_items(chat: list[dict[str, Any]], reasoning: bool) -> tuple[list[dict[str, Any]], list[int]]:
    """The session as the Agents SDK's Responses items (with a reasoning item before each call
    when ``reasoning``), and where each Chat message's items end."""
    items: list[dict[str, Any]] = []
    ends: list[int] = []
    for n, m in enumerate(chat):
        if reasoning and m["role"] == "assistant":
            items.append({"type": "reasoning", "id": f"rs_{n}", "summary": []})
        for k, r in enumerate(ac.Conversation([m]).to_format("responses")):
            if r.get("role") == "assistant" and isinstance(r.get("content"), str):
                part = {"type": "output_text", "text": r["content"], "annotations": []}
                r = {"id": f"msg_{n}", "type": "message", "role": "assistant", "status": "completed", "content": [part]}
            elif r.get("type") == "function_call":
                r = {**r, "id": f"fc_{n}_{k}", "status": "completed"}
            items.append(r)
        ends.append(len(items))
    return items, ends


def as_mixed(chat: list[dict[str, Any]]) -> list[Any]:
    """The session as LiteLLM's mix: the assistant's replies as message objects."""
    out: list[Any] = []
    for m in chat:
        if m["role"] != "assistant":
            out.append(m)
            continue
        calls = [
            ToolCall(id=c["id"], function=Function(name=c["function"]["name"], arguments=c["function"]["arguments"]))
            for c in m.get("tool_calls") or []
        ]
        out.append(Message(content=m["content"], tool_calls=calls or None))
    return out


def shown(objects: list[Any]) -> str:
    dumped = [x if isinstance(x, dict) else x.model_dump(mode="json", exclude_none=True) for x in objects]
    return json.dumps(dumped, sort_keys=True)  # (the parsed path writes the keys of a call in its own order)


def loop(fit: Any, objects: list[Any], ends: list[int]) -> list[str]:
    """Each call of an agent's loop over ``objects`` (growing to each of ``ends``), as JSON."""
    out = []
    for n in ends:
        try:
            out.append(shown(fit(objects[:n])))
        except ac.BudgetError as e:
            out.append(f"refused {e.needed}")
    return out


def budget_for(chat: list[dict[str, Any]], share: float) -> ac.Budget:
    return ac.Budget(int(ac.Conversation(chat).tokens * share))


@pytest.mark.parametrize("share", [0.2, 0.5])
@pytest.mark.parametrize("reasoning", [False, True])
def test_fit_items_over_a_loop_gives_what_its_general_path_gives(
    share: float, reasoning: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("agents", reason="the OpenAI Agents SDK is not installed")
    from agentcontext.integrations.openai_agents import _Fitter

    chat = session()
    items, ends = as_items(chat, reasoning)
    budget = budget_for(chat, share)
    calls = ends[2:]
    with monkeypatch.context() as m:
        m.setattr(_core, "_Trimmer", SpyTrimmer)
        SpyTrimmer.fitted = 0
        before = json.dumps(items)
        fitter = _Fitter()
        fast = loop(lambda x: fitter.fit(x, budget, None, ()), items, calls)
        assert json.dumps(items) == before
        fitted = SpyTrimmer.fitted
    with monkeypatch.context() as m:
        m.setattr(_core, "_Trimmer", NoTrimmer)
        m.setattr(_core, "trim_messages", general_trim)
        fitter = _Fitter()
        assert loop(lambda x: fitter.fit(copy.deepcopy(x), budget, None, ()), items, calls) == fast
    if reasoning:
        assert fitted == 0, "reasoning items are fitted as Responses items"
    else:
        # Every call but the ones the oversized result makes refuse or cut took the kept trimmer:
        # those ending with unanswered calls too.
        open_calls = sum(chat[n - 1].get("tool_calls") is not None for n in range(3, len(chat) + 1))
        assert fitted > open_calls > 10
    assert any("[output truncated" in call or "omitted" in call for call in fast[-3:])


@pytest.mark.parametrize("share", [0.2, 0.5])
@pytest.mark.parametrize("mixed", [False, True])
def test_litellm_over_a_loop_gives_what_its_general_path_gives(
    share: float, mixed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = session()
    messages = as_mixed(chat) if mixed else chat
    budget = budget_for(chat, share)
    calls = list(range(3, len(chat) + 1))
    own = 0

    def fit(x: list[Any]) -> list[Any]:
        # (A list of plain dicts goes to the core's fast path as it is: the caller's own dicts
        # come back; the general path gives back new ones.)
        nonlocal own
        out = litellm.fit_messages(x, budget)
        given = set(map(id, x))
        own += any(id(d) in given and type(d) is dict for d in out)
        return out

    with monkeypatch.context() as m:
        m.setattr(_core, "_Trimmer", SpyTrimmer)
        m.setattr(litellm._KEPT, "_trimmer", None)
        SpyTrimmer.fitted = 0
        fast = loop(fit, messages, calls)
        fitted = SpyTrimmer.fitted if mixed else own
    with monkeypatch.context() as m:
        m.setattr(_core, "_Trimmer", NoTrimmer)
        m.setattr(_core, "trim_messages", general_trim)
        m.setattr(litellm._KEPT, "_trimmer", None)
        m.setattr(litellm._KEPT, "last", None)
        assert loop(lambda x: litellm.fit_messages(copy.deepcopy(x), budget), messages, calls) == fast
    open_calls = sum(chat[n - 1].get("tool_calls") is not None for n in calls)
    assert fitted > open_calls > 10
    assert any("omitted" in call for call in fast[-3:])


def test_litellm_reads_a_plain_dict_changed_in_place_again() -> None:
    chat = session(60)
    budget = budget_for(chat, 0.3)
    messages = as_mixed(chat)
    litellm.fit_messages(messages, budget)
    # A plain tool result made long in place, an assistant reply given new content.
    k = max(i for i, m in enumerate(messages) if isinstance(m, dict) and m["role"] == "tool")
    messages[k]["content"] = "grown output line\n" * 2_000
    reply = next(m for m in reversed(messages) if not isinstance(m, dict))
    reply.content = "Changed. " * 300
    assert shown(litellm.fit_messages(messages, budget)) == shown(litellm.fit_messages(copy.deepcopy(messages), budget))


def test_prints_read_a_dicts_items_as_its_attributes() -> None:
    held = _core._Prints()
    items: list[Any] = [
        {"content": "abc", "output": None},
        {"arguments": "{}", "content": ["x"]},
        Function(name="f", arguments="{}"),
    ]
    names = {dict: ("content", "output", "arguments"), Function: ("arguments",)}
    held.keep(items, 0, names)
    assert held.same(items) and held.same([*items, {"content": "new"}])
    items[0]["output"] = "set"  # a missing key set: no longer None
    assert not held.same(items)
    held.keep(items, 0, names)
    items[1]["content"].append("y")  # a list grown in place
    assert not held.same(items)
    held.keep(items, 0, names)
    items[0]["content"] = "abcd"[:3]  # an equal value, another string: the same
    assert items[0]["content"] == "abc"
    assert held.same(items)
    items[2].arguments = '{"p": 1}'
    assert not held.same(items)
