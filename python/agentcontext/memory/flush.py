"""The memory flush: one silent turn before older history is summarized, in which the agent may
persist what it must not lose, with only the memory tools.

:func:`flush_memory` sends the conversation plus a flush instruction to the provider with the
memory tools (and nothing else), runs the memory tool calls against the store, and repeats until
the model stops calling tools or ``max_steps`` calls were made. Nothing it produces is added to
the caller's conversation or shown to the user; what it cost and what it wrote come back as a
:class:`FlushReport` (an event for the caller to record).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentcontext.errors import OptionError
from agentcontext.memory.tools import MemoryTools
from agentcontext.types import FlushReportDict

if TYPE_CHECKING:
    from agentcontext._core import Conversation
    from agentcontext.providers import Provider

__all__ = ["FLUSH_INSTRUCTION", "FlushReport", "flush_memory"]

#: What the model is told in the flush turn.
FLUSH_INSTRUCTION = (
    "[Memory flush] The older part of this conversation is about to be summarized and its details will leave "
    "your context. Before that happens, save to memory anything that must survive and is worth keeping across "
    "sessions (user preferences, corrections with their reason, project decisions and context that the code "
    "and git do not hold, where external information lives), with memory_write; update or delete records "
    "that this conversation showed to be stale. Do not save temporary task state or anything derivable from "
    "the code. If nothing needs saving, reply with the single word: nothing. Your reply is not shown to the user."
)


@dataclass
class FlushReport:
    """What one flush turn did: model calls, tokens, and the memory tool calls with their answers."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    #: ``(tool name, arguments, answer)`` for every memory tool call, in order.
    tool_calls: list[tuple[str, Any, str]] = field(default_factory=list)
    #: Names of records created, updated or deleted (from successful calls).
    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    #: True when the turn ended because ``max_steps`` model calls were made while tools were still called.
    truncated: bool = False

    def to_dict(self) -> FlushReportDict:
        return {
            "stage": "memory_flush",
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "tool_calls": len(self.tool_calls),
            "written": list(self.written),
            "deleted": list(self.deleted),
            "truncated": self.truncated,
        }


def _definitions(tools: MemoryTools, fmt: str) -> list[dict[str, Any]]:
    if fmt == "anthropic":
        return tools.definitions("anthropic")
    defs = tools.definitions("openai")
    if fmt == "responses":
        return [{"type": "function", **d["function"]} for d in defs]
    return defs


def flush_memory(
    provider: Provider,
    conversation: Conversation,
    tools: MemoryTools,
    *,
    system: str | None = None,
    max_output_tokens: int = 1_024,
    max_steps: int = 3,
    instruction: str = FLUSH_INSTRUCTION,
) -> FlushReport:
    """Run the silent flush turn over ``conversation`` (not modified) with ``provider``; the model
    may call only the memory tools of ``tools``. ``max_output_tokens`` bounds each model call's output and
    ``max_steps`` the number of model calls."""
    if not isinstance(max_output_tokens, int) or max_output_tokens < 1:
        raise OptionError(f"max_output_tokens must be a positive integer, got {max_output_tokens!r}")
    if not isinstance(max_steps, int) or max_steps < 1:
        raise OptionError(f"max_steps must be a positive integer, got {max_steps!r}")
    if conversation.format == provider.format:
        turn = conversation.slice(0)
    else:
        from agentcontext._core import Conversation as Conv

        neutral = Conv(conversation.to_jsonl(), format="jsonl", encoding=conversation.encoding)
        turn = Conv(provider.messages_of(neutral), format=provider.format, encoding=conversation.encoding)
    turn.append({"role": "user", "content": instruction})
    definitions = _definitions(tools, provider.format)
    report = FlushReport()
    for _ in range(max_steps):
        done = provider.complete(turn, max_output_tokens=max_output_tokens, system=system, tools=definitions)
        report.calls += 1
        report.input_tokens += done.usage.input_tokens
        report.output_tokens += done.usage.output_tokens
        if not done.tool_calls:
            return report
        turn.extend(done.messages)
        answers = []
        for call in done.tool_calls:
            try:
                args = call.parsed()
            except OptionError as exc:  # arguments nested too deeply: not run
                args, answer = None, f"Error: {exc}"
            else:
                answer = (
                    tools.execute(call.name, args if isinstance(args, dict) else call.arguments)
                    if tools.handles(call.name)
                    else f"Error: only the memory tools can be used now ({', '.join(tools.names)})"
                )
            report.tool_calls.append((call.name, args, answer))
            if not answer.startswith("Error") and isinstance(args, dict):
                if call.name == "memory_write":
                    report.written.append(answer.split("memory record ", 1)[1].split(" ", 1)[0])
                elif call.name == "memory_delete":
                    report.deleted.append(str(args.get("name")))
            answers.append((call.id, answer))
        turn.extend(provider.tool_results(answers))
    report.truncated = True
    return report
