"""How the LangChain adapter reads what it counts beside plain text: a message's content as
OpenAI parts (:func:`parts`: bare strings as text parts, LangChain's own image blocks as
``image_url`` parts that cost an image), a cut content given back with the message's own blocks
(:func:`own_blocks`), and the schema texts of a tool (:func:`schema_text`, counted by
:func:`tool_tokens`) and of a structured output (:func:`format_text`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agentcontext.integrations import _beside
from agentcontext.types import Encoding


def parts(content: Any) -> Any:
    """``content``, a LangChain message's, as the OpenAI parts the library counts: a list's bare
    strings (which LangChain allows beside the blocks) as text parts and LangChain's own image
    blocks (``{"type": "image", "base64": ...}``, or ``"source_type"`` with ``"data"`` or
    ``"url"``) as ``image_url`` parts, which cost an image (their base64 data is no text to the
    model); anything else as it is."""
    if type(content) is not list or not any(map(_to_part, content)):
        return content
    return [_part(block) for block in content]


def _to_part(block: Any) -> bool:
    """Whether :func:`_part` writes ``block`` anew."""
    return type(block) is str or (type(block) is dict and block.get("type") == "image" and "source" not in block)


def _part(block: Any) -> Any:
    if type(block) is str:
        return {"type": "text", "text": block}
    if _to_part(block):
        url = _image_url(block)
        if url is not None:
            return {"type": "image_url", "image_url": {"url": url}}
    return block


def _image_url(block: dict[str, Any]) -> str | None:
    """The URL (a ``data:`` URL for inline data) of a LangChain image block; None for an image
    given by file id."""
    data = block.get("base64")
    if data is None and block.get("source_type") == "base64":
        data = block.get("data")
    if isinstance(data, str):
        return f"data:{block.get('mime_type') or 'image/png'};base64,{data}"
    url = block.get("url")
    return url if isinstance(url, str) and block.get("source_type", "url") == "url" else None


def own_blocks(own: Any, new: Any) -> Any:
    """``new``, a content list the fit left (a result's text cut, its images kept), with each
    part that is what :func:`parts` made of one of the message's own blocks (a LangChain image
    block read as an ``image_url`` part) given back as that block; ``new`` itself otherwise."""
    if type(new) is not list or type(own) is not list:
        return new
    made = [(_part(block), block) for block in own if _to_part(block) and type(block) is dict]
    if not made:
        return new
    return [next((block for part, block in made if part == p), p) for p in new]


def format_text(form: Any) -> str:
    """The text the schema of a ``response_format`` is counted as: a ``ProviderStrategy``'s model
    arguments (the provider's response format), else each schema as the tool a ``ToolStrategy``
    binds (an ``AutoStrategy`` is counted as that: its schema goes one way or the other)."""
    from langchain.agents.structured_output import OutputToolBinding, _SchemaSpec

    to_model = getattr(form, "to_model_kwargs", None)
    if callable(to_model):
        return json.dumps(to_model(), ensure_ascii=False, default=str)
    specs = getattr(form, "schema_specs", None)
    if specs is None:
        specs = [_SchemaSpec(form.schema)] if hasattr(form, "schema") else []
    return "\n".join(schema_text(OutputToolBinding.from_schema_spec(spec).tool) for spec in specs)


def schema_text(tool: Any) -> str:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    try:
        schema: Any = convert_to_openai_tool(tool)
    except Exception:  # noqa: BLE001 - a provider's own tool spec: counted as it is written
        schema = tool if isinstance(tool, dict) else str(tool)
    return json.dumps(schema, ensure_ascii=False, default=str)


def tool_tokens(tools: Sequence[Any], encoding: Encoding, memo: dict[Any, tuple[Any, int]] | None = None) -> int:
    """The tokens of the tool schemas the model receives (each tool's OpenAI function schema as
    JSON; ``memo`` keeps each tool's count, by :func:`_tool_key` for a LangChain tool, else by
    identity): the adapters' one counter, :func:`agentcontext.integrations._beside.tool_tokens`."""
    return _beside.tool_tokens(tools, encoding, schema_text, memo=memo, key=_tool_key)


#: The classes known to be LangChain tools (``isinstance`` through ``ABCMeta``: asked once per class).
_TOOL_CLASSES: set[type] = set()


def _tool_key(tool: Any) -> tuple[Any, ...] | None:
    """A LangChain tool's class, name, description and arguments schema (a class as it is, a
    JSON-schema dict by identity: the memo holds the tool, so its dict's identity is not
    reused): what its OpenAI schema is made of. Two tools of one name and description with other
    arguments are counted each; the same tool made anew for each call is counted once."""
    cls = type(tool)
    if cls not in _TOOL_CLASSES:
        from langchain_core.tools import BaseTool

        if not isinstance(tool, BaseTool):
            return None
        if tool.__class__ is cls:  # (not an object posing as another class)
            _TOOL_CLASSES.add(cls)
    schema = tool.args_schema
    return (cls, tool.name, tool.description, schema if schema is None or isinstance(schema, type) else id(schema))
