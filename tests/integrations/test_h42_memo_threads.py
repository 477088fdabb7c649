"""One memo serves every thread a middleware runs in (an async agent fits long histories in worker
threads; a sync agent may be called from several). A fit reads the last call's output once: another
thread's fit clearing it meanwhile (as a fit through the kept trimmer does) is not an error."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

import agentcontext as ac
from agentcontext.integrations._converted import Converted
from agentcontext.integrations.langchain import _key, fit_messages, to_openai


class ClearedAfterEachRead(Converted):
    """A memo whose last output another thread clears right after each read of it."""

    @property  # type: ignore[override]
    def _last_out(self) -> Any:
        held, self._held_out = getattr(self, "_held_out", None), None
        return held

    @_last_out.setter
    def _last_out(self, value: Any) -> None:
        self._held_out = value


def history(n: int) -> list[BaseMessage]:
    out: list[BaseMessage] = [HumanMessage("start", id="h0")]
    for i in range(n):
        call = {"id": f"c{i}", "name": "f", "args": {}}
        out += [
            AIMessage("", id=f"a{i}", tool_calls=[call]),
            ToolMessage(f"result {i} " * 40, tool_call_id=f"c{i}", id=f"t{i}"),
        ]
    return out


def test_a_fit_reads_the_last_output_once() -> None:
    cache = ClearedAfterEachRead(_key)
    budget = ac.Budget(800, encoding="approximate", recent_tools=1)
    messages = history(8)
    for n in range(8, 11):
        messages = [*messages, *history(n + 1)[-2:]]
        got = fit_messages(messages, budget, cache=cache)
        assert [to_openai(m) for m in got] == [to_openai(m) for m in fit_messages(messages, budget)]
