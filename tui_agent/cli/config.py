"""``tui-agent config``: the effective settings and where each value came from (a flag, a
``TUI_AGENT_*`` variable, the settings file, or the default). A setting left to its default
shows the value in force (the store's default file, ``$USER``, the lease's 15 s…), never
``null`` (tests/test_settings.py). Settings hold no secrets, and a value whose name looks like
one is masked anyway, as is the password of a ``db`` URL."""

from __future__ import annotations

import argparse
import json
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
    for name, value in values.items():
        source = settings.sources[name]
        if source == "env":
            source = f"environment {ENV_PREFIX}{name.upper()}"
        if value is None and name in defaults:
            value, note = defaults[name]
            source = f"{source} ({note})" if note else source
        print(f"{name:<{width}}  {_shown(name, value):<40}  # {source}")
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
