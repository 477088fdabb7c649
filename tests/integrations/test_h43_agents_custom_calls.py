"""``Budget(clear_tool_inputs=True)`` over Responses items holding free-form tool calls
(``custom_tool_call``, whose ``input`` is the text the model wrote: an ``apply_patch`` of a whole
file). The core clears the old calls' ``input`` and counts it cleared, but the Agents SDK adapter's
copies replaced only ``output``, ``content`` and ``arguments``: twelve patches of 1,800 characters,
budget 12,000, sent 18,392 tokens through ``fit_items`` and ``input_filter`` (about 9,600
counted). The copies now carry the fitted ``input``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip(
    "agents", reason="the OpenAI Agents SDK is not installed (pip install 'agentcontext[openai-agents]')"
)

from agents import Agent

import agentcontext as ac
from agentcontext.integrations.openai_agents import fit_items, input_filter

PATCH = "*** Begin Patch\n*** Update File: app.py\n" + "+x = 1\n" * 300 + "*** End Patch"
LIMIT = 12_000


def budget() -> ac.Budget:
    return ac.Budget(LIMIT, clear_tool_inputs=True, recent_tools=2)


def history() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": "Patch the files."}]
    for i in range(12):
        out += [
            {"type": "custom_tool_call", "call_id": f"c{i}", "name": "apply_patch", "input": PATCH, "id": f"ctc_{i}"},
            {"type": "custom_tool_call_output", "call_id": f"c{i}", "output": "Done."},
        ]
    return out


def check(sent: list[Any], items: list[dict[str, Any]]) -> None:
    assert ac.Conversation(sent, format="responses").tokens <= LIMIT
    calls = [x for x in sent if x.get("type") == "custom_tool_call"]
    assert [x["call_id"] for x in calls] == [f"c{i}" for i in range(12)]  # nothing dropped
    cleared = [x for x in calls if x["input"].startswith("[cleared: arguments of apply_patch(")]
    assert len(cleared) >= 6 and all(x["id"].startswith("ctc_") for x in cleared)
    assert calls[-1]["input"] == PATCH  # the newest whole
    assert all(x["input"] == PATCH for x in items if x.get("type") == "custom_tool_call")  # the caller's own


def test_fit_items_sends_the_cleared_inputs() -> None:
    items = history()
    check(fit_items(items, budget()), items)


def test_input_filter_sends_the_cleared_inputs() -> None:
    from agents.run_config import CallModelData, ModelInputData

    items = history()
    data = CallModelData(
        model_data=ModelInputData(input=items, instructions="Be brief."),  # type: ignore[arg-type]
        agent=Agent(name="patcher", instructions="Be brief."),
        context=None,
    )
    out = asyncio.run(input_filter(budget())(data))
    check(list(out.input), items)
