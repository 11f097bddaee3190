"""An MCP ``CallToolResult`` as a tool result: the structured content if the server gave one,
else the text (one string), else the content blocks as plain dicts (an image or audio block
keeps its base64 ``data`` and ``mime_type``). An error result raises :class:`MCPToolError`.
Tested by tests/test_mcp.py."""

from __future__ import annotations

from typing import Any

from tui_agent.mcp.errors import MCPToolError


def tool_output(server: str, tool: str, result: Any) -> Any:
    """What the tool returns for ``result`` (an ``mcp.types.CallToolResult``)."""
    blocks = [_block(block) for block in getattr(result, "content", None) or []]
    if getattr(result, "is_error", False):
        text = _text_of(blocks) or "the tool failed"
        raise MCPToolError(f"MCP server {server!r}, tool {tool!r}: {text}")
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        return structured
    if all(block.get("type") == "text" for block in blocks):
        return _text_of(blocks)
    return blocks


def _block(block: Any) -> dict[str, Any]:
    """A content block as JSON: its own fields, without ``annotations`` and ``_meta``."""
    data = block.model_dump(mode="json", exclude_none=True, by_alias=False)
    data.pop("annotations", None)
    data.pop("meta", None)
    return data


def _text_of(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(block["text"] for block in blocks if block.get("type") == "text")
