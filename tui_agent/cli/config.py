"""``tui-agent config``: the effective settings and where each value came from (a flag, a
``TUI_AGENT_*`` variable, the settings file, or the default). Settings hold no secrets, and a
value whose name looks like one is masked anyway, as is the password of a ``db`` URL."""

from __future__ import annotations

import argparse
import json
from typing import Any

from tui_agent.settings import settings_file
from tui_agent.store.location import without_password

_SECRET_WORDS = ("key", "token", "secret", "password")


async def run_config(args: argparse.Namespace) -> int:
    settings = args.settings
    path = settings_file()
    print(f"# settings file: {path or 'none (./tui-agent.toml or ~/.config/tui-agent/)'}")
    values = settings.model_dump(mode="json")
    width = max(len(name) for name in values)
    for name, value in values.items():
        print(f"{name:<{width}}  {_shown(name, value):<40}  # {settings.sources[name]}")
    return 0


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
