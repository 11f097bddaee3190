"""The settings file's MCP servers, ``[mcp.servers.NAME]`` (``Settings.mcp``): what each one
is and how it is checked, for the settings and for ``tui_agent.mcp.MCPClient`` alike, so that a
bad server is the same clear error, naming the server and the field, from either (tests:
tests/test_mcp_settings.py, tests/test_mcp.py)."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

SERVER_NAME = re.compile(r"[A-Za-z0-9_-]+")


class MCPServerSettings(BaseModel):
    """One MCP server (``[mcp.servers.NAME]``): ``command`` (with ``args``, ``env``, ``cwd``) to
    start it on stdio, or ``url`` of its streamable-HTTP endpoint; ``timeout`` bounds each call,
    ``connect_timeout`` its start (seconds); ``require_approval``: every tool of the server
    (true) or those named (the server's own tool names). Checked by tests/test_mcp_settings.py."""

    model_config = ConfigDict(extra="forbid")

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    timeout: float | None = None
    connect_timeout: float | None = None
    require_approval: StrictBool | list[str] = False  # "yes" is a mistake, not true

    @field_validator("command", "cwd")
    @classmethod
    def _home(cls, value: str | None) -> str | None:
        return str(Path(value).expanduser()) if value and value.startswith("~") else value

    @field_validator("timeout", "connect_timeout")
    @classmethod
    def _seconds(cls, value: float | None) -> float | None:
        if value is not None and value <= 0:
            raise ValueError("a number of seconds > 0")
        return value

    @field_validator("url")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"https?://[^/\s]+", value):
            raise ValueError("an http:// or https:// URL, e.g. 'http://127.0.0.1:8000/mcp'")
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (a server on stdio) or url (streamable HTTP)")
        if self.url is not None and (self.args or self.env or self.cwd):
            raise ValueError("args, env and cwd belong to a command, not to a url")
        if self.command is not None and not self.command.strip():
            raise ValueError("command must not be empty")
        return self


class MCPSettings(BaseModel):
    """``[mcp.servers.NAME]`` tables: the MCP servers whose tools the CLI's and app's agent
    gets."""

    model_config = ConfigDict(extra="forbid")

    servers: dict[str, MCPServerSettings] = Field(default_factory=dict)

    @field_validator("servers")
    @classmethod
    def _names(cls, value: dict[str, MCPServerSettings]) -> dict[str, MCPServerSettings]:
        for name in value:
            if not SERVER_NAME.fullmatch(name):
                raise ValueError(f"server name {name!r}: letters, digits, '_' and '-' only")
        return value
