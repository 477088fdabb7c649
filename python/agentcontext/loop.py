"""The agent loop: compile the working set before every model call, run tools, recover from a
prompt-too-long error once, and learn the provider's token counts.

:class:`Session` holds one conversation in its provider's format. Every tool result enters
through the session's :class:`~agentcontext.budgets.ToolResultPolicy` (head + marker + tail, or
a preview, with the full text kept in a :class:`~agentcontext.budgets.ResultStore` under the
recall id the marker names). Before every call (also inside a tool loop, with the pending tool
results already appended) it asks the compactor whether to compact, counting what every request
carries besides the conversation — the system prompt, the tool definitions and the output
reserved by ``max_tokens`` — with estimates scaled by the calibration learned from the
provider's reported usage. A request that by that count still cannot fit the window is
recompiled once more to fit, and when even that cannot be done, it is not sent:
:class:`~agentcontext.errors.ContextOverflowError` is raised instead. If the provider still
answers "prompt too long", the conversation is recompiled once — the
largest protocol-complete recent suffix that fits the window the provider reported, plus a
summary of the rest — and the call is retried; a second overflow raises
:class:`~agentcontext.errors.ContextOverflowError` with ``recovered=True`` and nothing more is
removed. Every compaction is appended to the session log when one is given, so nothing that
leaves the window is lost.
"""

from __future__ import annotations

import copy
import json
import math
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agentcontext import _checks
from agentcontext._core import Conversation, convert, count_tokens
from agentcontext.budgets import BudgetedResult, Recall, ResultStore, ToolResultPolicy
from agentcontext.calibration import CLASSES, Calibration, class_tokens
from agentcontext.compaction import (
    DEFAULT_CONTEXT_WINDOW,
    CompactionError,
    CompactionResult,
    Compactor,
    resolve_policy,
)
from agentcontext.compaction.harnesses import letta
from agentcontext.errors import (
    ArgumentTypeError,
    ContextOverflowError,
    InvalidMessageError,
    OptionError,
    SnapshotError,
)
from agentcontext.providers import Completion, Provider, ToolCall
from agentcontext.session_log import SessionLog
from agentcontext.sessions.permissions import PendingCall, PermissionRequest, Permissions
from agentcontext.sessions.snapshots import Snapshot, SnapshotReason, SnapshotStore
from agentcontext.sessions.subagents import (
    AGENT_DESCRIPTION,
    AGENT_SCHEMA,
    AGENT_TOOL,
    FILTERED,
    SubagentPolicy,
    Subagents,
    agent_tool_definition,
)
from agentcontext.types import JsonDict, Message

if TYPE_CHECKING:
    from agentcontext.compiler.compile import CompiledRequest, Compiler

__all__ = ["Session", "ToolFunction"]

#: A tool the loop can run: parsed arguments in, the result text out.
ToolFunction = Callable[[Any], str]

#: The tool result of a call that was decided not to run, by decision.
_REFUSALS: dict[str, str] = {
    "deny": "Error: the session's permission settings do not allow calls to {name!r}. The call was not run.",
    "denied_by_user": "Error: the user did not allow this call to {name!r}. The call was not run.",
    "no_user": (
        "Error: calls to {name!r} need the user's permission, which a subagent cannot ask for. The call was not run."
    ),
}

#: How many times in a row an Anthropic ``stop_reason: "compaction"`` pause is continued.
MAX_COMPACTION_PAUSES = 3


def _fitted(compactor: Compactor, provider: Provider) -> Compactor:
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


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class Session:
    """One agent conversation against one provider.

    ``compactor`` is a :class:`~agentcontext.Compactor` or a preset name (default ``openharness``),
    its window set to the provider model's: a compactor whose policy keeps the default window
    (200,000) is copied with the provider's; one set larger than the provider's is an
    :class:`~agentcontext.errors.OptionError` (compaction would wait for room the provider does
    not have); one set smaller is kept (the session compacts earlier). The compactor's workspace
    anchors, when they name no workspace, take the compiler's. ``tools`` are the tool definitions
    sent to the model and ``functions`` the Python callables :meth:`run` calls for them, by name. ``calibration``
    (shared between sessions if you like) learns from every response's usage; ``log`` receives
    every compaction.

    ``result_policy`` budgets every tool result :meth:`run` appends (see
    :class:`~agentcontext.budgets.ToolResultPolicy`): ``True`` (default) is the default policy for
    the provider's context window, at most min(16,000 chars, 30% of the window) per result and a
    2,000-char preview of any result over 50,000 chars; a policy of your own sets the numbers,
    ``per_tool`` among them for per-tool budgets; ``False`` lets results in unchanged.

    One store keeps every original this session's markers name (:attr:`result_store`): ``store``,
    else the policy's ``store``, else the compactor's, else ``<log file>.recall`` beside the
    session log, else — once a tool result is first cut — a temporary directory left in place (so
    a recall id stays valid after the session is gone). Compactions keep the originals of what
    they cut, clear, summarize or drop in it when it exists from the start (any of the first four).
    A tool
    named ``recall`` runs :attr:`recall` unless ``functions`` has its own (add
    :func:`~agentcontext.recall_tool` to ``tools`` so the model can make one).

    ``compiler`` (a :class:`~agentcontext.compiler.Compiler`) compiles the system prompt, the tool
    catalog and the reminders before every model call, tool loops included (``system`` then
    replaces its base instructions; ``tools`` are sent after its catalog); :meth:`run` runs tool
    calls through its registry (a call the mode hides gets an error result and never runs; a
    ``functions`` entry outside the registry has no metadata, so plan mode refuses it, all but the
    session's own ``recall``) and, when the model ends a reply naturally, lets its goal's judge
    decide whether to continue.
    """

    def __init__(
        self,
        provider: Provider,
        *,
        compactor: Compactor | str = "openharness",
        conversation: Conversation | Sequence[Message] | None = None,
        system: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        functions: Mapping[str, ToolFunction] | None = None,
        max_tokens: int = 4_096,
        calibration: Calibration | None = None,
        log: SessionLog | None = None,
        params: Mapping[str, Any] | None = None,
        result_policy: ToolResultPolicy | bool = True,
        store: ResultStore | None = None,
        compiler: Compiler | None = None,
        snapshots: SnapshotStore | None = None,
        permissions: Permissions | None = None,
        subagents: SubagentPolicy | bool | None = None,
    ) -> None:
        _checks.count("max_tokens", max_tokens, minimum=1)
        if compiler is not None:
            from agentcontext.compiler.compile import Compiler  # only when used: keeps the import light

            if not isinstance(compiler, Compiler):
                raise OptionError(f"compiler must be an agentcontext.compiler.Compiler, got {type(compiler).__name__}")
        if compiler is not None and system is not None:
            compiler.working_set.base = system
        #: The working-set compiler (None: ``system`` and ``tools`` are sent as given).
        self.compiler = compiler
        #: The request compiled for the current model call (None without a compiler).
        self.compiled: CompiledRequest | None = None
        self.provider = provider
        if isinstance(compactor, str):
            compactor = Compactor(replace(resolve_policy(compactor), context_window=provider.context_window))
        elif isinstance(compactor, Compactor):
            compactor = _fitted(compactor, provider)
        else:
            raise ArgumentTypeError(
                f"compactor must be an agentcontext.Compactor or a preset name, got {type(compactor).__name__}"
            )
        if store is None and isinstance(result_policy, ToolResultPolicy):
            store = result_policy.store
        if store is None:
            store = compactor.store
        if store is None and log is not None:
            # The originals of what compactions cut, clear, summarize or drop, beside the log.
            store = ResultStore(log.path.with_name(log.path.name + ".recall"))
        if store is not None and compactor.store is not store:
            compactor = copy.copy(compactor)
            compactor.store = store
        workspace = compiler.working_set.workspace if compiler is not None else None
        anchors = compactor.anchors
        if anchors is not None and anchors.workspace is None and workspace is not None:
            # The anchors' paths are the compiler's workspace's, not the process's current directory.
            compactor = copy.copy(compactor)
            compactor.anchors = anchors.within(workspace)
        self.compactor = compactor
        warning = letta.memory_warning(compactor.policy)
        if compiler is not None and warning is not None and warning not in compiler.reminders.rules:
            compiler.reminders.rules = [*compiler.reminders.rules, warning]
        #: The ``recall`` tool's executor: every id this session's markers name resolves here.
        self.recall = Recall(store, log=log)
        fmt = provider.format
        if conversation is None:
            conversation = Conversation([], format=fmt)
        elif not isinstance(conversation, Conversation):
            conversation = Conversation(list(conversation), format=fmt)
        elif conversation.format != fmt:
            conversation = Conversation(conversation.to_jsonl(), format="jsonl", encoding=conversation.encoding)
            conversation = Conversation(provider.messages_of(conversation), format=fmt, encoding=conversation.encoding)
        else:
            conversation = conversation.slice(0)  # the caller's conversation is never changed
        self.conversation: Conversation = conversation
        self.system = system
        self.tools = [dict(t) for t in tools] if tools else None
        self.functions = dict(functions or {})
        self.max_tokens = max_tokens
        self.calibration = calibration
        if log is not None:
            if log.format != fmt:
                raise OptionError(f"the session log is in {log.format!r} format; this provider needs {fmt!r}")
            if not log.messages and len(conversation):
                log.append(conversation)
        self.log = log
        self.params = dict(params or {})
        if result_policy is True:
            result_policy = ToolResultPolicy(context_window=provider.context_window)
        elif result_policy is not False and not isinstance(result_policy, ToolResultPolicy):
            raise OptionError(
                f"result_policy must be a ToolResultPolicy, True or False, got {type(result_policy).__name__}"
            )
        #: The policy every tool result enters through (``None``: results enter unchanged).
        self.result_policy: ToolResultPolicy | None = result_policy or None
        self._store: ResultStore | None = store
        if store is not None or self.result_policy is not None:
            self.functions.setdefault("recall", self._recall)
        #: What became of every tool result :meth:`run` appended, in order (empty when
        #: ``result_policy`` is False).
        self.results: list[BudgetedResult] = []
        #: Every compaction this session made, in order (recoveries included).
        self.compactions: list[CompactionResult] = []
        #: Every completion, in order.
        self.completions: list[Completion] = []
        self._classified_of: Conversation | None = None
        self._folded = 0
        self._folded_sum: dict[str, int] = {}
        self._outside: tuple[str, int] = ("", 0)
        #: When the latest model reply came (time.monotonic()), for the compactor's cache TTL.
        self._answered_at: float | None = None
        self._init_control(snapshots, permissions, subagents)

    def _init_control(
        self,
        snapshots: SnapshotStore | None,
        permissions: Permissions | None,
        subagents: SubagentPolicy | bool | None,
    ) -> None:
        if snapshots is not None and not isinstance(snapshots, SnapshotStore):
            raise OptionError(f"snapshots must be a SnapshotStore, got {type(snapshots).__name__}")
        if permissions is not None and not isinstance(permissions, Permissions):
            raise OptionError(f"permissions must be a Permissions, got {type(permissions).__name__}")
        #: Where the end of every outer turn is saved (None: nowhere).
        self.snapshots = snapshots
        #: What may run without asking (None: every call runs).
        self.permissions = permissions
        #: The calls of the last model reply that wait for the user (see :meth:`answer`).
        self.pending_permission: PermissionRequest | None = None
        #: Outer turns completed (calls of :meth:`run`).
        self.turn = 0
        #: 0 for a root agent; a subagent is one deeper than its parent.
        self.depth = 0
        #: The depth at which agents may not start subagents (set on subagents).
        self.subagent_limit: int | None = None
        #: Whether the goal's judge runs when a reply ends (subagents do not judge their parent's goal).
        self.judge_goal = True
        #: Set on a subagent whose policy has a ``tool_filter``: whether a tool may run. A call to
        #: a tool it leaves out gets an error result and never runs, whatever the catalog shows.
        self.tool_gate: Callable[[str], bool] | None = None
        #: What :meth:`resume` could not restore, one note each.
        self.resume_notes: list[str] = []
        #: The system prompt and tool definitions (JSON) of the first and the latest request sent.
        self.first_sent_head: tuple[str, str] | None = None
        self.sent_head: tuple[str, str] | None = None
        self.subagents: Subagents | None = None
        if subagents is not None and subagents is not False:
            policy = SubagentPolicy() if subagents is True else subagents
            if not isinstance(policy, SubagentPolicy):
                raise OptionError(f"subagents must be a SubagentPolicy or True, got {type(subagents).__name__}")
            self.subagents = Subagents(self, policy)
            self._add_agent_tool()

    def _add_agent_tool(self) -> None:
        """Put the ``agent`` tool in the catalog: the compiler's registry (a copy, with delegated
        metadata: plan mode hides it) or the tool definitions."""
        if self.compiler is not None:
            from agentcontext.compiler.registry import Registry, ToolSpec

            ws = self.compiler.working_set
            current = list(ws.registry) if ws.registry is not None else []
            if not any(t.name == AGENT_TOOL for t in current):
                spec = ToolSpec(AGENT_TOOL, AGENT_DESCRIPTION, AGENT_SCHEMA, execution_domain="delegated")
                ws.registry = Registry([*current, spec])
                self.compiler._registry = None  # the effective registry is built again on next use
            return
        style = {"anthropic": "anthropic", "responses": "responses"}.get(self.provider.format, "openai")
        names = {t.get("name") or (t.get("function") or {}).get("name") for t in self.tools or []}
        if AGENT_TOOL not in names:
            self.tools = [*(self.tools or []), agent_tool_definition(style)]  # type: ignore[arg-type]

    # -- messages --------------------------------------------------------------------------

    def _in_format(self, messages: list[JsonDict]) -> list[JsonDict]:
        fmt = self.provider.format
        if fmt == "anthropic":
            return list(convert(messages, to="anthropic", source="jsonl").get("messages", []))
        return convert(messages, to=fmt, source="jsonl")

    def add_user(self, content: str | Message) -> None:
        """Append a user message (text, or a message dict in the provider's format)."""
        if isinstance(content, str):
            self._extend(self._in_format([{"role": "user", "content": content}]))
        else:
            self._extend([dict(content)])

    def _extend(self, messages: list[JsonDict]) -> None:
        before = len(self.conversation)
        self.conversation.extend(messages)
        if self.log is not None:
            self.log.append(self.conversation, start=before)

    # -- tool results ----------------------------------------------------------------------

    @property
    def result_store(self) -> ResultStore:
        """The store of every original this session's markers name (see the class docs); a
        temporary directory is made on first use when none was given or made at the start."""
        if self._store is None:
            self._store = ResultStore(tempfile.mkdtemp(prefix="agentcontext-results-"))
            self.recall = Recall(self._store, log=self.log)
        return self._store

    def _recall(self, args: Any) -> str:
        """The ``recall`` tool (see :func:`~agentcontext.recall_tool`): a page of a stored original."""
        return self.recall(args)

    def _budget(self, outputs: list[tuple[str, str]]) -> list[str]:
        """The results of one message, ``(tool name, text)``, through :attr:`result_policy`."""
        policy = self.result_policy
        if policy is None:
            return [text for _, text in outputs]
        # As Conversation.extend would refuse it: a lone surrogate is not text (checked before the
        # result store, which refuses it too, is written).
        name = next((n for n, text in outputs if not _is_unicode(text)), None)
        if name is not None:
            raise InvalidMessageError(
                f"the result of tool {name!r} is not valid Unicode (lone surrogate); nothing was appended",
                len(self.conversation),
            )
        if policy.store is None and self._cuts(policy, outputs):
            policy = replace(policy, store=self.result_store)
        budgeted = policy.apply_message(outputs)
        self.results.extend(budgeted)
        return [b.text for b in budgeted]

    @staticmethod
    def _cuts(policy: ToolResultPolicy, outputs: list[tuple[str, str]]) -> bool:
        """Whether ``policy`` may cut or persist any of ``outputs`` (and so needs a store)."""
        limit = policy.message_limit_chars
        if limit is not None and sum(len(text) for _, text in outputs) > limit:
            return True
        persist = policy.persist_over_chars
        return any(
            len(text) > policy.budget_for(name) or (persist is not None and len(text) > persist)
            for name, text in outputs
        )

    # -- calls -----------------------------------------------------------------------------

    def class_totals(self) -> dict[str, int]:
        """Local token estimates of the conversation per content class (see
        :func:`agentcontext.calibration.class_tokens`). Each call classifies only the messages
        added since the last one, and the last one again (a Responses item may have joined it);
        the rest is kept as a running sum."""
        conv = self.conversation
        encoding = self.calibration.encoding if self.calibration is not None else conv.encoding
        if self._classified_of is not conv:
            self._classified_of, self._folded, self._folded_sum = conv, 0, dict.fromkeys(CLASSES, 0)
        totals = dict(self._folded_sum)
        fresh = [class_tokens(conv.slice(i, i + 1), encoding=encoding) for i in range(self._folded, len(conv))]
        for k, per_message in enumerate(fresh):
            for name, n in per_message.items():
                totals[name] += n
                if k < len(fresh) - 1:
                    self._folded_sum[name] += n
        self._folded = max(self._folded, len(conv) - 1)
        return totals

    def scale(self) -> float:
        """Provider tokens per local token for this conversation (1.0 until calibrated)."""
        cal = self.calibration
        if cal is None or cal.observations(self.provider.model) == 0 or not self.conversation.tokens:
            return 1.0
        totals = self.class_totals()
        local = sum(totals.values())
        return cal.estimate(self.provider.model, totals) / local if local else 1.0

    def send(self, content: str | Message | None = None) -> Completion:
        """Append ``content`` (if any) as a user message, compile, call the model once, append its
        reply, and return it. Tools are not run (see :meth:`run`)."""
        if content is not None:
            self.add_user(content)
        return self._call()

    def run(self, content: str | Message | None = None, *, max_steps: int = 25) -> Completion:
        """One outer turn: like :meth:`send`, then run the model's tool calls with
        :attr:`functions` and call again, until the model answers without tool calls or
        ``max_steps`` calls were made. A tool that raises, or that has no function, answers with the
        error text (the model sees it). With a compiler and a goal, a natural end lets the goal's
        judge ask for more.

        With :attr:`permissions`, a reply holding a call that must be asked pauses the turn before
        any of its calls runs: :attr:`pending_permission` says which; :meth:`answer` them and call
        ``run()`` again to go on. ``run()`` without ``content`` also goes on with the calls a
        resumed session left unanswered. With :attr:`snapshots`, the end of the turn is saved; a turn
        that fails after a model call (a provider error, a judge that raises) is saved with reason
        ``"error"`` before the exception reaches the caller."""
        _checks.count("max_steps", max_steps, minimum=1)
        calls = self._unanswered_calls() if content is None else []
        if calls and self.pending_permission is not None and not self.pending_permission.answered:
            waiting = ", ".join(f"{c.name} ({c.id})" for c in self.pending_permission.calls)
            raise OptionError(f"a permission request is waiting for an answer: {waiting} (see Session.answer)")
        completion = self.completions[-1] if calls and self.completions else None
        calls_before = len(self.completions)
        try:
            completion, reason = self._turn(content, calls, completion, max_steps)
        except Exception as exc:
            # What the turn did before it failed (replies, tool results) is not lost: saved with
            # reason "error" when a model call was made, then the error goes on to the caller.
            if self.snapshots is not None and len(self.completions) > calls_before:
                try:
                    self._save_snapshot("error")
                except Exception as save_error:  # noqa: BLE001 - the turn's own error is the one to raise
                    add_note = getattr(exc, "add_note", None)  # Python 3.11+
                    if add_note is not None:
                        add_note(f"the snapshot of the failed turn was not saved: {save_error}")
            raise
        self.turn += 1
        self._save_snapshot(reason)
        if completion is None:
            raise OptionError("the session has no model reply to return yet")
        return completion

    def _turn(
        self, content: str | Message | None, calls: list[ToolCall], completion: Completion | None, max_steps: int
    ) -> tuple[Completion | None, SnapshotReason]:
        """The calls of one outer turn (see :meth:`run`) and why it ended."""
        steps = 0
        if not calls:
            completion = self.send(content)
            calls, steps = completion.tool_calls, 1
        reason: SnapshotReason = "reply"
        while True:
            if calls:
                if steps >= max_steps:
                    reason = "turn_limit"
                    break
                if not self._answer_calls(calls):
                    reason = "permission"
                    break
                completion = self._call()
                calls, steps = completion.tool_calls, steps + 1
                continue
            assert completion is not None
            # A natural end (not cut by max_tokens): the goal's judge (if any) may ask for more.
            natural = completion.stop_reason not in ("max_tokens", "length", "max_output_tokens")
            if self.compiler is None or not self.judge_goal or not natural or steps >= max_steps:
                break
            more = self.compiler.after_reply(self.conversation)
            if more is None:
                break
            completion = self.send(more)
            calls, steps = completion.tool_calls, steps + 1
        return completion, reason

    def _unanswered_calls(self) -> list[ToolCall]:
        """The tool calls of the last model reply when the conversation ends with it (a paused
        permission request, a turn limit, a resumed session)."""
        n = len(self.conversation)
        start = n
        while start > 0 and self.conversation[start - 1].get("role") == "assistant":
            start -= 1
        if start == n:
            return []
        out = []
        for message in self.conversation.slice(start, n).to_jsonl():
            for call in message.get("tool_calls") or []:
                out.append(ToolCall(str(call.get("id")), str(call.get("name")), str(call.get("arguments") or "")))
        return out

    def _answer_calls(self, calls: Sequence[ToolCall]) -> bool:
        """Run ``calls`` (one model reply's) and append their results; False (nothing run) when
        one of them must be asked first."""
        decisions: dict[str, str] = {}
        if self.permissions is not None:
            answers = self.pending_permission.answers if self.pending_permission is not None else {}
            asked = []
            for c in calls:
                if c.id in answers:
                    decisions[c.id] = "allow" if answers[c.id] else "denied_by_user"
                    continue
                decision: str = self.permissions.decide(c.name, c.arguments, read_only=self._read_only(c.name))
                if decision == "ask" and self.depth > 0:
                    decision = "no_user"
                decisions[c.id] = decision
                if decision == "ask":
                    asked.append(PendingCall(c.id, c.name, c.arguments))
            if asked:
                self.pending_permission = PermissionRequest(asked, answers=dict(answers))
                return False
            self.pending_permission = None
        outputs = self._run_calls(calls, decisions)
        texts = self._budget(outputs)
        self._extend(self.provider.tool_results([(c.id, t) for c, t in zip(calls, texts, strict=True)]))
        return True

    def _run_calls(self, calls: Sequence[ToolCall], decisions: Mapping[str, str]) -> list[tuple[str, str]]:
        """The result of every call, in call order; ``agent`` calls run concurrently."""
        outputs: list[tuple[str, str] | None] = [None] * len(calls)
        agents: list[int] = []
        for i, call in enumerate(calls):
            refusal = _REFUSALS.get(decisions.get(call.id, "allow"))
            if self.tool_gate is not None and not self.tool_gate(call.name):
                refusal = FILTERED
            if refusal is None and call.name == AGENT_TOOL:
                refusal = self._agent_refusal(call)
                if refusal is None and self.subagents is not None:
                    agents.append(i)
                    continue
            if refusal is not None:
                outputs[i] = (call.name, refusal.format(name=call.name))
                continue
            try:
                output = self._run_tool(call.name, call.arguments, call.parsed)
            except Exception as exc:  # noqa: BLE001 - the model gets the error as the result
                output = f"Error: {type(exc).__name__}: {exc}"
            outputs[i] = (call.name, output if isinstance(output, str) else json.dumps(output))
        if agents:
            assert self.subagents is not None
            texts = self.subagents.run_calls([calls[i] for i in agents], reply_calls=calls)
            for i, text in zip(agents, texts, strict=True):
                outputs[i] = (calls[i].name, text)
        return [o for o in outputs if o is not None]

    def _agent_refusal(self, call: ToolCall) -> str | None:
        """Why an ``agent`` call cannot start a subagent here, or None when it can."""
        if self.subagents is None:
            if self.subagent_limit is not None:
                return (
                    f"Error: tool {call.name!r} is not available: subagents may not start subagents at depth "
                    f"{self.depth} (max_depth {self.subagent_limit}). The call was not run."
                )
            return None  # not ours: the session's functions decide
        if self.compiler is not None:
            # Through the registry: a mode that hides delegated tools refuses it (and says why).
            return self.compiler.execute(call.name, call.arguments, {})
        return None

    def _read_only(self, name: str) -> bool:
        """Whether the registry's metadata says tool ``name`` only reads (never from its name)."""
        if self.compiler is None:
            return False
        tool = self.compiler.registry.get(name)
        return tool is not None and tool.read_only

    def answer(self, call_id: str | None = None, *, allow: bool, always: bool = False) -> None:
        """Answer the pending permission request: call ``call_id`` (None: every pending call) is
        allowed or not; ``always`` also allows every later call to that tool in this session. Then
        call :meth:`run` to go on."""
        request = self.pending_permission
        if request is None:
            raise OptionError("no permission request is pending")
        if not isinstance(allow, bool):
            raise OptionError(f"allow must be True or False, got {allow!r}")
        if not isinstance(always, bool):
            raise OptionError(f"always must be True or False, got {always!r}")
        chosen = [c for c in request.calls if call_id is None or c.id == call_id]
        if not chosen:
            raise OptionError(f"call {call_id!r} is not pending (pending: {', '.join(c.id for c in request.calls)})")
        for c in chosen:
            request.answers[c.id] = allow
            if allow and always and self.permissions is not None:
                self.permissions.grant(c.name)

    def clear(self) -> None:
        """Empty the conversation (a user's ``/clear``): the pending permission request and the
        compaction state go too; with :attr:`snapshots`, an empty snapshot becomes current, so a
        later :meth:`resume` cannot bring back what was cleared. The session log keeps its record."""
        self.conversation = Conversation([], format=self.provider.format, encoding=self.conversation.encoding)
        self.pending_permission = None
        self.compactor.last = None
        self.compactor._turns_since = 0
        if self.snapshots is not None and self.depth == 0:
            from agentcontext.sessions.state import capture, fingerprint

            self.snapshots.clear(control=capture(self), fingerprint=fingerprint(self), turn=self.turn)

    def snapshot(self, reason: SnapshotReason = "manual") -> Snapshot:
        """The session's state now: its conversation and control state (see
        :mod:`agentcontext.sessions.state`)."""
        from agentcontext.sessions.state import capture, fingerprint

        return Snapshot(
            self.conversation.slice(0),
            control=capture(self),
            fingerprint=fingerprint(self),
            turn=self.turn,
            reason=reason,
        )

    def head_tokens(self, head: tuple[str, str]) -> int:
        """Tokens of a request head (system prompt, tool definitions as JSON) as :attr:`sent_head`
        holds it."""
        encoding = self.conversation.encoding
        exact = encoding if encoding in ("o200k_base", "cl100k_base") else "o200k_base"
        return sum(count_tokens(text, encoding=exact) for text in head if text)

    def _save_snapshot(self, reason: SnapshotReason) -> None:
        if self.snapshots is not None and self.depth == 0:
            self.snapshots.save(self.snapshot(reason))

    @classmethod
    def resume(cls, snapshots: SnapshotStore, provider: Provider, **options: Any) -> Session:
        """A session rebuilt from ``snapshots``' current snapshot and what exists now.

        ``options`` are :class:`Session`'s (compiler, tools, functions, permissions, ...): the system
        prompt, tool catalog and memory index are compiled anew from them. The control state is
        restored where it still applies (:func:`agentcontext.sessions.state.restore` says how);
        :attr:`resume_notes` lists what was not. Calls the snapshot left unanswered are run by the
        next ``run()`` (one to a tool that no longer exists gets an error result saying so); a
        pending permission request is asked again (:attr:`pending_permission`). With ``log``, the
        log's working set is made the session's conversation when it is not (a turn the snapshot
        lost: :meth:`~agentcontext.SessionLog.reconcile`), with a note in :attr:`resume_notes`."""
        if not isinstance(snapshots, SnapshotStore):
            raise OptionError(f"snapshots must be a SnapshotStore, got {type(snapshots).__name__}")
        snap = snapshots.current()
        if snap is None:
            raise SnapshotError(f"{snapshots.directory}: no snapshot to resume", str(snapshots.directory), "not_found")
        from agentcontext.sessions.state import restore

        session = cls(provider, conversation=snap.conversation, snapshots=snapshots, **options)
        session.turn = snap.turn
        session.resume_notes = restore(session, snap)
        if session.log is not None:
            # A process killed mid-turn logged what the snapshot does not hold (the turn's input, a
            # call never answered): the log's working set becomes the session's again.
            record = session.log.reconcile(session.conversation, reason="resume")
            if record is not None:
                done = record["reconciled"]
                session.resume_notes.append(
                    f"the session log's working set did not match the snapshot: {done['set_aside_messages']} "
                    f"logged message(s) after it were set aside (kept in the log) and {done['added_messages']} "
                    f"added (record seq {record['seq']})"
                )
        return session

    def _run_tool(self, name: str, arguments: str, parsed: Callable[[], Any]) -> Any:
        if self.depth > 0 and self.compiler is not None:
            every = self.compiler.working_set.registry
            tool = self.compiler.registry.get(name) or (every.get(name) if every is not None else None)
            if tool is not None and tool.root_only:  # a fork keeps the parent's catalog: refused here
                return f"Error: tool {name!r} is not available: it is for the root agent only. The call was not run."
        if self.compiler is not None:
            # The session's own recall tool only reads.
            own = ("recall",) if self.functions.get("recall") == self._recall else ()
            output = self.compiler.execute(name, arguments, self.functions, read_only=own)
            return output if output is not None else f"Error: no tool named {name!r}"
        fn = self.functions.get(name)
        return f"Error: no tool named {name!r}" if fn is None else fn(parsed())

    def _overhead(self, scale: float) -> int:
        """Local tokens every request carries outside the conversation: the system prompt, the
        tool definitions, and the output ``max_tokens`` reserves beyond the policy's
        ``reserved_output``."""
        extra_output = max(0, self.max_tokens - self.compactor.policy.reserved_output)
        return self._outside_tokens() + math.ceil(extra_output / scale)

    def _compile(self) -> None:
        """The compiler's request for this call; reminders kept in history are added first."""
        if self.compiler is None:
            return
        compiled = self.compiler.compile(
            self.conversation,
            max_tokens=self.max_tokens,
            context_window=self.provider.context_window,
            record=False,
        )
        for text in compiled.persist:
            self.add_user(text)
        self.compiled = compiled

    def _call(self) -> Completion:
        self._compile()
        scale = self.scale()
        idle = None if self._answered_at is None else time.monotonic() - self._answered_at
        result = self.compactor.maybe_compact(
            self.conversation,
            scale=scale,
            overhead=self._overhead(scale),
            idle_seconds=idle,
            system=self._system_and_tools()[0],
        )
        if result is not None and result.compacted and result.conversation is not result.original:
            self._replace(result)
        self._ensure_fits()
        completion = self._complete_with_recovery()
        pauses = 0
        # Anthropic server-side compaction with pause_after_compaction: the reply holds the
        # compaction block; continue from it.
        while completion.stop_reason == "compaction" and pauses < MAX_COMPACTION_PAUSES:
            pauses += 1
            completion = self._complete_with_recovery()
        return completion

    def _complete_with_recovery(self) -> Completion:
        try:
            completion = self._complete_once()
        except ContextOverflowError as first:
            self._recover(first)
            try:
                completion = self._complete_once()
            except ContextOverflowError as second:
                raise second.recovered_with(
                    f" (again, after recompiling once to {self.conversation.tokens:,} local tokens; "
                    "nothing more is removed)"
                ) from second
        return completion

    def _complete_once(self) -> Completion:
        request = self.conversation
        system, tools = self._system_and_tools()
        if self.compiler is not None and self.compiled is not None:
            request = self.compiled.request_conversation(self.conversation)
            self.compiler.record(self.conversation, self.compiled)
        head = (system or "", json.dumps(tools, ensure_ascii=False) if tools else "")
        if self.first_sent_head is None:
            self.first_sent_head = head
        self.sent_head = head
        completion = self.provider.complete(
            request, max_tokens=self.max_tokens, system=system, tools=tools, **self.params
        )
        self.completions.append(completion)
        self._answered_at = time.monotonic()
        if self.calibration is not None and completion.usage.input_tokens > 0:
            estimates = self.class_totals()
            # The system prompt and tool definitions travel outside the conversation.
            extra = self._outside_tokens()
            estimates["overhead"] += extra
            self.calibration.observe(self.provider.model, estimates, completion.usage.input_tokens)
        self._extend(completion.messages)
        return completion

    def _ensure_fits(self) -> None:
        """The pre-send check: system prompt + tool definitions + conversation (pending tool
        results included), in estimated provider tokens, plus ``max_tokens`` must fit the
        provider's window. When they do not, the conversation is recompiled to fit (as after a
        prompt-too-long error); when that cannot be done, nothing is sent.

        Raises:
            ContextOverflowError: the request cannot be made to fit; the history is unchanged.
        """
        window = self.provider.context_window
        scale = self.scale()
        outside = self._outside_tokens()

        def estimate() -> int:
            return math.ceil((self.conversation.tokens + outside) * scale)

        before = estimate()
        if before + self.max_tokens <= window:
            return
        what = (
            f"the request would be about {before:,} tokens (system prompt and tool definitions {outside:,}, "
            f"history {self.conversation.tokens:,}, local tokens times {scale:.2f}) plus {self.max_tokens:,} "
            f"reserved for output, over the {window:,}-token window; not sent"
        )
        budget = int((window - self.max_tokens - self.compactor.policy.safety_margin) / scale) - outside
        if budget <= 0:
            raise ContextOverflowError(
                f"{what}: the system prompt, tool definitions and reserved output leave no room for history",
                provider=self.provider.name,
                tokens=before,
                limit=window,
            )
        try:
            result = self.compactor.recompile(self.conversation, budget, system=self._system_and_tools()[0])
        except CompactionError as exc:
            raise ContextOverflowError(
                f"{what}: the history cannot be recompiled to {budget:,} tokens: {exc}",
                provider=self.provider.name,
                tokens=before,
                limit=window,
            ) from exc
        if not result.fits:
            raise ContextOverflowError(
                f"{what}: recompiling the history left {result.tokens_after:,} tokens, over {budget:,}",
                provider=self.provider.name,
                tokens=before,
                limit=window,
            )
        self._replace(result)

    def _system_and_tools(self) -> tuple[str | None, list[JsonDict] | None]:
        """The system prompt and tool definitions of this call (the compiler's when there is one)."""
        if self.compiled is None:
            return self.system, self.tools
        tools = [*(self.compiled.tools or []), *(self.tools or [])] or None
        return self.compiled.system or None, tools

    def _outside_tokens(self) -> int:
        """Tokens of the system prompt, tool definitions and this call's reminders, counted again
        only when they change."""
        if self.compiled is not None and not self.tools:
            # The compiler counted them exactly already.
            t = self.compiled.tokens
            return int(t["system"] + t["tools"] + t["reminders"])
        system, tools = self._system_and_tools()
        reminders = "".join(self.compiled.reminders) if self.compiled is not None else ""
        text = (system or "") + (json.dumps(tools) if tools else "") + reminders
        if text != self._outside[0]:
            self._outside = (text, count_tokens(text) if text else 0)
        return self._outside[1]

    def _recover(self, error: ContextOverflowError) -> None:
        conv = self.conversation
        p = self.compactor.policy
        local = conv.tokens + self._outside_tokens()
        window = error.limit or self.provider.context_window
        if error.tokens and error.limit and error.tokens > 0:
            # The provider counted `error.tokens` where we count `local`: convert its window.
            per_provider_token = local / error.tokens
        else:
            per_provider_token = 1.0 / self.scale()
        budget = int((window - self.max_tokens - p.safety_margin) * per_provider_token) - self._outside_tokens()
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
            result = self.compactor.recompile(conv, budget, system=self._system_and_tools()[0])
        except CompactionError as exc:
            raise error.recovered_with(f"; cannot recompile: {exc}") from error
        self._replace(result)

    def _replace(self, result: CompactionResult) -> None:
        self.compactions.append(result)
        if self.log is not None:
            self.log.record_compaction(result)
        self.conversation = result.conversation
