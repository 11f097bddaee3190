"""Tools from Model Context Protocol servers, on the official ``mcp`` SDK:
``from tui_agent.mcp import MCPClient``. The SDK loads when a server is first started, so
neither ``import tui_agent`` nor this package imports it (tests/test_import.py)."""

from __future__ import annotations

from tui_agent.mcp.client import MCPClient
from tui_agent.mcp.errors import MCPServerError, MCPToolError

__all__ = ["MCPClient", "MCPServerError", "MCPToolError"]
