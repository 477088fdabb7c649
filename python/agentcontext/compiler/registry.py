"""The capability registry: every tool with the metadata modes are derived from.

A :class:`ToolSpec` is a tool definition (name, description, JSON Schema input) plus
``read_only``, ``execution_domain`` (``"local"``, ``"delegated"`` to another agent, or
``"remote"``), ``root_only`` (only the root agent gets it) and ``source`` (``"builtin"``,
``"mcp:<server>"``, ``"skill"`` or ``"memory"``), and the function that runs it. A
:class:`Registry` holds them all: built-in tools, MCP tool lists as ``tools/list`` returns them
(:meth:`Registry.add_mcp`), the memory tools (:meth:`Registry.add_memory`) and ``LoadSkill``
(added by the compiler when there are skills). The full registry stays at the execution layer:
what a mode hides is refused there, not just left out of the catalog.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agentcontext.errors import ArgumentTypeError, OptionError

__all__ = ["EXECUTION_DOMAINS", "Registry", "ToolSpec", "ToolStyle"]

ExecutionDomain = Literal["local", "delegated", "remote"]
ToolStyle = Literal["anthropic", "openai", "responses"]
#: Where a tool runs: on this machine, in another agent (a subagent), or on a remote server.
EXECUTION_DOMAINS: tuple[str, ...] = ("local", "delegated", "remote")
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its definition, its metadata and the function that runs it (parsed arguments in,
    result text out; None when the caller runs it)."""

    name: str
    description: str
    input_schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    read_only: bool = False
    execution_domain: ExecutionDomain = "local"
    root_only: bool = False
    source: str = "builtin"
    function: Callable[[Any], str] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise OptionError(f"tool name must be 1-128 of A-Z a-z 0-9 _ . -, got {self.name!r}")
        if not isinstance(self.description, str):
            raise OptionError(f"tool {self.name!r}: description must be a string")
        if not isinstance(self.input_schema, Mapping) or self.input_schema.get("type", "object") != "object":
            raise OptionError(f"tool {self.name!r}: input_schema must be a JSON Schema object (type: object)")
        if self.execution_domain not in EXECUTION_DOMAINS:
            raise OptionError(
                f"tool {self.name!r}: execution_domain must be one of {', '.join(EXECUTION_DOMAINS)}, "
                f"got {self.execution_domain!r}"
            )
        for flag in ("read_only", "root_only"):
            if not isinstance(getattr(self, flag), bool):
                raise OptionError(f"tool {self.name!r}: {flag} must be True or False")
        if not isinstance(self.source, str) or not self.source:
            raise OptionError(f"tool {self.name!r}: source must be a non-empty string")
        # The tool's own copy: the caller's schema (or an MCP listing) edited later does not
        # change a registered tool, nor the other way round.
        object.__setattr__(self, "input_schema", copy.deepcopy(dict(self.input_schema)))

    def definition(self, style: ToolStyle = "openai") -> dict[str, Any]:
        """The tool definition in a provider's shape (Anthropic, OpenAI Chat or Responses); a new
        object every call (editing it changes neither this tool nor an earlier definition)."""
        schema = copy.deepcopy(dict(self.input_schema))
        if style == "anthropic":
            return {"name": self.name, "description": self.description, "input_schema": schema}
        if style == "openai":
            return {
                "type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": schema},
            }
        if style == "responses":
            return {"type": "function", "name": self.name, "description": self.description, "parameters": schema}
        raise OptionError(f'unknown tool style {style!r} (expected "anthropic", "openai" or "responses")')

    def one_line(self) -> str:
        """The first line of the description (at most 160 characters)."""
        line = self.description.strip().split("\n", 1)[0].strip()
        return line if len(line) <= 160 else line[:157] + "..."


class Registry:
    """Every tool of the session, in the order added (names are unique)."""

    def __init__(self, tools: Sequence[ToolSpec] = ()) -> None:
        self._tools: dict[str, ToolSpec] = {}
        #: Goes up on every change (compilers cache the catalog per version).
        self.version = 0
        if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Iterable):
            raise ArgumentTypeError(f"Registry takes a sequence of ToolSpec objects, got {type(tools).__name__}")
        for t in tools:
            self.add(t)

    def add(self, tool: ToolSpec) -> ToolSpec:
        """Add one tool; a name already taken is an :class:`~agentcontext.errors.OptionError`."""
        if not isinstance(tool, ToolSpec):
            raise OptionError(f"a registry holds ToolSpec objects, got {type(tool).__name__}")
        if tool.name in self._tools:
            raise OptionError(
                f"tool {tool.name!r} ({tool.source}) is already registered (from {self._tools[tool.name].source})"
            )
        self._tools[tool.name] = tool
        self.version += 1
        return tool

    def tool(
        self,
        name: str,
        description: str,
        function: Callable[[Any], str] | None = None,
        *,
        input_schema: Mapping[str, Any] | None = None,
        read_only: bool = False,
        execution_domain: ExecutionDomain = "local",
        root_only: bool = False,
    ) -> ToolSpec:
        """Add a built-in tool."""
        return self.add(
            ToolSpec(
                name,
                description,
                dict(input_schema) if input_schema is not None else {"type": "object", "properties": {}},
                read_only=read_only,
                execution_domain=execution_domain,
                root_only=root_only,
                function=function,
            )
        )

    def add_mcp(
        self,
        server: str,
        tools_list: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        call: Callable[[str, Any], str] | None = None,
        execution_domain: ExecutionDomain = "remote",
        prefix: str | None = None,
    ) -> list[ToolSpec]:
        """Add the tools of MCP server ``server`` as its ``tools/list`` result gives them (the
        result object, or its ``tools`` list): ``name``, ``description``, ``inputSchema`` and
        ``annotations`` (``readOnlyHint: true`` makes a tool read-only; anything else is treated
        as writing). ``call(name, arguments)`` runs a tool on the server. ``prefix`` is put before
        every name (e.g. ``"mcp__github__"``). A malformed entry is an
        :class:`~agentcontext.errors.OptionError` naming the server and the entry."""
        if not isinstance(server, str) or not server:
            raise OptionError(f"server must be a non-empty string, got {server!r}")
        if prefix is not None and not isinstance(prefix, str):
            raise ArgumentTypeError(
                f"MCP server {server!r}: prefix must be a string or None, got {type(prefix).__name__}"
            )
        if call is not None and not callable(call):
            raise ArgumentTypeError(
                f"MCP server {server!r}: call must be a function or None, got {type(call).__name__}"
            )
        entries = tools_list.get("tools") if isinstance(tools_list, Mapping) else tools_list
        if not isinstance(entries, Sequence) or isinstance(entries, str | bytes):
            raise OptionError(f"MCP server {server!r}: tools/list must give a list of tools")
        added: list[ToolSpec] = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                raise OptionError(f"MCP server {server!r}: tool #{i} has no name")
            raw = entry["name"]
            schema = entry.get("inputSchema", {"type": "object", "properties": {}})
            if not isinstance(schema, Mapping):
                raise OptionError(f"MCP server {server!r}: tool {raw!r}: inputSchema is not an object")
            notes = entry.get("annotations")
            notes = {} if notes is None else notes
            if not isinstance(notes, Mapping):
                raise OptionError(f"MCP server {server!r}: tool {raw!r}: annotations is not an object")
            description = entry.get("description") or notes.get("title") or ""
            runner = None
            if call is not None:
                runner = _mcp_runner(call, raw)
            try:
                spec = ToolSpec(
                    f"{prefix or ''}{raw}",
                    str(description),
                    dict(schema),
                    read_only=notes.get("readOnlyHint") is True,
                    execution_domain=execution_domain,
                    source=f"mcp:{server}",
                    function=runner,
                )
            except OptionError as exc:
                raise OptionError(f"MCP server {server!r}: tool #{i}: {exc}") from None
            added.append(spec)
        seen: set[str] = set()
        for spec in added:  # all or nothing
            if spec.name in seen:
                raise OptionError(f"MCP server {server!r}: tools/list gives tool {spec.name!r} twice")
            seen.add(spec.name)
            if spec.name in self._tools:
                raise OptionError(
                    f"MCP server {server!r}: tool {spec.name!r} is already registered "
                    f"(from {self._tools[spec.name].source}); give a prefix"
                )
        for spec in added:
            self.add(spec)
        return added

    def add_memory(self, tools: Any) -> list[ToolSpec]:
        """Add the memory tools of a :class:`~agentcontext.memory.MemoryTools` (``memory_show``,
        ``memory_list`` and ``memory_search`` are read-only; the writes are root-only)."""
        from agentcontext.memory.tools import MemoryTools

        if not isinstance(tools, MemoryTools):
            raise OptionError(f"add_memory takes a MemoryTools, got {type(tools).__name__}")
        added = []
        writes = tools.root_only  # the names only the root gets (True / False: all or none)
        for definition in tools.definitions("anthropic"):
            name = definition["name"]
            added.append(
                self.add(
                    ToolSpec(
                        name,
                        definition["description"],
                        definition["input_schema"],
                        read_only=name in {"memory_show", "memory_list", "memory_search"},
                        root_only=writes if isinstance(writes, bool) else name in writes,
                        source="memory",
                        function=_memory_runner(tools, name),
                    )
                )
            )
        return added

    def remove(self, name: str) -> None:
        if self._tools.pop(name, None) is not None:
            self.version += 1

    def get(self, name: str) -> ToolSpec | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def bundle(self, names: Collection[str] | None) -> list[ToolSpec]:
        """The tools in ``names`` (tool names, or ``source:<source>`` for every tool of a source,
        e.g. ``source:memory`` or ``source:mcp:github``), in registry order; None is every tool."""
        if names is None:
            return list(self._tools.values())
        if isinstance(names, str):
            raise OptionError(f"a bundle is a collection of names, got the string {names!r}")
        if not isinstance(names, Collection):
            raise ArgumentTypeError(f"a bundle is a collection of names, got {type(names).__name__}")
        wanted = set(names)
        return [t for t in self._tools.values() if t.name in wanted or f"source:{t.source}" in wanted]


def _mcp_runner(call: Callable[[str, Any], str], name: str) -> Callable[[Any], str]:
    def run(arguments: Any) -> str:
        return call(name, arguments)

    return run


def _memory_runner(tools: Any, name: str) -> Callable[[Any], str]:
    def run(arguments: Any) -> str:
        return str(tools.execute(name, arguments if arguments is not None else {}))

    return run
