"""The copy an object comes back as (its old tool result cleared) follows the object's other fields:
a field set anew in place on the same object between two calls (a LangChain ``ToolMessage``'s
``name`` or ``artifact``, a Responses item's ``id`` or ``status``, a Pydantic AI request's
``run_id`` or a tool return's ``metadata``) is in the next call's copy. The copy was held by its
changed content alone (in ``Converted.rebuilt``, the one-dict map back, the kept trimmer and a
Chat turn's own), so it went out with the old values. LiteLLM's copies, which had the check
already, go through the same mechanism now."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from agentcontext.integrations._fit import as_budget


def _result(i: int, lines: int = 40) -> str:
    return "\n".join(f"{k:4d}  def handler_{i}_{k}(request): return load(request, {k})" for k in range(lines))


# --- LangChain -------------------------------------------------------------------------------


def _lc_history(turns: int) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out: list[Any] = [SystemMessage("You review code.")]
    for i in range(turns):
        out += [
            HumanMessage(f"Review module {i}."),
            AIMessage("", tool_calls=[{"id": f"c{i}", "name": "read", "args": {"p": str(i)}}]),
            ToolMessage(_result(i), tool_call_id=f"c{i}", name="read", artifact={"n": i}),
            AIMessage(f"Module {i} is fine."),
        ]
    return out


_LC_SETS: list[tuple[str, Any]] = [
    ("name", "read_file_renamed"),
    ("artifact", {"n": "new"}),
    ("additional_kwargs", {"seen": True}),
    ("status", "error"),
    ("id", "msg-new"),
    ("response_metadata", {"model": "m2"}),
]


@pytest.mark.parametrize(("field", "value"), _LC_SETS)
@pytest.mark.parametrize("calls_before", [1, 2])
@pytest.mark.parametrize("cached", [True, False])
def test_langchain_copy_carries_a_field_set_anew(field: str, value: Any, calls_before: int, cached: bool) -> None:
    pytest.importorskip("langchain_core")
    from agentcontext.integrations.langchain import converted, fit_messages

    cache = converted() if cached else None
    messages = _lc_history(10)
    target = messages[3]  # the first tool result: cleared on every call
    budget = 4_000
    for _ in range(calls_before):
        first = fit_messages(messages, budget, cache=cache)
    [copied] = [m for m in first if getattr(m, "tool_call_id", None) == "c0"]
    assert copied is not target and copied.content != target.content  # (cleared: a copy)
    setattr(target, field, value)
    again = fit_messages(messages, budget, cache=cache)
    [now] = [m for m in again if getattr(m, "tool_call_id", None) == "c0"]
    assert now is not target and now.content == copied.content
    assert getattr(now, field) == getattr(target, field)
    fresh = fit_messages(copy.deepcopy(messages), budget)
    assert [m.model_dump() for m in again] == [m.model_dump() for m in fresh]


def test_langchain_middleware_cache_follows_the_object_across_three_calls() -> None:
    """Set anew twice: each call's copy has the value of its moment (and the unchanged call after
    one gives the same copy again)."""
    pytest.importorskip("langchain_core")
    from agentcontext.integrations.langchain import converted, fit_messages

    cache = converted()
    messages = _lc_history(10)
    target = messages[3]
    names = []
    for name in ("one", "two", "two", "three"):
        target.name = name
        [now] = [m for m in fit_messages(messages, 4_000, cache=cache) if getattr(m, "tool_call_id", None) == "c0"]
        assert now is not target
        names.append(now.name)
    assert names == ["one", "two", "two", "three"]


# --- OpenAI Agents SDK -------------------------------------------------------------------------


def _chat_items() -> list[dict[str, Any]]:
    """Items that all have a Chat form (the Chat path): old outputs cleared at a small budget."""
    out: list[dict[str, Any]] = [{"role": "user", "content": "task " * 30}]
    for i in range(10):
        out += [
            {"type": "function_call", "call_id": f"c{i}", "name": "read", "arguments": json.dumps({"p": str(i)})},
            {"type": "function_call_output", "call_id": f"c{i}", "output": _result(i), "id": f"o{i}"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": f"Module {i} is fine."}],
            },
        ]
    return out


def _responses_items() -> list[dict[str, Any]]:
    """The same with a call left unanswered mid-list (no Chat form: the Responses path)."""
    items = _chat_items()
    items.insert(5, {"type": "function_call", "call_id": "open", "name": "read", "arguments": "{}"})
    return items


def _fit_items(fitter: Any, items: list[Any], budget: int) -> list[Any]:
    return fitter.fit(items, as_budget(budget), None, ())


def _plain(items: list[Any]) -> list[Any]:
    return [x if isinstance(x, dict) else x.model_dump(mode="json", exclude_none=True) for x in items]


@pytest.mark.parametrize("path", ["chat", "responses"])
@pytest.mark.parametrize(("field", "value"), [("id", "o0-new"), ("status", "completed")])
@pytest.mark.parametrize("calls_before", [1, 2])
def test_agents_copy_carries_a_field_set_anew(path: str, field: str, value: str, calls_before: int) -> None:
    pytest.importorskip("agents")
    from agentcontext.integrations.openai_agents import _Fitter

    fitter = _Fitter()
    items = _chat_items() if path == "chat" else _responses_items()
    target = items[2]  # the first output: cleared on every call
    budget = 5_000
    for _ in range(calls_before):
        first = _fit_items(fitter, items, budget)
    [copied] = [x for x in first if x.get("call_id") == "c0" and x.get("type") == "function_call_output"]
    assert copied is not target and copied["output"] != target["output"]  # (cleared: a copy)
    target[field] = value
    again = _fit_items(fitter, items, budget)
    [now] = [x for x in again if x.get("call_id") == "c0" and x.get("type") == "function_call_output"]
    assert now["output"] == copied["output"]
    assert now[field] == value
    assert _plain(again) == _plain(_fit_items(_Fitter(), copy.deepcopy(items), budget))


def test_agents_pydantic_item_copy_carries_a_field_set_anew() -> None:
    pytest.importorskip("agents")
    from openai.types.responses import ResponseFunctionToolCallOutputItem

    from agentcontext.integrations.openai_agents import _Fitter

    fitter = _Fitter()
    items: list[Any] = _chat_items()
    target = items[2] = ResponseFunctionToolCallOutputItem(
        id="o0", call_id="c0", output=_result(0), type="function_call_output", status="in_progress"
    )
    first = _plain(_fit_items(fitter, items, 5_000))
    [copied] = [x for x in first if x.get("call_id") == "c0" and x.get("type") == "function_call_output"]
    assert copied["output"] != target.output
    target.status = "completed"
    again = _plain(_fit_items(fitter, items, 5_000))
    [now] = [x for x in again if x.get("call_id") == "c0" and x.get("type") == "function_call_output"]
    assert now["output"] == copied["output"] and now["status"] == "completed"


# --- Pydantic AI -------------------------------------------------------------------------------


def _pai_history(turns: int, pairs: bool = False) -> list[Any]:
    """A Pydantic AI run's messages; with ``pairs`` each round makes two calls (a request of two
    returns: an object that stands for two dicts)."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart

    out: list[Any] = [ModelRequest(parts=[UserPromptPart("Review the modules.")])]
    for i in range(turns):
        ids = [f"c{i}", f"d{i}"] if pairs else [f"c{i}"]
        out += [
            ModelResponse(parts=[ToolCallPart("read", {"p": k}, tool_call_id=k) for k in ids]),
            ModelRequest(parts=[ToolReturnPart("read", _result(i), tool_call_id=k) for k in ids], run_id="run-1"),
            ModelResponse(parts=[TextPart(f"Module {i} is fine.")]),
        ]
    return out


def _returned(messages: list[Any], call_id: str) -> Any:
    [found] = [m for m in messages if m.kind == "request" and getattr(m.parts[0], "tool_call_id", None) == call_id]
    return found


def _set_pai(message: Any, how: str) -> None:
    if how == "run_id":
        message.run_id = "run-2"
    elif how == "metadata":
        message.metadata = {"seen": True}
    elif how == "part metadata":
        message.parts[0].metadata = {"seen": True}
    elif how == "part tool_name":
        message.parts[0].tool_name = "read_file"
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("how", ["run_id", "metadata", "part metadata", "part tool_name"])
@pytest.mark.parametrize("calls_before", [1, 2])
@pytest.mark.parametrize("pairs", [False, True])
def test_pydantic_ai_copy_carries_a_field_set_anew(how: str, calls_before: int, pairs: bool) -> None:
    pytest.importorskip("pydantic_ai")
    from agentcontext.integrations.pydantic_ai import converted, fit_messages

    cache = converted()
    messages = _pai_history(10, pairs)
    target = messages[2]  # the first tool return: cleared on every call
    budget = 6_000 if pairs else 4_000
    for _ in range(calls_before):
        first = fit_messages(messages, budget, cache=cache)
    copied = _returned(first, "c0")
    assert copied is not target and copied.parts[0].content != target.parts[0].content
    _set_pai(target, how)
    again = fit_messages(messages, budget, cache=cache)
    now = _returned(again, "c0")
    assert now.parts[0].content == copied.parts[0].content
    assert (now.run_id, now.metadata) == (target.run_id, target.metadata)
    assert (now.parts[0].metadata, now.parts[0].tool_name) == (target.parts[0].metadata, target.parts[0].tool_name)


# --- Unchanged: the held copy is given again ----------------------------------------------------


def _litellm_history(turns: int) -> list[Any]:
    from pydantic import BaseModel

    class Msg(BaseModel):
        role: str
        content: str | None = None
        tool_call_id: str | None = None
        name: str | None = None

    out: list[Any] = [{"role": "system", "content": "You review code."}]
    for i in range(turns):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        out += [
            {"role": "user", "content": f"Review module {i}."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            Msg(role="tool", tool_call_id=f"c{i}", content=_result(i), name="read"),
            {"role": "assistant", "content": f"Module {i} is fine."},
        ]
    return out


def _copies(adapter: str) -> tuple[Any, Any, Any]:
    """The copy the first tool result came back as on two calls with nothing set anew, then on a
    third after a field of its object was set anew."""
    if adapter == "langchain":
        from agentcontext.integrations.langchain import converted, fit_messages

        cache = converted()
        messages = _lc_history(10)
        run = lambda: next(
            m for m in fit_messages(messages, 4_000, cache=cache) if getattr(m, "tool_call_id", None) == "c0"
        )
        change = lambda: setattr(messages[3], "name", "other")
    elif adapter in ("agents chat", "agents responses"):
        from agentcontext.integrations.openai_agents import _Fitter

        fitter = _Fitter()
        items = _chat_items() if adapter == "agents chat" else _responses_items()
        run = lambda: next(x for x in _fit_items(fitter, items, 5_000) if x.get("id") == "o0")
        change = lambda: items[2].__setitem__("status", "completed")
    elif adapter == "pydantic_ai":
        from agentcontext.integrations.pydantic_ai import converted
        from agentcontext.integrations.pydantic_ai import fit_messages as fit_pai

        cache = converted()
        history = _pai_history(10)
        run = lambda: _returned(fit_pai(history, 4_000, cache=cache), "c0")
        change = lambda: setattr(history[2], "run_id", "run-2")
    else:
        from agentcontext.integrations.litellm import fit_messages as fit_litellm

        chat = _litellm_history(10)
        run = lambda: next(m for m in fit_litellm(chat, 4_000) if getattr(m, "tool_call_id", None) == "c0")
        change = lambda: setattr(chat[3], "name", "other")
    first, second = run(), run()
    change()
    return first, second, run()


@pytest.mark.parametrize("adapter", ["langchain", "agents chat", "agents responses", "pydantic_ai", "litellm"])
def test_the_copy_is_made_once_while_nothing_is_set_anew(adapter: str) -> None:
    pytest.importorskip({"agents chat": "agents", "agents responses": "agents"}.get(adapter, adapter.split()[0]))
    first, second, third = _copies(adapter)
    assert second is first  # (held: not made again)
    assert third is not first  # (made again, with the field's new value)
