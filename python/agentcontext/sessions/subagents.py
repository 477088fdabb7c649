"""Subagents: an ``agent`` tool whose calls run a child agent on a working set of its own.

The parent calls the tool with a short ``description`` and a complete task ``prompt``. The child is
a :class:`~agentcontext.Session` on the same provider and model that starts from a new conversation
holding only the task (or, in *fork* mode, from the parent's history), with:

- the parent's tools, skills, working directory and settings, minus the tools whose metadata says
  ``root_only`` (memory writes, snapshots) and minus what ``tool_filter`` leaves out;
- depth + 1: at ``max_depth`` the child gets no ``agent`` tool of its own;
- its own permission state (no grants; a call that would ask the user is refused, since nobody can
  answer a child), its own compactor and no snapshots.

Only the child's final text returns to the parent, as the one tool result of the call, within a
budget (``return_tokens``, by default ``return_share`` of the parent's window): a longer text is
cut head + marker + tail and kept whole in the parent's result store under the marker's recall id.
The child's whole transcript goes to a session log of its own (``log_dir``), named in the result.

*Fork* mode starts the child from the parent's history — the same prefix, so the provider's prompt
cache is reused: the parent's system prompt, tool catalog and messages up to the reply that made
the call, placeholder results for that reply's calls (they are still running in the parent), then
the task as the next user message. The catalog is the parent's; root-only tools are refused at
execution instead. :attr:`SubagentResult.shared_prefix_tokens` reports the shared part.

Several ``agent`` calls in one model reply run concurrently (threads, ``max_parallel`` at a time);
their results come back in call order. ``workspace="directory"`` gives each child an empty
directory of its own, ``"worktree"`` a git worktree of the parent's repository (removed afterwards
unless ``keep_workspace``); a tool function reads the child's directory with :func:`workspace`.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import itertools
import os
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentcontext import _checks
from agentcontext._core import Conversation, count_tokens, truncate
from agentcontext.errors import AgentContextError, OptionError

if TYPE_CHECKING:
    from agentcontext.compiler.registry import ToolSpec
    from agentcontext.loop import Session
    from agentcontext.providers import ToolCall

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

WorkspaceMode = Literal["shared", "directory", "worktree"]
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
        _checks.count("max_steps", self.max_steps, minimum=1)
        _checks.count("max_parallel", self.max_parallel, minimum=1)
        if self.workspace not in ("shared", "directory", "worktree"):
            raise OptionError(f'workspace must be "shared", "directory" or "worktree", got {self.workspace!r}')
        f = self.tool_filter
        if f is not None and not callable(f) and (isinstance(f, str) or not all(isinstance(n, str) for n in f)):
            raise OptionError("tool_filter must be a collection of tool names or a function of a ToolSpec")


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
    session: Session | None = field(default=None, repr=False)


class Subagents:
    """The ``agent`` tool of one session: runs its calls as children (see the module docs)."""

    _counter = itertools.count(1)

    def __init__(self, parent: Session, policy: SubagentPolicy | None = None, *, depth: int = 0) -> None:
        self.parent = parent
        self.policy = policy if policy is not None else SubagentPolicy()
        if not isinstance(self.policy, SubagentPolicy):
            raise OptionError(f"subagents must be a SubagentPolicy, got {type(self.policy).__name__}")
        self.depth = _checks.count("depth", depth)
        #: Every child run, in the order the calls were made.
        self.results: list[SubagentResult] = []
        self._lock = threading.Lock()

    @property
    def can_spawn(self) -> bool:
        return self.depth < self.policy.max_depth

    @property
    def return_tokens(self) -> int:
        p = self.policy
        return p.return_tokens or max(1, int(p.return_share * self.parent.provider.context_window))

    # -- running calls ---------------------------------------------------------------------------

    def run_calls(self, calls: Sequence[ToolCall], *, reply_calls: Sequence[ToolCall] = ()) -> list[str]:
        """Run the ``agent`` calls of one model reply concurrently; their results in call order.
        ``reply_calls`` are all the calls of that reply (a fork gets placeholder results for them)."""
        prefix = self.parent.conversation.slice(0) if self.policy.fork else None
        pending = [c.id for c in (reply_calls or calls)] if prefix is not None else []
        if len(calls) == 1:
            results = [self._run(calls[0], prefix, pending)]
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=min(self.policy.max_parallel, len(calls))) as pool:
                results = list(pool.map(lambda c: self._run(c, prefix, pending), calls))
        with self._lock:
            self.results.extend(results)
        return [r.text for r in results]

    def _run(self, call: ToolCall, prefix: Conversation | None, pending: list[str]) -> SubagentResult:
        try:
            args = call.parsed()
        except OptionError:  # arguments nested too deeply to parse: not an object with a prompt
            args = None
        description = args.get("description", "") if isinstance(args, Mapping) else ""
        prompt = args.get("prompt") if isinstance(args, Mapping) else None
        if not isinstance(prompt, str) or not prompt.strip():
            return SubagentResult(
                call.id,
                str(description),
                self.depth + 1,
                "Error: the agent tool needs a non-empty 'prompt'.",
                0,
                error="no prompt",
            )
        number = next(self._counter)
        try:
            with self._workspace(number) as directory:
                token = _WORKSPACE.set(directory) if directory is not None else None
                try:
                    return self._run_child(call, str(description), prompt, prefix, pending, number, directory)
                finally:
                    if token is not None:
                        _WORKSPACE.reset(token)
        except AgentContextError as exc:  # the child's, or its workspace's: the parent's model is told
            text = f"Error: the subagent failed: {type(exc).__name__}: {exc}"
            return SubagentResult(call.id, str(description), self.depth + 1, text, 0, error=str(exc))

    def _run_child(
        self,
        call: ToolCall,
        description: str,
        prompt: str,
        prefix: Conversation | None,
        pending: list[str],
        number: int,
        directory: Path | None,
    ) -> SubagentResult:
        child = self._child_session(prefix, pending, number, directory)
        head = self.parent.sent_head
        completion = child.run(prompt, max_steps=self.policy.max_steps)
        final = completion.text
        shared = None
        if prefix is not None:
            # The system prompt and the catalog are the parent's when they match byte for byte;
            # the prefix messages are the parent's by construction.
            same_head = head is not None and child.first_sent_head == head
            shared = (child.head_tokens(head) if same_head and head is not None else 0) + prefix.tokens
        text, recall_id, tokens = self._budgeted(final)
        log = child.log.path if child.log is not None else None
        if log is not None:
            text += f"\n[subagent transcript: {log}]"
        return SubagentResult(
            call.id,
            description,
            self.depth + 1,
            text,
            tokens,
            recall_id=recall_id,
            log=log,
            steps=len(child.completions),
            workspace=directory,
            shared_prefix_tokens=shared,
            session=child,
        )

    def _budgeted(self, final: str) -> tuple[str, str | None, int]:
        """The child's final text as the parent gets it: whole, or head + marker + tail within the
        return budget with the whole text in the parent's store."""
        encoding = self.parent.conversation.encoding
        tokens = count_tokens(final, encoding=encoding if encoding in ("o200k_base", "cl100k_base") else "o200k_base")
        budget = self.return_tokens
        if tokens <= budget:
            return final, None, tokens
        recall_id = self.parent.result_store.put(final)
        cut = truncate(final, budget, unit="tokens", strategy="head_tail", recall_id=recall_id)
        return cut.text, recall_id, tokens

    # -- the child ---------------------------------------------------------------------------

    def _child_session(
        self, prefix: Conversation | None, pending: list[str], number: int, directory: Path | None
    ) -> Session:
        from agentcontext.compaction import Compactor
        from agentcontext.loop import Session
        from agentcontext.session_log import SessionLog

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
            log = SessionLog(log_dir / f"agent-{number}-d{self.depth + 1}.jsonl", format=provider.format)
        child = Session(
            provider,
            compactor=Compactor(dataclasses.replace(parent.compactor.policy), store=parent.result_store),
            conversation=conversation,
            system=parent.system if parent.compiler is None else None,
            tools=self._child_tools(),
            functions=self._child_functions(),
            max_tokens=parent.max_tokens,
            log=log,
            params=parent.params,
            result_policy=parent.result_policy or False,
            store=parent.result_store,
            compiler=self._child_compiler(directory, fork=prefix is not None),
            permissions=parent.permissions.for_child() if parent.permissions is not None else None,
        )
        child.depth = self.depth + 1
        child.judge_goal = False
        child.subagent_limit = self.policy.max_depth
        if self.depth + 1 < self.policy.max_depth:
            child.subagents = Subagents(child, self.policy, depth=self.depth + 1)
        return child

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
        from agentcontext.compiler.compile import Compiler, WorkingSet
        from agentcontext.compiler.registry import Registry

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
            # byte; root-only tools are refused at execution (the child is not a root).
            child_ws = dataclasses.replace(ws, registry=registry if registry is not None else ws.registry)
        else:
            child_ws = dataclasses.replace(ws, registry=registry, goal=None, root=False)
            if directory is not None:
                child_ws = WorkingSet.load(directory, **_sources(child_ws))
        return Compiler(child_ws, mode=compiler.mode, strategy=compiler.strategy)

    @contextlib.contextmanager
    def _workspace(self, number: int) -> Iterator[Path | None]:
        import shutil
        import subprocess
        import tempfile

        mode = self.policy.workspace
        if mode == "shared":
            yield None
            return
        base = self._repository() if mode == "worktree" else None
        if mode == "worktree" and base is None:
            raise OptionError("workspace='worktree' needs the parent's workspace to be a git repository")
        directory = Path(tempfile.mkdtemp(prefix=f"agentcontext-agent-{number}-"))
        try:
            if base is not None:
                directory.rmdir()
                try:
                    _git(base, "worktree", "add", "--detach", str(directory), "HEAD")
                except (OSError, subprocess.SubprocessError) as exc:
                    why = getattr(exc, "stderr", None) or str(exc)
                    raise OptionError(
                        f"workspace='worktree': git worktree add failed in {base}: {str(why).strip()[:300]}"
                    ) from None
            yield directory
        finally:
            if not self.policy.keep_workspace:
                if base is not None:
                    with contextlib.suppress(OSError, subprocess.SubprocessError):
                        _git(base, "worktree", "remove", "--force", str(directory))
                shutil.rmtree(directory, ignore_errors=True)

    def _repository(self) -> Path | None:
        import subprocess

        compiler = self.parent.compiler
        root = compiler.working_set.workspace if compiler is not None else None
        root = root or Path.cwd()
        try:
            out = _git(root, "rev-parse", "--show-toplevel")
        except (OSError, subprocess.SubprocessError):
            return None
        return Path(out.strip())


def _sources(ws: Any) -> dict[str, Any]:
    keys = ("base", "registry", "skills", "memory", "bundle", "root", "goal")
    return {k: getattr(ws, k) for k in keys}


def _git(cwd: Path, *args: str) -> str:
    import subprocess

    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=True, stdin=subprocess.DEVNULL
    )
    return done.stdout


def _tool_name(tool: Mapping[str, Any]) -> str | None:
    name = tool.get("name")
    if name is None and isinstance(tool.get("function"), Mapping):
        name = tool["function"].get("name")
    return name if isinstance(name, str) else None
