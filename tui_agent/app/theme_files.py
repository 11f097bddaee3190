"""Themes from TOML files: the ones shipped in ``themes/`` and the user's own.

A theme file holds the fields of Textual's ``Theme`` (``name``, ``primary``, … and a
``[variables]`` table). User themes live in ``$XDG_CONFIG_HOME/tui-agent/themes/*.toml``; a bad
file is reported by name and skipped, never fatal. The chosen theme is remembered in
``$XDG_CONFIG_HOME/tui-agent/app-state.json``.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

from textual.theme import Theme

from tui_agent.paths import config_dir

SHIPPED_DIR = Path(__file__).parent / "themes"
DEFAULT_THEME = "tui-agent-dark"
_THEME_FIELDS = {f.name for f in fields(Theme)}


class ThemeFileError(ValueError):
    """A theme file that cannot be used; the message names the file and the problem."""


def load_theme(path: Path) -> Theme:
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ThemeFileError(f"{path}: {error}") from None
    unknown = sorted(set(data) - _THEME_FIELDS)
    if unknown:
        raise ThemeFileError(f"{path}: unknown keys {unknown} (Theme fields: name, primary, …)")
    if "name" not in data or "primary" not in data:
        raise ThemeFileError(f"{path}: a theme needs at least `name` and `primary`")
    try:
        return Theme(**data)
    except (TypeError, ValueError) as error:
        raise ThemeFileError(f"{path}: {error}") from None


def discover_themes() -> tuple[list[Theme], list[str]]:
    """Shipped themes, then the user's (which may replace one by name); and the errors."""
    themes: list[Theme] = []
    errors: list[str] = []
    for folder in (SHIPPED_DIR, config_dir() / "themes"):
        for path in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
            try:
                themes.append(load_theme(path))
            except ThemeFileError as error:
                errors.append(str(error))
    return themes, errors


def _state_file() -> Path:
    return config_dir() / "app-state.json"


def remembered_theme() -> str | None:
    try:
        value = json.loads(_state_file().read_text(encoding="utf-8")).get("theme")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def remember_theme(name: str) -> None:
    path = _state_file()
    try:
        state = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        if not isinstance(state, dict):
            state = {}
        state["theme"] = name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(state, indent=2), encoding="utf-8")
    except (OSError, ValueError):
        pass  # a read-only home: the theme just isn't remembered
