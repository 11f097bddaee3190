"""``MCPClient``: the tools of Model Context Protocol servers as tools of an Agent, as Mastra's
``MCPClient`` gives them.

    client = MCPClient(servers={
        "calc": {"command": "python", "args": ["server.py"], "env": {"UNITS": "si"}},  # stdio
        "docs": {"url": "http://127.0.0.1:8000/mcp"},                              # HTTP
    })
    agent = Agent(..., tools=await client.get_tools())  # calc_add, docs_search, …
    ...
    await client.disconnect()

Each tool is named ``serverName_toolName`` (characters a tool id cannot hold become ``_``),
described by the server's description and checked against the server's input schema before
the call is sent. A server starts on first use and again on the call after it was lost; a call
that cannot be answered (the server did not start, exited, or passed its ``timeout``) is the
call's tool error naming the server and the tool, and the run goes on. Tested by
tests/test_mcp.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from tui_agent.errors import ConfigError, ToolDefinitionError
from tui_agent.mcp.connection import ServerConnection
from tui_agent.mcp.errors import MCPServerError
from tui_agent.mcp.results import tool_output
from tui_agent.settings_mcp import SERVER_NAME, MCPServerSettings
from tui_agent.tools import Tool, create_tool

#: Mastra's default: a minute for each call.
DEFAULT_TIMEOUT_S = 60.0
#: Starting a server (spawn, handshake): a package runner may fetch the server first.
DEFAULT_CONNECT_TIMEOUT_S = 30.0

_NOT_IN_ID = re.compile(r"[^A-Za-z0-9_-]")
#: The longest function name providers take (OpenAI's and Anthropic's ``{1,64}``).
MAX_ID = 64


class MCPClient:
    """Tools from MCP servers. ``servers``: name → ``{"command", "args", "env", "cwd"}`` (a
    server on stdio) or ``{"url"}`` (streamable HTTP), each with optional ``timeout`` and
    ``connect_timeout`` (seconds; default: the client's) and ``require_approval`` (true, or
    the server's tool names)."""

    def __init__(
        self,
        *,
        servers: Mapping[str, Any],
        timeout: float = DEFAULT_TIMEOUT_S,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
        id: str | None = None,
    ) -> None:
        if not isinstance(servers, Mapping):
            raise ConfigError(
                f"MCPClient: servers must be a dict of name → server, not {type(servers).__name__}"
            )
        for what, value in (("timeout", timeout), ("connect_timeout", connect_timeout)):
            if not isinstance(value, int | float) or value <= 0:
                raise ConfigError(f"MCPClient: {what} must be a number of seconds > 0")
        self.id = id
        self._connections = {
            name: ServerConnection(
                name, _server_config(name, config), timeout=timeout, connect_timeout=connect_timeout
            )
            for name, config in servers.items()
        }
        #: The servers left out by the last ``get_tools(skip_failed=True)``: name → why.
        self.failures: dict[str, str] = {}

    @property
    def servers(self) -> list[str]:
        return list(self._connections)

    async def get_tools(self, *, skip_failed: bool = False) -> dict[str, Tool]:
        """Every server's tools, ``{"serverName_toolName": Tool}``. A server that cannot be
        listed raises its :class:`MCPServerError`, or with ``skip_failed`` is left out and
        named in :attr:`failures`."""
        toolsets = await self.get_toolsets(skip_failed=skip_failed)
        return {tool_id: tool for tools in toolsets.values() for tool_id, tool in tools.items()}

    async def get_toolsets(self, *, skip_failed: bool = False) -> dict[str, dict[str, Tool]]:
        """The tools by server: ``{"serverName": {"serverName_toolName": Tool}}``."""
        names = list(self._connections)
        listed = await asyncio.gather(
            *(self._server_tools(name) for name in names), return_exceptions=True
        )
        self.failures = {}
        toolsets: dict[str, dict[str, Tool]] = {}
        for name, tools in zip(names, listed, strict=True):
            if isinstance(tools, MCPServerError) and skip_failed:
                self.failures[name] = str(tools)
            elif isinstance(tools, BaseException):
                raise tools
            else:
                toolsets[name] = tools
        return toolsets

    #: Mastra's newer names for the same.
    list_tools = get_tools
    list_toolsets = get_toolsets

    async def disconnect(self) -> None:
        """Stop every stdio server and close every connection (each wait bounded)."""
        await asyncio.gather(*(c.close() for c in self._connections.values()))

    async def __aenter__(self) -> MCPClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.disconnect()

    # -- one server's tools --------------------------------------------------------------------

    async def _server_tools(self, name: str) -> dict[str, Tool]:
        connection = self._connections[name]
        listed = await connection.list_tools()
        approval = connection.config.require_approval
        if isinstance(approval, list):
            missing = sorted(set(approval) - {tool.name for tool in listed})
            if missing:  # a guard that guards nothing: refuse rather than run the tool unasked
                known = ", ".join(sorted(tool.name for tool in listed)) or "none"
                raise MCPServerError(
                    f"MCP server {name!r}: require_approval names no tool of "
                    f"the server: {', '.join(missing)} (its tools: {known})"
                )
        tools: dict[str, Tool] = {}
        for listed_tool in listed:
            tool = _tool_for(connection, listed_tool, tool_id(name, listed_tool.name, tools))
            tools[tool.id] = tool
        return tools


def _server_config(name: Any, config: Any) -> MCPServerSettings:
    if not isinstance(name, str) or not SERVER_NAME.fullmatch(name):
        raise ConfigError(f"MCP server name {name!r}: letters, digits, '_' and '-' only")
    if isinstance(config, MCPServerSettings):
        return config
    try:
        return MCPServerSettings.model_validate(config)
    except ValidationError as error:
        problem = error.errors()[0]
        field = ".".join(str(part) for part in problem["loc"])
        where = f"MCP server {name!r}" + (f": {field}" if field else "")
        raise ConfigError(f"{where}: {problem['msg'].removeprefix('Value error, ')}") from None


def tool_id(server: str, name: str, taken: Mapping[str, object] | None = None) -> str:
    """``server_name`` as a tool id: a character an id cannot hold becomes ``_``; past
    ``MAX_ID`` characters (what providers take of a function name), or when two of a server's
    names come out the same, it is cut and ends in a hash of the real name, so ids stay unique.
    """
    plain = f"{server}_{_NOT_IN_ID.sub('_', name)}"
    if len(plain) <= MAX_ID and plain not in (taken or {}):
        return plain
    digest = hashlib.sha1(f"{server}\0{name}".encode()).hexdigest()[:8]
    return f"{plain[: MAX_ID - 9]}_{digest}"


def _tool_for(connection: ServerConnection, listed: Any, id: str) -> Tool:
    """The Agent's tool for one tool the server listed."""
    server, name = connection.name, listed.name
    approval = connection.config.require_approval
    needs_approval = approval is True or (isinstance(approval, list) and name in approval)

    async def execute(tool_input: dict[str, Any]) -> Any:
        result = await connection.call_tool(name, tool_input)
        return tool_output(server, name, result)

    try:
        return create_tool(
            id=id,
            description=listed.description or listed.title or f"{name} (MCP server {server})",
            input_schema=dict(listed.input_schema or {"type": "object", "properties": {}}),
            execute=execute,
            require_approval=needs_approval,
        )
    except ToolDefinitionError as error:
        raise MCPServerError(f"MCP server {server!r}, tool {name!r}: {error}") from None
