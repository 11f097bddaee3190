"""The two places the SQLite store reaches into aiosqlite's private members, and why.

aiosqlite has no public way to (1) run a whole function on its connection's worker thread, with
the raw ``sqlite3.Connection`` — the store's write transactions run that way, one round trip
per transaction instead of one per statement — or (2) make that worker a daemon thread, so a
program that never closes its store does not hang at exit. Both rely on aiosqlite internals that
were checked on the versions pinned in ``pyproject.toml``; ``tests/test_aiosqlite_private.py``
fails loudly, naming the version, if they change.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar, TypeVarTuple, cast

if TYPE_CHECKING:
    import aiosqlite

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


async def run_with_connection(
    db: aiosqlite.Connection, fn: Callable[[sqlite3.Connection, *Ts], T], *args: *Ts
) -> T:
    """``fn(raw sqlite3 connection, *args)`` on ``db``'s worker thread (the only thread that
    ever touches the raw connection), awaited."""
    execute = cast(
        "Callable[..., Awaitable[T]]",
        db._execute,  # noqa: SLF001 # pyright: ignore[reportPrivateUsage, reportUnknownMemberType]
    )
    return await execute(fn, db._conn, *args)  # noqa: SLF001 # pyright: ignore[reportPrivateUsage]


def make_worker_daemon(connection: aiosqlite.Connection) -> None:
    """Mark a not yet started aiosqlite connection's worker thread a daemon. Every write is
    awaited to its COMMIT, so nothing is lost when the process exits without closing."""
    worker = connection._thread  # noqa: SLF001 # pyright: ignore[reportPrivateUsage]
    worker.daemon = True
