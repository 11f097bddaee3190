"""The settings' MCP servers (``[mcp.servers.NAME]``) as tools of the agent the CLI and the app
build: ``attach_mcp_tools`` (by ``build_agent``) makes the agent's tools its own plus its
servers', which start when the agent first needs its tools, or before, when a front end calls
``start_mcp_tools`` to report a server that does not start (one line each: the CLI prints it,
the app shows it as a notice). Such a server's tools are left out; nothing else stops.
``close_mcp_tools`` stops the servers. Tested by tests/test_mcp_settings.py."""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import Callable
from typing import Any

from tui_agent.settings import Settings
from tui_agent.settings_mcp import MCPServerSettings


def _warn(line: str) -> None:
    print(f"tui-agent: warning: {line}", file=sys.stderr)


class MCPToolbox:
    """The agent's tools (``base``: a dict, or a function of the request context) and those of
    the MCP ``servers``, as one function of the request context (``Agent.tools``). The servers
    start once, on the first call or :meth:`start`; what failed is reported once, by ``warn``
    unless :meth:`start` returned it first."""

    def __init__(
        self, base: Any, servers: dict[str, MCPServerSettings], warn: Callable[[str], None] = _warn
    ) -> None:
        from tui_agent.mcp import MCPClient

        self.base = base
        self.client = MCPClient(servers=servers)
        self._warn = warn
        self._tools: dict[str, Any] | None = None
        self._problems: list[str] = []
        self._reported = False
        self._lock: asyncio.Lock | None = None

    async def start(self) -> list[str]:
        """Start the servers (once) and list their tools; the problems, one line each (a
        server that did not start, a tool name the agent's own tools already hold)."""
        await self._started()
        self._reported = True
        return list(self._problems)

    async def __call__(self, context: Any) -> dict[str, Any]:
        mcp_tools = await self._started()
        if not self._reported:
            self._reported = True
            for line in self._problems:
                self._warn(line)
        base: Any = self.base(context) if callable(self.base) else self.base
        if inspect.isawaitable(base):
            base = await base
        own: dict[str, Any] = dict(base or {})
        return {**mcp_tools, **own}  # the agent's own tools win a name

    async def _started(self) -> dict[str, Any]:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._tools is None:
                tools = await self.client.get_tools(skip_failed=True)
                self._problems = [
                    f"{why}; its tools are left out" for why in self.client.failures.values()
                ]
                own = {} if callable(self.base) else dict(self.base or {})
                self._problems += [
                    f"MCP tool {name!r} is left out: the agent has a tool of that name"
                    for name in tools
                    if name in own
                ]
                self._tools = {name: tool for name, tool in tools.items() if name not in own}
            return self._tools

    async def close(self) -> None:
        await self.client.disconnect()


def attach_mcp_tools(agent: Any, settings: Settings) -> None:
    """Give ``agent`` the settings' MCP servers' tools (nothing starts yet); no servers, no
    change."""
    servers = settings.mcp.servers
    if servers and not isinstance(agent.tools, MCPToolbox):
        agent.tools = MCPToolbox(agent.tools, dict(servers))


async def start_mcp_tools(agent: Any) -> list[str]:
    """Start the agent's MCP servers now; the lines to report (none if all started)."""
    toolbox = agent.tools
    return await toolbox.start() if isinstance(toolbox, MCPToolbox) else []


async def close_mcp_tools(agent: Any) -> None:
    """Stop the agent's MCP servers (each wait bounded)."""
    if isinstance(agent.tools, MCPToolbox):
        await agent.tools.close()
