"""Where tui-agent keeps its files (XDG base directories)."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "tui-agent"


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "tui-agent"


def default_db_path() -> Path:
    """The settings' ``db`` (``$TUI_AGENT_DB``, the settings file), else
    ``$XDG_DATA_HOME/tui-agent/tui-agent.db``."""
    from tui_agent.settings import current_settings

    override = current_settings().db
    return Path(strip_sqlite_scheme(override)) if override else data_dir() / "tui-agent.db"


def strip_sqlite_scheme(location: str) -> str:
    """``sqlite:///path/to.db`` → ``/path/to.db`` (a plain path is returned as it is)."""
    return location.removeprefix("sqlite://") if location.startswith("sqlite:///") else location
