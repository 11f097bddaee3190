"""The errors of MCP tools. Both reach the model as the call's tool error (the run goes on) and
name the server and the tool."""

from __future__ import annotations

from tui_agent.errors import TuiAgentError


class MCPServerError(TuiAgentError):
    """An MCP server could not be used: it did not start, it exited, or it did not answer in
    time. Names the server (and the tool, for a call)."""


class MCPToolError(TuiAgentError):
    """An MCP tool answered with an error result (``isError``)."""
