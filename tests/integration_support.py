"""What every framework adapter test checks of the calls its model received."""

from __future__ import annotations

from typing import Any

import agentcontext as ac

#: The budget the adapters fit into: far below what the runs below accumulate.
BUDGET = 3_000

#: A tool result of about 1,700 o200k tokens: three of them exceed the budget.
BIG_RESULT = "\n".join(
    f"{i:5d}  def handler_{i}(request, session): return session.load(request.key, {i})" for i in range(90)
)


def check_call(dicts: list[dict[str, Any]], request: str, format: str = "openai") -> None:
    """One model call's input (as dicts): it fits the budget, it is valid (every tool call has
    its result and no result is orphan) and it holds the latest user request."""
    conv = ac.Conversation(dicts, format=format)
    assert conv.tokens <= BUDGET, f"{conv.tokens} tokens sent, budget {BUDGET}"
    assert conv.validate() == [], conv.validate()
    assert any(request in str(d.get("content")) for d in dicts), f"the request {request!r} is missing"
