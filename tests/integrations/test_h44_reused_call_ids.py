"""The LangChain middleware with a model that numbers its calls afresh on every turn (``call_0``
each time, as some OpenAI-compatible servers do): every recall id a cleared placeholder or a cut
marker names gives back, from the agent's own history, exactly the text it replaced."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain", reason="LangChain is not installed (pip install 'agentcontext[langchain]')")
pytest.importorskip("langgraph", reason="LangGraph is not installed (pip install 'agentcontext[langgraph]')")

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

import agentcontext as ac
from agentcontext.integrations.langchain import AgentContextMiddleware, to_openai

BUDGET = 3_000
NAMED = re.compile(r"recall id ([^\]\s]+)\]|recall\(id=\"([^\"]+)\"")


class FakeModel(GenericFakeChatModel):
    calls: list[list[BaseMessage]] = []  # noqa: RUF012 - a pydantic field, set per instance

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.calls.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def test_the_middleware_names_each_result_of_a_reused_call_id(tmp_path: Path) -> None:
    for k in range(14):
        (tmp_path / f"m{k}.py").write_text("".join(f"def m{k}_{j}(): return {j}  # module {k}\n" for j in range(20)))

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return (tmp_path / path).read_text()

    script = [
        AIMessage("", tool_calls=[{"id": "call_0", "name": "read_file", "args": {"path": f"m{k}.py"}}])
        for k in range(14)
    ]
    m = FakeModel(messages=iter([*script, AIMessage("Done.")]))
    m.calls = []
    agent = create_agent(m, [read_file], middleware=[AgentContextMiddleware(BUDGET)])
    out = agent.invoke({"messages": [HumanMessage("Read the modules.")]})
    history = [to_openai(x) for x in out["messages"]]
    recall = ac.Recall(originals=history)
    texts = {x.tool_call_id + "|" + x.id: x.content for x in out["messages"] if isinstance(x, ToolMessage)}
    assert len(texts) == 14
    named = 0
    for call in m.calls:
        seen: dict[str, str] = {}
        for x in call:
            if not isinstance(x, ToolMessage) or not isinstance(x.content, str):
                continue
            found = NAMED.search(x.content)
            if found is None:
                continue
            name = found.group(1) or found.group(2)
            original = recall.original(name)
            # The placeholder describes the call it replaced: its path is in the recalled text's module.
            path = re.search(r"path=(m\d+)\.py", x.content)
            assert path is not None and f"# module {path.group(1)[1:]}" in original, (name, x.content)
            assert seen.setdefault(name, x.content) == x.content  # one name, one result
            named += 1
    assert named >= 20
