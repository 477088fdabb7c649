"""LiteLLM: the ``response_format`` given to ``completion`` reaches the model beside the tools;
``fit_messages`` had no way to count it in (an 80-field schema is about 3,600 tokens)."""

from __future__ import annotations

import json

import pytest
from pydantic import create_model

import agentcontext as ac
from agentcontext.integrations.litellm import afit_messages, fit_messages

FIELDS = [f"field_number_{k}_with_a_long_descriptive_name" for k in range(80)]
Report = create_model("Report", **{name: (str, ...) for name in FIELDS})  # type: ignore[call-overload]
AS_DICT = {"type": "json_schema", "json_schema": {"name": "Report", "schema": Report.model_json_schema()}}
BUDGET = 5_000


def history() -> list[dict[str, object]]:
    out: list[dict[str, object]] = [{"role": "user", "content": "Review the handlers."}]
    for i in range(6):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"handler {i} line\n" * 150})
    return out


@pytest.mark.parametrize("form", [Report, AS_DICT], ids=["model", "dict"])
def test_the_response_format_is_counted_in(form: object) -> None:
    schema = ac.count_tokens(json.dumps(AS_DICT if form is AS_DICT else Report.model_json_schema()))
    assert schema > 2_000
    out = fit_messages(history(), BUDGET, response_format=form)
    assert ac.Conversation(out).tokens + schema <= BUDGET
    assert ac.Conversation(fit_messages(history(), BUDGET)).tokens + schema > BUDGET


def test_the_async_path_counts_it_too_and_refuses_another_object() -> None:
    import asyncio

    out = asyncio.run(afit_messages(history(), BUDGET, response_format=Report))
    assert out == fit_messages(history(), BUDGET, response_format=Report)
    with pytest.raises(ac.ArgumentTypeError, match="response_format"):
        fit_messages(history(), BUDGET, response_format="json")
