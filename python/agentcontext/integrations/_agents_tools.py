"""What the OpenAI Agents SDK's model receives beside the items, as the texts
:func:`~agentcontext.integrations._beside.beside_tokens` counts: an agent's tools, its MCP
servers' tools, its handoffs and its structured output's JSON schema."""

from __future__ import annotations

import json
from typing import Any

from agentcontext.integrations._beside import text_of_type, tool_text

__all__ = ["agent_tool_texts"]


def agent_tool_texts(agent: Any) -> list[str]:
    """The definitions of ``agent``'s tools, its MCP servers' tools and its handoffs, and its output
    schema (as their counted text)."""
    out = []
    for tool in getattr(agent, "tools", None) or ():
        schema = getattr(tool, "params_json_schema", None)
        out.append(
            tool_text(str(getattr(tool, "name", type(tool).__name__)), getattr(tool, "description", None), schema)
        )
    out += _mcp_tool_texts(getattr(agent, "mcp_servers", None))
    for h in getattr(agent, "handoffs", None) or ():
        name = getattr(h, "tool_name", None) or f"transfer_to_{getattr(h, 'name', '')}"
        description = getattr(h, "tool_description", None) or getattr(h, "handoff_description", None)
        out.append(tool_text(str(name), description, getattr(h, "input_json_schema", None)))
    schema = _output_schema_text(getattr(agent, "output_type", None))
    if schema is not None:
        out.append(schema)
    return out


def _mcp_tool_texts(servers: Any) -> list[str]:
    """The definitions of the tools of an agent's MCP ``servers``, as each server last listed them
    (``MCPServer.cached_tools``: the SDK lists every server's tools before each model call, so this
    is that call's list, read with no request to the server). A server's static ``tool_filter``
    (allowed and blocked names) is applied; a callable one is not (it may await): every tool the
    server listed is counted (more, never fewer, than the model receives). A server with no list
    (never connected, or one that keeps none) adds nothing."""
    out: list[str] = []
    for server in servers if isinstance(servers, list) else ():
        try:
            listed = server.cached_tools
        except Exception:  # noqa: BLE001 - a server that cannot tell its list counts nothing here
            listed = None
        if not isinstance(listed, list):
            continue
        rule = getattr(server, "tool_filter", None)
        allowed = rule.get("allowed_tool_names") if isinstance(rule, dict) else None
        blocked = rule.get("blocked_tool_names") if isinstance(rule, dict) else None
        for tool in listed:
            name = getattr(tool, "name", None)
            if not isinstance(name, str) or (allowed is not None and name not in allowed):
                continue
            if blocked is not None and name in blocked:
                continue
            schema = getattr(tool, "input_schema", None) or getattr(tool, "inputSchema", None)
            description = getattr(tool, "description", None) or getattr(tool, "title", None)
            out.append(tool_text(name, description if isinstance(description, str) else None, schema))
    return out


#: Per output type, the text its JSON schema is counted as (the schema is made once per type).
_OUTPUT_SCHEMAS: dict[Any, str | None] = {}


def _output_schema_text(output_type: Any) -> str | None:
    """The JSON schema of an agent's structured output, which the model receives beside the tools
    (its ``text.format``), as text; None for plain text output (``None`` or ``str``)."""
    return text_of_type(_OUTPUT_SCHEMAS, output_type, _schema_text_of)


def _schema_text_of(output_type: Any) -> str | None:
    from agents.agent_output import AgentOutputSchema, AgentOutputSchemaBase

    try:
        schema = output_type if isinstance(output_type, AgentOutputSchemaBase) else AgentOutputSchema(output_type)
        return None if schema.is_plain_text() else json.dumps(schema.json_schema(), ensure_ascii=False, default=str)
    except Exception:  # noqa: BLE001 - a type the SDK cannot make a schema of fails the run there, not here
        return None
