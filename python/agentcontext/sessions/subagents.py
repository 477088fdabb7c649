"""Subagents: an ``agent`` tool whose calls run a child agent on a working set of its own.

The parent calls the tool with a short ``description`` and a complete task ``prompt``. The child is
a :class:`~agentcontext.Session` on the same provider and model that starts from a new conversation
holding only the task (or, in *fork* mode, from the parent's history), with:

- the parent's tools, skills, working directory and settings, minus the tools whose metadata says
  ``root_only`` (memory writes, snapshots) and minus what ``tool_filter`` leaves out (the filter
  also holds at execution: a call to a tool it leaves out gets an error result and never runs, in
  every mode, fork included);
- depth + 1: at ``max_depth`` the child gets no ``agent`` tool of its own;
- its own permission state (no grants; a call that would ask the user is refused, since nobody can
  answer a child), its own compactor and no snapshots.

Only the child's final text returns to the parent, as the one tool result of the call, within a
budget (``return_tokens``, by default ``return_share`` of the parent's window) that the lines
added after it count against too: a longer text is cut head + marker + tail and kept whole in the
parent's result store under the marker's recall id. A budget too small for the marker and those
lines is refused when the session is made (:class:`~agentcontext.errors.BudgetError`). The
child's whole transcript goes to a session log of its own (``log_dir``, a new file per child,
unique across processes), named in the result. A child that fails (a network error, any
exception) gets an error result naming the exception; its siblings' results are delivered.

*Fork* mode starts the child from the parent's history — the same prefix, so the provider's prompt
cache is reused: the parent's system prompt, tool catalog and messages up to the reply that made
the call, placeholder results for that reply's calls (they are still running in the parent), then
the task as the next user message. The catalog is the parent's; root-only tools are refused at
execution instead. :attr:`SubagentResult.shared_prefix_tokens` reports the shared part.

Several ``agent`` calls in one model reply run concurrently (threads, ``max_parallel`` at a time);
their results come back in call order. ``workspace="directory"`` gives each child an empty
directory of its own, ``"worktree"`` a git worktree of the parent's repository (removed afterwards
unless ``keep_workspace``); a tool function reads the child's directory with :func:`workspace`.
Branches made or moved in the repository while a worktree child ran stay there (they may hold its
work): :attr:`SubagentResult.branches` and the parent's tool result name them.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import itertools
import os
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentcontext import _checks
from agentcontext._core import Conversation, count_tokens, truncate
from agentcontext.errors import ArgumentTypeError, BudgetError, OptionError, failure_text
from agentcontext.observe.calls import observe_tool
from agentcontext.sessions.workspaces import BRANCH_NOTE_TOKENS, WorkspaceMode, _Space, branch_note, child_workspace

if TYPE_CHECKING:
    from agentcontext.compiler.registry import ToolSpec
    from agentcontext.providers import ToolCall
    from agentcontext.sessions.loop import Session

__all__ = [
    "AGENT_TOOL",
    "SubagentPolicy",
    "SubagentResult",
    "Subagents",
    "agent_tool_definition",
    "workspace",
]

#: The name of the tool that starts a subagent.
AGENT_TOOL = "agent"
#: The text a forked child gets for its parent's calls that are still running.
FORK_PLACEHOLDER = "[This call is still running in the parent agent; its result is not available to this subagent.]"
AGENT_DESCRIPTION = (
    "Start a subagent to do one self-contained task on its own working set, and get back only its final "
    "answer. Give a short description (3-5 words) and a complete prompt: the subagent sees nothing of this "
    "conversation but the prompt. Several calls in one reply run in parallel."
)
AGENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "description": {"type": "string", "description": "a short (3-5 words) description of the task"},
        "prompt": {"type": "string", "description": "the complete task for the subagent"},
    },
    "required": ["description", "prompt"],
}

#: The tool result of a call to a tool the subagent policy's ``tool_filter`` leaves out.
FILTERED = (
    "Error: tool {name!r} is not available to this subagent (its tool_filter leaves it out). The call was not run."
)
#: Characters of a recall id (``r-`` and 20 hex digits, see ResultStore): at most as many tokens.
_RECALL_ID_CHARS = 22
#: Digits of the counts a worst-case marker or transcript name is sized for (no final text is longer).
_DIGITS = 12

_WORKSPACE: contextvars.ContextVar[Path | None] = contextvars.ContextVar("agentcontext_workspace", default=None)


def workspace() -> Path | None:
    """The working directory of the agent whose tool is running: a subagent's own directory when
    its policy isolates workspaces, else None (the process's working directory applies)."""
    return _WORKSPACE.get()


def agent_tool_definition(style: Literal["openai", "anthropic", "responses"] = "openai") -> dict[str, Any]:
    """The ``agent`` tool's definition for a session without a registry (``tools=[...]``)."""
    if style == "anthropic":
        return {"name": AGENT_TOOL, "description": AGENT_DESCRIPTION, "input_schema": AGENT_SCHEMA}
    if style == "responses":
        return {"type": "function", "name": AGENT_TOOL, "description": AGENT_DESCRIPTION, "parameters": AGENT_SCHEMA}
    if style == "openai":
        return {
            "type": "function",
            "function": {"name": AGENT_TOOL, "description": AGENT_DESCRIPTION, "parameters": AGENT_SCHEMA},
        }
    raise OptionError(f'tool style must be "openai", "anthropic" or "responses", got {style!r}')


@dataclass(frozen=True)
class SubagentPolicy:
    """How a session's subagents run (see the module docs)."""

    max_depth: int = 1
    """How deep agents nest: 1 = the root's children get no ``agent`` tool."""
    return_share: float = 0.1
    """The largest result a child returns, as a share of the parent's context window (tokens)."""
    return_tokens: int | None = None
    """The largest result in tokens (overrides ``return_share``)."""
    max_steps: int = 25
    """Model calls a child may make."""
    tool_filter: Collection[str] | Callable[[ToolSpec], bool] | None = None
    """Tool names a child may have (or a predicate over the registry's tools); None: all."""
    fork: bool = False
    """Start children from the parent's history (prompt-cache reuse) instead of the task alone."""
    workspace: WorkspaceMode = "shared"
    keep_workspace: bool = False
    log_dir: str | os.PathLike[str] | None = None
    """Where each child's transcript goes (default: ``<parent log>.agents/`` when the parent has a
    log, else nowhere)."""
    max_parallel: int = 4

    def __post_init__(self) -> None:
        _checks.count("max_depth", self.max_depth, minimum=1)
        _checks.number("return_share", self.return_share, high=1.0, low_open=True)
        _checks.optional_count("return_tokens", self.return_tokens, minimum=1)
        if self.return_tokens is not None:
            _check_return_budget(self.return_tokens, marker_tokens("o200k_base"), "the truncation marker")
        _checks.count("max_steps", self.max_steps, minimum=1)
        _checks.count("max_parallel", self.max_parallel, minimum=1)
        # A string is truthy: fork="false" would fork every child.
        _checks.flag("fork", self.fork)
        _checks.flag("keep_workspace", self.keep_workspace)
        if self.log_dir is not None:
            _checks.path_argument("log_dir", self.log_dir)
        if self.workspace not in ("shared", "directory", "worktree"):
            raise OptionError(f'workspace must be "shared", "directory" or "worktree", got {self.workspace!r}')
        f = self.tool_filter
        # A collection, not any iterable: a generator or iterator would be used up by this check
        # and then filter out every tool; a number is not iterable at all.
        if (
            f is not None
            and not callable(f)
            and (isinstance(f, str | bytes) or not isinstance(f, Collection) or not all(isinstance(n, str) for n in f))
        ):
            raise ArgumentTypeError(
                f"tool_filter must be a collection of tool names or a function of a ToolSpec, got {type(f).__name__}"
            )


@dataclass
class SubagentResult:
    """What one child did (kept in :attr:`Subagents.results`)."""

    call_id: str
    description: str
    depth: int
    text: str
    """The tool result the parent got."""
    final_tokens: int
    """Tokens of the child's whole final text."""
    recall_id: str | None = None
    """Where the whole final text is, when it was cut."""
    log: Path | None = None
    steps: int = 0
    workspace: Path | None = None
    shared_prefix_tokens: int | None = None
    """Fork mode: tokens of the parent's request prefix the child's first request repeats."""
    error: str | None = None
    """What failed (the exception's type and message), when the child did not finish."""
    branches: list[str] = field(default_factory=list)
    """Worktree mode: branches of the parent's repository made or moved while the child ran; they
    stay there (the parent's tool result names them too)."""
    session: Session | None = field(default=None, repr=False)


class Subagents:
    """The ``agent`` tool of one session: runs its calls as children (see the module docs)."""

    _counter = itertools.count(1)

    def __init__(
        self,
        parent: Session,
        policy: SubagentPolicy | None = None,
        *,
        depth: int = 0,
        new_session: Callable[..., Session] | None = None,
    ) -> None:
        self.parent = parent
        #: How a child session is made: the factory handed in (:class:`~agentcontext.Session`, by
        #: the session that owns this tool), else the parent's own class. Either way this module
        #: does not import the loop.
        self.new_session: Callable[..., Session] = new_session if new_session is not None else type(parent)
        self.policy = policy if policy is not None else SubagentPolicy()
        if not isinstance(self.policy, SubagentPolicy):
            raise OptionError(f"subagents must be a SubagentPolicy, got {type(self.policy).__name__}")
        self.depth = _checks.count("depth", depth)
        #: Every child run, in the order the calls were made.
        self.results: list[SubagentResult] = []
        self._lock = threading.Lock()
        _check_return_budget(self.return_tokens, self._reserved_tokens(), self._reserved_what())

    @property
    def can_spawn(self) -> bool:
        return self.depth < self.policy.max_depth

    @property
    def return_tokens(self) -> int:
        p = self.policy
        return p.return_tokens or max(1, int(p.return_share * self.parent.provider.context_window))

    def _encoding(self) -> Literal["o200k_base", "cl100k_base"]:
        encoding = self.parent.conversation.encoding
        return "cl100k_base" if encoding == "cl100k_base" else "o200k_base"

    def _reserved_tokens(self) -> int:
        """The most the truncation marker and the lines after the final text can take: the
        transcript line at the deepest level with the longest name, the branch line."""
        encoding = self._encoding()
        reserved = marker_tokens(encoding)
        log = self._worst_log()
        if log is not None:
            reserved += count_tokens(_notes(log, []), encoding=encoding) + 2
        if self.policy.workspace == "worktree":
            reserved += BRANCH_NOTE_TOKENS + 2
        return reserved

    def _reserved_what(self) -> str:
        what = ["the truncation marker"]
        if self._worst_log() is not None:
            what.append("the transcript line")
        if self.policy.workspace == "worktree":
            what.append("the branch line")
        return ", ".join(what)

    def _worst_log(self) -> Path | None:
        """The longest transcript path a child of this session or below may get."""
        directory = self._log_dir()
        if directory is None:
            return None
        number = "9" * _DIGITS
        if self.policy.log_dir is not None:  # every level's logs in one directory
            return directory / f"agent-{number}-d{self.policy.max_depth}.jsonl"
        path = directory / f"agent-{number}-d{self.depth + 1}.jsonl"
        for depth in range(self.depth + 2, self.policy.max_depth + 1):  # each level's beside its own log
            path = path.with_name(path.name + ".agents") / f"agent-{number}-d{depth}.jsonl"
        return path

    # -- running calls ---------------------------------------------------------------------------

    def run_calls(self, calls: Sequence[ToolCall], *, reply_calls: Sequence[ToolCall] = ()) -> list[str]:
        """Run the ``agent`` calls of one model reply concurrently; their results in call order.
        ``reply_calls`` are all the calls of that reply (a fork gets placeholder results for them).
        A child that fails gets an error result; the others' results are delivered all the same."""
        prefix = self.parent.conversation.slice(0) if self.policy.fork else None
        pending = [c.id for c in (reply_calls or calls)] if prefix is not None else []
        if len(calls) == 1:
            results = [self._observed(calls[0], prefix, pending)]
        else:
            from concurrent.futures import ThreadPoolExecutor

            # Each call runs in a copy of this thread's context, so its span nests under this turn's.
            contexts = [contextvars.copy_context() for _ in calls]
            with ThreadPoolExecutor(max_workers=min(self.policy.max_parallel, len(calls))) as pool:
                results = list(pool.map(lambda c, cx: cx.run(self._observed, c, prefix, pending), calls, contexts))
        with self._lock:
            self.results.extend(results)
        return [r.text for r in results]

    def _observed(self, call: ToolCall, prefix: Conversation | None, pending: list[str]) -> SubagentResult:
        """:meth:`_run`, reported to the parent's ``on_event`` (and traced) as the tool call it is."""
        done: list[SubagentResult] = []

        def run() -> tuple[str, bool]:
            done.append(self._run(call, prefix, pending))
            return done[0].text, done[0].error is not None

        observe_tool(self.parent.on_event, call.name, call.id, run, False)
        return done[0]

    def _run(self, call: ToolCall, prefix: Conversation | None, pending: list[str]) -> SubagentResult:
        """One call's result, never an exception: whatever the child raises (a network error
        included) becomes its error result, so its siblings' results still reach the parent."""
        try:
            args = call.parsed()
        except OptionError:  # arguments nested too deeply to parse: not an object with a prompt
            args = None
        description = str(args.get("description", "")) if isinstance(args, Mapping) else ""
        prompt = args.get("prompt") if isinstance(args, Mapping) else None
        if not isinstance(prompt, str) or not prompt.strip():
            return SubagentResult(
                call.id,
                description,
                self.depth + 1,
                "Error: the agent tool needs a non-empty 'prompt'.",
                0,
                error="no prompt",
            )
        number = next(self._counter)
        try:
            with self._workspace(number) as space:
                token = _WORKSPACE.set(space.directory) if space.directory is not None else None
                try:
                    return self._run_child(call, description, prompt, prefix, pending, number, space)
                finally:
                    if token is not None:
                        _WORKSPACE.reset(token)
        except Exception as exc:  # noqa: BLE001 - the child's, or its workspace's: the parent's model is told
            error = failure_text(exc)
            text = self._cut(f"Error: the subagent failed: {error}")
            return SubagentResult(call.id, description, self.depth + 1, text, 0, error=error)

    def _run_child(
        self,
        call: ToolCall,
        description: str,
        prompt: str,
        prefix: Conversation | None,
        pending: list[str],
        number: int,
        space: _Space,
    ) -> SubagentResult:
        child = self._child_session(prefix, pending, number, space.directory, call.id)
        head = self.parent.sent_head
        error = None
        try:
            final = child.run(prompt, max_steps=self.policy.max_steps).text
        except Exception as exc:  # noqa: BLE001 - the parent's model gets the error as the result
            error = failure_text(exc)
            final = f"Error: the subagent failed: {error}"
        shared = None
        if prefix is not None and child.first_sent_head is not None:
            # The system prompt and the catalog are the parent's when they match byte for byte;
            # the prefix messages are the parent's by construction.
            same_head = head is not None and child.first_sent_head == head
            shared = (child.head_tokens(head) if same_head and head is not None else 0) + prefix.tokens
        log = child.log.path if child.log is not None else None
        branches = space.branches()
        text, recall_id, tokens = self._budgeted(final, _notes(log, branches, encoding=self._encoding()))
        return SubagentResult(
            call.id,
            description,
            self.depth + 1,
            text,
            tokens,
            recall_id=recall_id,
            log=log,
            steps=len(child.completions),
            workspace=space.directory,
            shared_prefix_tokens=shared,
            error=error,
            branches=branches,
            session=child,
        )

    def _budgeted(self, final: str, notes: str = "") -> tuple[str, str | None, int]:
        """The child's final text as the parent gets it, ``notes`` (lines naming the transcript
        and the branches) after it, all within the return budget: whole, or head + marker + tail
        with the whole text in the parent's store. Returns the text, the recall id and the
        final text's tokens."""
        encoding = self._encoding()
        tokens = count_tokens(final, encoding=encoding)
        budget = self.return_tokens
        if tokens <= budget and count_tokens(final + notes, encoding=encoding) <= budget:
            return final + notes, None, tokens
        recall_id = self.parent.result_store.put(final)
        room = budget - count_tokens(notes, encoding=encoding)
        while True:
            # BudgetError when the marker cannot fit: the budget was checked against the largest
            # marker and notes when the session was made, so this does not happen.
            if room < 1:
                raise BudgetError(
                    f"the subagents' return budget of {budget:,} tokens cannot hold {notes!r:.200}", budget
                )
            cut = truncate(final, room, unit="tokens", strategy="head_tail", encoding=encoding, recall_id=recall_id)
            text = cut.text + notes
            over = count_tokens(text, encoding=encoding) - budget
            if over <= 0:
                return text, recall_id, tokens
            room -= over  # the pieces' counts do not add up exactly where they join

    def _cut(self, text: str) -> str:
        """An error text within the return budget, cut without storing it (the store may be what
        failed)."""
        encoding = self._encoding()
        budget = self.return_tokens
        if count_tokens(text, encoding=encoding) <= budget:
            return text
        return truncate(text, budget, unit="tokens", strategy="head", encoding=encoding, not_stored=True).text

    # -- the child ---------------------------------------------------------------------------

    def _child_session(
        self, prefix: Conversation | None, pending: list[str], number: int, directory: Path | None, call_id: str
    ) -> Session:
        """The child for the call ``call_id``: its events reach the parent's ``on_event``, each
        naming the call (:attr:`~agentcontext.observe.events.ModelCall.agent`...)."""
        from agentcontext.compaction import Compactor
        from agentcontext.observe.emit import for_agent
        from agentcontext.sessions.log import SessionLog

        parent = self.parent
        provider = parent.provider
        conversation: Conversation | None = None
        if prefix is not None:
            conversation = prefix.slice(0)
            conversation.extend(provider.tool_results([(cid, FORK_PLACEHOLDER) for cid in pending]))
        log = None
        log_dir = self._log_dir()
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)
            log = SessionLog(self._new_log(log_dir, number), format=provider.format)
        child = self.new_session(
            provider,
            compactor=Compactor(dataclasses.replace(parent.compactor.policy), store=parent.result_store),
            conversation=conversation,
            system=parent.system if parent.compiler is None else None,
            tools=self._child_tools(),
            functions=self._child_functions(),
            max_output_tokens=parent.max_output_tokens,
            log=log,
            params=parent.params,
            result_policy=parent.result_policy or False,
            store=parent.result_store,
            compiler=self._child_compiler(directory, fork=prefix is not None),
            permissions=parent.permissions.for_child() if parent.permissions is not None else None,
            on_event=for_agent(parent.on_event, call_id),
        )
        child.depth = self.depth + 1
        child.judge_goal = False
        child.subagent_limit = self.policy.max_depth
        if self.policy.tool_filter is not None:
            child.tool_gate = self.permits
        if self.depth + 1 < self.policy.max_depth:
            child.subagents = Subagents(child, self.policy, depth=self.depth + 1, new_session=self.new_session)
        return child

    def _new_log(self, directory: Path, number: int) -> Path:
        """A transcript file made for this child alone: ``agent-<n>-d<depth>.jsonl`` created
        exclusively (never a file that exists, whichever process made it), the next number when
        the name is taken."""
        while True:
            path = directory / f"agent-{number}-d{self.depth + 1}.jsonl"
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                number = next(self._counter)
                continue
            os.close(fd)
            return path

    def _log_dir(self) -> Path | None:
        if self.policy.log_dir is not None:
            return Path(self.policy.log_dir)
        log = self.parent.log
        return log.path.with_name(log.path.name + ".agents") if log is not None else None

    def _allowed(self, name: str, spec: ToolSpec | None = None) -> bool:
        f = self.policy.tool_filter
        if f is None:
            return True
        if callable(f):
            return spec is not None and bool(f(spec))
        return name in f

    def permits(self, name: str) -> bool:
        """Whether a child may run tool ``name`` (the policy's ``tool_filter``, over the tool's
        metadata in the parent's registry when the filter is a function)."""
        compiler = self.parent.compiler
        spec = compiler.registry.get(name) if compiler is not None else None
        return self._allowed(name, spec)

    def _child_tools(self) -> list[dict[str, Any]] | None:
        """The tool definitions sent without a registry: the parent's, filtered; ``agent`` only
        while the child may still spawn."""
        tools = self.parent.tools
        if tools is None:
            return None
        if self.policy.fork:
            return list(tools)  # the parent's catalog, byte for byte (prompt cache); refused at execution
        spawn = self.depth + 1 < self.policy.max_depth
        out = [t for t in tools if (n := _tool_name(t)) is not None and (n != AGENT_TOOL or spawn) and self._allowed(n)]
        return out or None

    def _child_functions(self) -> dict[str, Any]:
        own = self.parent.functions.get("recall")
        return {
            n: f
            for n, f in self.parent.functions.items()
            if n != AGENT_TOOL and self._allowed(n) and not (n == "recall" and own == self.parent._recall)
        }

    def _child_compiler(self, directory: Path | None, *, fork: bool) -> Any:
        compiler = self.parent.compiler
        if compiler is None:
            return None
        from agentcontext.compiler.compile import Compiler
        from agentcontext.compiler.registry import Registry
        from agentcontext.compiler.sections import WorkingSet
        from agentcontext.compiler.skills import LOAD_SKILL

        ws = compiler.working_set
        registry = None
        if ws.registry is not None:
            spawn = self.depth + 1 < self.policy.max_depth
            registry = Registry(
                [
                    t
                    for t in ws.registry
                    if (t.name != AGENT_TOOL or spawn or fork) and (fork or self._allowed(t.name, t))
                ]
            )
        if fork:
            # The parent's sources as they are, so the system prompt and catalog match byte for
            # byte; root-only tools and what the filter leaves out are refused at execution.
            child_ws = dataclasses.replace(ws, registry=registry if registry is not None else ws.registry)
        else:
            child_ws = dataclasses.replace(ws, registry=registry, goal=None, root=False)
            if self.policy.tool_filter is not None:
                # The filter over every tool the child would get, the memory tools and LoadSkill
                # included (they come from the working set, not the registry).
                offered = [t.name for t in child_ws.effective() if self._allowed(t.name, t)]
                child_ws.bundle = offered
                if LOAD_SKILL not in offered:
                    child_ws.skills = None
            if directory is not None:
                child_ws = WorkingSet.load(directory, **_sources(child_ws))
        return Compiler(child_ws, mode=compiler.mode, hiding=compiler.hiding)

    def _workspace(self, number: int) -> contextlib.AbstractContextManager[_Space]:
        compiler = self.parent.compiler
        root = compiler.working_set.workspace if compiler is not None else None
        return child_workspace(self.policy.workspace, number, keep=self.policy.keep_workspace, root=root)


def marker_tokens(encoding: Literal["o200k_base", "cl100k_base"] = "o200k_base") -> int:
    """The most tokens the truncation marker of a cut final text takes (its counts at
    :data:`_DIGITS` digits, a recall id at one token a character, and the two line breaks
    :func:`~agentcontext.truncate` reserves around it)."""
    big = "9" * _DIGITS
    text = f'[... {big} lines, {big} chars, {big} tokens omitted; full text: recall(id="") ...]'
    return count_tokens(text, encoding=encoding) + _RECALL_ID_CHARS + 2


def _check_return_budget(budget: int, needed: int, what: str) -> None:
    if budget < needed:
        raise BudgetError(
            f"the subagents' return budget of {budget:,} tokens cannot hold {what} ({needed:,} tokens); "
            f"set return_tokens (or return_share) to at least {needed:,}",
            needed,
        )


def _notes(
    log: Path | None, branches: Sequence[str], *, encoding: Literal["o200k_base", "cl100k_base"] = "o200k_base"
) -> str:
    """The lines after a child's final text: the branches it left, its transcript."""
    out = ""
    if branches:
        out += "\n" + branch_note(branches, encoding)
    if log is not None:
        out += f"\n[subagent transcript: {log}]"
    return out


def _sources(ws: Any) -> dict[str, Any]:
    keys = ("base", "registry", "skills", "memory", "bundle", "root", "goal", "instruction_names")
    return {k: getattr(ws, k) for k in keys}


def _tool_name(tool: Mapping[str, Any]) -> str | None:
    name = tool.get("name")
    if name is None and isinstance(tool.get("function"), Mapping):
        name = tool["function"].get("name")
    return name if isinstance(name, str) else None
