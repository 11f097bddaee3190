"""``open_store(url)``: the one place a store location (``--db``, ``TUI_AGENT_DB``, the settings
file's ``db``, ``Memory("…")``) becomes a store.

Accepted: a plain path (``~`` expanded), ``sqlite:///path``, ``sqlite:///:memory:``; and
``postgresql://…``/``postgres://…``, the PostgreSQL store (``tui_agent.store.postgres``; without
its optional driver, one ``ConfigError`` saying ``pip install 'tui-agent[postgres]'``). Anything
else is one ``ConfigError`` naming the scheme and the accepted forms. Checked by
``tests/test_store_url.py``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from tui_agent.store.location import POSTGRES, default_location, scheme_of, sqlite_path

if TYPE_CHECKING:
    from tui_agent.store.contract import Store


def open_store(url: str | os.PathLike[str] | None = None) -> Store:
    """The store at ``url`` (a path or URL, see the module docstring); None: the default
    location. The store connects lazily, on its first use."""
    location = default_location() if url is None else url
    text = os.fspath(location)
    scheme = scheme_of(text)
    if scheme in POSTGRES:
        from tui_agent.store.postgres import PostgresStore

        return PostgresStore(text)
    from tui_agent.store.sqlite import SqliteStore

    return SqliteStore(sqlite_path(text))
