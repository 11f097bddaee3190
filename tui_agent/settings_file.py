"""Keeping a choice made in the app (a sidebar shown or hidden) in the settings file.

``remember_setting`` sets one top-level ``key = value`` line of the settings file in use (the
working directory's ``tui-agent.toml``, else the config folder's, created if there is none) and
keeps every other line as it was: comments, order and tables. Checked by
tests/test_settings_file.py.
"""

from __future__ import annotations

import re
from pathlib import Path

from tui_agent.paths import config_dir
from tui_agent.settings import FILE_NAME, settings_file

_TABLE = re.compile(r"^\s*\[")


def remember_setting(name: str, value: bool, path: Path | None = None) -> Path:
    """Write ``name = true|false`` at the top level of the settings file; returns its path."""
    if not re.fullmatch(r"[a-z_]+", name):
        raise ValueError(f"not a settings key: {name!r}")
    path = path or settings_file() or config_dir() / FILE_NAME
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    line = f"{name} = {'true' if value else 'false'}"
    key = re.compile(rf"^\s*{name}\s*=")
    first_table = next((i for i, text in enumerate(lines) if _TABLE.match(text)), len(lines))
    for index in range(first_table):
        if key.match(lines[index]):
            lines[index] = line
            break
    else:
        lines.insert(first_table, line)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
