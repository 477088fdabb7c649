"""A session's tool calls: which run (permissions, the subagent policy's filter, the registry's
modes), running them, and their results through the session's
:class:`~agentcontext.budgets.ToolResultPolicy` (see :class:`~agentcontext.Session`)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agentcontext.budgets import ToolResultPolicy
from agentcontext.errors import InvalidMessageError, failure_text
from agentcontext.observe.calls import observe_tool
from agentcontext.providers import ToolCall
from agentcontext.sessions.permissions import PendingCall, PermissionRequest
from agentcontext.sessions.subagents import AGENT_TOOL, FILTERED

if TYPE_CHECKING:
    from agentcontext.sessions.loop import Session

__all__ = [
    "answer_calls",
    "budget_results",
    "close_unanswered",
    "read_only",
    "run_calls",
    "run_tool",
    "unanswered_calls",
]

#: The tool result of a call that was decided not to run, by decision.
_REFUSALS: dict[str, str] = {
    "deny": "Error: the session's permission settings do not allow calls to {name!r}. The call was not run.",
    "denied_by_user": "Error: the user did not allow this call to {name!r}. The call was not run.",
    "no_user": (
        "Error: calls to {name!r} need the user's permission, which a subagent cannot ask for. The call was not run."
    ),
}


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def budget_results(session: Session, outputs: list[tuple[str, str]]) -> list[str]:
    """The results of one message, ``(tool name, text)``, through :attr:`result_policy`."""
    policy = session.result_policy
    if policy is None:
        return [text for _, text in outputs]
    # As Conversation.extend would refuse it: a lone surrogate is not text (checked before the
    # result store, which refuses it too, is written).
    name = next((n for n, text in outputs if not _is_unicode(text)), None)
    if name is not None:
        raise InvalidMessageError(
            f"the result of tool {name!r} is not valid Unicode (lone surrogate); nothing was appended",
            len(session.conversation),
        )
    if policy.store is None and _cuts(policy, outputs):
        policy = replace(policy, store=session.result_store)
    budgeted = policy.apply_message(outputs)
    session.results.extend(budgeted)
    return [b.text for b in budgeted]


def _cuts(policy: ToolResultPolicy, outputs: list[tuple[str, str]]) -> bool:
    """Whether ``policy`` may cut or persist any of ``outputs`` (and so needs a store)."""
    limit = policy.message_limit_chars
    if limit is not None and sum(len(text) for _, text in outputs) > limit:
        return True
    persist = policy.persist_over_chars
    return any(
        len(text) > policy.max_chars_for(name) or (persist is not None and len(text) > persist)
        for name, text in outputs
    )


def unanswered_calls(session: Session) -> list[ToolCall]:
    """The tool calls of the last model reply when the conversation ends with it (a paused
    permission request, a turn limit, a resumed session)."""
    n = len(session.conversation)
    start = n
    while start > 0 and session.conversation[start - 1].get("role") == "assistant":
        start -= 1
    if start == n:
        return []
    out = []
    for message in session.conversation.slice(start, n).to_jsonl():
        for call in message.get("tool_calls") or []:
            out.append(ToolCall(str(call.get("id")), str(call.get("name")), str(call.get("arguments") or "")))
    return out


#: The result of a call the user moved on from: a new user message came before it ran.
NOT_RUN = "Error: the user sent a new message instead of letting this call run. The call was not run."


def close_unanswered(session: Session, content: Any) -> None:
    """Before ``content``, a user's new message (text or a user message dict without tool
    results), give each call of the last reply that was not run a :data:`NOT_RUN` result, and
    drop the pending permission request about them."""
    if isinstance(content, Mapping):
        body = content.get("content")
        blocks = body if isinstance(body, list) else []
        if content.get("role") != "user" or any(
            isinstance(b, Mapping) and b.get("type") == "tool_result" for b in blocks
        ):
            return  # a message of the caller's own making (tool results): taken as it is
    calls = unanswered_calls(session)
    if calls:
        session.pending_permission = None
        session._extend(session.provider.tool_results([(c.id, NOT_RUN) for c in calls]))


def answer_calls(session: Session, calls: Sequence[ToolCall]) -> bool:
    """Run ``calls`` (one model reply's) and append their results; False (nothing run) when
    one of them must be asked first.

    Each call is decided by its place in the reply, never by its id alone: the model writes the
    ids, and two calls of one reply may share one. The settings decide every call (a ``deny``
    stands whatever the user answered); the user's answer applies to a call that asks only when
    the request asked about a call of that id and tool (every call of the request sharing an id
    was shown, and is answered, together), and before a grant ("always allow") given with another
    answer. The argument text is not compared: the calls run on resume are read back from the
    conversation, whose JSON spacing can differ from the reply's (Anthropic's ``input``)."""
    decisions: list[str] = []
    if session.permissions is not None:
        pending = session.pending_permission
        answers = pending.answers if pending is not None else {}
        asked_before = {(c.id, c.name) for c in pending.calls} if pending is not None else set()
        asked = []
        for c in calls:
            settings = session.permissions.settings_decision(c.name, c.arguments, read_only=read_only(session, c.name))
            decision: str = settings
            if settings == "ask" and c.id in answers and (c.id, c.name) in asked_before:
                decision = "allow" if answers[c.id] else "denied_by_user"
            elif settings == "ask" and c.name in session.permissions.granted:
                decision = "allow"  # as Permissions.decide has it
            elif settings == "ask" and session.depth > 0:
                decision = "no_user"
            decisions.append(decision)
            if decision == "ask":
                asked.append(PendingCall(c.id, c.name, c.arguments))
        if asked:
            session.pending_permission = PermissionRequest(asked, answers=dict(answers))
            return False
        session.pending_permission = None
    outputs = run_calls(session, calls, decisions)
    texts = budget_results(session, outputs)
    session._extend(session.provider.tool_results([(c.id, t) for c, t in zip(calls, texts, strict=True)]))
    return True


def run_calls(session: Session, calls: Sequence[ToolCall], decisions: Sequence[str] = ()) -> list[tuple[str, str]]:
    """The result of every call, in call order; ``agent`` calls run concurrently. ``decisions``
    holds each call's permission decision by its place (none: every call is allowed)."""
    outputs: list[tuple[str, str] | None] = [None] * len(calls)
    agents: list[int] = []
    for i, call in enumerate(calls):
        refusal = _REFUSALS.get(decisions[i] if i < len(decisions) else "allow")
        if session.tool_gate is not None and not session.tool_gate(call.name):
            refusal = FILTERED
        if refusal is None and call.name == AGENT_TOOL:
            refusal = agent_refusal(session, call)
            if refusal is None and session.subagents is not None:
                agents.append(i)
                continue
        if refusal is not None:
            given = functools.partial(_given, refusal.format(name=call.name))
            outputs[i] = (call.name, observe_tool(session.on_event, call.name, call.id, given, True))
            continue
        run = functools.partial(_run_one, session, call)
        outputs[i] = (call.name, observe_tool(session.on_event, call.name, call.id, run, False))
    if agents:
        assert session.subagents is not None
        texts = session.subagents.run_calls([calls[i] for i in agents], reply_calls=calls)
        for i, text in zip(agents, texts, strict=True):
            outputs[i] = (calls[i].name, text)
    return [o for o in outputs if o is not None]


def _given(text: str) -> tuple[str, bool]:
    return text, False


def _run_one(session: Session, call: ToolCall) -> tuple[str, bool]:
    """The result text of ``call``, and whether it raised (the model gets the error as the result)."""
    try:
        output = run_tool(session, call.name, call.arguments, call.parsed)
    except Exception as exc:  # noqa: BLE001 - the model gets the error as the result
        return f"Error: {failure_text(exc)}", True
    return (output if isinstance(output, str) else json.dumps(output)), False


def agent_refusal(session: Session, call: ToolCall) -> str | None:
    """Why an ``agent`` call cannot start a subagent here, or None when it can."""
    if session.subagents is None:
        if session.subagent_limit is not None:
            return (
                f"Error: tool {call.name!r} is not available: subagents may not start subagents at depth "
                f"{session.depth} (max_depth {session.subagent_limit}). The call was not run."
            )
        return None  # not ours: the session's functions decide
    if session.compiler is not None:
        # Through the registry: a mode that hides delegated tools refuses it (and says why).
        return session.compiler.execute(call.name, call.arguments, {})
    return None


def read_only(session: Session, name: str) -> bool:
    """Whether the registry's metadata says tool ``name`` only reads (never from its name)."""
    if session.compiler is None:
        return False
    tool = session.compiler.registry.get(name)
    return tool is not None and tool.read_only


def run_tool(session: Session, name: str, arguments: str, parsed: Callable[[], Any]) -> Any:
    if session.depth > 0 and session.compiler is not None:
        every = session.compiler.working_set.registry
        tool = session.compiler.registry.get(name) or (every.get(name) if every is not None else None)
        if tool is not None and tool.root_only:  # a fork keeps the parent's catalog: refused here
            return f"Error: tool {name!r} is not available: it is for the root agent only. The call was not run."
    if session.compiler is not None:
        # The session's own recall tool only reads.
        own = ("recall",) if session.functions.get("recall") == session._recall else ()
        output = session.compiler.execute(name, arguments, session.functions, read_only=own)
        return output if output is not None else f"Error: no tool named {name!r}"
    fn = session.functions.get(name)
    return f"Error: no tool named {name!r}" if fn is None else fn(parsed())
