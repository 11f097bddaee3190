"""The two places the SQLite store reaches into aiosqlite's private members, and why.

aiosqlite has no public way to (1) run a whole function on its connection's worker thread, with
the raw ``sqlite3.Connection`` — the store's write transactions run that way, one round trip
per transaction instead of one per statement — or (2) make that worker a daemon thread, so a
program that never closes its store does not hang at exit. Both rely on aiosqlite internals that
were checked on the versions pinned in ``pyproject.toml``; ``tests/test_aiosqlite_private.py``
fails loudly, naming the version, if they change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def run_with_connection(db: Any, fn: Callable[..., T], *args: Any) -> T:
    """``fn(raw sqlite3 connection, *args)`` on ``db``'s worker thread (the only thread that
    ever touches the raw connection), awaited."""
    return await db._execute(fn, db._conn, *args)  # noqa: SLF001 (no public API: see above)


def make_worker_daemon(connection: Any) -> None:
    """Mark a not yet started aiosqlite connection's worker thread a daemon. Every write is
    awaited to its COMMIT, so nothing is lost when the process exits without closing."""
    worker = connection._thread  # noqa: SLF001 (no public API: see above)
    worker.daemon = True
