"""What every framework adapter test checks of the calls its model received."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

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


#: A long system prompt / instructions (about 1,100 o200k tokens), counted in every call.
LONG_SYSTEM = "You are a careful reviewer of a large Python code base. " + " ".join(
    f"Rule {i}: read the whole handler before you judge it, name the file and the line, and say what to change."
    for i in range(50)
)


def tool_schema_tokens(name: str, description: str | None, parameters: Any) -> int:
    """The tokens of one tool definition as a model receives it (its OpenAI function schema as JSON)."""
    import json

    function = {"name": name, "description": description or "", "parameters": parameters or {}}
    return ac.count_tokens(json.dumps({"type": "function", "function": function}, ensure_ascii=False, default=str))


def check_sent(dicts: list[dict[str, Any]], request: str, budget: int, beside: int = 0, format: str = "openai") -> int:
    """One model call's input (as dicts, the system prompt among them; ``beside``: the tokens of
    the tool definitions sent with it): within ``budget``, valid, the latest request in it.
    Returns the tokens sent."""
    conv = ac.Conversation(dicts, format=format)
    sent = conv.tokens + beside
    assert sent <= budget, f"{sent} tokens sent, budget {budget}"
    assert conv.validate() == [], conv.validate()
    assert any(request in str(d.get("content")) for d in dicts), f"the request {request!r} is missing"
    return sent


# LiteLLM's reply message, as ``response.choices[0].message`` gives it (pydantic, not a dict).


class Function(BaseModel):
    name: str
    arguments: str


class ToolCall(BaseModel):
    id: str
    type: str = "function"
    function: Function


class Message(BaseModel):
    """What LiteLLM's ``completion`` answers with (``response.choices[0].message``)."""

    role: str = "assistant"
    content: str | None = None
    tool_calls: list[ToolCall] | None = None


def responses_call(call_id: str, n: int) -> dict[str, Any]:
    """A Responses API function call item whose arguments hold ``n`` characters."""
    return {"type": "function_call", "call_id": call_id, "name": "read", "arguments": json.dumps({"p": "x" * n})}


def responses_output(call_id: str, text: str) -> dict[str, Any]:
    """The Responses API output item answering ``call_id``."""
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def responses_said() -> dict[str, Any]:
    """A Responses API assistant message of ten words."""
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "said " * 10}]}


def responses_unanswered_mid_list() -> list[dict[str, Any]]:
    """Responses API items with no Chat form (the call ``c9`` unanswered mid-list): an adapter
    fits them on its Responses path."""
    return [
        {"role": "user", "content": "task " * 30},
        responses_call("c0", 2),
        responses_said(),
        {"role": "user", "content": "more " * 6},
        responses_call("c5", 46),
        responses_output("c5", "o " * 94),
        {"role": "user", "content": "more " * 18},
        responses_call("c7", 26),
        responses_said(),
        responses_call("c9", 25),
        responses_call("c10", 8),
        responses_output("c10", "o " * 180),
    ]


def fit_items_outcome(fitter: Any, items: list[Any], budget: int) -> tuple[str, Any]:
    """What the Agents SDK adapter's fitter ``fitter`` gives for ``items`` within ``budget`` tokens:
    ``("ok", the items as plain JSON)`` or ``("BudgetError", its message)``, to compare two fits."""
    from agentcontext.errors import BudgetError
    from agentcontext.integrations._fit import as_budget

    try:
        return "ok", json.loads(json.dumps(fitter.fit(items, as_budget(budget), None, ())))
    except BudgetError as exc:
        return "BudgetError", str(exc)


def pydantic_chat(messages: list[Any]) -> list[dict[str, Any]]:
    """Pydantic AI messages as the Chat dicts a model receives (read here, apart from the adapter's
    own conversion): each request's system, user, tool-return and retry parts, each response's text
    (its parts joined by newlines) and calls (their arguments as ``args_as_json_str`` gives them,
    what Pydantic AI's OpenAI model sends)."""
    from pydantic_ai.messages import (
        ModelResponse,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, ModelResponse):
            calls = [
                {
                    "id": p.tool_call_id,
                    "type": "function",
                    "function": {"name": p.tool_name, "arguments": p.args_as_json_str()},
                }
                for p in m.parts
                if isinstance(p, ToolCallPart)
            ]
            text = "\n".join(p.content for p in m.parts if isinstance(p, TextPart))
            out.append({"role": "assistant", "content": text or None, **({"tool_calls": calls} if calls else {})})
            continue
        for p in m.parts:
            if isinstance(p, SystemPromptPart):
                out.append({"role": "system", "content": p.content})
            elif isinstance(p, UserPromptPart):
                out.append({"role": "user", "content": p.content})
            elif isinstance(p, ToolReturnPart):
                out.append({"role": "tool", "tool_call_id": p.tool_call_id, "content": p.model_response_str()})
            elif isinstance(p, RetryPromptPart):
                # A retry of a tool call answers it; one of the output's validation, as the user.
                if p.tool_name is None:
                    out.append({"role": "user", "content": p.model_response()})
                else:
                    out.append({"role": "tool", "tool_call_id": p.tool_call_id, "content": p.model_response()})
    return out
