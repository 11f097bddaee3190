"""``tui-agent config``: the effective settings and where each value came from (a flag, a
``TUI_AGENT_*`` variable, the settings file, or the default). A setting left to its default
shows the value in force (the store's default file, ``$USER``, the lease's 15 s…), never
``null`` (tests/test_settings.py). Settings hold no secrets, and a value whose name looks like
one is masked anyway, as is the password of a ``db`` URL."""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

from tui_agent.settings import ENV_PREFIX, Settings, settings_file
from tui_agent.store.location import without_password

_SECRET_WORDS = ("key", "token", "secret", "password")


async def run_config(args: argparse.Namespace) -> int:
    settings = args.settings
    path = settings_file()
    print(f"# settings file: {path or 'none (./tui-agent.toml or ~/.config/tui-agent/)'}")
    values = settings.model_dump(mode="json")
    defaults = _defaults(settings)
    width = max(len(name) for name in values)
    servers = values["mcp"]["servers"]
    for name, value in values.items():
        if name == "mcp" and servers:
            continue
        source = settings.sources[name]
        if source == "env":
            source = f"environment {ENV_PREFIX}{name.upper()}"
        if value is None and name in defaults:
            value, note = defaults[name]
            source = f"{source} ({note})" if note else source
        print(f"{name:<{width}}  {_shown(name, value):<40}  # {source}")
    if servers:
        print("# MCP servers: each tool is the agent's as NAME_TOOL")
        for name, server in settings.mcp.servers.items():
            shown = json.dumps(_server_shown(server), ensure_ascii=False)
            print(f"mcp.servers.{name}  {shown}  # {settings.sources['mcp']}")
    return 0


def _defaults(settings: Settings) -> dict[str, tuple[Any, str]]:
    """What a setting left unset (None) means: its value in force, and how it is chosen."""
    from tui_agent.demo.agent import DEMO_ID
    from tui_agent.memory import DEFAULT_LEASE_TTL_S
    from tui_agent.models.local.server import default_threads
    from tui_agent.signals.limits import InputLimits
    from tui_agent.startup.agents import default_resource
    from tui_agent.store.location import default_file

    ttl = settings.lease_ttl_s or DEFAULT_LEASE_TTL_S
    limits = InputLimits()
    first = settings.agents[0].id if settings.agents else None
    values: dict[str, tuple[Any, str]] = {
        "db": (default_file(), "$XDG_DATA_HOME/tui-agent/tui-agent.db"),
        "resource": (default_resource(), "$USER"),
        "theme": ("tui-agent-dark", "unless one was picked in the app"),
        "default_agent": (first or DEMO_ID, "the first of agents" if first else
                          "the demo agent"),
        "lease_ttl_s": (ttl, ""),
        "lease_renew_s": (round(ttl / 3, 3), "lease_ttl_s / 3"),
        "local_threads": (default_threads(), "every CPU core but one"),
    }
    for name in settings.input_limits_names():
        values[name] = (getattr(limits, name), "")
    return values


def _server_shown(server: Any) -> dict[str, Any]:
    """An MCP server's settings as given, fit to show: every ``env`` value masked (that is where
    a server's keys go), a secret-looking flag's value in ``args`` masked, and a URL's password
    and secret-looking query values."""
    shown = server.model_dump(mode="json", exclude_defaults=True)
    if "env" in shown:
        shown["env"] = dict.fromkeys(shown["env"], "***")
    if "args" in shown:
        shown["args"] = _args_masked(shown["args"])
    if "url" in shown:
        shown["url"] = re.sub(r"([?&])([^=&]+)=([^&]*)",
                              lambda m: m.group(0) if not _secret(m.group(2))
                              else f"{m.group(1)}{m.group(2)}=***",
                              without_password(shown["url"]))
    return shown


def _args_masked(args: list[str]) -> list[str]:
    """``--api-key X``, ``--token=X`` → ``--api-key ***``, ``--token=***``."""
    masked: list[str] = []
    for arg in args:
        flag, equals, _ = arg.partition("=")
        if masked and masked[-1].startswith("-") and "=" not in masked[-1] and _secret(
                masked[-1].lstrip("-")):
            masked.append("***")
        elif equals and flag.startswith("-") and _secret(flag.lstrip("-")):
            masked.append(f"{flag}=***")
        else:
            masked.append(arg)
    return masked


def _shown(name: str, value: Any) -> str:
    if value is not None and _secret(name):
        return '"***"'
    if name == "db" and isinstance(value, str):  # postgresql://me:secret@host/db
        value = without_password(value)
    return json.dumps(_masked(value), ensure_ascii=False)


def _secret(name: str) -> bool:
    """``api_key``, ``token``, ``client-secret`` … (but not ``keymap``)."""
    words = name.lower().replace("-", "_").split("_")
    return any(word in _SECRET_WORDS or word == "apikey" for word in words)


def _masked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: "***" if _secret(str(k)) else _masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return value
