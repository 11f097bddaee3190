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


def messages_sync(location: str, thread_id: str | None = None) -> list[Any]:
    """The messages of a thread (None: of every thread) as the store reads them back
    (``MessageRecord``s, in the order they were stored), from plain code. A signal's message
    refers to the signal's row (its text is stored once, issue 11): its ``content`` column
    alone does not hold the text."""
    import pg_server

    from tui_agent.store import open_store

    async def read() -> list[Any]:
        store = open_store(location)
        try:
            threads = [thread_id] if thread_id else [t.id for t in await store.list_threads()]
            found = [m for t in threads for m in await store.list_messages(t, limit=1 << 30)]
            return sorted(found, key=lambda m: m.seq)
        finally:
            await store.close()

    return pg_server.run_sync(read())
