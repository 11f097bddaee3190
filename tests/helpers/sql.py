"""Looking inside a store in tests, whichever it is: ``?`` placeholders become ``$1, $2, …``
on PostgreSQL. ``rows`` reads on the store's own connection; ``rows_sync`` on a connection of
its own, from plain code (SQLite: the file; PostgreSQL: a thread with its own loop)."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from tui_agent import SqliteStore


def dollar_params(sql: str) -> str:
    counter = iter(range(1, 1000))
    return re.sub(r"\?", lambda _match: f"${next(counter)}", sql)


async def rows(store: Any, sql: str, *params: Any) -> list[Any]:
    if isinstance(store, SqliteStore):
        return list(await store.fetchall(sql, params))
    return list(await store.fetchall(dollar_params(sql), *params))


def rows_sync(store: Any, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    if isinstance(store, SqliteStore):
        with sqlite3.connect(store.path) as db:
            return db.execute(sql, params).fetchall()
    import pg_server

    return pg_server.run_sync(pg_server.fetch(store.url, dollar_params(sql), *params))
