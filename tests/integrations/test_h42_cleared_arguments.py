"""With ``Budget(clear_tool_inputs=True)`` the fit clears old tool calls' arguments and counts
them cleared. The Pydantic AI adapter (``fit_messages``, the history processor) and the Agents
SDK's (``fit_items``, ``input_filter``, ``CompactingSession``) gave those calls back with their
arguments whole: 18,330 tokens sent where the fit had counted about 9,600 for a 12,000 budget.
Each now sends a copy of the call with the arguments the fit left (a ``ToolCallPart``'s ``args``
keeps its type, a ``function_call`` item's ``arguments`` stays a JSON string); the caller's
objects are not changed, the newest calls are sent whole and every call keeps its id."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest

import agentcontext as ac
from tests.integration_support import pydantic_chat

BODY = "x = 1\n" * 300
LIMIT = 12_000


def budget() -> ac.Budget:
    return ac.Budget(LIMIT, clear_tool_inputs=True, recent_tools=2)


def is_cleared(args: dict[str, Any]) -> bool:
    return list(args) == ["cleared"] and args["cleared"].startswith("[cleared: arguments of write_file(")


def cleared_prefix(arguments: list[dict[str, Any]]) -> int:
    """How many calls, the oldest first, have their arguments cleared (every other call's
    arguments whole)."""
    n = sum(map(is_cleared, arguments))
    assert all(map(is_cleared, arguments[:n]))
    assert all(a["content"] == BODY for a in arguments[n:])
    return n


# Pydantic AI


def pydantic_history(as_text: bool) -> list[Any]:
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart

    out: list[Any] = [ModelRequest(parts=[UserPromptPart("Write the files.")])]
    for i in range(12):
        args: Any = {"path": f"f{i}.py", "content": BODY}
        call = ToolCallPart("write_file", json.dumps(args) if as_text else args, tool_call_id=f"c{i}")
        out += [
            ModelResponse(parts=[TextPart(f"Writing f{i}.py."), call]),
            ModelRequest(parts=[ToolReturnPart("write_file", "ok", tool_call_id=f"c{i}")]),
        ]
    return out


def pydantic_calls(messages: list[Any]) -> list[Any]:
    from pydantic_ai.messages import ModelResponse, ToolCallPart

    return [p for m in messages if isinstance(m, ModelResponse) for p in m.parts if isinstance(p, ToolCallPart)]


def pydantic_tokens(messages: list[Any]) -> int:
    """The tokens of what the model receives (:func:`~tests.integration_support.pydantic_chat`)."""
    return ac.Conversation(pydantic_chat(messages)).tokens


def check_pydantic(sent: list[Any], messages: list[Any], before: list[Any], as_text: bool) -> None:
    from pydantic_ai.messages import ModelRequest, ToolReturnPart

    assert len(sent) == len(messages)  # nothing dropped: the old calls' arguments were cleared
    assert pydantic_tokens(sent) <= LIMIT
    calls = pydantic_calls(sent)
    assert [c.tool_call_id for c in calls] == [f"c{i}" for i in range(12)]
    returns = [
        p.tool_call_id for m in sent if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)
    ]
    assert returns == [c.tool_call_id for c in calls]
    for c in calls:
        assert isinstance(c.args, str if as_text else dict)
    # The oldest calls cleared, the others (the newest two among them) sent whole as they are.
    n = cleared_prefix([c.args_as_dict() for c in calls])
    assert 1 <= n <= 10
    assert all(c is o for c, o in zip(calls[n:], pydantic_calls(messages)[n:], strict=True))
    # The text beside a cleared call goes out with it.
    assert sent[1].parts[0].content == "Writing f0.py."
    assert messages == before  # the caller's messages are not changed


@pytest.mark.parametrize("as_text", [False, True], ids=["dict args", "str args"])
@pytest.mark.parametrize("cached", [False, True])
def test_pydantic_ai_sends_the_cleared_arguments(cached: bool, as_text: bool) -> None:
    pytest.importorskip("pydantic_ai")
    from agentcontext.integrations.pydantic_ai import _dicts, converted, fit_messages

    messages = pydantic_history(as_text)
    before = copy.deepcopy(messages)
    assert pydantic_tokens(messages) > 18_000
    sent = fit_messages(messages, budget(), cache=converted() if cached else None)
    check_pydantic(sent, messages, before, as_text)
    # Sent as the fit counted it (before: 18,392 sent, 9,638 counted).
    dicts = [d for i, m in enumerate(messages) for d in _dicts(m, i)]
    # (Its placeholders say "not stored": the processed history replaces the run's.)
    assert pydantic_tokens(sent) == ac.Conversation(budget().fit_dicts(dicts, "openai", recall_ids=False)).tokens


def test_pydantic_ai_history_processor_reuses_its_copies() -> None:
    pytest.importorskip("pydantic_ai")
    from agentcontext.integrations.pydantic_ai import history_processor

    process = history_processor(budget())
    messages = pydantic_history(False)
    before = copy.deepcopy(messages)
    first = process(None, messages)  # type: ignore[arg-type]
    check_pydantic(first, messages, before, False)
    again = process(None, list(messages))  # type: ignore[arg-type]
    check_pydantic(again, messages, before, False)
    # A copy made for the same cleared arguments of the same fields is the one made before.
    assert all(a is b for a, b in zip(first, again, strict=True))
    assert first[1] is not messages[1]


# OpenAI Agents SDK


def agents_items(reasoning: bool, pydantic: bool) -> list[Any]:
    out: list[Any] = [{"role": "user", "content": "Write the files."}]
    if reasoning:  # (a list with reasoning is fitted as Responses items, not on the Chat path)
        out.append({"type": "reasoning", "id": "rs_0", "summary": []})
    for i in range(12):
        args = json.dumps({"path": f"f{i}.py", "content": BODY})
        call: Any = {"type": "function_call", "call_id": f"c{i}", "name": "write_file", "arguments": args}
        if pydantic:
            from openai.types.responses import ResponseFunctionToolCall

            call = ResponseFunctionToolCall(**call)
        out += [call, {"type": "function_call_output", "call_id": f"c{i}", "output": "ok"}]
    return out


def field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def agents_tokens(items: list[Any]) -> int:
    dicts = [x if isinstance(x, dict) else x.model_dump(mode="json", exclude_none=True) for x in items]
    return ac.Conversation(dicts, format="responses").tokens


def check_agents(sent: list[Any], items: list[Any], before: list[Any], own_items: bool = True) -> None:
    assert len(sent) == len(items)
    assert agents_tokens(sent) <= LIMIT
    calls = [x for x in sent if field(x, "type") == "function_call"]
    outputs = [field(x, "call_id") for x in sent if field(x, "type") == "function_call_output"]
    assert [field(c, "call_id") for c in calls] == outputs == [f"c{i}" for i in range(12)]
    assert all(field(c, "name") == "write_file" for c in calls)
    arguments = [field(c, "arguments") for c in calls]
    assert all(isinstance(a, str) for a in arguments)
    # The oldest calls cleared (copies), the others (the newest two among them) sent whole.
    n = cleared_prefix([json.loads(a) for a in arguments])
    assert 1 <= n <= 10
    own = [x for x in items if field(x, "type") == "function_call"]
    assert arguments[n:] == [field(o, "arguments") for o in own[n:]]
    if own_items:
        assert all(c is o for c, o in zip(calls[n:], own[n:], strict=True))
        assert all(c is not o for c, o in zip(calls[:n], own[:n], strict=True))
    assert items == before  # the caller's items are not changed


@pytest.mark.parametrize("pydantic", [False, True], ids=["dicts", "pydantic items"])
@pytest.mark.parametrize("reasoning", [False, True], ids=["chat path", "responses path"])
def test_fit_items_sends_the_cleared_arguments(reasoning: bool, pydantic: bool) -> None:
    pytest.importorskip("agents")
    from agentcontext.integrations.openai_agents import fit_items

    items = agents_items(reasoning, pydantic)
    before = copy.deepcopy(items)
    assert agents_tokens(items) > 18_000
    first = fit_items(items, budget())
    check_agents(first, items, before)
    # Sent as the fit counted it (before: 18,368 sent, 9,596 counted).
    dicts = [x if isinstance(x, dict) else x.model_dump(mode="json", exclude_none=True) for x in items]
    assert agents_tokens(first) == ac.Conversation(budget().fit_dicts(dicts, "responses"), format="responses").tokens
    again = fit_items(list(items), budget())
    check_agents(again, items, before)
    # A copy made for the same cleared arguments of the same fields is the one made before.
    assert all(a is b for a, b in zip(first, again, strict=True))


def test_input_filter_sends_the_cleared_arguments() -> None:
    pytest.importorskip("agents")
    from agents import Agent
    from agents.run_config import CallModelData, ModelInputData

    from agentcontext.integrations.openai_agents import input_filter

    items = agents_items(False, False)
    before = copy.deepcopy(items)
    data = CallModelData(model_data=ModelInputData(input=items, instructions=None), agent=Agent(name="a"), context=None)
    sent = asyncio.run(input_filter(budget())(data)).input
    check_agents(sent, items, before)


def test_compacting_session_gives_the_cleared_arguments() -> None:
    pytest.importorskip("agents")
    from agents import SQLiteSession

    from agentcontext.integrations.openai_agents import CompactingSession

    # Items over the budget in the log (written by a run before the session was wrapped):
    # get_items fits them on reading.
    inner = SQLiteSession("h42-cleared-arguments")
    items = agents_items(False, False)
    asyncio.run(inner.add_items(copy.deepcopy(items)))
    session = CompactingSession(inner, budget())
    got = asyncio.run(session.get_items())
    check_agents(got, items, copy.deepcopy(items), own_items=False)
    assert asyncio.run(inner.get_items()) == items  # the log is not changed


def test_compacting_session_stores_the_ladders_cut_arguments() -> None:
    """The compaction ladder cuts long arguments too: the items it changed are appended to the
    log with the arguments it cut (before: whole, 7,884 tokens given for the ladder's 7,173)."""
    pytest.importorskip("agents")
    from agents import SQLiteSession

    from agentcontext.integrations.openai_agents import CompactingSession
    from agentcontext.observe.events import CompactionFinished

    events: list[Any] = []
    inner = SQLiteSession("h42-ladder-arguments")
    session = CompactingSession(inner, budget(), on_event=events.append)
    items: list[Any] = [{"role": "user", "content": "Write the files."}]
    for i in range(12):
        said = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"Writing f{i}."}]}
        args = json.dumps({"path": f"f{i}.py", "content": BODY})
        items += [
            said,
            {"type": "function_call", "call_id": f"c{i}", "name": "write_file", "arguments": args},
            {"type": "function_call_output", "call_id": f"c{i}", "output": "ok"},
        ]
    seen: list[tuple[int, int, list[Any]]] = []

    async def go() -> None:
        for k in range(0, len(items), 3):
            n = session.compactions
            await session.add_items(copy.deepcopy(items[k : k + 3]))
            if session.compactions > n:
                (ladder,) = [e for e in events if isinstance(e, CompactionFinished) and e.kind != "fit"][-1:]
                got = await session.get_items()
                seen.append((ladder.tokens_after, agents_tokens(got), got))

    asyncio.run(go())
    assert seen
    whole = {x["call_id"]: x["arguments"] for x in items if x.get("type") == "function_call"}
    cut = 0
    for counted, given, got in seen:
        assert given <= counted + 4  # (a token or so apart at most: the view's note is read back)
        calls = [x for x in got if x.get("type") == "function_call"]
        cut += sum(c["arguments"] != whole[c["call_id"]] for c in calls)
    assert cut  # the ladder did cut arguments
    # The log keeps every item as given, in order (the compactions appended between them).
    assert [x for x in asyncio.run(inner.get_items()) if x in items] == items


def test_compacting_session_keeps_a_bare_calls_fields_when_the_ladder_cuts_its_arguments() -> None:
    """A model turn of calls alone (no assistant message before them, as the SDK writes a turn
    that only calls tools): the call the ladder cut was appended as a fresh item without its
    other fields (``id``, ``status``), after an empty assistant message no one had written."""
    pytest.importorskip("agents")
    from agents import SQLiteSession

    from agentcontext.integrations.openai_agents import CompactingSession

    inner = SQLiteSession("h42-ladder-bare-calls")
    session = CompactingSession(inner, budget())
    items: list[Any] = [{"role": "user", "content": "Write the files."}]
    for i in range(12):
        args = json.dumps({"path": f"f{i}.py", "content": BODY})
        items += [
            {
                "type": "function_call",
                "id": f"fc_{i}",
                "call_id": f"c{i}",
                "name": "write_file",
                "arguments": args,
                "status": "completed",
            },
            {"type": "function_call_output", "call_id": f"c{i}", "output": "ok"},
        ]

    async def go() -> list[Any]:
        for k in range(0, len(items), 2):
            await session.add_items(copy.deepcopy(items[k : k + 2]))
        return await session.get_items()

    got = asyncio.run(go())
    assert session.compactions
    log = asyncio.run(inner.get_items())
    whole = {x["call_id"]: x["arguments"] for x in items if x.get("type") == "function_call"}
    cut = [x for x in log if x.get("type") == "function_call" and x["arguments"] != whole[x["call_id"]]]
    assert cut  # the ladder cut arguments, and its changed calls were appended
    for call in cut:
        assert (call["id"], call["status"]) == (f"fc_{call['call_id'][1:]}", "completed")
    said = [x for x in [*log, *got] if x.get("role") == "assistant" or x.get("type") == "message"]
    assert not [x for x in said if x.get("role") == "assistant"], said
