"""Store locations: what a path or URL names (``scheme_of``, ``sqlite_path``) and the default
location (the settings' ``db``, else a file in the data directory). No store is opened here:
``tui_agent.store.url.open_store`` does that. Checked by ``tests/test_store_url.py``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tui_agent.errors import ConfigError

MEMORY = ":memory:"
ACCEPTED = (
    "a path (/path/to/file.db), sqlite:///path/to/file.db, sqlite:///:memory:, "
    "or postgresql://user@host:port/db"
)
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
POSTGRES = ("postgresql", "postgres")


def scheme_of(location: str) -> str | None:
    """The URL scheme of ``location`` (lower case), or None for a plain path."""
    match = _SCHEME.match(location)
    if match is None or "://" not in location[: match.end() + 2]:
        return None  # "C:/x" or "name:with:colons.db" are paths
    return match.group(1).lower()


def sqlite_path(location: str | os.PathLike[str]) -> str:
    """The SQLite file of a path or ``sqlite:///`` URL (``:memory:`` for the in-memory one);
    ``ConfigError`` for anything a SQLite store cannot open."""
    text = os.fspath(location)
    if not text.strip():
        raise ConfigError(f"empty store location; give {ACCEPTED}")
    scheme = scheme_of(text)
    if scheme is None:
        return text if text == MEMORY else str(Path(text).expanduser())
    if scheme != "sqlite":
        raise not_sqlite(text, scheme)
    if not text.startswith("sqlite:///") or text == "sqlite:///":
        raise ConfigError(
            f"store URL {text!r}: a SQLite URL is sqlite:/// followed by the file's path "
            "(sqlite:///home/me/tui-agent.db) or :memory:"
        )
    path = text.removeprefix("sqlite://")  # sqlite:///a/b.db → /a/b.db, as it always was
    return MEMORY if path == "/" + MEMORY else path


def not_sqlite(text: str, scheme: str) -> ConfigError:
    shown = _without_password(text)
    if scheme in POSTGRES:
        return ConfigError(
            f"store URL {shown!r} is a PostgreSQL store, not a SQLite file: open it with "
            "tui_agent.store.open_store"
        )
    return ConfigError(f"store URL {shown!r}: unknown scheme {scheme!r}; give {ACCEPTED}")


def without_password(url: str) -> str:
    """A URL fit to show (a store's ``location``, an error): its password masked."""
    return _without_password(url)


def _without_password(url: str) -> str:
    """``postgresql://me:secret@host/db`` → ``postgresql://me:***@host/db`` (errors are shown)."""
    return re.sub(r"(://[^/:@]*):[^/@]*@", r"\1:***@", url)


def default_file() -> str:
    """``$XDG_DATA_HOME/tui-agent/tui-agent.db``: the store when no setting names one."""
    from tui_agent.paths import data_dir

    return str(data_dir() / "tui-agent.db")


def default_location() -> str:
    """The settings' ``db`` (``$TUI_AGENT_DB``, the settings file), else :func:`default_file`."""
    from tui_agent.settings import current_settings

    return current_settings().db or default_file()

