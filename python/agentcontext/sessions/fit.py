"""Every request a session sends fits its provider's window: the compactor asked before each
call, the pre-send check that recompiles what still does not fit, and the one recompile after a
prompt-too-long error (see :class:`~agentcontext.Session`)."""

from __future__ import annotations

import copy
import json
import math
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from agentcontext._core import count_tokens
from agentcontext.budgets import ResultStore, ToolResultPolicy
from agentcontext.compaction import (
    DEFAULT_CONTEXT_WINDOW,
    CompactionError,
    CompactionResult,
    Compactor,
    resolve_policy,
)
from agentcontext.errors import ArgumentTypeError, ContextOverflowError, OptionError
from agentcontext.observe.calls import watch_model_call
from agentcontext.providers import Completion, Provider
from agentcontext.sessions.snapshots import SnapshotStore
from agentcontext.types import JsonDict

if TYPE_CHECKING:
    from agentcontext.compiler.compile import Compiler
    from agentcontext.observe.emit import EventCallback
    from agentcontext.sessions.log import SessionLog
    from agentcontext.sessions.loop import Session

__all__ = ["call", "ensure_fits", "fitted", "outside_tokens", "recover", "system_and_tools"]

#: How many times in a row an Anthropic ``stop_reason: "compaction"`` pause is continued.
MAX_COMPACTION_PAUSES = 3


def fitted(compactor: Compactor, provider: Provider) -> Compactor:
    """``compactor`` planning with ``provider``'s context window: a copy with the provider's window
    when its policy kept the default window, else the compactor itself (a window set smaller than
    the provider's is the user's choice to compact earlier).

    Raises:
        OptionError: the policy's window was set larger than the provider's: compaction would wait
            for room the provider does not have, and only the emergency recompile would run.
    """
    window = compactor.policy.context_window
    if window == provider.context_window:
        return compactor
    if window == DEFAULT_CONTEXT_WINDOW:
        fitted = copy.copy(compactor)
        fitted.policy = replace(compactor.policy, context_window=provider.context_window)
        return fitted
    if window > provider.context_window:
        raise OptionError(
            f"the compactor's context_window ({window:,} tokens, policy {compactor.policy.name!r}) is larger than "
            f"the provider's ({provider.context_window:,} tokens, model {provider.model!r}): compaction would "
            "never trigger before the window is full; leave context_window at its default to use the "
            "provider's, or set it to at most the provider's"
        )
    return compactor


def session_compactor(
    compactor: Compactor | str,
    provider: Provider,
    store: ResultStore | None,
    result_policy: ToolResultPolicy | bool,
    log: SessionLog | None,
    compiler: Compiler | None,
    snapshots: SnapshotStore | None = None,
) -> tuple[Compactor, ResultStore | None]:
    """A session's compactor (see :class:`~agentcontext.Session`): a preset's made for the
    provider's window, or ``compactor`` :func:`fitted`, with the session's result store and the
    compiler's workspace for its anchors; and that store."""
    if isinstance(compactor, str):
        compactor = Compactor(replace(resolve_policy(compactor), context_window=provider.context_window))
    elif isinstance(compactor, Compactor):
        compactor = fitted(compactor, provider)
    else:
        raise ArgumentTypeError(
            f"compactor must be an agentcontext.Compactor or a preset name, got {type(compactor).__name__}"
        )
    native = compactor.native
    if native is not None and native.provider is None:
        # The native rung compacts with the session's own provider.
        compactor = copy.copy(compactor)
        compactor.native = native.bound(provider)
    if store is None and isinstance(result_policy, ToolResultPolicy):
        store = result_policy.store
    if store is None:
        store = compactor.store
    if store is None and log is not None:
        # The originals of what compactions cut, clear, summarize or drop, beside the log.
        store = ResultStore(log.path.with_name(log.path.name + ".recall"))
    if store is None and isinstance(snapshots, SnapshotStore):
        # Inside the snapshots' directory: a session resumed from them in another process finds
        # the originals its restored markers name.
        store = ResultStore(snapshots.directory / "recall")
    if store is not None and compactor.store is not store:
        compactor = copy.copy(compactor)
        compactor.store = store
    workspace = compiler.working_set.workspace if compiler is not None else None
    anchors = compactor.anchors
    if anchors is not None and anchors.workspace is None and workspace is not None:
        # The anchors' paths are the compiler's workspace's, not the process's current directory.
        compactor = copy.copy(compactor)
        compactor.anchors = anchors.within(workspace)
    return compactor, store


def reporting(compactor: Compactor, on_event: EventCallback | None) -> Compactor:
    """``compactor`` reporting to the session's ``on_event`` (a copy: the caller's keeps its own)."""
    if on_event is None or compactor.on_event is on_event:
        return compactor
    compactor = copy.copy(compactor)
    compactor.on_event = on_event
    return compactor


def overhead(session: Session, scale: float) -> int:
    """Local tokens every request carries outside the conversation: the system prompt, the
    tool definitions, and the output ``max_output_tokens`` reserves beyond the policy's
    ``reserved_output``."""
    extra_output = max(0, session.max_output_tokens - session.compactor.policy.reserved_output)
    return outside_tokens(session) + math.ceil(extra_output / scale)


def compile_call(session: Session) -> None:
    """The compiler's request for this call; reminders kept in history are added first."""
    if session.compiler is None:
        return
    compiled = session.compiler.compile(
        session.conversation,
        max_output_tokens=session.max_output_tokens,
        context_window=session.provider.context_window,
        record=False,
    )
    for text in compiled.persist:
        session.add_user(text)
    session.compiled = compiled


def call(session: Session) -> Completion:
    compile_call(session)
    scale = session.scale()
    idle = None if session._answered_at is None else time.monotonic() - session._answered_at
    result = session.compactor.maybe_compact(
        session.conversation,
        scale=scale,
        overhead=overhead(session, scale),
        idle_seconds=idle,
        system=system_and_tools(session)[0],
        tools=system_and_tools(session)[1],
    )
    if result is not None and result.compacted and result.conversation is not result.original:
        replace_conversation(session, result)
    ensure_fits(session)
    completion = complete_with_recovery(session)
    pauses = 0
    # Anthropic server-side compaction with pause_after_compaction: the reply holds the
    # compaction block; continue from it.
    while completion.stop_reason == "compaction" and pauses < MAX_COMPACTION_PAUSES:
        pauses += 1
        completion = complete_with_recovery(session)
    return completion


def complete_with_recovery(session: Session) -> Completion:
    try:
        completion = complete_once(session)
    except ContextOverflowError as first:
        recover(session, first)
        try:
            completion = complete_once(session)
        except ContextOverflowError as second:
            raise second.recovered_with(
                f" (again, after recompiling once to {session.conversation.tokens:,} local tokens; "
                "nothing more is removed)"
            ) from second
    return completion


def complete_once(session: Session) -> Completion:
    request = session.conversation
    system, tools = system_and_tools(session)
    if session.compiler is not None and session.compiled is not None:
        request = session.compiled.request_conversation(session.conversation)
        session.compiler.record(session.conversation, session.compiled)
    head = (system or "", json.dumps(tools, ensure_ascii=False) if tools else "")
    if session.first_sent_head is None:
        session.first_sent_head = head
    session.sent_head = head
    with watch_model_call(session.on_event, session.provider, request, session.max_output_tokens) as watch:
        completion = session.provider.complete(
            request, max_output_tokens=session.max_output_tokens, system=system, tools=tools, **session.params
        )
        watch.done(completion)
    session.completions.append(completion)
    session._answered_at = time.monotonic()
    if session.calibration is not None and completion.usage.input_tokens > 0:
        estimates = session.class_totals()
        # The system prompt and tool definitions travel outside the conversation.
        extra = outside_tokens(session)
        estimates["overhead"] += extra
        session.calibration.observe(session.provider.model, estimates, completion.usage.input_tokens)
    session._extend(completion.messages)
    return completion


def ensure_fits(session: Session) -> None:
    """The pre-send check: system prompt + tool definitions + conversation (pending tool
    results included), in estimated provider tokens, plus ``max_output_tokens`` must fit the
    provider's window. When they do not, the conversation is recompiled to fit (as after a
    prompt-too-long error); when that cannot be done, nothing is sent.

    Raises:
        ContextOverflowError: the request cannot be made to fit; the history is unchanged.
    """
    window = session.provider.context_window
    scale = session.scale()
    outside = outside_tokens(session)

    def estimate() -> int:
        return math.ceil((session.conversation.tokens + outside) * scale)

    before = estimate()
    if before + session.max_output_tokens <= window:
        return
    what = (
        f"the request would be about {before:,} tokens (system prompt and tool definitions {outside:,}, "
        f"history {session.conversation.tokens:,}, local tokens times {scale:.2f}) plus {session.max_output_tokens:,} "
        f"reserved for output, over the {window:,}-token window; not sent"
    )
    budget = int((window - session.max_output_tokens - session.compactor.policy.safety_margin) / scale) - outside
    if budget <= 0:
        raise ContextOverflowError(
            f"{what}: the system prompt, tool definitions and reserved output leave no room for history",
            provider=session.provider.name,
            tokens=before,
            limit=window,
        )
    try:
        result = session.compactor.recompile(
            session.conversation, budget, system=system_and_tools(session)[0], tools=system_and_tools(session)[1]
        )
    except CompactionError as exc:
        raise ContextOverflowError(
            f"{what}: the history cannot be recompiled to {budget:,} tokens: {exc}",
            provider=session.provider.name,
            tokens=before,
            limit=window,
        ) from exc
    if not result.fits:
        raise ContextOverflowError(
            f"{what}: recompiling the history left {result.tokens_after:,} tokens, over {budget:,}",
            provider=session.provider.name,
            tokens=before,
            limit=window,
        )
    replace_conversation(session, result)


def system_and_tools(session: Session) -> tuple[str | None, list[JsonDict] | None]:
    """The system prompt and tool definitions of this call (the compiler's when there is one)."""
    if session.compiled is None:
        return session.system, session.tools
    tools = [*(session.compiled.tools or []), *(session.tools or [])] or None
    return session.compiled.system or None, tools


def outside_tokens(session: Session) -> int:
    """Tokens of the system prompt, tool definitions and this call's reminders, counted again
    only when they change."""
    if session.compiled is not None and not session.tools:
        # The compiler counted them exactly already.
        t = session.compiled.tokens
        return int(t["system"] + t["tools"] + t["reminders"])
    system, tools = system_and_tools(session)
    reminders = "".join(session.compiled.reminders) if session.compiled is not None else ""
    text = (system or "") + (json.dumps(tools) if tools else "") + reminders
    if text != session._outside[0]:
        session._outside = (text, count_tokens(text) if text else 0)
    return session._outside[1]


def recover(session: Session, error: ContextOverflowError) -> None:
    conv = session.conversation
    p = session.compactor.policy
    local = conv.tokens + outside_tokens(session)
    window = error.limit or session.provider.context_window
    if error.tokens and error.limit and error.tokens > 0:
        # The provider counted `error.tokens` where we count `local`: convert its window.
        per_provider_token = local / error.tokens
    else:
        per_provider_token = 1.0 / session.scale()
    budget = int((window - session.max_output_tokens - p.safety_margin) * per_provider_token) - outside_tokens(session)
    if conv.tokens <= budget:
        # The provider gave no numbers, yet by our count the request fit: our estimate is off
        # by an unknown factor. Aim at the policy's target share of what was sent.
        share = p.target if p.target <= 1 else 0.6
        budget = int(conv.tokens * share)
    if budget <= 0:
        raise ContextOverflowError(
            f"{error}; the window leaves no room for history", provider=error.provider, recovered=True
        ) from error
    try:
        result = session.compactor.recompile(
            conv, budget, system=system_and_tools(session)[0], tools=system_and_tools(session)[1]
        )
    except CompactionError as exc:
        raise error.recovered_with(f"; cannot recompile: {exc}") from error
    replace_conversation(session, result)


def replace_conversation(session: Session, result: CompactionResult) -> None:
    session.compactions.append(result)
    if session.log is not None:
        session.log.record_compaction(result)
    session.conversation = result.conversation
