"""Tool definitions (JSON schemas, in the OpenAI or Anthropic style) for the tools this package executes."""

from __future__ import annotations

from typing import Any, Literal

from agentcontext.errors import OptionError

__all__ = ["read_file_tool", "recall_tool"]


def recall_tool(style: Literal["openai", "anthropic"] = "openai") -> dict[str, Any]:
    """The definition of the ``recall`` tool that :class:`Recall` executes, for a tool list."""
    description = (
        "Read back the original of something shortened, cleared, summarized or dropped from the conversation. "
        "Pass the recall id its marker shows. Pages are by lines (offset, limit); a long line is paged by "
        "character (char_offset, as the page's last line tells). For a JSON result, path selects a value "
        "inside it first, like $.items[3].name, $['key'][-1] or $.items[*].id."
    )
    schema = _paged_schema("id", "The recall id from the marker, like r-3fa2... or a tool call id.")
    schema["properties"]["char_offset"] = {
        "type": "integer",
        "minimum": 0,
        "description": "Character offset (0-based) to start from instead of a line.",
    }
    schema["properties"]["path"] = {
        "type": "string",
        "description": "A JSON path into a JSON result: $, .key, ['key'], [n], [-n], [*].",
    }
    return _tool("recall", description, schema, style)


def _paged_schema(key: str, description: str) -> dict[str, Any]:
    """A tool input of one required string ``key`` plus optional ``offset`` and ``limit`` lines."""
    return {
        "type": "object",
        "properties": {
            key: {"type": "string", "description": description},
            "offset": {"type": "integer", "minimum": 1, "description": "First line to show (1-based)."},
            "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to show."},
        },
        "required": [key],
    }


def _tool(name: str, description: str, schema: dict[str, Any], style: str) -> dict[str, Any]:
    if style == "anthropic":
        return {"name": name, "description": description, "input_schema": schema}
    if style == "openai":
        return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}
    raise OptionError(f'unknown tool style {style!r} (expected "openai" or "anthropic")')


def read_file_tool(style: Literal["openai", "anthropic"] = "openai", *, max_lines: int = 2000) -> dict[str, Any]:
    """The definition of a ``read_file`` tool matching :class:`FileReader`."""
    description = (
        f"Read a text file. Returns at most {max_lines} lines or 50 KB, whichever comes first, with line numbers; "
        "longer output ends with a hint telling the offset to continue from. Use offset and limit to read large "
        "files in parts, and grep to find what you need in very large ones."
    )
    return _tool("read_file", description, _paged_schema("path", "Path of the file."), style)
