"""The agent loop: compile the working set before every model call, run tools, recover from a
prompt-too-long error once, and learn the provider's token counts.

:class:`Session` holds one conversation in its provider's format. Every tool result enters
through the session's :class:`~agentcontext.budgets.ToolResultPolicy` (head + marker + tail, or
a preview, with the full text kept in a :class:`~agentcontext.budgets.ResultStore` under the
recall id the marker names). Before every call (also inside a tool loop, with the pending tool
results already appended) it asks the compactor whether to compact, counting what every request
carries besides the conversation — the system prompt, the tool definitions and the output
reserved by ``max_output_tokens`` — with estimates scaled by the calibration learned from the
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

import dataclasses
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentcontext import _checks
from agentcontext._core import Conversation, convert, count_tokens
from agentcontext.budgets import BudgetedResult, Recall, ResultStore, ToolResultPolicy
from agentcontext.compaction import CompactionResult, Compactor
from agentcontext.compaction.harnesses import letta
from agentcontext.errors import ArgumentTypeError, OptionError, SnapshotError
from agentcontext.measure.calibration import Calibration
from agentcontext.observe.calls import turn_span
from agentcontext.observe.emit import EventCallback, check_callback
from agentcontext.providers import Completion, Provider, ToolCall
from agentcontext.sessions import fit, tool_calls
from agentcontext.sessions.log import SessionLog
from agentcontext.sessions.permissions import PermissionRequest, Permissions
from agentcontext.sessions.snapshots import Snapshot, SnapshotReason, SnapshotStore
from agentcontext.sessions.subagents import (
    AGENT_DESCRIPTION,
    AGENT_SCHEMA,
    AGENT_TOOL,
    SubagentPolicy,
    Subagents,
    agent_tool_definition,
)
from agentcontext.types import JsonDict, Message

if TYPE_CHECKING:
    from agentcontext.compiler.compile import Compiler
    from agentcontext.compiler.sections import CompiledRequest

__all__ = ["Session", "ToolFunction"]

#: A tool the loop can run: parsed arguments in, the result text out.
ToolFunction = Callable[[Any], str]


def _own_conversation(conversation: Conversation | Sequence[Message] | None, provider: Provider) -> Conversation:
    """The session's conversation: ``conversation`` copied (never the caller's), in the provider's
    format."""
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
    return conversation


def _result_policy(result_policy: ToolResultPolicy | bool, provider: Provider) -> ToolResultPolicy | None:
    """``result_policy`` checked: ``True`` is the default policy for the provider's window,
    ``False`` None."""
    if result_policy is True:
        result_policy = ToolResultPolicy(context_window=provider.context_window)
    elif result_policy is not False and not isinstance(result_policy, ToolResultPolicy):
        raise OptionError(
            f"result_policy must be a ToolResultPolicy, True or False, got {type(result_policy).__name__}"
        )
    return result_policy or None


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
    session log, else ``recall`` in the ``snapshots`` directory (so a session resumed from them in
    another process recalls what its markers name), else — once a tool result is first cut — a
    temporary directory left in place (so
    a recall id stays valid after the session is gone). Compactions keep the originals of what
    they cut, clear, summarize or drop in it when it exists from the start (any of the first five).
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

    ``on_event`` is called with an event (:mod:`agentcontext.observe`) for every model call, tool
    call, compaction (started, finished with its stages), summarizer call and memory flush, so a UI
    can show progress; the compactor is copied to report to it. With the ``otel`` extra, each is
    also an OpenTelemetry span under one ``invoke_agent`` span per outer turn. A callback that
    raises is logged and the run goes on.
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
        max_output_tokens: int = 4_096,
        calibration: Calibration | None = None,
        log: SessionLog | None = None,
        params: Mapping[str, Any] | None = None,
        result_policy: ToolResultPolicy | bool = True,
        store: ResultStore | None = None,
        compiler: Compiler | None = None,
        snapshots: SnapshotStore | None = None,
        permissions: Permissions | None = None,
        subagents: SubagentPolicy | bool | None = None,
        on_event: EventCallback | None = None,
    ) -> None:
        _checks.count("max_output_tokens", max_output_tokens, minimum=1)
        _check_arguments(provider, system, tools, functions)
        _check_parts(conversation, log, params, calibration, store)
        #: Called with each event of the loop (see :mod:`agentcontext.observe`); None: none.
        self.on_event = check_callback(on_event)
        if compiler is not None:
            from agentcontext.compiler.compile import Compiler  # only when used: keeps the import light

            if not isinstance(compiler, Compiler):
                raise OptionError(f"compiler must be an agentcontext.compiler.Compiler, got {type(compiler).__name__}")
        if compiler is not None and system is not None:
            # The compiler's own copy of its working set takes ``system`` as its base: the
            # caller's WorkingSet (which other compilers may share) is not changed.
            compiler.working_set = dataclasses.replace(compiler.working_set, base=system)
        #: The working-set compiler (None: ``system`` and ``tools`` are sent as given).
        self.compiler = compiler
        #: The request compiled for the current model call (None without a compiler).
        self.compiled: CompiledRequest | None = None
        self.provider = provider
        compactor, store = fit.session_compactor(compactor, provider, store, result_policy, log, compiler, snapshots)
        compactor = fit.reporting(compactor, self.on_event)
        self.compactor = compactor
        warning = letta.memory_warning(compactor.policy)
        if compiler is not None and warning is not None and warning not in compiler.reminders.rules:
            compiler.reminders.rules = [*compiler.reminders.rules, warning]
        #: The ``recall`` tool's executor: every id this session's markers name resolves here.
        self.recall = Recall(store, log=log)
        fmt = provider.format
        conversation = _own_conversation(conversation, provider)
        self.conversation: Conversation = conversation
        self.system = system
        self.tools = [dict(t) for t in tools] if tools else None
        self.functions = dict(functions or {})
        self.max_output_tokens = max_output_tokens
        self.calibration = calibration
        if log is not None:
            if log.format != fmt:
                raise OptionError(f"the session log is in {log.format!r} format; this provider needs {fmt!r}")
            if not log.messages and len(conversation):
                log.append(conversation)
        self.log = log
        self.params = dict(params or {})
        #: The policy every tool result enters through (``None``: results enter unchanged).
        self.result_policy: ToolResultPolicy | None = _result_policy(result_policy, provider)
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
            self.subagents = Subagents(self, policy, new_session=Session)
            self._add_agent_tool()

    def _add_agent_tool(self) -> None:
        """Put the ``agent`` tool in the catalog: the compiler's registry (a copy, with delegated
        metadata: plan mode hides it) or the tool definitions."""
        if self.compiler is not None:
            from agentcontext.compiler.registry import Registry, ToolSpec

            ws = self.compiler.working_set
            current = list(ws.registry) if ws.registry is not None else []
            have = next((t for t in current if t.name == AGENT_TOOL), None)
            if have is not None and (have.description, have.execution_domain) != (AGENT_DESCRIPTION, "delegated"):
                # Another tool of that name would get the calls subagents=True asked for.
                raise OptionError(
                    f"tool {AGENT_TOOL!r} ({have.source}) has the name of the subagents' tool; give the tool "
                    "another name"
                )
            if have is None:
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
        elif isinstance(content, Mapping):
            self._extend([dict(content)])
        else:
            raise ArgumentTypeError(
                f"a user message must be text (str) or a message dict, got {type(content).__name__}"
            )

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

    # -- calls -----------------------------------------------------------------------------

    def class_totals(self) -> dict[str, int]:
        """Local token estimates of the conversation per content class (see
        :func:`agentcontext.measure.calibration.class_tokens`), the overhead taken message by
        message. The core keeps each message's counts: a call counts only messages not seen
        before."""
        conv = self.conversation
        encoding = self.calibration.encoding if self.calibration is not None else conv.encoding
        return conv.class_tokens(encoding=encoding, per_message=True)

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
        reply, and return it. Tools are not run (see :meth:`run`).

        A user message after a reply whose calls were not run (the step limit, a permission request
        not answered, a resumed snapshot) follows a result for each of them saying so (a request
        with a call and no result is refused by the providers); the permission request is dropped."""
        if content is not None:
            tool_calls.close_unanswered(self, content)
            self.add_user(content)
        return fit.call(self)

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
        calls = tool_calls.unanswered_calls(self) if content is None else []
        if calls and self.pending_permission is not None and not self.pending_permission.answered:
            waiting = ", ".join(f"{c.name} ({c.id})" for c in self.pending_permission.calls)
            raise OptionError(f"a permission request is waiting for an answer: {waiting} (see Session.answer)")
        completion = self.completions[-1] if calls and self.completions else None
        calls_before = len(self.completions)
        try:
            with turn_span(self.on_event, self.provider, self.turn + 1):
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
                if not tool_calls.answer_calls(self, calls):
                    reason = "permission"
                    break
                completion = fit.call(self)
                calls, steps = completion.tool_calls, steps + 1
                continue
            assert completion is not None
            # A natural end (not cut by max_output_tokens): the goal's judge (if any) may ask for more.
            natural = completion.stop_reason not in ("max_tokens", "length", "max_output_tokens")
            if self.compiler is None or not self.judge_goal or not natural or steps >= max_steps:
                break
            more = self.compiler.after_reply(self.conversation)
            if more is None:
                break
            completion = self.send(more)
            calls, steps = completion.tool_calls, steps + 1
        return completion, reason

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
            control=dict(capture(self)),
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


def _check_arguments(provider: Any, system: Any, tools: Any, functions: Any) -> None:
    """The Session's provider, ``system``, ``tools`` and ``functions`` of the right kinds, else an
    error naming the argument (before, each failed later as an AttributeError, a TypeError or a
    ValueError, or went into the request body)."""
    if not isinstance(provider, Provider) and not callable(getattr(provider, "complete", None)):
        raise ArgumentTypeError(
            f"provider of Session must be a provider (with a complete method), got {type(provider).__name__}"
        )
    if system is not None and not isinstance(system, str):
        raise ArgumentTypeError(f"system of Session must be a str or None, got {type(system).__name__}")
    if tools is not None:
        if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence):
            raise ArgumentTypeError(
                f"tools of Session must be a list of tool definitions or None, got {type(tools).__name__}"
            )
        for i, tool in enumerate(tools):
            if not isinstance(tool, Mapping):
                raise ArgumentTypeError(
                    f"tools[{i}] of Session must be a tool definition (a mapping), got {type(tool).__name__}"
                )
    if functions is not None:
        if not isinstance(functions, Mapping):
            raise ArgumentTypeError(
                f"functions of Session must be a mapping of tool name to function, got {type(functions).__name__}"
            )
        for name, function in functions.items():
            if not callable(function):
                raise ArgumentTypeError(
                    f"functions[{name!r}] of Session must be callable, got {type(function).__name__}"
                )


def _check_parts(conversation: Any, log: Any, params: Any, calibration: Any, store: Any) -> None:
    """The Session's ``conversation``, ``log``, ``params``, ``calibration`` and ``store`` of the
    right kinds, else an error naming the argument (before, a wrong one failed as an
    AttributeError or a TypeError, or at the first turn that used it)."""
    if not (conversation is None or isinstance(conversation, Conversation)) and (
        isinstance(conversation, str | bytes | Mapping) or not isinstance(conversation, Iterable)
    ):
        raise ArgumentTypeError(
            f"conversation of Session must be a Conversation, a list of messages or None, "
            f"got {type(conversation).__name__}"
        )
    if log is not None and not isinstance(log, SessionLog):
        raise ArgumentTypeError(
            f"log of Session must be a SessionLog or None, got {type(log).__name__} "
            "(open one: agentcontext.sessions.SessionLog(path, format=...))"
        )
    if params is not None and not isinstance(params, Mapping):
        raise ArgumentTypeError(
            f"params of Session must be a mapping of request fields or None, got {type(params).__name__}"
        )
    if calibration is not None and not isinstance(calibration, Calibration):
        raise ArgumentTypeError(
            f"calibration of Session must be an agentcontext.Calibration or None, got {type(calibration).__name__}"
        )
    if store is not None and not isinstance(store, ResultStore):
        raise ArgumentTypeError(
            f"store of Session must be an agentcontext.budgets.ResultStore or None, got {type(store).__name__} "
            "(make one: ResultStore(directory))"
        )
