"""OpenAI Agents SDK with the agentcontext call_model_input_filter and CompactingSession, end to
end with a fake Model: multi-turn, tool-using runs whose history exceeds the budget. Every call
the model receives fits, is valid and keeps the latest user request; the items it receives are
the run's own where unchanged; the session stores what the adapter promises."""

from __future__ import annotations

import asyncio
import copy
import itertools
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
)

from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

import agentcontext as ac
from agentcontext.integrations.openai_agents import CompactingSession, fit_items, input_filter
from tests.integration_support import BIG_RESULT, BUDGET, check_call

set_tracing_disabled(True)

REQUESTS = ["Please review the session handlers for leaks.", "Now check the request loaders as well."]


@function_tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"# {path}\n{BIG_RESULT}"


class FakeModel(Model):
    """Three tool calls after each user message, then an answer; records every input."""

    def __init__(self) -> None:
        self.calls: list[tuple[str | None, list[Any]]] = []
        self.counter = itertools.count()
        self.in_turn = 0

    async def get_response(
        self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.calls.append((system_instructions, items))
        last = items[-1]
        if last.get("role") == "user":
            self.in_turn = 0
        if self.in_turn < 3:
            self.in_turn += 1
            i = next(self.counter)
            output: list[Any] = [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=f"call_{i}",
                    name="read_file",
                    arguments=f'{{"path": "src/mod_{i}.py"}}',
                    id=f"fc_{i}",
                )
            ]
        else:
            output = [
                ResponseOutputMessage(
                    id=f"msg_{next(self.counter)}",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[ResponseOutputText(type="output_text", text="Done.", annotations=[])],
                )
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        # The SDK's Model requires it; these tests run the agent with Runner.run, which does not stream.
        raise AssertionError("FakeModel answers get_response only: a test streamed")


def agent(model: FakeModel) -> Agent[Any]:
    return Agent(name="reviewer", instructions="You are a careful reviewer.", model=model, tools=[read_file])


def check_calls(model: FakeModel) -> None:
    assert len(model.calls) == 8
    for k, (instructions, items) in enumerate(model.calls):
        system = [{"role": "system", "content": instructions}] if instructions else []
        check_call([*system, *items], REQUESTS[0] if k < 4 else REQUESTS[1], format="responses")


def test_input_filter_fits_every_call_and_leaves_the_session_whole(tmp_path: Any) -> None:
    model = FakeModel()
    session = SQLiteSession("s1", str(tmp_path / "chat.db"))
    config = RunConfig(call_model_input_filter=input_filter(ac.Budget(BUDGET, recent_tools=1, recent_messages=2)))

    async def run() -> list[Any]:
        for request in REQUESTS:
            await Runner.run(agent(model), request, session=session, run_config=config)
        return await session.get_items()

    stored = asyncio.run(run())
    check_calls(model)
    # View-only: the session holds every item, every output whole.
    outputs = [i for i in stored if i.get("type") == "function_call_output"]
    assert len(outputs) == 6 and all(BIG_RESULT in i["output"] for i in outputs)
    # Some call received a cleared output, as a copy with only `output` replaced.
    sent = [i for _, items in model.calls for i in items if i.get("type") == "function_call_output"]
    cleared = [i for i in sent if i["output"].startswith("[cleared: result of read_file")]
    assert cleared
    originals = {i["call_id"]: i for i in outputs}
    for i in cleared:
        assert {k: v for k, v in i.items() if k != "output"} == {
            k: v for k, v in originals[i["call_id"]].items() if k != "output"
        }


def test_compacting_session_stores_a_fitted_history(tmp_path: Any) -> None:
    model = FakeModel()
    session = CompactingSession(
        SQLiteSession("s2", str(tmp_path / "chat.db")), ac.Budget(BUDGET, recent_tools=1, recent_messages=2)
    )
    config = RunConfig(call_model_input_filter=input_filter(ac.Budget(BUDGET, recent_tools=1, recent_messages=2)))

    async def run() -> list[Any]:
        for request in REQUESTS:
            await Runner.run(agent(model), request, session=session, run_config=config)
        return await session.get_items()

    stored = asyncio.run(run())
    check_calls(model)
    # Clearing old results was enough: nothing was appended (the log is what was given), and
    # get_items clears them on reading.
    assert session.compactions == 0
    assert len(asyncio.run(session.session.get_items())) == len(stored) == 2 * (1 + 3 * 2 + 1)
    conv = ac.Conversation(stored, format="responses")
    assert conv.validate() == []
    assert conv.tokens <= BUDGET
    assert any(i.get("content") == REQUESTS[1] for i in stored)
    assert any(str(i.get("output", "")).startswith("[cleared: result of read_file") for i in stored)


def test_fit_items_keeps_every_field_of_the_items_it_does_not_change() -> None:
    items: list[Any] = [
        {"role": "user", "content": "Read it."},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "abc"},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "read_file",
            "arguments": "{}",
            "id": "fc_1",
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": "c1", "output": BIG_RESULT},
        {
            "type": "message",
            "role": "assistant",
            "id": "m1",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Read.", "annotations": []}],
        },
        {"role": "user", "content": "Summarize it."},
    ]
    same = fit_items(items, ac.Budget(100_000), "Be brief.")
    assert all(a is b for a, b in zip(same, items, strict=True))
    fitted = fit_items(items, ac.Budget(BUDGET // 3, recent_messages=0, recent_tools=0), "Be brief.")
    assert [a is b for a, b in zip(fitted, items, strict=True)] == [True, True, True, False, True, True]
    assert fitted[3] == {**items[3], "output": fitted[3]["output"]} and fitted[3]["output"].startswith("[cleared:")


class RecordingSession(SQLiteSession):
    """The SDK's SQLiteSession, recording every batch of items it is given."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.batches: list[list[Any]] = []

    async def add_items(self, items: list[Any]) -> None:
        self.batches.append(copy.deepcopy(list(items)))
        await super().add_items(items)


def is_note(item: Any) -> bool:
    return item.get("role") == "user" and str(item.get("content")).startswith("[agentcontext: earlier conversation")


LONG_REQUESTS = [f"Request {k}: review the handlers of module group {k} for leaks." for k in range(4)]


def test_compacting_session_is_lossless(tmp_path: Any) -> None:
    model = FakeModel()
    inner = RecordingSession("s3", str(tmp_path / "chat.db"))
    # Without clearing, only summaries bring 4 turns of 3 big reads under the budget.
    session = CompactingSession(inner, ac.Budget(BUDGET, clear=False, recent_tools=1, recent_messages=2))
    config = RunConfig(call_model_input_filter=input_filter(ac.Budget(BUDGET, recent_tools=1, recent_messages=2)))

    async def run() -> tuple[list[Any], list[Any]]:
        for request in LONG_REQUESTS:
            await Runner.run(agent(model), request, session=session, run_config=config)
        return await session.get_items(), await inner.get_items()

    view, log = asyncio.run(run())
    assert len(model.calls) == 16
    for k, (instructions, items) in enumerate(model.calls):
        check_call([{"role": "system", "content": instructions}, *items], LONG_REQUESTS[k // 4], format="responses")
    # Lossless: the wrapped session still holds each of the 12 reads whole.
    assert sum(1 for x in log if x.get("type") == "function_call_output" and BIG_RESULT in x["output"]) == 12
    given = [b for b in inner.batches if not is_note(b[0])]
    written = [b for b in inner.batches if is_note(b[0])]
    assert written, "the session compacted"
    # The wrapped session is the whole log: every item given, stored exactly (all fields), in order.
    assert log == [item for batch in inner.batches for item in batch]
    originals = [item for batch in given for item in batch]
    assert all(item in log for item in originals)
    # The view: the last compaction's note, then the items kept and those added since (each stored
    # once in the log: the note names where the kept ones are); it fits.
    assert is_note(view[0]) and all(x in log for x in view[1:])
    assert "[agentcontext view:" not in view[0]["content"]
    conv = ac.Conversation(view, format="responses")
    assert conv.validate() == [] and any(LONG_REQUESTS[-1] in str(x.get("content")) for x in view)
    for item in view[1:]:
        if item in originals:
            continue  # kept as given
        # Changed: an output cut or cleared, every other field as given.
        assert item.get("type") == "function_call_output" and len(item["output"]) < len(BIG_RESULT)
        source = next(x for x in originals if x.get("call_id") == item["call_id"] and x.get("type") == item["type"])
        assert {k: v for k, v in item.items() if k != "output"} == {k: v for k, v in source.items() if k != "output"}
    assert session.compactions == len(written)


def test_compacting_session_keeps_a_summary_and_updates_it(tmp_path: Any) -> None:
    from agentcontext.compaction.summarize import SUMMARY_MARKER

    model = FakeModel()
    inner = RecordingSession("s4", str(tmp_path / "chat.db"))
    session = CompactingSession(inner, ac.Budget(BUDGET, clear=False, recent_tools=1, recent_messages=2))
    config = RunConfig(call_model_input_filter=input_filter(ac.Budget(BUDGET, recent_tools=1, recent_messages=2)))

    async def run() -> list[Any]:
        for request in LONG_REQUESTS:
            await Runner.run(agent(model), request, session=session, run_config=config)
        # The latest two, less an output whose call is before them.
        every = await session.get_items()
        calls = {x.get("call_id") for x in every[-2:] if x.get("type") == "function_call"}
        latest = [x for x in every[-2:] if x.get("type") != "function_call_output" or x.get("call_id") in calls]
        assert await session.get_items(2) == latest
        return await session.get_items()

    view = asyncio.run(run())
    assert session.summaries >= 1
    notes = [b[0]["content"] for b in inner.batches if is_note(b[0])]
    summaries = [text for text in notes if text.startswith(SUMMARY_MARKER) and "are summarized below" in text]
    assert len(summaries) == session.summaries and len(notes) == session.compactions
    # Updated, not nested; the latest request stays (raw or quoted in the summary).
    assert all(text.count(SUMMARY_MARKER) == 1 for text in summaries)
    assert any(LONG_REQUESTS[-1] in str(x.get("content")) for x in view)
    conv = ac.Conversation(view, format="responses")
    assert conv.validate() == [] and conv.tokens <= BUDGET

    # pop_item takes from what follows the note, never the note itself.
    async def pop_all() -> list[Any]:
        while await session.pop_item() is not None:
            pass
        return await session.get_items()

    left = asyncio.run(pop_all())
    # What the last compaction kept stays: the note, then the items it names.
    assert is_note(left[0]) and left == view[: len(left)] and len(left) < len(view)


class SpyItem(Mapping[str, Any]):
    """A Responses item as a Mapping that records the threads it is read from."""

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
def test_input_filter_fits_large_lists_off_the_event_loop(size: int) -> None:
    from agents.run_config import CallModelData, ModelInputData

    seen: set[int] = set()
    items = [SpyItem({"role": "user", "content": f"request {i}"}, seen) for i in range(size)]
    data = CallModelData(
        model_data=ModelInputData(input=items, instructions="Be brief."), agent=agent(FakeModel()), context=None
    )

    async def call() -> tuple[int, ModelInputData]:
        return threading.get_ident(), await input_filter(BUDGET)(data)

    loop_thread, out = asyncio.run(call())
    assert out.input and out.input[-1] is items[-1] and out.instructions == "Be brief."
    # Small lists are fitted right on the loop; large ones in a worker thread.
    assert (loop_thread in seen) == (size < 256)


def test_compacting_session_arguments_are_checked(tmp_path: Any) -> None:
    inner = SQLiteSession("s5", str(tmp_path / "chat.db"))
    with pytest.raises(ac.OptionError, match="CompactingSession compacts"):
        CompactingSession(inner, BUDGET, compaction=False)
    with pytest.raises(ac.OptionError, match="compact_to"):
        CompactingSession(inner, BUDGET, compact_to=2)
    with pytest.raises(ac.ArgumentTypeError, match="summarizer must"):
        CompactingSession(inner, BUDGET, summarizer="offline")  # type: ignore[arg-type]
    with pytest.raises(ac.OptionError, match="budget must be a positive integer"):
        CompactingSession(inner, -1)
